"""GPU inventory: which GPUs the driver reports."""

from __future__ import annotations

from collections import Counter

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, ok


@check("INV001", "gpu-inventory", "GPU inventory", needs=("gpus",))
def gpu_inventory(f: Facts):
    """Lists the GPUs nvidia-smi or NVML reports, with memory and compute capability."""
    gpus = f["gpus"]
    names = Counter(g.name or "unknown GPU" for g in gpus)
    title = ", ".join(f"{n} x {name}" if n > 1 else name for name, n in names.items())
    source = "nvml:devices" if not f.has("smi") else "command:" + smi_key(f)
    return ok(f"{len(gpus)} GPU(s): {title}", evidence=[Evidence(source, _describe(g)) for g in gpus])


def _describe(gpu) -> str:
    parts = [gpu.pci_bus_id or "bus id unknown", gpu.uuid or "uuid unknown",
             f"{gpu.memory_total_mib} MiB" if gpu.memory_total_mib else "memory unknown",
             f"compute {gpu.compute_cap}" if gpu.compute_cap else "compute capability unknown"]
    if gpu.mig_mode == "Enabled":
        parts.append(f"MIG on, {len(gpu.mig_devices)} instance(s)")
    return f"{gpu.label()}: " + ", ".join(parts)


CHECKS = (gpu_inventory,)
