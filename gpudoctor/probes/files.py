"""The files gpudoctor records, each read below a root directory (default ``/``).

Tests and replays point ``root`` at a folder; nothing outside it is read.
"""

from __future__ import annotations

import glob
import os
import posixpath
from typing import Dict, List, Mapping, Optional

from gpudoctor import liveread
from gpudoctor.snapshot import MAX_FILE_BYTES, FileRecord

FIXED = (
    "/proc/driver/nvidia/version",
    "/sys/module/nvidia/version",
    "/proc/modules",
    "/proc/cmdline",
    "/proc/version",
    "/proc/1/cgroup",
    "/etc/os-release",
    "/.dockerenv",
    "/run/.containerenv",
    "/usr/include/cudnn_version.h",
)

GLOBS = (
    "/etc/modprobe.d/*.conf",
    "/lib/modprobe.d/*.conf",
    "/usr/lib/modprobe.d/*.conf",
    "/run/modprobe.d/*.conf",
    "/usr/local/lib/modprobe.d/*.conf",
    "/etc/ld.so.conf.d/*.conf",
    "/usr/local/cuda*/version.json",
    "/usr/local/cuda*/version.txt",
    "/usr/local/cuda*/include/cudnn_version.h",
    "/usr/local/cuda*/include/crt/host_config.h",
    "/usr/include/*-linux-gnu/cudnn_version*.h",
    "/usr/include/cudnn_version_v*.h",
    "/proc/driver/nvidia/gpus/*/information",
    "/etc/nvidia-container-runtime/config.toml",
)

# Directory listings recorded as names only (presence facts), with the name prefix(es) kept.
# The modprobe.d listings say the directories were looked at even when they hold no .conf;
# the driver library names carry the user-space driver version (libnvidia-ml.so.535.104.05).
_DRIVER_LIBS = ("libnvidia-ml.so", "libcuda.so", "libcudnn.so")
LISTINGS = {
    "/dev": "nvidia",
    "/usr/local": "cuda",
    "/usr/lib/wsl/lib": "",
    "/dev/dxg": "",
    "/etc/modprobe.d": "",
    "/run/modprobe.d": "",
    "/usr/local/lib/modprobe.d": "",
    "/usr/lib/modprobe.d": "",
    "/lib/modprobe.d": "",
    "/usr/lib/x86_64-linux-gnu": _DRIVER_LIBS,
    "/usr/lib/aarch64-linux-gnu": _DRIVER_LIBS,
    "/usr/lib/powerpc64le-linux-gnu": _DRIVER_LIBS,
    "/usr/lib64": _DRIVER_LIBS,
    "/usr/lib": _DRIVER_LIBS,
    # How the driver was installed: NVIDIA's .run installer leaves nvidia-uninstall and its log.
    "/usr/bin": "nvidia-",
    "/var/log": "nvidia-installer",
}

# Paths whose symlink target is recorded: which toolkit /usr/local/cuda means, which cuDNN
# header the alternatives system picked, whether WSL's libcuda.so.1 is a file or a link.
LINKS = (
    "/usr/local/cuda",
    "/etc/alternatives/cuda",
    "/usr/include/cudnn_version.h",
    "/usr/lib/wsl/lib/libcuda.so",
    "/usr/lib/wsl/lib/libcuda.so.1",
)
MAX_SEARCH_DIRS = 64  # PATH / LD_LIBRARY_PATH entries looked at; a doctor needs the first few


def _under(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def read_file(root: str, path: str) -> FileRecord:
    """Read one text file; the error names why it could not be read ("missing", "not a
    regular file" for a FIFO or device, "over 4194304 bytes", ...)."""
    content, error = liveread.read_text(_under(root, path), MAX_FILE_BYTES)
    return FileRecord(path, content=content, error=error)


def extra_paths(env: Mapping[str, str]) -> List[str]:
    """Toolkit files under CUDA_HOME / CUDA_PATH, which may live outside /usr/local."""
    out = []
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        home = env.get(var)
        if home and os.path.isabs(home):
            out += [f"{home}/version.json", f"{home}/version.txt", f"{home}/include/cudnn_version.h"]
    return out


def collect_files(root: str, env: Mapping[str, str], records: Optional[Dict[str, FileRecord]] = None
                  ) -> Dict[str, FileRecord]:
    """Every FIXED, CUDA_HOME and GLOBS file, into ``records`` as each is read (so that a
    caller whose deadline passed keeps what was read before a read that hung)."""
    records = {} if records is None else records
    for path in list(FIXED) + extra_paths(env):
        records[os.path.normpath(path)] = read_file(root, path)
    for pattern in GLOBS:
        for full in sorted(glob.glob(_under(root, pattern))):
            rel = "/" + os.path.relpath(full, root).replace(os.sep, "/")
            records[rel] = read_file(root, rel)
    return records


def collect_listings(root: str) -> Dict[str, List[str]]:
    """Names in each LISTINGS directory that start with its prefix(es)."""
    listings: Dict[str, List[str]] = {}
    for directory, prefix in LISTINGS.items():
        full = _under(root, directory)
        if os.path.isdir(full):
            try:
                names = sorted(n for n in os.listdir(full) if n.startswith(prefix))
            except OSError:
                continue
            listings[directory] = names
        elif os.path.exists(full):
            listings[directory] = []  # present, not a directory (e.g. the /dev/dxg device of WSL2)
    return listings


def _search_dirs(value: Optional[str]) -> List[str]:
    return [d.rstrip("/") or "/" for d in (value or "").split(":") if d.startswith("/")][:MAX_SEARCH_DIRS]


def link_paths(env: Mapping[str, str], listings: Mapping[str, List[str]]) -> List[str]:
    """Paths to resolve: fixed ones, each /usr/local/cuda*, CUDA_HOME & co, nvcc in each PATH
    directory (so the first one is the nvcc the user runs), each LD_LIBRARY_PATH directory."""
    paths = list(LINKS) + [f"/usr/local/{n}" for n in listings.get("/usr/local", [])]
    paths += [env[v] for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT") if env.get(v, "").startswith("/")]
    paths += [posixpath.join(d, "nvcc") for d in _search_dirs(env.get("PATH"))]
    paths += _search_dirs(env.get("LD_LIBRARY_PATH"))
    return list(dict.fromkeys(posixpath.normpath(p) for p in paths))


def resolve_below(root: str, path: str, max_hops: int = 40) -> str:
    """``realpath`` of ``path`` with every symlink, absolute ones included, read below ``root``."""
    todo = [p for p in path.split("/") if p]
    resolved, hops = "/", 0
    while todo:
        name = todo.pop(0)
        if name in (".", ""):
            continue
        if name == "..":
            resolved = posixpath.dirname(resolved)
            continue
        candidate = posixpath.join(resolved, name)
        full = _under(root, candidate)
        if os.path.islink(full) and hops < max_hops:
            hops += 1
            target = os.readlink(full)
            todo = [p for p in target.split("/") if p] + todo
            if target.startswith("/"):
                resolved = "/"
            continue
        resolved = candidate
    return resolved


def collect_links(root: str, env: Mapping[str, str], listings: Mapping[str, List[str]]) -> Dict[str, Dict]:
    """{path: {"target": readlink or None, "real": resolved path}} for each path that exists."""
    out: Dict[str, Dict] = {}
    for path in link_paths(env, listings):
        # Resolve the parent below root first: /usr/local/cuda/bin/nvcc lives wherever cuda points.
        parent = resolve_below(root, posixpath.dirname(path))
        full = _under(root, posixpath.join(parent, posixpath.basename(path)))
        try:
            if not os.path.lexists(full):
                continue
            target = os.readlink(full) if os.path.islink(full) else None
            out[path] = {"target": target, "real": resolve_below(root, path)}
        except OSError:
            continue
    return out
