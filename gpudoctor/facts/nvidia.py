"""Facts about the NVIDIA driver and GPUs: nvidia-smi, NVML, the kernel module, lspci."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

from gpudoctor.facts import Facts, Missing, command_result, fact
from gpudoctor.runner import CommandResult

# nvidia-smi outputs in order of preference; the XML is the most complete.
SMI_KEYS = ("nvidia_smi_xml", "nvidia_smi", "nvidia_smi_query", "nvidia_smi_L")


def first_line(text: str) -> str:
    for line in (text or "")[:4096].splitlines():  # a flood of output without a newline is not a line
        if line.strip():
            return line.strip()[:300]
    return ""


def smi_failure(res: CommandResult) -> str:
    """One line saying why nvidia-smi gave no data, with its own words where it printed any."""
    said = first_line(res.stdout) or first_line(res.stderr)
    return res.describe() + (f": {said}" if said and not res.ok else "")


def recorded_smi_key(f: Facts) -> Optional[str]:
    """The key of the first nvidia-smi command the snapshot recorded (XML first)."""
    return next((k for k in SMI_KEYS if f.snapshot.command(k) is not None), None)


def smi_key(f: Facts) -> str:
    """The key of the nvidia-smi output the facts were parsed from."""
    parsed = f.get("smi_parsed")
    return parsed[0] if parsed else (recorded_smi_key(f) or SMI_KEYS[0])


@fact("smi_result")
def smi_result(f: Facts) -> CommandResult:
    """The recorded `nvidia-smi -q -x` run (how it ended, even when it failed)."""
    key = recorded_smi_key(f)
    if key is None:
        raise Missing("nvidia-smi was not recorded in this snapshot")
    return f.snapshot.command(key)


@fact("smi")
def smi(f: Facts):
    """nvidia-smi's report (SmiReport), parsed from the best output that ran."""
    return f["smi_parsed"][1]


@fact("smi_parsed")
def smi_parsed(f: Facts):
    """(command key, SmiReport): which nvidia-smi output the report was read from."""
    from gpudoctor import smi as smi_parser

    reasons = []
    for key in SMI_KEYS:
        res = f.snapshot.command(key)
        if res is None:
            continue
        if not res.ran or res.timed_out:
            reasons.append(smi_failure(res))
            continue
        try:
            report = smi_parser.parse(res.stdout)
        except smi_parser.SmiParseError as exc:
            reasons.append(smi_failure(res) if not res.ok else f"`{' '.join(res.argv)}` output unreadable: {exc}")
            continue
        # A non-zero exit with a full report (exit 14: "infoROM is corrupted") still describes the GPUs.
        if report.gpus or (res.ok and not report.errors):
            return key, report
        reasons.append(smi_failure(res) if not res.ok else f"`{' '.join(res.argv)}`: {report.errors[0]}")
    raise Missing(reasons[0] if reasons else "nvidia-smi was not recorded in this snapshot")


@fact("kernel_module")
def kernel_module(f: Facts) -> Dict[str, str]:
    """The loaded NVIDIA kernel module's version, from /proc/driver/nvidia/version."""
    rec = f.snapshot.file("/proc/driver/nvidia/version")
    if rec.exists:
        # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023"
        # "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build ..."
        line = first_line(rec.content)
        m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", line)
        if m:
            return {"version": m.group(1), "open": "Open Kernel" in line, "line": line,
                    "source": "file:/proc/driver/nvidia/version"}
    sysver = f.snapshot.file("/sys/module/nvidia/version")
    if sysver.exists and sysver.content.strip():
        return {"version": sysver.content.strip(), "open": None, "line": sysver.content.strip(),
                "source": "file:/sys/module/nvidia/version"}
    raise Missing(f"/proc/driver/nvidia/version could not be read ({rec.error}): "
                  "the NVIDIA kernel module is not loaded, or this is a container or WSL")


@fact("nvml")
def nvml(f: Facts) -> Dict:
    """NVML readings as recorded (each value or its NVML error name)."""
    if not f.snapshot.nvml:
        raise Missing("NVML was not recorded in this snapshot")
    return f.snapshot.nvml


def nvml_value(entry) -> Optional[object]:
    return entry.get("value") if isinstance(entry, dict) else None


@dataclass(frozen=True)
class PciDevice:
    slot: str
    description: str
    device_id: Optional[str]       # "10de:2204"
    kernel_driver: Optional[str]   # "nvidia", "nouveau", "vfio-pci" or None
    kernel_modules: tuple


@fact("pci_gpus")
def pci_gpus(f: Facts) -> List[PciDevice]:
    """NVIDIA display controllers on the PCI bus (lspci -nnk -d 10de:), with the driver bound."""
    res = command_result(f, "lspci")
    devices: List[PciDevice] = []
    current = None
    for line in res.stdout.splitlines():
        if line and not line[0].isspace():
            current = None
            m = re.match(r"^(\S+)\s+(.*?)\s*\[(03\d\d)\]:\s*(.*)$", line)  # class 03xx: display
            if m:
                ids = re.findall(r"\[([0-9a-f]{4}:[0-9a-f]{4})\]", m.group(4))
                current = {"slot": m.group(1), "description": m.group(4), "device_id": ids[-1] if ids else None,
                           "kernel_driver": None, "kernel_modules": ()}
                devices.append(current)
        elif current is not None:
            k, _, v = line.strip().partition(":")
            if k == "Kernel driver in use":
                current["kernel_driver"] = v.strip()
            elif k == "Kernel modules":
                current["kernel_modules"] = tuple(x.strip() for x in v.split(",") if x.strip())
    return [PciDevice(**d) for d in devices]


@fact("driver_version")
def driver_version(f: Facts) -> Dict[str, str]:
    """The user-space driver version (nvidia-smi or NVML) and where it came from."""
    report = f.get("smi")
    if report is not None and report.driver_version:
        return {"version": report.driver_version, "source": f"command:{smi_key(f)}"}
    nv = f.snapshot.nvml
    v = nvml_value(nv.get("driver_version")) if nv else None
    if v:
        return {"version": str(v), "source": "nvml:driver_version"}
    raise Missing(f.why_missing("smi") or "no driver version was recorded")


@fact("cuda_driver_max")
def cuda_driver_max(f: Facts) -> str:
    """The newest CUDA the installed driver supports (nvidia-smi's "CUDA Version")."""
    report = f.get("smi")
    if report is not None and report.cuda_version:
        return report.cuda_version
    v = nvml_value((f.snapshot.nvml or {}).get("cuda_driver_version"))
    if isinstance(v, int) and v > 0:
        return f"{v // 1000}.{(v % 1000) // 10}"
    raise Missing("neither nvidia-smi nor NVML reported the driver's CUDA version")


@dataclass(frozen=True)
class Gpu:
    """One physical GPU as the driver sees it, in nvidia-smi (PCI bus) order."""

    index: int
    name: Optional[str]
    uuid: Optional[str]
    pci_bus_id: Optional[str]
    memory_total_mib: Optional[int]
    memory_used_mib: Optional[int]
    compute_cap: Optional[str]
    mig_mode: Optional[str]
    mig_devices: tuple = ()

    def label(self) -> str:
        return f"GPU {self.index} ({self.name or 'unknown GPU'})"

    def to_dict(self) -> Dict:
        d = asdict(self)
        d["mig_devices"] = [m.to_dict() if hasattr(m, "to_dict") else m for m in self.mig_devices]
        return d


@fact("gpus")
def gpus(f: Facts) -> List[Gpu]:
    """The GPU inventory: nvidia-smi first, NVML to fill gaps; compute capability from either."""
    report = f.get("smi")
    nv_devices = (f.snapshot.nvml or {}).get("devices") or []
    nv_by_bus = {str(nvml_value(d.get("pci_bus_id")) or "").lower(): d for d in nv_devices}
    out: List[Gpu] = []
    if report is not None and report.gpus:
        for i, g in enumerate(report.gpus):
            nvd = nv_by_bus.get((g.pci_bus_id or "").lower()) or (nv_devices[i] if i < len(nv_devices) else {})
            cc = getattr(g, "compute_cap", None) or nvml_value(nvd.get("compute_cap")) or _cc_from_name(g.name)
            out.append(Gpu(g.index if g.index is not None else i, g.name, g.uuid, g.pci_bus_id,
                           g.memory_total_mib, g.memory_used_mib, cc, g.mig_mode, tuple(g.mig_devices)))
        return out
    for d in nv_devices:
        mem = nvml_value(d.get("memory")) or {}
        name = nvml_value(d.get("name"))
        mig = nvml_value(d.get("mig_mode"))
        out.append(Gpu(d.get("index", len(out)), name, nvml_value(d.get("uuid")), nvml_value(d.get("pci_bus_id")),
                       mem.get("total_mib"), mem.get("used_mib"),
                       nvml_value(d.get("compute_cap")) or _cc_from_name(name),
                       None if mig is None else ("Enabled" if mig == 1 else "Disabled")))
    if out:
        return out
    raise Missing(f.why_missing("smi") or "no GPU inventory was recorded")


def _cc_from_name(name: Optional[str]) -> Optional[str]:
    if not name:
        return None
    try:
        from gpudoctor import knowledge
        info = knowledge.gpu_info(name)
    except (ImportError, AttributeError):
        return None
    return info.compute_cap if info else None
