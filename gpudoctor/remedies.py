"""Ways out of a framework build that does not fit the machine, each checked against every fact.

A fix may offer a newer driver or another build. A newer driver is no way out when the build
has no kernels for a GPU, or when a GPU's architecture cannot run that driver (its legacy
branch ends earlier); another build must run on this driver, on every GPU and on this
Python. When neither is possible the fix says so, instead of offering something that fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from gpudoctor import knowledge
from gpudoctor.framework_fixes import TorchFit, knowledge_os, torch_fit


@dataclass(frozen=True)
class WheelArchs:
    archs: Tuple[str, ...]   # ("sm_75", ..., "compute_120")
    source: str              # where the list came from, for the evidence


def torch_archs(tb, os: str) -> Optional[WheelArchs]:
    """What torch was compiled for: torch's own answer, or, when it is silent (get_arch_list() is
    empty whenever CUDA is unavailable), gpudoctor's release table for that wheel."""
    if tb.arch_list:
        return WheelArchs(tuple(tb.arch_list), "torch.cuda.get_arch_list()")
    try:
        release = knowledge.torch_release(tb.version, os)
        tag = knowledge.torch_local_variant(tb.version)
    except ValueError:
        return None
    if release is None:
        return None
    variant = release.variants.get(tag or release.default_variant)
    if variant is None or variant.cuda is None or tb.cuda is None or variant.cuda.split(".")[0] != tb.cuda.split(".")[0]:
        return None
    return WheelArchs(variant.archs, f"gpudoctor's table of torch {release.version} {variant.name} wheels "
                                     f"({variant.source})")


def uncovered(gpus: Sequence, archs: Optional[WheelArchs]) -> list:
    """The GPUs the build has no kernels for (none when the build's archs are unknown)."""
    if archs is None:
        return []
    return [g for g in gpus if g.compute_cap and not knowledge.arch_covers(archs.archs, g.compute_cap)]


def driver_blocked(gpus: Sequence, need: str) -> Optional[str]:
    """Why no GPU here can run driver ``need`` or newer, or None when every one can."""
    for g in gpus:
        if not knowledge.driver_possible(need, g.compute_cap):
            branch = knowledge.legacy_branch(g.compute_cap)
            return (f"{g.name or 'GPU ' + str(g.index)} ({branch.architecture}) is supported only up to the "
                    f"R{branch.last_branch} driver branch")
    return None


@dataclass(frozen=True)
class TorchWays:
    driver_blocked: Optional[str]   # why a newer driver cannot help; None when it can
    build: Optional[TorchFit]       # a build that fits every fact; None when none does


def torch_ways(f, tb, need: Optional[str]) -> TorchWays:
    """The ways out for torch ``tb`` on this machine: a newer driver (``need``), another build."""
    os = knowledge_os(f.get("target_os"))
    gpus = [g for g in f.get("gpus") or () if g.compute_cap]
    driver = f.get("driver_version")
    missing = uncovered(gpus, torch_archs(tb, os))
    blocked = None
    if missing:
        names = ", ".join(sorted({f"{g.name} (sm_{g.compute_cap.replace('.', '')})" for g in missing}))
        blocked = f"torch {tb.version} has no kernels for {names}, whatever the driver"
    elif need is not None:
        blocked = driver_blocked(gpus, need)
    python = getattr(f.get("torch"), "python_version", None)
    fit = torch_fit(tb.version, driver.version if driver else None, [g.compute_cap for g in gpus], os, python)
    return TorchWays(blocked, fit)
