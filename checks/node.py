"""Node requirements: checks that judge a node against thresholds an administrator asked for.

They run in ``gpudoctor check --config FILE`` and in ``gpudoctor hook`` alike (the hook is the
same engine with a selection); each declares the requirement it needs in ``params`` and
skips when nobody asked for it. Titles are short: a failing one becomes a Slurm drain reason.
"""

from __future__ import annotations

import os

from packaging.version import InvalidVersion, Version

from gpudoctor import knowledge
from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, fail, ok, unknown
from gpudoctor.framework_fixes import knowledge_os


def gpu_list(indexes) -> str:
    """"GPU 3", "GPUs 1,3", "GPUs 0-7": short enough for a drain reason on an 8-GPU node."""
    idx = sorted(set(i for i in indexes if i is not None))
    if len(idx) == 1:
        return f"GPU {idx[0]}"
    runs, start = [], None
    for a, b in zip(idx, idx[1:] + [None]):
        start = a if start is None else start
        if b != a + 1:
            runs.append(f"{start}-{a}" if a - start >= 2 else ",".join(str(x) for x in range(start, a + 1)))
            start = None
    return "GPUs " + ",".join(runs)


def mib(n: int) -> str:
    return f"{n / 1024:.1f}GiB" if n >= 1024 else f"{n}MiB"


NODE = "node_requirement"  # the diagnosis family of a threshold an administrator set


def _ev(f: Facts, text: str) -> Evidence:
    return Evidence(f"command:{smi_key(f)}", text)


@check("NOD001", "gpu-count", "the node has the GPUs it should", needs=("smi_result",), params=("gpus",))
def gpu_count(f: Facts):
    """At least ``gpus`` GPUs answer through nvidia-smi; none when nvidia-smi is not installed."""
    want = f.requirements.gpus
    res = f["smi_result"]
    if f.has("smi"):
        n = len(f["smi"].gpus)
    elif res.error == "not found":
        n = 0
    else:
        return unknown(f"cannot count GPUs: {f.why_missing('smi')} (DRV001)")
    ev = [_ev(f, f"{n} GPU(s) listed")]
    if n < want:
        return fail(f"{n} of {want} GPUs visible", evidence=ev, family=NODE)
    return ok(f"{n} GPU(s) visible, {want} required", evidence=ev)


@check("DRV005", "min-driver", "the driver is at least the required version", needs=("driver_version",),
       params=("min_driver",))
def min_driver(f: Facts):
    want, have = f.requirements.min_driver, f["driver_version"].version
    try:
        too_old = Version(have) < Version(want)
    except InvalidVersion:
        return unknown(f"driver version {have!r} cannot be compared")
    ev = [Evidence(f["driver_version"].source, f"driver {have}")]
    if too_old:
        return fail(f"driver {have} < {want}", evidence=ev, family=NODE)
    return ok(f"driver {have} >= {want}", evidence=ev)


@check("CUDA003", "driver-runs-cuda", "the driver runs the CUDA version jobs are built with",
       needs=("driver_version",), params=("cuda",))
def driver_runs_cuda(f: Facts):
    """The same rule as TRC002 and TF003: a CUDA runtime needs its major's minimum driver
    (minor-version compatibility), from the CUDA -> driver table."""
    want, have = f.requirements.cuda, f["driver_version"].version
    need = knowledge.min_driver_for_cuda(want, knowledge_os(f.get("target_os")))
    if need is None:
        return unknown(f"gpudoctor does not know which driver CUDA {want} needs")
    supports = f.get("cuda_driver_max")
    ev = [Evidence(f["driver_version"].source, f"driver {have}" + (f", CUDA {supports}" if supports else ""))]
    try:
        too_old = Version(have) < Version(need.min_driver)
    except InvalidVersion:
        return unknown(f"driver version {have!r} cannot be compared")
    if too_old:
        return fail(f"driver {have} < {need.min_driver} needed for CUDA {want}", evidence=ev,
                    family="driver_too_old")
    return ok(f"driver {have} runs CUDA {want} (needs >= {need.min_driver})", evidence=ev)


def _per_gpu(f: Facts, attr: str):
    """{index: value} for every GPU, or the indexes of GPUs that do not report ``attr``."""
    values = {g.index if g.index is not None else i: getattr(g, attr) for i, g in enumerate(f["smi"].gpus)}
    missing = [i for i, v in values.items() if v is None]
    return values, missing


@check("NOD002", "max-temp", "every GPU is cooler than the limit", needs=("smi",), params=("max_temp",))
def max_temp(f: Facts):
    limit = f.requirements.max_temp
    temps, missing = _per_gpu(f, "temperature_c")
    if missing:
        return unknown(f"{gpu_list(missing)}: temperature not reported")
    hot = {i: t for i, t in temps.items() if t > limit}
    ev = [_ev(f, ", ".join(f"GPU {i} {t}C" for i, t in sorted(temps.items())))]
    if hot:
        return fail(f"{gpu_list(hot)} at {max(hot.values())}C > {limit}C", evidence=ev, family=NODE)
    return ok(f"hottest GPU {max(temps.values(), default=0)}C <= {limit}C", evidence=ev)


@check("NOD003", "persistence-mode", "persistence mode is on for every GPU", needs=("smi",),
       params=("persistence",))
def persistence(f: Facts):
    modes, missing = _per_gpu(f, "persistence_mode")
    if missing:
        return unknown(f"{gpu_list(missing)}: persistence mode not reported")
    off = [i for i, m in modes.items() if str(m).lower() != "enabled"]
    if off:
        return fail(f"{gpu_list(off)}: persistence mode off", evidence=[_ev(f, f"{len(off)} GPU(s) Disabled")],
                    family=NODE)
    return ok("persistence mode on")


@check("NOD005", "min-free-memory", "every GPU has the free memory jobs need", needs=("smi",),
       params=("min_free_mem_mib",))
def min_free_mem(f: Facts):
    want = f.requirements.min_free_mem_mib
    totals, missing = _per_gpu(f, "memory_total_mib")
    if missing:
        return unknown(f"{gpu_list(missing)}: memory not reported")
    used = {g.index if g.index is not None else i: g.memory_used_mib or 0 for i, g in enumerate(f["smi"].gpus)}
    free = {i: totals[i] - used[i] for i in totals}
    short = {i: m for i, m in free.items() if m < want}
    ev = [_ev(f, ", ".join(f"GPU {i} {mib(m)} free" for i, m in sorted(free.items())))]
    if short:
        return fail(f"{gpu_list(short)}: {mib(min(short.values()))} free < {mib(want)}", evidence=ev,
                    family=NODE)
    return ok(f"least free {mib(min(free.values(), default=0))} >= {mib(want)}", evidence=ev)


CHECKS = (gpu_count, min_driver, driver_runs_cuda, max_temp, persistence, min_free_mem)
