"""cuDNN <-> CUDA toolkit pairing, read from ``data/cudnn_cuda.json``.

A cuDNN build is linked against one CUDA major (its "for CUDA 12.x" package), so the
question a doctor asks is whether the cuDNN found next to a toolkit was built for it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ._load import load, major_minor, parse_version


@dataclass(frozen=True)
class CudnnPairing:
    cudnn: str
    label: str          # "cuDNN 8.8 and 8.9"
    cuda_spec: str      # ">=11.0,<13.0"
    note: str
    source: str
    verified: bool

    def supports(self, cuda: str) -> bool:
        """Whether a CUDA toolkit version ("12.4.1" or "12") is one this cuDNN line is built for."""
        major, minor = major_minor(parse_version(cuda, "CUDA version"))
        return Version(f"{major}.{minor}") in SpecifierSet(self.cuda_spec)

    def cuda_text(self) -> str:
        """The supported CUDA range in words: ">=11.0,<13.0" -> "CUDA 11.0 up to 12.x"."""
        lo = hi = None
        for spec in SpecifierSet(self.cuda_spec):
            if spec.operator == ">=":
                lo = spec.version
            elif spec.operator == "<":
                hi = Version(spec.version).major - 1
        return f"CUDA {lo} up to {hi}.x" if lo and hi is not None else f"CUDA {self.cuda_spec}"


def cudnn_pairing(cudnn: str) -> Optional[CudnnPairing]:
    """The release line of cuDNN ``cudnn`` ("8.9.7", or a bare major "9"), or None if unknown."""
    want = parse_version(cudnn, "cuDNN version")
    for row in load("cudnn_cuda")["rows"]:
        if want in SpecifierSet(row["cudnn_spec"]):
            return CudnnPairing(str(cudnn), row["label"], row["cuda_spec"], row.get("note", ""),
                                row["source"], row["verified"])
    return None


def _lower_major(spec: str) -> int:
    return next(Version(s.version).major for s in SpecifierSet(spec) if s.operator == ">=")


def cudnn_major_supports(major: int, cuda: str) -> Optional[bool]:
    """For a cuDNN known only by its soname major (libcudnn.so.8): does any release of that
    major support ``cuda``? None when the major is unknown."""
    rows = [r for r in load("cudnn_cuda")["rows"] if _lower_major(r["cudnn_spec"]) == major]
    if not rows:
        return None
    mm = "%d.%d" % major_minor(parse_version(cuda, "CUDA version"))
    return any(Version(mm) in SpecifierSet(r["cuda_spec"]) for r in rows)


def cudnn_major_cuda_text(major: int) -> Optional[str]:
    """The CUDA range any cuDNN ``major`` release was built for, in words: 8 -> "CUDA 10.1 up to 12.x"."""
    rows = [r for r in load("cudnn_cuda")["rows"] if _lower_major(r["cudnn_spec"]) == major]
    if not rows:
        return None
    lows = [Version(s.version) for r in rows for s in SpecifierSet(r["cuda_spec"]) if s.operator == ">="]
    highs = [Version(s.version).major - 1 for r in rows for s in SpecifierSet(r["cuda_spec"]) if s.operator == "<"]
    return f"CUDA {min(lows)} up to {max(highs)}.x"
