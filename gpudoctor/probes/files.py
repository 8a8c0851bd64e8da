"""The files gpudoctor records, each read below a root directory (default ``/``).

Tests and replays point ``root`` at a folder; nothing outside it is read.
"""

from __future__ import annotations

import glob
import os
from typing import Dict, Iterable, List, Mapping

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
    "/usr/local/cuda*/version.json",
    "/usr/local/cuda*/version.txt",
    "/usr/local/cuda*/include/cudnn_version.h",
    "/usr/include/*-linux-gnu/cudnn_version*.h",
    "/usr/include/cudnn_version_v*.h",
    "/proc/driver/nvidia/gpus/*/information",
    "/etc/nvidia-container-runtime/config.toml",
)

# Directory listings recorded as names only (presence facts), with the name prefix kept.
LISTINGS = {
    "/dev": "nvidia",
    "/usr/local": "cuda",
    "/usr/lib/wsl/lib": "",
    "/dev/dxg": "",
}


def _under(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def read_file(root: str, path: str) -> FileRecord:
    """Read one text file; the error names why it could not be read."""
    full = _under(root, path)
    try:
        with open(full, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES)
    except FileNotFoundError:
        return FileRecord(path, error="missing")
    except PermissionError:
        return FileRecord(path, error="permission denied")
    except IsADirectoryError:
        return FileRecord(path, error="is a directory")
    except OSError as exc:
        return FileRecord(path, error=exc.strerror or str(exc))
    return FileRecord(path, content=data.decode("utf-8", errors="replace"))


def extra_paths(env: Mapping[str, str]) -> List[str]:
    """Toolkit files under CUDA_HOME / CUDA_PATH, which may live outside /usr/local."""
    out = []
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        home = env.get(var)
        if home and os.path.isabs(home):
            out += [f"{home}/version.json", f"{home}/version.txt", f"{home}/include/cudnn_version.h"]
    return out


def collect_files(root: str, env: Mapping[str, str]) -> Dict[str, FileRecord]:
    records: Dict[str, FileRecord] = {}
    for path in list(FIXED) + extra_paths(env):
        records[os.path.normpath(path)] = read_file(root, path)
    for pattern in GLOBS:
        for full in sorted(glob.glob(_under(root, pattern))):
            rel = "/" + os.path.relpath(full, root).replace(os.sep, "/")
            records[rel] = read_file(root, rel)
    return records


def collect_listings(root: str) -> Dict[str, List[str]]:
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
