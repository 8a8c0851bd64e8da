"""TensorFlow build facts from ``data/tf_builds.json`` (tested build configurations, and-cuda pins).

Never imports TensorFlow; version strings come from a probe's child process.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Dict, Mapping, Optional, Tuple

from packaging.version import Version

from ._load import load, major_minor, parse_version


@dataclass(frozen=True)
class TfBuild:
    version: str                    # the table row, e.g. "2.16.1"
    python: str                     # PEP 440 specifier
    cuda: str
    cudnn: str
    archs: Tuple[str, ...]          # build-info compute capabilities; () = not recorded
    windows_native_gpu: bool
    and_cuda_pins: Mapping[str, str] = field(hash=False)  # package -> specifier, read-only
    source: str = ""
    verified: bool = True
    note: str = ""


def _build(row: Dict[str, Any]) -> TfBuild:
    return TfBuild(row["version"], row["python"], row["cuda"], row["cudnn"], tuple(row["archs"]),
                   row["windows_native_gpu"], MappingProxyType(dict(row["and_cuda_pins"])), row["source"],
                   row["verified"], row["note"])


def tf_build(version: str) -> Optional[TfBuild]:
    """Tested configuration for that release: exact row if listed, else the row of its major.minor."""
    want = parse_version(version, "TensorFlow version")
    rows = load("tf_builds")["builds"]
    exact = [r for r in rows if Version(r["version"]) == Version(want.base_version)]
    same_minor = [r for r in rows if major_minor(Version(r["version"])) == major_minor(want)]
    row = (exact or same_minor or [None])[0]
    return _build(row) if row else None


def releases_for_exact_cuda(cuda: str) -> Optional[Tuple[str, str]]:
    """The first and last TensorFlow major.minor built for exactly CUDA ``cuda`` ("9.0" -> ("1.5", "1.12")), for a
    CUDA some release before 2.0 linked by its X.Y soname (``legacy_builds``; 2.0 counts when it shares that CUDA),
    else None: those releases fail at ``import tensorflow`` with an ImportError naming the library, while from 2.1 on
    TensorFlow loads its CUDA libraries when it first needs the GPU and goes on without them."""
    data = load("tf_builds")
    legacy = [r for r in data["legacy_builds"] if r["cuda"] == cuda]
    if not legacy:
        return None
    rows = legacy + [r for r in data["builds"] if r["cuda"] == cuda]
    versions = sorted({major_minor(Version(r["version"])) for r in rows})
    first, last = versions[0], versions[-1]
    return f"{first[0]}.{first[1]}", f"{last[0]}.{last[1]}"


def tf_windows_native_gpu_last() -> str:
    """Last TensorFlow major.minor with GPU support on native Windows ("2.10")."""
    return load("tf_builds")["windows"]["last_native_gpu"]
