"""The GPUs a plan is judged against: this machine's or a snapshot's, or GPUs named on the command line."""

from __future__ import annotations

from typing import List, Optional

from gpudoctor import knowledge
from gpudoctor.knowledge import memory as kb
from gpudoctor.memory.fit import GpuTarget
from gpudoctor.memory.machine import Machine
from gpudoctor.memory.units import MIB


def _generation(name: Optional[str], cc: Optional[str]):
    info = knowledge.gpu_info(name) if name else None
    return (cc or (info.compute_cap if info else None)), (info.architecture if info else None)


def machine_targets(machine: Machine, source: str) -> List[GpuTarget]:
    """Every GPU whose total memory is known; what is in use now counts against it."""
    out = []
    for g in machine.gpus:
        if g.total_mib is None:
            continue
        cc, arch = _generation(g.name, g.compute_cap)
        out.append(GpuTarget(f"GPU {g.index} ({g.name or 'unknown GPU'})", g.name, g.total_mib * MIB,
                             (g.used_mib or 0) * MIB, cc, arch, source, index=g.index))
    return out


def named_target(name: str, count: int) -> GpuTarget:
    """A GPU from gpudoctor's table of sizes; ValueError (unknown or ambiguous name) otherwise."""
    row = kb.gpu_memory(name)
    cc, arch = _generation(row.name, None)
    where = "nvidia-smi recording" if row.verified else "datasheet"
    return GpuTarget(f"{row.name} (named)", row.name, row.memory_mib * MIB, 0, cc, arch,
                     f"{where}: {row.source}", count)


def sized_target(total_bytes: int, count: int) -> GpuTarget:
    return GpuTarget(f"a GPU with {total_bytes / 2 ** 30:.2f} GiB", None, total_bytes, 0, None, None,
                     "--gpu-memory", count)


def context_for(architecture: Optional[str], lazy: bool, why: str, measured_mib: Optional[float]) -> kb.ContextEstimate:
    """This machine's measured context, else the published one for the GPU generation and loading mode."""
    if measured_mib is not None:
        return kb.ContextEstimate(measured_mib, "measured on this machine (--measure)", "--measure")
    est = kb.cuda_context(architecture, lazy)
    mode = "lazy" if lazy else "eager"
    return kb.ContextEstimate(est.mib, f"{why}: {mode} kernel loading, {est.basis}", est.source)
