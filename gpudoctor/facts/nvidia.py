"""Facts about the NVIDIA driver and GPUs: nvidia-smi, NVML, the kernel module, lspci."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Tuple

from gpudoctor import smi as smi_parser
from gpudoctor.facts import Facts, Missing, NotApplicable, command_result, fact
from gpudoctor.runner import CommandResult

# nvidia-smi outputs in order of preference; the XML is the most complete.
SMI_KEYS = ("nvidia_smi_xml", "nvidia_smi", "nvidia_smi_query", "nvidia_smi_L")
# What each command prints when it works (besides its failure messages): output of another
# format came from something that is not nvidia-smi (a stub, a wrapper printing a banner).


def expected_format(argv) -> str:
    """The output format an nvidia-smi command line prints (the parser refuses anything else): `-q -x` XML,
    `--query-gpu=... --format=csv` CSV, `-q` text, `-L` a listing, no arguments the table."""
    args = [str(a) for a in argv[1:]]
    if "-x" in args or "--xml-format" in args:
        return "xml"
    if any(a.startswith(("--query-", "--format=csv")) for a in args):
        return "csv"
    if "-q" in args or "--query" in args:
        return "query"
    if "-L" in args or "--list-gpus" in args:
        return "list"
    return "table"


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
    """The key of the first nvidia-smi command the snapshot recorded (XML first), or None."""
    return f.get("smi_result_key")


def smi_key(f: Facts) -> str:
    """The key of the nvidia-smi output the facts were parsed from."""
    parsed = f.get("smi_parsed")
    return parsed.key if parsed else (recorded_smi_key(f) or SMI_KEYS[0])


@dataclass(frozen=True)
class SmiOutput:
    """The nvidia-smi output the ``smi`` report was read from."""

    key: str                 # the command key: "nvidia_smi_xml", "nvidia_smi", "nvidia_smi_query", "nvidia_smi_L"
    report: "smi_parser.SmiReport"
    result: CommandResult    # how that command ended (a report printed with exit 14 still counts)


@fact("smi_result_key")
def smi_result_key(f: Facts) -> str:
    """Which nvidia-smi command ``smi_result`` is: the first one recorded, "nvidia_smi_xml" first."""
    key = next((k for k in SMI_KEYS if f.snapshot.command(k) is not None), None)
    if key is None:
        raise Missing("nvidia-smi was not recorded in this snapshot")
    return key


@fact("smi_result")
def smi_result(f: Facts) -> CommandResult:
    """The recorded `nvidia-smi -q -x` run (how it ended, even when it failed)."""
    return f.snapshot.command(f["smi_result_key"])


@fact("smi")
def smi(f: Facts):
    """nvidia-smi's report (SmiReport), parsed from the best output that ran."""
    return f["smi_parsed"].report


@fact("smi_parsed")
def smi_parsed(f: Facts) -> SmiOutput:
    """Which nvidia-smi output the report was read from (SmiOutput: key, report, result)."""
    reasons, absent = [], []
    for key in SMI_KEYS:
        res = f.snapshot.command(key)
        if res is None:
            continue
        absent.append(res.error == "not found")
        if not res.ran or res.timed_out:
            reasons.append(smi_failure(res))
            continue
        try:
            report = smi_parser.parse(res.stdout, expect=expected_format(res.argv))
        except smi_parser.SmiParseError as exc:
            reasons.append(smi_failure(res) if not res.ok else f"`{' '.join(res.argv)}` printed something "
                                                               f"unreadable: {exc}")
            continue
        # A non-zero exit with a full report (exit 14: "infoROM is corrupted") still describes the GPUs.
        if report.gpus or (res.ok and not report.errors):
            return SmiOutput(key, report, res)
        reasons.append(smi_failure(res) if not res.ok else f"`{' '.join(res.argv)}`: {report.errors[0]}")
    if absent and all(absent):  # no nvidia-smi at all: DRV001 judges that; nothing here to read
        raise NotApplicable(reasons[0])
    raise Missing(reasons[0] if reasons else "nvidia-smi was not recorded in this snapshot")


@dataclass(frozen=True)
class KernelModule:
    """The loaded NVIDIA kernel module."""

    version: str            # "535.104.05"
    open: Optional[bool]    # the open-source kernel module ("Open Kernel Module"); None: not said
    line: str               # the line it was read from, for evidence
    source: str             # "file:/proc/driver/nvidia/version" or "file:/sys/module/nvidia/version"


@fact("kernel_module")
def kernel_module(f: Facts) -> KernelModule:
    """The loaded NVIDIA kernel module's version, from /proc/driver/nvidia/version."""
    rec = f.snapshot.file("/proc/driver/nvidia/version")
    if rec.exists:
        # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023"
        # "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build ..."
        line = first_line(rec.content)
        m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", line)
        if m:
            return KernelModule(m.group(1), "Open Kernel" in line, line, "file:/proc/driver/nvidia/version")
    sysver = f.snapshot.file("/sys/module/nvidia/version")
    if sysver.exists and sysver.content.strip():
        return KernelModule(sysver.content.strip(), None, sysver.content.strip(), "file:/sys/module/nvidia/version")
    if rec.error == "missing":  # read, and not there: no NVIDIA module is loaded in this kernel (an answer)
        raise NotApplicable("/proc/driver/nvidia/version does not exist: no NVIDIA kernel module is loaded "
                            "(or this is WSL, whose driver lives in Windows)")
    raise Missing(f"/proc/driver/nvidia/version could not be read ({rec.error}): cannot tell whether the "
                  "NVIDIA kernel module is loaded")


@dataclass(frozen=True)
class PciDevice:
    slot: str
    description: str
    device_id: Optional[str]       # "10de:2204"
    kernel_driver: Optional[str]   # "nvidia", "nouveau", "vfio-pci" or None
    kernel_modules: tuple


@fact("pci_gpus")
def pci_gpus(f: Facts) -> Tuple[PciDevice, ...]:
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
    return tuple(PciDevice(**d) for d in devices)


@dataclass(frozen=True)
class DriverVersion:
    """The driver version that nvidia-smi or NVML answered with."""

    version: str   # "550.54.15"
    source: str    # evidence source: "command:nvidia_smi_xml", "nvml:driver_version"


@fact("driver_version")
def driver_version(f: Facts) -> DriverVersion:
    """The user-space driver version (nvidia-smi or NVML) and where it came from."""
    report = f.get("smi")
    if report is not None and report.driver_version:
        return DriverVersion(report.driver_version, f"command:{smi_key(f)}")
    nv = f.get("nvml")
    if nv is not None and nv.driver_version:
        return DriverVersion(nv.driver_version, "nvml:driver_version")
    raise f.missing_as("smi", "no driver version was recorded")


@fact("cuda_driver_max")
def cuda_driver_max(f: Facts) -> str:
    """The newest CUDA the installed driver supports (nvidia-smi's "CUDA Version")."""
    report = f.get("smi")
    if report is not None and report.cuda_version:
        return report.cuda_version
    nv = f.get("nvml")
    v = nv.cuda_driver_version if nv is not None else None
    if v is not None and v > 0:
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
def gpus(f: Facts) -> Tuple[Gpu, ...]:
    """The GPU inventory: nvidia-smi first, NVML to fill gaps; compute capability from either."""
    report = f.get("smi")
    nv = f.get("nvml")
    nv_devices = nv.devices if nv is not None else ()
    nv_by_bus = {str(d.pci_bus_id or "").lower(): d for d in nv_devices}
    out: List[Gpu] = []
    if report is not None and report.gpus:
        for i, g in enumerate(report.gpus):
            nvd = nv_by_bus.get((g.pci_bus_id or "").lower()) or (nv_devices[i] if i < len(nv_devices) else None)
            cc = getattr(g, "compute_cap", None) or (nvd.compute_cap if nvd else None) or _cc_from_name(g.name)
            out.append(Gpu(g.index if g.index is not None else i, g.name, g.uuid, g.pci_bus_id,
                           g.memory_total_mib, g.memory_used_mib, cc, g.mig_mode, tuple(g.mig_devices)))
        return tuple(out)
    for d in nv_devices:
        out.append(Gpu(d.index, d.name, d.uuid, d.pci_bus_id, d.memory_total_mib, d.memory_used_mib,
                       d.compute_cap or _cc_from_name(d.name),
                       None if d.mig_mode is None else ("Enabled" if d.mig_mode == 1 else "Disabled")))
    if out:
        return tuple(out)
    raise f.missing_as("smi", "no GPU inventory was recorded")


def _cc_from_name(name: Optional[str]) -> Optional[str]:
    """The compute capability gpudoctor's GPU table gives a model name ("Tesla P100-PCIE-16GB" -> "6.0")."""
    if not name:
        return None
    from gpudoctor import knowledge  # the tables load only when a name must stand in (the hook starts faster)

    info = knowledge.gpu_info(name)
    return info.compute_cap if info else None
