"""Judge a plan against GPUs: does it fit, with what headroom, and what is the largest batch.

A target is a GPU of this machine or of a recorded snapshot (its total and what other
processes use now, from the facts layer via ``machine``), or a GPU named with ``--gpu``
(its size from ``knowledge/data/gpu_memory.json``, nothing in use). Each loses its CUDA
context: measured by ``--measure``, else the published figure for its generation and
the CUDA loading mode (``knowledge/data/cuda_context.json``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional

from gpudoctor.knowledge.memory import ContextEstimate
from gpudoctor.memory.plan import Plan
from gpudoctor.memory.units import MIB


@dataclass(frozen=True)
class GpuTarget:
    label: str                     # "GPU 0 (NVIDIA GeForce RTX 3090)", "NVIDIA H100 80GB HBM3 (named)"
    name: Optional[str]
    total_bytes: int
    used_bytes: int                # in use by processes now (0 for a named GPU)
    compute_cap: Optional[str]
    architecture: Optional[str]
    source: str                    # where the size came from
    count: int = 1                 # a named GPU stands for as many GPUs as the job asks for
    index: Optional[int] = None    # nvidia-smi's index for a GPU of the machine


@dataclass(frozen=True)
class Verdict:
    target: GpuTarget
    context: ContextEstimate
    available_bytes: float         # total - used now - CUDA context
    need_bytes: float              # the plan's bytes on one GPU
    max_batch: Optional[int]       # None: nothing in the plan grows with the batch

    @property
    def fits(self) -> bool:
        return self.need_bytes <= self.available_bytes

    @property
    def headroom_bytes(self) -> float:
        return self.available_bytes - self.need_bytes


def judge(plan: Plan, target: GpuTarget, context: ContextEstimate) -> Verdict:
    available = target.total_bytes - target.used_bytes - context.mib * MIB
    return Verdict(target, context, available, plan.model_bytes, largest_batch(plan, available))


def largest_batch(plan: Plan, available: float) -> Optional[int]:
    if plan.per_sample <= 0:
        return None
    return max(0, math.floor((available - plan.fixed_bytes) / plan.per_sample))


def fits_all(verdicts: List[Verdict], gpus_needed: int) -> Optional[bool]:
    """Whether enough of the GPUs hold the plan; None when no GPU is known."""
    if not verdicts:
        return None
    return sum(v.target.count for v in verdicts if v.fits) >= gpus_needed


def binding(verdicts: List[Verdict], gpus_needed: int) -> Optional[Verdict]:
    """The GPU that decides: the N-th roomiest when the job needs N GPUs (the smallest if fewer exist)."""
    ranked = [v for v in sorted(verdicts, key=lambda v: -v.available_bytes) for _ in range(v.target.count)]
    if not ranked:
        return None
    return ranked[min(gpus_needed, len(ranked)) - 1]
