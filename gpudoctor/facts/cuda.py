"""Facts about CUDA toolkits and cuDNN installed on the machine."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from gpudoctor.facts import Facts, Missing, command_result, fact


@dataclass(frozen=True)
class Nvcc:
    """What `nvcc --version` says: "Cuda compilation tools, release 12.4, V12.4.131"."""

    release: str   # "12.4"
    version: str   # "12.4.131"


@fact("nvcc")
def nvcc(f: Facts) -> Nvcc:
    """The nvcc on PATH and its CUDA release (nvcc --version)."""
    res = command_result(f, "nvcc_version")
    m = re.search(r"release (\d+\.\d+), V([\d.]+)", res.stdout)
    if not m:
        raise Missing("nvcc --version printed no release number")
    return Nvcc(m.group(1), m.group(2))


@dataclass(frozen=True)
class Link:
    """A path the probe resolved: /usr/local/cuda -> /etc/alternatives/cuda -> /usr/local/cuda-12.4."""

    path: str
    target: Optional[str]   # the symlink's own target; None when the path is not a symlink
    real: str               # where it finally leads


@fact("links")
def links(f: Facts) -> Tuple[Link, ...]:
    """The symlinks the probe resolved (/usr/local/cuda, nvcc on PATH, libcuda...), sorted by path.

    Missing in snapshots that recorded none: then a CUDA_HOME that leads nowhere cannot be told
    from one that was not looked at."""
    if not f.snapshot.links:
        raise Missing("this snapshot recorded no symlinks")
    return tuple(Link(path, rec.get("target"), rec.get("real")) for path, rec in sorted(f.snapshot.links.items()))


# --- installed toolkits ------------------------------------------------------------------

_NAME_VERSION = re.compile(r"cuda-(\d+\.\d+)$")


@dataclass(frozen=True)
class Toolkit:
    """One CUDA toolkit directory, with the other paths that lead to it (/usr/local/cuda)."""

    root: str                      # the real directory: "/usr/local/cuda-12.4"
    version: Optional[str]         # "12.4.1" (version.json), "10.2.89" (version.txt), "12.4" (name, nvcc)
    source: str                    # where the version comes from: "file:/usr/local/cuda-12.4/version.json"
    aliases: Tuple[str, ...] = ()  # "/usr/local/cuda" when it is a symlink to root

    def owns(self, path: str) -> bool:
        return any(path == p or path.startswith(p.rstrip("/") + "/") for p in (self.root,) + self.aliases)

    def major_minor(self) -> Optional[str]:
        m = re.match(r"^(\d+)\.(\d+)", self.version or "")
        return f"{m.group(1)}.{m.group(2)}" if m else None

    def label(self) -> str:
        also = f", also {', '.join(self.aliases)}" if self.aliases else ""
        return f"CUDA {self.version or '(version unknown)'} at {self.root}{also}"


def parse_version_json(text: str) -> Optional[str]:
    """CUDA 11.1+ ``version.json``: {"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, ...}."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    version = (data.get("cuda") or {}).get("version") if isinstance(data, dict) else None
    return str(version) if version else None


def parse_version_txt(text: str) -> Optional[str]:
    """CUDA 11.0 and older ``version.txt``: "CUDA Version 10.2.89"."""
    m = re.search(r"CUDA Version\s+(\d+\.\d+(?:\.\d+)?)", text or "")
    return m.group(1) if m else None


def real_path(snapshot, path: str) -> str:
    """``path`` with the deepest recorded link among it and its parents resolved:
    /usr/local/cuda/include/x.h -> /usr/local/cuda-12.4/include/x.h."""
    head, tail = path.rstrip("/") or "/", ""
    while head not in ("", "/"):
        link = snapshot.link(head)
        if link:
            return link["real"] + tail
        head, name = head.rsplit("/", 1)
        tail = f"/{name}{tail}"
    return path


def _version_at(snapshot, path: str) -> Tuple[Optional[str], Optional[str]]:
    for name, parse in (("version.json", parse_version_json), ("version.txt", parse_version_txt)):
        rec = snapshot.file(f"{path}/{name}")
        if rec.exists and parse(rec.content):
            return parse(rec.content), f"file:{path}/{name}"
    return None, None


def nvcc_on_path(f: Facts) -> Optional[Link]:
    """The first nvcc along PATH as the probe resolved it, or None if unknown."""
    for d in (f.env.get("PATH") or "").split(":"):
        link = f.snapshot.link(f"{d.rstrip('/')}/nvcc") if d.startswith("/") else None
        if link:
            return Link(f"{d.rstrip('/')}/nvcc", link.get("target"), link["real"])
    return None


def _candidates(f: Facts) -> List[str]:
    snap = f.snapshot
    paths = [f"/usr/local/{n}" for n in snap.listing("/usr/local") or []]
    paths += [p.rsplit("/", 1)[0] for p in snap.paths("*/version.json") + snap.paths("*/version.txt")]
    paths += [f.env[v].rstrip("/") for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT") if f.env.get(v, "").startswith("/")]
    nvcc = nvcc_on_path(f)
    if nvcc and nvcc.real.endswith("/bin/nvcc"):
        paths.append(nvcc.real[: -len("/bin/nvcc")])
    return [p for p in dict.fromkeys(paths) if snap.link(p) or _version_at(snap, p)[0] or _NAME_VERSION.search(p)
            or p == "/usr/local/cuda"]


def _merge_unresolved(groups: Dict[str, Dict]) -> None:
    """/usr/local/cuda recorded without its link target: fold it into the one toolkit it can mean."""
    for root in [r for r, g in groups.items() if not g["resolved"] and not _NAME_VERSION.search(r)]:
        others = [g for r, g in groups.items() if r != root and (groups[root]["version"] in (None, g["version"]))]
        if len(others) == 1:
            others[0]["aliases"].append(root)
            del groups[root]


@fact("cuda_toolkits")
def cuda_toolkits(f: Facts) -> Tuple[Toolkit, ...]:
    """CUDA toolkits on disk (/usr/local/cuda*, CUDA_HOME, nvcc's own), oldest first; () if none."""
    snap = f.snapshot
    groups: Dict[str, Dict] = {}
    for path in _candidates(f):
        real = real_path(snap, path)
        g = groups.setdefault(real, {"aliases": [], "version": None, "source": None, "resolved": True})
        if path != real:
            g["aliases"].append(path)
        elif snap.link(path) is None:
            g["resolved"] = False
        if g["version"] is None:
            g["version"], g["source"] = _version_at(snap, real)
        if g["version"] is None:
            g["version"], g["source"] = _version_at(snap, path)
    for root, g in groups.items():
        m = _NAME_VERSION.search(root)
        if g["version"] is None and m:
            g["version"], g["source"] = m.group(1), "listing:/usr/local"
    _merge_unresolved(groups)
    _add_nvcc_toolkit(f, groups)
    if not groups and snap.listing("/usr/local") is None and snap.command("nvcc_version") is None:
        raise Missing("CUDA toolkit locations were not recorded in this snapshot")
    out = [Toolkit(root, g["version"], g["source"] or "listing:/usr/local", tuple(g["aliases"]))
           for root, g in groups.items()]
    return tuple(sorted(out, key=lambda t: (_version_key(t.version), t.root)))


def _add_nvcc_toolkit(f: Facts, groups: Dict[str, Dict]) -> None:
    """An nvcc outside every known toolkit (conda, /usr/bin from a distro package) is a toolkit of
    its own, unless it is a wrapper of a known toolkit of the same release."""
    nvcc = f.get("nvcc")
    if not nvcc:
        return
    where = nvcc_on_path(f)
    if where and any(where.real.startswith(r + "/") for r in groups):
        return
    if any((g["version"] or "").startswith(nvcc.release + ".") or g["version"] == nvcc.release
           for g in groups.values()):
        return
    real = where.real if where else "nvcc"
    root = real[: -len("/bin/nvcc")] if real.endswith("/bin/nvcc") else real
    groups[root] = {"aliases": [], "version": nvcc.release, "source": "command:nvcc_version"}


def _version_key(version: Optional[str]):
    from packaging.version import InvalidVersion, Version
    try:
        return Version(version or "0")
    except InvalidVersion:
        return Version("0")
