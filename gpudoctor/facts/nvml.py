"""The NVML readings fact: what nvidia-ml-py reported in a child process (``probes/nvml_child.py``).

Each reading in the snapshot is ``{"value": ...}`` or the NVML error that refused it
(``{"error": "NVMLError_NotSupported", ...}``: consumer GPUs have no ECC; ``NVMLError_DriverNotLoaded``:
the kernel module is not loaded, where nvidia-smi says "couldn't communicate with the NVIDIA driver").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from gpudoctor.facts import Facts, Missing, fact


def _value(entry) -> Optional[object]:
    """An NVML reading's value; None when NVML refused it ({"error": "NVMLError_NotSupported", ...})."""
    return entry.get("value") if isinstance(entry, dict) else None


@dataclass(frozen=True)
class NvmlDevice:
    """One GPU as NVML reported it (nvidia-ml-py in a child process); a reading NVML refused is None."""

    index: Optional[int]
    name: Optional[str]
    uuid: Optional[str]
    pci_bus_id: Optional[str]
    memory_total_mib: Optional[int]
    memory_used_mib: Optional[int]
    compute_cap: Optional[str]   # "8.6"
    mig_mode: Optional[int]      # nvmlDeviceGetMigMode's current mode: 1 enabled, 0 disabled


@dataclass(frozen=True)
class Nvml:
    """NVML's readings; a reading NVML refused (NVMLError_NotSupported, ...) is None."""

    driver_version: Optional[str]
    cuda_driver_version: Optional[int]   # nvmlSystemGetCudaDriverVersion: 12020 for CUDA 12.2
    device_count: Optional[int]          # nvmlDeviceGetCount
    devices: Tuple[NvmlDevice, ...]


def _nvml_device(d: Dict, position: int) -> NvmlDevice:
    mem = _value(d.get("memory")) or {}
    return NvmlDevice(d.get("index", position), _value(d.get("name")), _value(d.get("uuid")),
                      _value(d.get("pci_bus_id")), mem.get("total_mib"), mem.get("used_mib"),
                      _value(d.get("compute_cap")), _value(d.get("mig_mode")))


@fact("nvml")
def nvml(f: Facts) -> Nvml:
    """NVML's readings: driver and CUDA versions, device count, one record per GPU."""
    raw = f.snapshot.nvml
    if not raw:
        raise Missing("NVML was not recorded in this snapshot")
    driver, cuda, count = (_value(raw.get(k)) for k in ("driver_version", "cuda_driver_version", "device_count"))
    return Nvml(str(driver) if driver else None, cuda if isinstance(cuda, int) else None,
                count if isinstance(count, int) else None,
                tuple(_nvml_device(d, i) for i, d in enumerate(raw.get("devices") or [])))
