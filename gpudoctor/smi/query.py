"""`nvidia-smi -q`: the indented "NVSMI LOG" text report.

Lines are `Key : value` or bare section names (`FB Memory Usage`), nested by indentation;
each GPU starts at column 0 with `GPU 00000000:07:00.0`. The text is read into a small
tree first, so a value is found by its section path whatever else a driver adds around it.
Linear in its input at any depth of indentation (no recursion).
"""

import re
from typing import List, Optional, Tuple

from .errors import SmiParseError, find_errors, find_warnings
from .model import SmiGpu, SmiMigDevice, SmiProcess, SmiReport
from .values import clean, to_bool, to_float, to_int, to_mib, to_mode, to_version

_GPU_HEADER = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")


class _Node:
    __slots__ = ("key", "value", "children")

    def __init__(self, key: str, value: Optional[str]):
        self.key, self.value, self.children = key, value, []

    def get(self, *paths: str) -> Optional[str]:
        """The first real value among the `/`-separated paths, e.g. "FB Memory Usage/Total"."""
        for path in paths:
            node = self
            for part in path.split("/"):
                node = next((c for c in node.children if c.key == part), None)
                if node is None:
                    break
            if node is not None and clean(node.value) is not None:
                return clean(node.value)
        return None

    def find_all(self, key: str) -> List["_Node"]:
        """Every node named `key` below this one (not below a match), depth first, in file
        order. A loop, not recursion: text indented 1,000 levels deep is still a tree."""
        found, todo = [], list(reversed(self.children))
        while todo:
            node = todo.pop()
            if node.key == key:
                found.append(node)
            else:
                todo.extend(reversed(node.children))
        return found


def _tree(lines: List[str]) -> _Node:
    """Indentation to nesting. Driver 460 pads section names with trailing blanks
    (`Single Bit            `); key and value are split at the first ` : `."""
    root, stack = _Node("", None), []
    for line in lines:
        if not line.strip() or line.lstrip().startswith("="):
            continue
        indent = len(line) - len(line.lstrip(" "))
        key, sep, value = line.strip().partition(":")
        node = _Node(key.strip(), value.strip() if sep else None)
        if _GPU_HEADER.match(line.strip()):
            node, indent = _Node("GPU", line.strip()[4:].strip()), 0
        while stack and stack[-1][0] >= indent:
            stack.pop()
        (stack[-1][1] if stack else root).children.append(node)
        stack.append((indent, node))
    return root


def _ecc_uncorrected(gpu: _Node) -> Optional[int]:
    """Volatile uncorrected ECC: `Double Bit/Total` up to 470; SRAM + DRAM
    `Uncorrectable` counts from 510 on (570+ split SRAM into Parity and SEC-DED)."""
    total = to_int(gpu.get("ECC Errors/Volatile/Double Bit/Total"))
    if total is not None:
        return total
    ecc = next((c for c in gpu.children if c.key == "ECC Errors"), None)
    volatile = next((c for c in ecc.children if c.key == "Volatile"), None) if ecc else None
    parts = [to_int(c.value) for c in (volatile.children if volatile else []) if "Uncorrectable" in c.key]
    parts = [p for p in parts if p is not None]
    return sum(parts) if parts else None


# `-q` labels of the clock event reasons -> the ids the XML uses (`clocks_event_reason_<id>`).
_REASONS = {"Idle": "gpu_idle", "Applications Clocks Setting": "applications_clocks_setting",
            "SW Power Cap": "sw_power_cap", "HW Slowdown": "hw_slowdown", "HW Thermal Slowdown": "hw_thermal_slowdown",
            "HW Power Brake Slowdown": "hw_power_brake_slowdown", "Sync Boost": "sync_boost",
            "SW Thermal Slowdown": "sw_thermal_slowdown", "Display Clock Setting": "display_clocks_setting"}


def _clock_events(gpu: _Node) -> Optional[Tuple[str, ...]]:
    """Active reasons under `Clocks Throttle Reasons` (up to 530) or `Clocks Event Reasons` (535+);
    the HW thermal and power-brake slowdowns are nested under `HW Slowdown`. 570+ also print
    `Clocks Event Reasons Counters` (microseconds), which is not a state."""
    section = next((c for c in gpu.children if c.key in ("Clocks Event Reasons", "Clocks Throttle Reasons")), None)
    if section is None:
        return None
    states, stack = {}, list(section.children)
    while stack:
        node = stack.pop(0)
        stack[:0] = node.children
        if node.key in _REASONS and clean(node.value) is not None:
            states[_REASONS[node.key]] = node.value.strip().lower() == "active"
    return tuple(r for r, on in states.items() if on) if states else None


def _lanes(text: Optional[str]) -> Optional[int]:
    """`16x` -> 16."""
    return to_int((text or "").rstrip("xX "))


def _mig_devices(gpu: _Node, index: int) -> Tuple[SmiMigDevice, ...]:
    """`MIG Device` entries: under `MIG Devices` up to 535, directly under the GPU on 590.
    `-q` prints no profile name and no MIG UUID (`-L` does)."""
    return tuple(SmiMigDevice(
        gpu_index=index, gi_id=to_int(dev.get("GPU Instance ID")),
        ci_id=to_int(dev.get("Compute Instance ID")), mig_index=to_int(dev.get("Index")),
        profile=None, uuid=None,
        memory_total_mib=to_mib(dev.get("FB Memory Usage/Total", "Shared FB Memory Usage/Total")),
        memory_used_mib=to_mib(dev.get("FB Memory Usage/Used", "Shared FB Memory Usage/Used")),
    ) for dev in gpu.find_all("MIG Device"))


def _gpu(gpu: _Node, index: int) -> SmiGpu:
    return SmiGpu(
        index=index, name=gpu.get("Product Name"), uuid=gpu.get("GPU UUID"),
        pci_bus_id=gpu.get("PCI/Bus Id") or clean(gpu.value),
        memory_total_mib=to_mib(gpu.get("FB Memory Usage/Total")),
        memory_used_mib=to_mib(gpu.get("FB Memory Usage/Used")),
        mig_mode=gpu.get("MIG Mode/Current"),
        serial=gpu.get("Serial Number"), vbios_version=gpu.get("VBIOS Version"),
        driver_model=gpu.get("Driver Model/Current"),
        persistence_mode=to_mode(gpu.get("Persistence Mode")),
        compute_mode=gpu.get("Compute Mode"),
        temperature_c=to_int(gpu.get("Temperature/GPU Current Temp")),
        # "Power Readings" up to 525, "GPU Power Readings" from 535 on.
        power_draw_w=to_float(gpu.get(
            "Power Readings/Power Draw", "GPU Power Readings/Power Draw",
            "GPU Power Readings/Instantaneous Power Draw", "GPU Power Readings/Average Power Draw")),
        retired_pages_pending=to_bool(gpu.get(
            "Retired Pages/Pending Page Blacklist", "Retired Pages/Pending Page Retirement",
            "Retired Pages/Pending")),
        remapped_rows_pending=to_bool(gpu.get("Remapped Rows/Pending")),
        ecc_uncorrected_volatile=_ecc_uncorrected(gpu),
        mig_devices=_mig_devices(gpu, index),
        product_brand=gpu.get("Product Brand"),
        pcie_gen_current=to_int(gpu.get(_LINK + "PCIe Generation/Current")),
        pcie_gen_max=to_int(gpu.get(_LINK + "PCIe Generation/Max")),
        pcie_width_current=_lanes(gpu.get(_LINK + "Link Width/Current")),
        pcie_width_max=_lanes(gpu.get(_LINK + "Link Width/Max")),
        utilization_pct=to_int(gpu.get("Utilization/Gpu", "Utilization/GPU")),  # "GPU" from 590 on
        clock_events=_clock_events(gpu),
        remapped_rows_failure=to_bool(gpu.get("Remapped Rows/Remapping Failure Occurred")),
    )


_LINK = "PCI/GPU Link Info/"


def _processes(gpu: _Node, index: int, uuid: Optional[str]) -> List[SmiProcess]:
    """`Processes : None`, or a flat run of `GPU instance ID`, `Compute instance ID`
    (450+) and `Process ID` entries whose Type/Name/Used GPU Memory are nested under it."""
    section = next((c for c in gpu.children if c.key == "Processes"), None)
    found, ids = [], {}
    for node in section.children if section else []:
        if node.key in ("GPU instance ID", "Compute instance ID"):
            ids[node.key] = to_int(node.value)
        elif node.key == "Process ID":
            found.append(SmiProcess(
                gpu_index=index, pid=to_int(node.value), type=node.get("Type"),
                name=node.get("Name"), used_memory_mib=to_mib(node.get("Used GPU Memory")),
                gpu_uuid=uuid, gi_id=ids.get("GPU instance ID"), ci_id=ids.get("Compute instance ID")))
            ids = {}
    return found


def parse_query(text: str) -> SmiReport:
    """Parse `nvidia-smi -q`. The 610 driver prints `Driver Version : 610.57.04 [Deprecated;
    ...]` and adds `KMD Version` / `CUDA UMD Version`, which are preferred when present."""
    lines, notes = text.splitlines(), ()
    logs = [i for i, line in enumerate(lines) if "NVSMI LOG" in line]
    if len(logs) > 1:  # several runs in one file: read the first
        lines, notes = lines[:logs[1]], ("%d `nvidia-smi -q` reports found; only the first was read" % len(logs),)
    root = _tree(lines)
    gpus = [n for n in root.children if n.key == "GPU"]
    driver = root.get("KMD Version", "Driver Version")
    if not gpus and driver is None and root.get("Attached GPUs") is None:
        raise SmiParseError("no `nvidia-smi -q` report found (no Driver Version, no GPU sections)")
    parsed = [_gpu(g, i) for i, g in enumerate(gpus)]
    return SmiReport(
        format="query",
        driver_version=to_version(driver),
        cuda_version=to_version(root.get("CUDA UMD Version", "CUDA Version")),
        attached_gpus=to_int(root.get("Attached GPUs")),
        gpus=tuple(parsed),
        processes=tuple(p for i, g in enumerate(gpus) for p in _processes(g, i, parsed[i].uuid)),
        warnings=find_warnings(lines) + notes, errors=find_errors(lines),
        kmd_version=to_version(root.get("KMD Version")),
    )
