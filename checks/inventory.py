"""GPU inventory: which GPUs the driver reports."""

from __future__ import annotations

from collections import Counter

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, ok


@check("INV001", "gpu-inventory", "GPU inventory", needs=("gpus",))
def gpu_inventory(f: Facts):
    """Lists the GPUs nvidia-smi or NVML reports, with memory and compute capability."""
    gpus = f["gpus"]
    names = Counter(g.name or "unknown GPU" for g in gpus)
    title = ", ".join(f"{n} x {name}" if n > 1 else name for name, n in names.items())
    ev = [Evidence("command:nvidia_smi_xml" if f.has("smi") else "nvml:devices",
                   f"{g.label()}: {g.pci_bus_id or '?'}, {g.memory_total_mib or '?'} MiB, "
                   f"compute {g.compute_cap or '?'}") for g in gpus]
    return ok(f"{len(gpus)} GPU(s): {title}", evidence=ev)


CHECKS = (gpu_inventory,)
