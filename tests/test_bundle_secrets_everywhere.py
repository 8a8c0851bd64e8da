"""Every secret format of data/secret_formats.json, planted in every place a bundle reads, survives nowhere.

Places: a command's stdout and stderr, a recorded file, /proc/cmdline, an allow-listed
environment variable (snapshot.json, the reports), a path the probes record, the kernel
log, conda's JSON, pip's configuration and index URL, a proxy variable, the interpreter's
path (the manifest's argv) and the bundle's own file name (the archive's top folder).
Checked in every member and in the raw tar stream, with and without --anonymize.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.bundle_support import make_root, make_stubs, members, planted_env, raw_tar, run_cli
from tests.conftest import invoke

DATA = json.loads((Path(__file__).resolve().parent.parent / "gpudoctor" / "bundle" / "data" /
                   "secret_formats.json").read_text(encoding="utf-8"))
ROWS = DATA["formats"] + DATA["rules"]
SHORT = "k7Secr3"  # a 7-character value of a secret variable, echoed in LD_LIBRARY_PATH and a path
EXAMPLES = [r["example"] for r in ROWS]
SECRETS = [r.get("secret", r["example"]) for r in ROWS] + [SHORT]
ONE_LINE = [e for e in EXAMPLES if "\n" not in e]
TOKEN_FOR_NAMES = next(r["example"] for r in ROWS if r["id"] == "github-token")  # path- and name-safe


def _exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _stubs(bindir: Path) -> None:
    make_stubs(bindir)
    blob = "\n".join(EXAMPLES)
    (bindir / "planted.txt").write_text(blob + "\n")
    _exe(bindir / "nvcc", f'#!/bin/sh\necho "Cuda compilation tools, release 12.4, V12.4.131"\n'
                          f'cat "{bindir}/planted.txt"\ncat "{bindir}/planted.txt" >&2\n')
    (bindir / "kernel.txt").write_text("".join(f"Mar 01 12:00:01 node kernel: NVRM: {e}\n" for e in ONE_LINE))
    _exe(bindir / "journalctl", f'#!/bin/sh\ncat "{bindir}/kernel.txt"\n')
    rows = [{"name": "pytorch", "version": "2.3.1", "channel": e, "base_url": e} for e in EXAMPLES]
    (bindir / "conda.json").write_text(json.dumps(rows))
    _exe(bindir / "conda", f'#!/bin/sh\n[ "$1 $2" = "list --json" ] || exit 2\ncat "{bindir}/conda.json"\n')


def _root(root: Path) -> Path:
    make_root(root)
    (root / "etc" / "modprobe.d" / "planted.conf").write_text("\n".join(EXAMPLES) + "\n")
    (root / "proc" / "cmdline").write_text("BOOT_IMAGE=/vmlinuz ro luks.key=ExampleLuksKey0 api-key=ExampleCmdlineKey quiet\n")
    cuda = root / "opt" / SHORT / "cuda"
    cuda.mkdir(parents=True)
    (cuda / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}\n')
    return root


def _bundle(tmp: Path, *args) -> Path:
    bindir = tmp / "bin"
    _stubs(bindir)
    scratch = tmp / "scratch"
    scratch.mkdir()
    env = planted_env(bindir, scratch)
    env.update({"MY_SHORT_TOKEN": SHORT, "CUDA_HOME": f"/opt/{SHORT}/cuda", "LD_LIBRARY_PATH": f"/opt/{SHORT}/lib:/usr/lib",
                "XLA_FLAGS": "\n".join(EXAMPLES), "NCCL_SOCKET_IFNAME": " ".join(ONE_LINE),
                "PIP_INDEX_URL": "https://alice:Ex/ample@Pass0123@pypi.example.com/simple",
                "PIP_EXTRA_INDEX_URL": " ".join(e for e in ONE_LINE if "://" in e),
                "HTTPS_PROXY": "alice:ExampleProxyPass0123@proxy.example.com:3128"})
    pydir = tmp / TOKEN_FOR_NAMES
    pydir.mkdir()
    (pydir / "python").symlink_to(sys.executable)
    out = tmp / f"b-{TOKEN_FOR_NAMES}.tar.gz"
    res = run_cli("bundle", "--no-frameworks", "--root", str(_root(tmp / "root")), "--python", str(pydir / "python"),
                  "-o", str(out), *args, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert os.listdir(scratch) == []
    return out


@pytest.fixture(scope="module", params=[(), ("--anonymize",)], ids=["plain", "anonymized"])
def bundle(request, tmp_path_factory):
    return _bundle(tmp_path_factory.mktemp("everywhere"), *request.param)


def test_no_planted_secret_survives_in_any_member_or_the_tar_stream(bundle):
    texts = {name: data.decode("utf-8", "replace") for name, data in members(bundle).items()}
    texts["<tar stream>"] = raw_tar(bundle).decode("utf-8", "replace")
    leaks = sorted({(secret[:40], name) for name, text in texts.items() for secret in SECRETS if secret in text})
    assert leaks == []


def test_the_secrets_were_there_to_find_and_the_bundle_still_replays(bundle):
    m = {k: v.decode("utf-8", "replace") for k, v in members(bundle).items()}
    nvcc = m["snapshot/commands/nvcc_version.out"]
    assert "Cuda compilation tools, release 12.4, V12.4.131" in nvcc
    kinds = set(json.loads(m["manifest.json"])["redactions"]["secrets"])
    assert {r["id"] for r in ROWS} <= kinds  # every format was met and redacted
    assert "env:MY_SHORT_TOKEN" in kinds
    assert json.loads(m["snapshot/snapshot.json"])["env"]["LD_LIBRARY_PATH"] == \
        "/opt/<redacted:env:MY_SHORT_TOKEN>/lib:/usr/lib"
    res = invoke("check", "--snapshot", str(bundle), "--json")
    assert res.returncode in (0, 1), res.stderr
    assert json.loads(res.stdout)["findings"] == json.loads(m["report.json"])["findings"]
