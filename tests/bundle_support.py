"""Helpers for the bundle tests: a planted machine (stub commands, a fake root, secret env vars).

Everything secret or identifying is planted here, so the tests can assert that none of it
survives into any member of the archive.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Dict, Optional

ROOT = Path(__file__).resolve().parent.parent
A100_XML = ROOT / "fixtures" / "nvidia-smi" / "xml" / "a100-sxm4-80gb_driver-535.54.03_cuda-12.2_mig.xml"
GPU_UUID = "GPU-513536b6-7d19-9063-b049-1e69664bb298"  # in A100_XML
GPU_SERIAL = "1650522003820"                             # in A100_XML

SECRETS = {
    "HF_TOKEN": "hf_PlantedHuggingFaceToken0123456789ab",
    "MY_DB_PASSWORD": "correct-horse-battery-staple",
    "AWS_ACCESS_KEY_ID": "AKIAPLANTED012345678",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDKEY",
    "OPENAI_API_KEY": "sk-PlantedOpenAIKey0123456789abcdef",
    "SLACK_BOT_TOKEN": "xoxb-1234567890-PlantedSlackToken",
}
PIP_PASSWORD = "pipS3cretPlantedPass"
IN_OUTPUT = {  # not in the environment: only token formats can catch these
    "github": "ghp_PlantedGitHubToken0123456789abcdefABCD",
    "gitlab": "glpat-PlantedGitLab01234567",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlcGxhbnRlZA",
    "pem_body": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQPLANTED",
    "conda": "tk-PlantedCondaChannelToken42",
}
ALL_SECRETS = list(SECRETS.values()) + [PIP_PASSWORD] + list(IN_OUTPUT.values())

HOST = "gpu-box-7"
USER = "alice"
IPS = ("10.20.30.40", "10.20.30.41")
MACS = ("3c:fd:fe:12:34:56", "3c:fd:fe:12:34:57")
IDENTIFIERS = [HOST, USER, "/home/alice", GPU_UUID[4:], GPU_SERIAL, *IPS, *MACS]


def _exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
    return path


def make_stubs(bindir: Path, hang_smi: bool = False) -> Path:
    """nvidia-smi (the real A100 recording), nvcc, dmesg and journalctl that leak planted data."""
    bindir.mkdir(parents=True, exist_ok=True)
    if hang_smi:
        # Writes its pid, then hangs forever: the bundle must still finish (and kill it).
        _exe(bindir / "nvidia-smi", f'#!/bin/sh\necho $$ >> "{bindir}/smi.pids"\nexec sleep 100000\n')
    else:
        _exe(bindir / "nvidia-smi", f"""#!/bin/sh
case "$*" in
  "-q -x") cat "{A100_XML}" ;;
  "-L") echo "GPU 0: NVIDIA A100-SXM4-80GB (UUID: {GPU_UUID})" ;;
  *) echo "stub: not recorded" >&2; exit 3 ;;
esac
""")
    _exe(bindir / "nvcc", f"""#!/bin/sh
echo "nvcc: NVIDIA (R) Cuda compiler driver"
echo "Cuda compilation tools, release 12.4, V12.4.131"
echo "# built on {HOST} ({IPS[0]}, {MACS[0]}) by {USER}; HF $HF_TOKEN; db $MY_DB_PASSWORD"
echo "# github {IN_OUTPUT['github']} gitlab {IN_OUTPUT['gitlab']}" >&2
""")
    _exe(bindir / "conda", f"""#!/bin/sh
[ "$1 $2" = "list --json" ] || exit 2
cat <<'JSON'
[{{"name": "pytorch", "version": "2.3.1", "channel": "pytorch", "build_string": "py3.11_cuda12.1_cudnn8.9.2_0",
  "base_url": "https://conda.anaconda.org/t/{IN_OUTPUT['conda']}/pytorch"}},
 {{"name": "nvidia-cudnn-cu12", "version": "9.1.0.70", "channel": "pypi", "build_string": "pypi_0",
  "base_url": "https://pypi.org/"}}]
JSON
""")
    _exe(bindir / "dmesg", "#!/bin/sh\necho 'dmesg: read kernel buffer failed: Operation not permitted' >&2\nexit 1\n")
    _exe(bindir / "journalctl", f"""#!/bin/sh
echo "Mar 01 12:00:01 {HOST} kernel: NVRM: Xid (PCI:0000:07:00): 79, pid=4242, name=python, GPU has fallen off the bus."
echo "Mar 01 12:00:02 {HOST} kernel: e1000e: eth0 NIC Link is Up"
echo "Mar 01 12:00:03 {HOST} kernel: nvidia 0000:07:00.0: {GPU_UUID} serial {GPU_SERIAL}" \
     "via {IPS[1]} mac {MACS[1]} user {USER} session {IN_OUTPUT['jwt']}"
""")
    return bindir


def make_root(root: Path) -> Path:
    """A machine root: os-release, the driver version, a modprobe file and a CUDA under /home/alice."""
    files = {
        "etc/os-release": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="22.04"\n',
        "etc/hostname": HOST + "\n",
        "proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  "
                                      "Tue Jun  6 22:20:39 UTC 2023\n",
        "etc/modprobe.d/nvidia.conf": "options nvidia NVreg_PreserveVideoMemoryAllocations=1\n"
                                      f"# deploy token {IN_OUTPUT['gitlab']}\n"
                                      "-----BEGIN OPENSSH PRIVATE KEY-----\n"
                                      f"{IN_OUTPUT['pem_body']}\n"
                                      "-----END OPENSSH PRIVATE KEY-----\n",
        "home/alice/cuda-12.4/version.json": '{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}\n',
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def planted_env(bindir: Path, tmp: Path) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR",)}
    env.update(SECRETS)
    env.update({
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PIP_INDEX_URL": f"https://{USER}:{PIP_PASSWORD}@pypi.corp.example/simple",
        "USER": USER,
        "CUDA_HOME": "/home/alice/cuda-12.4",
        "LD_LIBRARY_PATH": "/home/alice/cuda-12.4/lib64",
        "CUDA_VISIBLE_DEVICES": GPU_UUID[:12],  # a shortened UUID, as CUDA allows
        "TMPDIR": str(tmp),
        "PIP_NO_CACHE_DIR": "1",
    })
    return env


def run_cli(*args, env: Optional[Dict[str, str]] = None, cwd=None, timeout: float = 120):
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True,
                          env=env, cwd=str(cwd or ROOT), timeout=timeout)


def members(path: Path) -> Dict[str, bytes]:
    """name (without the top folder) -> content, for every file member."""
    out = {}
    with tarfile.open(path, "r:gz") as tar:
        for m in tar.getmembers():
            if m.isfile():
                out[m.name.split("/", 1)[1]] = tar.extractfile(m).read()
    return out


def raw_tar(path: Path) -> bytes:
    """The whole decompressed stream: member data, names and tar headers."""
    return gzip.decompress(path.read_bytes())


def tar_gz(entries, compresslevel: int = 6) -> bytes:
    """A .tar.gz built from (TarInfo, data or None) pairs, for hand-made (malicious) archives."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=compresslevel) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for info, data in entries:
                tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def file_info(name: str, data: bytes) -> tuple:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def folder_bundle(folder: Path, top: str = "bundle", manifest: bool = True, extra=()) -> bytes:
    """A well-formed bundle of a snapshot folder (as `gpudoctor bundle` lays it out), in memory."""
    import hashlib
    import json

    entries = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            entries.append((f"snapshot/{p.relative_to(folder).as_posix()}", p.read_bytes()))
    entries += list(extra)
    if manifest:
        rows = [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for n, d in entries]
        entries.append(("manifest.json", json.dumps({"schema": "gpudoctor.bundle/1", "members": rows}).encode()))
    return tar_gz([file_info(f"{top}/{n}", d) for n, d in entries])
