"""Facts about which GPUs a CUDA program sees: CUDA_VISIBLE_DEVICES, device order, other processes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

from gpudoctor import visible_devices
from gpudoctor.facts import Facts, Missing, fact
from gpudoctor.facts.nvidia import smi_key


@fact("visible_devices_spec")
def visible_devices_spec(f: Facts) -> visible_devices.Spec:
    """CUDA_VISIBLE_DEVICES as CUDA reads it (always present; mode "all" when unset)."""
    return visible_devices.parse(f.env.get("CUDA_VISIBLE_DEVICES"))


@fact("visible_devices")
def visible_devices_map(f: Facts) -> visible_devices.Mapping:
    """CUDA index -> physical GPU under CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, in CUDA's order:
    the order torch saw when it was probed with every GPU visible, else modelled (visible_devices)."""
    gpus = f["gpus"]
    spec = f["visible_devices_spec"]
    tb = f.get("torch_build")
    observed = [d.uuid for d in tb.devices] if tb is not None and tb.available and not spec.is_set else None
    return visible_devices.resolve(spec, gpus, f.env.get("CUDA_DEVICE_ORDER"), observed)


@dataclass(frozen=True)
class GpuPresence:
    """Whether the machine has an NVIDIA GPU at all, and what says so."""

    present: bool
    count: int       # GPUs (or PCI devices, or /dev/nvidiaN nodes) found; 0 when none
    source: str      # evidence source: "command:nvidia_smi_xml", "nvml:devices", "command:lspci", "listing:/dev"
    evidence: str    # what that source shows, or which sources found nothing
    host_only: bool = False  # inside a container: the host's kernel has NVIDIA GPUs, none was passed in


@fact("nvidia_gpu_present")
def nvidia_gpu_present(f: Facts) -> GpuPresence:
    """Whether this machine has an NVIDIA GPU at all, and the evidence (driver, PCI bus, /dev)."""
    gpus = f.get("gpus")
    if gpus:
        names = ", ".join(g.label() for g in gpus[:4]) + (" ..." if len(gpus) > 4 else "")
        source = f"command:{smi_key(f)}" if f.has("smi") else "nvml:devices"
        return GpuPresence(True, len(gpus), source, names)
    pci = f.get("pci_gpus")
    if pci:
        return GpuPresence(True, len(pci), "command:lspci", "; ".join(f"{d.slot} {d.description}" for d in pci[:4]))
    dev = f.get("dev_nodes")
    nodes = [n for n in dev or () if re.fullmatch(r"nvidia\d+", n)]
    if nodes:
        return GpuPresence(True, len(nodes), "listing:/dev", " ".join(f"/dev/{n}" for n in nodes))
    host = _kernel_gpus(f)
    if host is not None:
        return host
    looked = [what for what, known in (("nvidia-smi", f.has("smi_result")),
                                       ("lspci", f.snapshot.command("lspci") is not None),
                                       ("/dev", dev is not None)) if known]
    if not looked:
        raise Missing("neither nvidia-smi, lspci nor /dev was recorded: cannot tell whether there is a GPU")
    return GpuPresence(False, 0, "listing:/dev" if "/dev" in looked else "command:lspci",
                       f"no NVIDIA GPU found by {', '.join(looked)}")


_MODEL = re.compile(r"^Model:\s*(.+?)\s*$", re.M)


def _kernel_gpus(f: Facts) -> Optional[GpuPresence]:
    """GPUs the loaded NVIDIA kernel module knows (/proc/driver/nvidia/gpus/<bus>/information). Inside a
    container procfs is the host kernel's: they are the host's GPUs, and none reached the container."""
    infos = f.snapshot.glob("/proc/driver/nvidia/gpus/*/information")
    module = f.get("kernel_module")
    if not infos and module is None:
        return None
    where = f.get("container")
    inside = bool(where and where.inside)
    models = [m.group(1) for r in infos for m in [_MODEL.search(r.content or "")] if m]
    if infos:
        what = "; ".join(f"{r.path.split('/')[-2]} {m}" for r, m in zip(infos, models or ["?"] * len(infos)))
        return GpuPresence(True, len(infos), "file:/proc/driver/nvidia/gpus", what, host_only=inside)
    return GpuPresence(True, 1, module.source, module.line, host_only=inside)


@fact("gpu_processes")
def gpu_processes(f: Facts) -> Tuple:
    """Processes nvidia-smi lists on each GPU (SmiProcess: gpu_index, pid, type, name, used_memory_mib)."""
    report = f["smi"]
    if report.format in ("list", "csv"):
        raise Missing(f"the recorded nvidia-smi output ({report.format}) has no process list")
    return tuple(report.processes)


@fact("process_owners")
def process_owners(f: Facts) -> Dict[int, str]:
    """User names of the GPU processes, as recorded live (nvidia-smi does not print them)."""
    owners = f.snapshot.meta.get("process_owners")
    if not isinstance(owners, dict):
        raise Missing("process owners were not recorded in this snapshot (a live run records them)")
    return {int(pid): str(user) for pid, user in owners.items() if str(pid).isdigit()}
