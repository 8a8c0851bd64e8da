"""CUDA toolkit <-> NVIDIA driver facts, read from ``data/cuda_drivers.json``.

Two different questions, two functions:

* :func:`min_driver_for_cuda` - the oldest driver an application built with that
  CUDA can run on (minor-version compatibility for CUDA 11+, the toolkit's own
  driver for 10.x and older);
* :func:`toolkit_driver` - the driver bundled with that exact toolkit release, which
  every feature of that toolkit may need.

:func:`max_cuda_for_driver` answers what ``nvidia-smi`` prints as "CUDA Version"
(610+: "CUDA UMD Version"): the newest CUDA the driver supports.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional

from packaging.version import Version

from ._load import as_version, load, major_minor, os_column, parse_version


@dataclass(frozen=True)
class DriverRequirement:
    cuda: str
    min_driver: str
    rule: str  # "minor-compat" | "toolkit-release"
    source: str
    verified: bool
    note: str = ""


def _rows() -> List[Dict[str, Any]]:
    return load("cuda_drivers")["toolkits"]


def _row_for(want: Version) -> Optional[Dict[str, Any]]:
    """The release row for "12.4" (its GA) or "12.4.1" (exact, else newest not after it)."""
    same_minor = [r for r in _rows() if major_minor(as_version(r["toolkit"])) == major_minor(want)]
    if not same_minor or len(want.release) < 2:
        return None
    if len(want.release) < 3:
        return same_minor[0]
    not_after = [r for r in same_minor if as_version(r["toolkit"]) <= want]
    return not_after[-1] if not_after else same_minor[0]


def _from_row(row: Dict[str, Any], column: str, cuda: str) -> Optional[DriverRequirement]:
    minimum = row[f"{column}_min"]
    req = DriverRequirement(cuda, minimum or "", "toolkit-release", row["source"], row["verified"],
                            f"{row['label']}: {row.get('note', '')}".rstrip(": "))
    if minimum:
        return req
    if column == "windows" and row["linux_min"] and as_version(row["toolkit"]).major >= 13:
        # NVIDIA stopped bundling a Windows driver; assume the same branch as the Linux driver.
        branch = row["linux_min"].split(".")[0]
        return replace(req, min_driver=branch, verified=False,
                       note=f"{row['label']}: NVIDIA lists no Windows driver (not bundled); assuming branch R{branch}")
    return None


def toolkit_driver(cuda: str, os: str = "linux") -> Optional[DriverRequirement]:
    """Driver shipped with that toolkit release ("12.1" -> 530.30.02 on Linux), or None if unknown."""
    want = parse_version(cuda, "CUDA version")
    row = _row_for(want)
    return _from_row(row, os_column(os), cuda) if row else None


def min_driver_for_cuda(cuda: str, os: str = "linux") -> Optional[DriverRequirement]:
    """Oldest driver that runs code built with this CUDA ("12.4" -> 525.60.13, minor-compat)."""
    want = parse_version(cuda, "CUDA version")
    column = os_column(os)
    major, minor = major_minor(want)
    compat = load("cuda_drivers")["minor_compat"].get(str(major))
    own = toolkit_driver(f"{major}.{minor}", os) if len(want.release) >= 2 else None
    if compat is None:
        return replace(own, cuda=cuda) if own else None
    floor = compat[f"{column}_min"]
    if own is not None and as_version(own.min_driver) < as_version(floor):
        # 11.0 shipped before the 11.x floor existed: its own driver is the lower bound.
        return replace(own, cuda=cuda, note=f"{own.note}; older than the {major}.x minor-version floor {floor}")
    note = f"CUDA {major}.x minor-version compatibility. {compat['note']}"
    if own is not None:
        note += f" All features of the {major}.{minor} toolkit may need its own driver {own.min_driver}."
    return DriverRequirement(cuda, floor, "minor-compat", compat["source"], compat["verified"], note)


def max_cuda_for_driver(driver: str, os: str = "linux") -> Optional[str]:
    """Newest CUDA major.minor whose toolkit driver is <= driver ("470.82.01" -> "11.4")."""
    have = parse_version(driver, "driver version")
    column = os_column(os)
    best = None
    for row in _rows():
        req = _from_row(row, column, row["toolkit"])
        if req and have >= as_version(req.min_driver):
            best = max(best or (0, 0), major_minor(as_version(row["toolkit"])))
    return f"{best[0]}.{best[1]}" if best else None


def cuda_from_driver_api_int(n: int) -> str:
    """CUDA driver API integer as "major.minor": 11040 -> "11.4" (torch's "found version 11040")."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1000:
        raise ValueError(f"not a CUDA driver API version: {n!r}")
    return f"{n // 1000}.{n % 1000 // 10}"


@dataclass(frozen=True)
class LegacyBranch:
    architecture: str
    last_branch: int            # 470: the driver's major version may not exceed it
    last_release: Optional[str]
    source: str


def legacy_branch(compute_cap: Optional[str]) -> Optional[LegacyBranch]:
    """The last driver branch a GPU of this compute capability can run, or None (current branches do)."""
    if not compute_cap:
        return None
    cc = parse_version(compute_cap, "compute capability")
    for row in load("driver_branches")["legacy"]:
        if cc <= as_version(row["max_compute_cap"]):
            return LegacyBranch(row["architecture"], row["last_branch"], row["last_release"], row["source"])
    return None


def driver_possible(min_driver: str, compute_cap: Optional[str]) -> bool:
    """Can a GPU of this compute capability run a driver of at least ``min_driver``?"""
    branch = legacy_branch(compute_cap)
    return branch is None or parse_version(min_driver, "driver version").release[0] <= branch.last_branch
