"""The arithmetic behind the smoke test's verdicts: pure functions of measured numbers.

The child process measures (seconds, bytes, the largest difference between the GPU's and the
CPU's product); these turn the measurements into the figures the checks judge and print.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

GB = 1e9  # bandwidths are decimal GB/s, as PCIe rates and nccl-tests print them


def relative_error(max_abs_diff: Optional[float], max_abs_ref: Optional[float]) -> float:
    """max|gpu - cpu| / max|cpu|; inf when the GPU gave NaN/inf or nothing to compare."""
    if max_abs_diff is None or max_abs_ref is None:
        return math.inf
    if not (math.isfinite(max_abs_diff) and math.isfinite(max_abs_ref)):
        return math.inf
    if max_abs_ref == 0:
        return 0.0 if max_abs_diff == 0 else math.inf
    return max_abs_diff / max_abs_ref


def gb_per_s(nbytes: float, seconds: Sequence[float]) -> Optional[float]:
    """The best rate of repeated transfers of ``nbytes``: the fastest run is the least disturbed."""
    runs = [s for s in seconds if s and s > 0]
    return nbytes / min(runs) / GB if runs else None


def link_gb_per_s(lane_rate: Optional[float], width: Optional[int]) -> Optional[float]:
    """A link's rate per direction: one lane's rate times the lanes (Gen4 x16: 1.969 * 16 = 31.5)."""
    if not lane_rate or not width:
        return None
    return lane_rate * width


def share(measured: Optional[float], expected: Optional[float]) -> Optional[float]:
    """measured / expected, or None when either is unknown."""
    if not measured or not expected:
        return None
    return measured / expected


def bus_gb_per_s(nbytes: float, seconds: Sequence[float], ranks: int) -> Optional[float]:
    """An all-reduce's bus bandwidth (nccl-tests' busbw): algorithm bandwidth * 2(n-1)/n."""
    alg = gb_per_s(nbytes, seconds)
    if alg is None or ranks < 1:
        return None
    return alg * 2 * (ranks - 1) / ranks
