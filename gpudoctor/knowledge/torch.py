"""PyTorch release facts from ``data/torch_releases.json``: Python range, CUDA builds, arch lists.

This module never imports torch; it only reads the table (and version strings such
as ``torch.__version__`` that a probe collected in a child process).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._load import as_version, load, major_minor, os_column, parse_version
from .archs import arch_covers
from .cuda import min_driver_for_cuda


@dataclass(frozen=True)
class TorchVariant:
    name: str                 # "cu121", "cpu"
    cuda: Optional[str]       # "12.1"; None for cpu
    archs: Tuple[str, ...]    # ("sm_80", ..., "compute_120")
    cudnn: Optional[str]
    index_url: str
    source: str
    verified: bool = True
    note: str = ""


@dataclass(frozen=True)
class TorchRelease:
    version: str              # "2.3" - the table is per major.minor
    python: str               # PEP 440 specifier, e.g. ">=3.9,<3.14"
    default_cuda: Optional[str]
    default_archs: Tuple[str, ...]
    variants: Mapping[str, TorchVariant] = field(hash=False)  # read-only
    default_variant: Optional[str] = None
    source: str = ""
    verified: bool = True
    note: str = ""


def _variant(name: str, row: Dict[str, Any], os: str) -> TorchVariant:
    archs = tuple(row["archs"])
    if os == "windows" and row.get("ptx_linux_only"):
        archs = tuple(a for a in archs if not a.startswith("compute_"))
    url = load("torch_releases")["index_url_pattern"].format(variant=name)
    return TorchVariant(name, row["cuda"], archs, row["cudnn"], url, row["source"], row["verified"],
                        row.get("note", ""))


def _release(row: Dict[str, Any], os: str) -> TorchRelease:
    variants = {name: _variant(name, v, os) for name, v in row["variants"].items()}
    return TorchRelease(row["version"], row["python"], row["default_cuda"], tuple(row["default_archs"]),
                        MappingProxyType(variants), row["default_variant"], row["source"], row["verified"],
                        row["note"])


def torch_local_variant(version: str) -> Optional[str]:
    """Local tag of a torch version: "2.3.1+cu121" -> "cu121", "2.13.0+cpu" -> "cpu", "2.13.0" -> None."""
    return parse_version(version, "torch version").local


def torch_release(version: str, os: str = "linux") -> Optional[TorchRelease]:
    """Table row for the release's major.minor ("2.3.1+cu121" -> the 2.3 row), or None if not in the table."""
    want = major_minor(parse_version(version, "torch version"))
    column = os_column(os)
    for row in load("torch_releases")["releases"]:
        if major_minor(as_version(row["version"])) == want:
            return _release(row, column)
    return None


def torch_variants_for(torch_version: str, driver: Optional[str], compute_cap: Optional[str],
                       os: str = "linux") -> List[TorchVariant]:
    """CUDA builds of that release the driver can run and whose code runs on the GPU; newest CUDA first.

    A None driver or compute_cap skips that filter. "Can run" is CUDA minor-version
    compatibility (what torch's "driver too old" check enforces), not the toolkit's
    own bundled driver.
    """
    release = torch_release(torch_version, os)
    if release is None:
        return []
    fits: List[TorchVariant] = []
    for variant in release.variants.values():
        if variant.cuda is None:
            continue
        if driver is not None:
            need = min_driver_for_cuda(variant.cuda, os)
            if need is None or parse_version(driver, "driver version") < as_version(need.min_driver):
                continue
        if compute_cap is not None and not arch_covers(variant.archs, compute_cap):
            continue
        fits.append(variant)
    return sorted(fits, key=lambda v: as_version(v.cuda or "0"), reverse=True)
