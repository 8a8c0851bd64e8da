"""Clock event ("throttle") reasons: a GPU held down by heat or by its power supply.

nvidia-smi lists why each GPU's clocks are below what was asked. Which reasons mean trouble
(HW slowdown, HW thermal, HW power brake, SW thermal) and which are normal operation (idle,
application clocks, the power cap under load, sync boost) is data
(``knowledge/data/clock_event_reasons.json``). CLK001 warns in every report; CLK002 is the same
rule as a requirement (``--no-slowdown``): the hook drains a node whose GPUs are being slowed.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import List

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, fail, ok, skip, unknown, warn
from gpudoctor.knowledge import node_health
from gpudoctor.recipes import recipe
from gpudoctor_checks.node import gpu_list


def trouble(reasons) -> List[str]:
    """The reasons among ``reasons`` that say cooling or power is failing, as nvidia-smi labels them."""
    found = [node_health.clock_reason(r) for r in reasons or ()]
    return [r.label for r in found if r is not None and r.trouble]


def _reported(f: Facts):
    return [(g.index if g.index is not None else i, g) for i, g in enumerate(f["smi"].gpus)
            if g.clock_events is not None]


def _judge(f: Facts, make):
    gpus = _reported(f)
    groups: "OrderedDict[str, List[int]]" = OrderedDict()
    for i, g in gpus:
        labels = trouble(g.clock_events)
        if labels:
            groups.setdefault(", ".join(labels), []).append(i)
    if not groups:
        return None
    first = next(iter(groups.values()))[0]
    g = next(g for i, g in gpus if i == first)
    meanings = [node_health.clock_reason(r) for r in g.clock_events]
    what = "; ".join(m.meaning for m in meanings if m is not None and m.trouble)
    temp = f", {g.temperature_c}C" if g.temperature_c is not None else ""
    return make("; ".join(f"{gpu_list(idx)}: {labels} active" for labels, idx in groups.items()),
                subject=g.pci_bus_id, family="gpu_slowdown", detail=f"GPU {first}{temp} reports: {what}.",
                evidence=[Evidence(f"command:{smi_key(f)}", f"GPU {i}: {', '.join(g.clock_events) or 'none active'}"
                                   + (f", {g.temperature_c}C" if g.temperature_c is not None else ""))
                          for i, g in gpus],
                fix=recipe("gpu_clocks_slowdown", f, gpu=f"GPU {first} ({g.name or 'unknown GPU'})",
                           gpu_index=first, what=what))


@check("CLK001", "clock-slowdown", "no GPU's clocks are held down by heat or its power supply", needs=("smi",))
def clock_slowdown(f: Facts):
    """Active clock event reasons per GPU; the trouble ones (HW/SW thermal, HW slowdown, power brake) warn."""
    problem = _judge(f, warn)
    if problem is not None:
        return problem
    gpus = _reported(f)
    if not gpus:
        return skip("clock event reasons: this nvidia-smi output does not print them (the table, -L and CSV do not)")
    benign = sorted({r for _, g in gpus for r in g.clock_events})
    return ok(f"no thermal or power slowdown on {len(gpus)} GPU(s)" + (f" (active: {', '.join(benign)})" if benign else ""))


@check("CLK002", "no-clock-slowdown", "no GPU is being slowed by heat or its power supply", needs=("smi",),
       params=("no_slowdown",))
def no_clock_slowdown(f: Facts):
    """CLK001's rule as a requirement: a thermal or power slowdown fails (the hook drains)."""
    problem = _judge(f, fail)
    if problem is not None:
        return problem
    gpus = _reported(f)
    silent = len(f["smi"].gpus) - len(gpus)
    if silent:
        return unknown(f"{silent} GPU(s) report no clock event reasons")
    return ok(f"no thermal or power slowdown on {len(gpus)} GPU(s)")


CHECKS = (clock_slowdown, no_clock_slowdown)
