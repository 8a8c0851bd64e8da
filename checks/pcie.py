"""PCIe links: a GPU whose link trained narrower (or, under load, slower) than it can.

nvidia-smi prints each link's current and maximum generation and width; its maximum is the
most this GPU and system allow. An idle GPU lowers the generation to save power, so the
generation is judged only while the GPU is busy; a narrower width is not a power-saving state.
PCI001 warns on any narrow link of a data-center board; on other boards a slot wired x8 or x4 is the
usual cause and is only noted, while x1/x2 risers and a slow generation under load are warned about; PCI002 is the width rule as a requirement (``--pcie-width``): the hook drains a node whose
links are narrow, whatever the board.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import List, Tuple

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, fail, ok, skip, unknown, warn
from gpudoctor.knowledge import node_health
from gpudoctor.measures import link_gb_per_s
from gpudoctor.recipes import recipe
from gpudoctor_checks.node import gpu_list


def link_gb(gen, width) -> str:
    rate = link_gb_per_s(node_health.lane_gb_per_s(gen or 0), width)
    return f"{rate:.1f} GB/s" if rate else "an unknown rate"


def link_problem(g, judge_gen: bool = True, server: bool = True) -> str:
    """What is wrong with one GPU's link ("x8 of x16", "Gen1 of Gen4 at 95% load"), or "".
    ``server=False``: a width the slot's own wiring explains (down to pcie_links.json's
    non_server_min_width) is not a problem; the generation under load still is."""
    out = []
    narrow = g.pcie_width_current and g.pcie_width_max and g.pcie_width_current < g.pcie_width_max
    if narrow and (server or g.pcie_width_current < node_health.non_server_min_width()):
        out.append(f"x{g.pcie_width_current} of x{g.pcie_width_max}")
    busy = (g.utilization_pct or 0) >= node_health.busy_utilization_pct()
    if judge_gen and busy and g.pcie_gen_current and g.pcie_gen_max and g.pcie_gen_current < g.pcie_gen_max:
        out.append(f"Gen{g.pcie_gen_current} of Gen{g.pcie_gen_max} at {g.utilization_pct}% load")
    return ", ".join(out)


def _links(f: Facts) -> List[Tuple[int, object]]:
    """(index, GPU) for the GPUs whose output prints a link width."""
    gpus = f["smi"].gpus
    return [(g.index if g.index is not None else i, g) for i, g in enumerate(gpus)
            if g.pcie_width_current and g.pcie_width_max]


def _evidence(f: Facts, links) -> List[Evidence]:
    return [Evidence(f"command:{smi_key(f)}",
                     f"GPU {i} {g.pci_bus_id or ''}: Gen{g.pcie_gen_current} of Gen{g.pcie_gen_max}, "
                     f"x{g.pcie_width_current} of x{g.pcie_width_max}, "
                     f"{'?' if g.utilization_pct is None else g.utilization_pct}% busy") for i, g in links]


def _judge(f: Facts, make, judge_gen: bool, server: bool = True):
    """One finding for every GPU with a problem (grouped by problem), or None."""
    links = _links(f)
    groups: "OrderedDict[str, List[int]]" = OrderedDict()
    for i, g in links:
        problem = link_problem(g, judge_gen, server)
        if problem:
            groups.setdefault(problem, []).append(i)
    if not groups:
        return None
    first_index = next(iter(groups.values()))[0]
    g = next(g for i, g in links if i == first_index)
    label = f"GPU {first_index} ({g.name or 'unknown GPU'})"
    # A link trained down under load runs at its current generation; an idle one may drop it to save power,
    # so a narrow link alone is rated at the generation it can reach.
    gen = g.pcie_gen_current if f"Gen{g.pcie_gen_current} of" in next(iter(groups)) else g.pcie_gen_max
    return make("; ".join(f"{gpu_list(idx)}: PCIe link {problem}" for problem, idx in groups.items()),
                subject=g.pci_bus_id, family="pcie_link_degraded", evidence=_evidence(f, links),
                detail=f"{label} moves host<->GPU data at most at {link_gb(gen, g.pcie_width_current)} "
                       f"per direction instead of {link_gb(g.pcie_gen_max, g.pcie_width_max)}.",
                fix=recipe("pcie_link_degraded", f, gpu=label, link=next(iter(groups)), bus_id=g.pci_bus_id or ""))


@check("PCI001", "pcie-link", "every GPU's PCIe link is as wide (and, under load, as fast) as it can be",
       needs=("smi",))
def pcie_link(f: Facts):
    """Current vs maximum PCIe width per GPU, and generation while the GPU is busy (idle GPUs lower it).
    A data-center board sits in a slot built for its full width, so a narrow link there is a fault (a
    riser, seating, a bad slot): a warning. On GeForce, workstation and laptop boards the slot's own
    width (x8 for a second slot, x4 through a chipset, x8 in many laptops) is the usual cause: noted, not
    a problem, down to x4; x1/x2 (risers) are warned about. `--pcie-width` (PCI002) still requires the
    full width anywhere."""
    server = any(node_health.is_server_brand(g.product_brand) for g in f["smi"].gpus)
    problem = _judge(f, warn, judge_gen=True, server=server)
    if problem is not None:
        return problem
    links = _links(f)
    if not links:
        return skip("PCIe links: this nvidia-smi output does not print them (the table, -L and CSV do not)")
    slot = [i for i, g in links if g.pcie_width_current < g.pcie_width_max]
    idle = [i for i, g in links if (g.pcie_gen_current or 0) < (g.pcie_gen_max or 0)]
    full = len(links) - len(slot)
    head = (f"{full} GPU(s) at full PCIe width" if not slot else
            f"{gpu_list(slot)} narrower than the GPU allows (the slot's wiring on a non-server board: noted, "
            f"not judged)" + (f", {full} at full width" if full else ""))
    note = f"; {gpu_list(idle)} idle at a lower generation (power saving, not judged)" if idle else ""
    return ok(head + note, evidence=_evidence(f, links))


@check("PCI002", "pcie-full-width", "every GPU's PCIe link runs at its full width", needs=("smi",),
       params=("pcie_width",))
def pcie_full_width(f: Facts):
    """The width half of PCI001 as a requirement: a narrow link fails (the hook drains). The generation
    is not judged: before a job the GPUs are idle and run a lower one by design."""
    problem = _judge(f, fail, judge_gen=False)
    if problem is not None:
        return problem
    links = _links(f)
    silent = sorted(set(g.index if g.index is not None else i for i, g in enumerate(f["smi"].gpus))
                    - {i for i, _ in links})
    if silent:
        return unknown(f"{gpu_list(silent)}: PCIe link width not reported")
    return ok(f"{len(links)} GPU(s) at full PCIe width", evidence=_evidence(f, links))


CHECKS = (pcie_link, pcie_full_width)
