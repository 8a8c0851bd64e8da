"""The smoke test's transfers: host<->device copies against the PCIe link, and an NCCL all-reduce.

A copy is judged against what the GPU's link should carry (nvidia-smi's maximum generation and
width, the per-lane rates in ``knowledge/data/pcie_links.json``): below the share a healthy
link gives it warns and names PCI001, which often explains it. The all-reduce is judged on
finishing and on its sums; its bus bandwidth is reported, not judged (NVLink and PCIe differ
by an order of magnitude).
"""

from __future__ import annotations

from typing import Optional

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, fail, ok, skip, warn
from gpudoctor.knowledge import node_health
from gpudoctor.measures import bus_gb_per_s, gb_per_s, link_gb_per_s, share
from gpudoctor.recipes import recipe
from gpudoctor.smi.values import bus_key
from gpudoctor_checks.smoke import EV, no_gpu


def _link(f: Facts, d):
    """nvidia-smi's GPU for a smoke-test device (same UUID or PCI bus id), or None."""
    smi = f.get("smi")
    for g in smi.gpus if smi else ():
        if (d.uuid and g.uuid and d.uuid.lower() == g.uuid.lower()) or \
                (d.pci_bus_id and bus_key(g.pci_bus_id) == bus_key(d.pci_bus_id)):
            return g
    return None


def _copy_line(d, g, expected: Optional[float]) -> str:
    h2d, d2h = gb_per_s(d.copy_bytes or 0, d.h2d_s), gb_per_s(d.copy_bytes or 0, d.d2h_s)
    text = f"GPU {d.index}: host->device {h2d or 0:.1f} GB/s, device->host {d2h or 0:.1f} GB/s"
    if expected:
        text += (f" ({share(h2d, expected):.0%}/{share(d2h, expected):.0%} of the {expected:.1f} GB/s "
                 f"a Gen{g.pcie_gen_max} x{g.pcie_width_max} link carries)")
    return text + ("" if d.pinned is not False else " (pageable memory: pinning was refused, not judged)")


@check("SMK002", "smoke-copy-bandwidth", "host<->GPU copies are as fast as each GPU's PCIe link allows",
       needs=("smoke_test",), params=("smoke",))
def smoke_copy(f: Facts):
    """Pinned host<->device copy bandwidth per GPU against the link's rate from nvidia-smi."""
    early = no_gpu(f)
    if early is not None:
        return early
    slow, lines = [], []
    for d in f["smoke_test"].devices:
        if d.copy_error:
            return fail(f"GPU {d.index} ({d.name}): host<->device copy failed: {d.copy_error[:120]}",
                        subject=d.pci_bus_id, family="gpu_smoke_failure", evidence=[Evidence(EV, d.copy_error[:300])],
                        fix=recipe("gpu_smoke_failure", f, gpu=f"GPU {d.index} ({d.name})", gpu_index=d.index,
                                   what="host<->device copy failed"))
        g = _link(f, d)
        expected = link_gb_per_s(node_health.lane_gb_per_s(g.pcie_gen_max or 0), g.pcie_width_max) if g else None
        lines.append(_copy_line(d, g, expected))
        worst = min(gb_per_s(d.copy_bytes or 0, d.h2d_s) or 0, gb_per_s(d.copy_bytes or 0, d.d2h_s) or 0)
        if expected and d.pinned is not False and worst < node_health.copy_min_fraction() * expected:
            slow.append((d, g, worst, expected))
    if slow:
        d, g, worst, expected = slow[0]
        return warn(f"GPU {d.index} ({d.name}): host<->device copies at {worst:.1f} GB/s, "
                    f"{share(worst, expected):.0%} of its Gen{g.pcie_gen_max} x{g.pcie_width_max} link",
                    subject=d.pci_bus_id, family="pcie_link_degraded", symptom_of=("PCI001", "PCI002"),
                    evidence=[Evidence(EV, line) for line in lines],
                    detail=f"A healthy link gives at least {node_health.copy_min_fraction():.0%} of its rate "
                           "to pinned copies; a narrow or slow link, a busy host or a NUMA-remote buffer gives less.",
                    fix=recipe("pcie_link_degraded", f, gpu=f"GPU {d.index} ({d.name})",
                               link=f"{worst:.1f} GB/s measured", bus_id=d.pci_bus_id or ""))
    return ok(lines[0] if len(lines) == 1 else f"{len(lines)} GPU(s) copy at their links' speed",
              evidence=[Evidence(EV, line) for line in lines])


@check("SMK003", "smoke-nccl-allreduce", "an NCCL all-reduce across the node's GPUs completes correctly",
       needs=("smoke_test",), params=("smoke",))
def smoke_allreduce(f: Facts):
    """A sum all-reduce across every visible GPU (torch.distributed, one process per GPU, a timeout)."""
    early = no_gpu(f)
    if early is not None:
        return early
    test = f["smoke_test"]
    ar = test.allreduce
    if ar is None:
        return skip(f"NCCL all-reduce: {len(test.devices)} GPU visible, nothing to reduce across")
    problem = (f"did not finish within {ar.limit_s:.0f}s" if ar.timed_out else
               f"failed: {ar.error[:120]}" if ar.error else
               "returned wrong sums" if ar.correct is False else None)
    if problem:
        return fail(f"NCCL all-reduce across {ar.world} GPUs {problem}", family="nccl_errors",
                    evidence=[Evidence(EV, ar.error or problem)], fix=recipe("nccl_errors", f))
    bus = bus_gb_per_s(ar.bytes or 0, ar.seconds, ar.world)
    best = min(ar.seconds) if ar.seconds else 0.0
    return ok(f"NCCL all-reduce across {ar.world} GPUs: {(ar.bytes or 0) >> 20} MiB in {best * 1000:.1f} ms, "
              f"bus bandwidth {bus or 0:.1f} GB/s", evidence=[Evidence(EV, f"rank 0 seconds: {list(ar.seconds)}")])


CHECKS = (smoke_copy, smoke_allreduce)
