"""What nvidia-smi said, as plain frozen data.

Every parser (XML, table, `-q`, `-L`, CSV, bundle) returns the same `SmiReport`, so checks
never care which output a user pasted. A field is None when nvidia-smi did not print it or
printed a placeholder such as `N/A`, `[Not Supported]` or `Not Found`.
"""

from dataclasses import dataclass, fields
from typing import Any, Dict, Optional, Tuple


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(item) for item in value]
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


class _ToDict:
    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict whose keys are exactly the field names."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class SmiMigDevice(_ToDict):
    gpu_index: Optional[int]
    gi_id: Optional[int]
    ci_id: Optional[int]
    mig_index: Optional[int]
    profile: Optional[str]          # "1g.10gb", "1c.3g.71gb"; only `-L` prints it
    uuid: Optional[str]             # "MIG-..."; only `-L` prints it
    memory_total_mib: Optional[int]
    memory_used_mib: Optional[int]


@dataclass(frozen=True)
class SmiGpu(_ToDict):
    index: Optional[int]            # positional where the output does not print it (XML, -q)
    name: Optional[str]             # tables truncate it: "NVIDIA GeForce ..."
    uuid: Optional[str]
    pci_bus_id: Optional[str]       # as printed, e.g. "00000000:07:00.0" or "0000:00:03.0"
    memory_total_mib: Optional[int]
    memory_used_mib: Optional[int]
    mig_mode: Optional[str]         # "Enabled" / "Disabled" / None when N/A or absent
    serial: Optional[str] = None
    vbios_version: Optional[str] = None
    driver_model: Optional[str] = None      # "WDDM" / "TCC" on Windows
    persistence_mode: Optional[str] = None  # "Enabled" / "Disabled"
    compute_mode: Optional[str] = None
    compute_cap: Optional[str] = None       # "8.6" where the output has it (CSV compute_cap)
    temperature_c: Optional[int] = None
    power_draw_w: Optional[float] = None
    retired_pages_pending: Optional[bool] = None
    remapped_rows_pending: Optional[bool] = None
    ecc_uncorrected_volatile: Optional[int] = None
    mig_devices: Tuple[SmiMigDevice, ...] = ()
    product_brand: Optional[str] = None     # "NVIDIA" / "Tesla" (data-center boards), "GeForce", "Quadro" ...
    pcie_gen_current: Optional[int] = None  # idle GPUs drop the generation to save power
    pcie_gen_max: Optional[int] = None      # the highest this GPU and system allow, says nvidia-smi
    pcie_width_current: Optional[int] = None  # lanes: 16 for "16x"
    pcie_width_max: Optional[int] = None
    utilization_pct: Optional[int] = None   # GPU utilisation; None in MIG mode ("N/A")
    # Active clock event ("throttle") reasons by id: "gpu_idle", "hw_slowdown", "sw_thermal_slowdown" ...;
    # () when none is active, None when the output has no such section.
    clock_events: Optional[Tuple[str, ...]] = None
    remapped_rows_failure: Optional[bool] = None  # "Remapping Failure Occurred": no spare rows left


@dataclass(frozen=True)
class SmiProcess(_ToDict):
    gpu_index: Optional[int]
    pid: Optional[int]
    type: Optional[str]             # "C", "G", "C+G" (Windows), "M" ...
    name: Optional[str]
    used_memory_mib: Optional[int]  # None under Windows WDDM, which prints N/A
    gpu_uuid: Optional[str] = None
    gi_id: Optional[int] = None
    ci_id: Optional[int] = None


@dataclass(frozen=True)
class SmiReport(_ToDict):
    format: str                     # "xml" | "table" | "query" | "list" | "csv" | "bundle" | "error"
    driver_version: Optional[str]   # "535.104.05"; the KMD version on 610+ drivers
    cuda_version: Optional[str]     # "12.2"; the CUDA UMD version on 610+; None for "Not Found"
    attached_gpus: Optional[int]    # only XML, -q and CSV `count` print it
    gpus: Tuple[SmiGpu, ...]
    processes: Tuple[SmiProcess, ...]
    warnings: Tuple[str, ...] = ()  # "infoROM is corrupted at gpu 0000:...", parser notes
    errors: Tuple[str, ...] = ()    # nvidia-smi's own failure messages
    kmd_version: Optional[str] = None  # 610+ header "KMD Version"
