"""Facts about NVLink and the NVSwitch fabric: link states and error counters, whether this is an
NVSwitch system, the fabric manager service, and each GPU's fabric state and recovery action."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

from gpudoctor.facts import Facts, Missing, NotApplicable, command_result, fact
from gpudoctor.knowledge import nvswitch as switches
from gpudoctor.smi import gpu_state, nvlink

NOT_FABRIC = ("N/A", "Not Supported", "", None)  # fabric states of a GPU outside an NVSwitch fabric


@fact("gpu_states")
def gpu_states(f: Facts) -> Tuple[gpu_state.GpuState, ...]:
    """Each GPU's fabric state and recovery action, from the nvidia-smi -q (-x) output that was read."""
    parsed = f["smi_parsed"]
    return tuple(gpu_state.gpu_states(parsed.result.stdout))


@dataclass(frozen=True)
class NvSwitchSystem:
    """Why gpudoctor takes this machine for an NVSwitch system (its GPUs need the fabric manager)."""

    source: str     # evidence source: "listing:/dev", "command:lspci", "command:kernel_journal", "command:nvidia_smi_xml"
    evidence: str   # "/dev/nvidia-nvswitch0", "05:00.0 Bridge: NVIDIA Corporation Device 22a3", "8 x NVIDIA H100 ..."


def _from_devices(f: Facts) -> Optional[NvSwitchSystem]:
    nodes = [n for n in f.get("dev_nodes") or () if re.fullmatch(r"nvidia-nvswitch\d+", n)]
    if nodes:
        return NvSwitchSystem("listing:/dev", " ".join(f"/dev/{n}" for n in nodes[:4]))
    lspci = f.snapshot.command("lspci")
    for line in (lspci.stdout if lspci is not None else "").splitlines():
        ids = re.findall(r"\[([0-9a-f]{4}:[0-9a-f]{4})\]", line)
        if ids and switches.switch_device(ids[-1]):
            return NvSwitchSystem("command:lspci", f"{line.strip()} ({switches.switch_device(ids[-1])})")
    events = f.get("kernel_events") or ()
    probe = next((e for e in events if e.kind == "sxid" or (e.kind == "switch" and switches.switch_device(e.detail or ""))),
                 None)
    if probe is not None:
        return NvSwitchSystem(f["kernel_log"].source, probe.text.strip())
    return None


def _from_gpus(f: Facts) -> Optional[NvSwitchSystem]:
    states = f.get("gpu_states") or ()
    registered = [s for s in states if s.fabric_state not in NOT_FABRIC]
    if registered:
        return NvSwitchSystem(f"command:{f['smi_parsed'].key}",
                              f"{len(registered)} GPU(s) report an NVLink fabric state ({registered[0].fabric_state})")
    gpus = f.get("gpus") or ()
    names = {g.name for g in gpus}
    board = switches.baseboard(gpus[0].name, len(gpus)) if len(names) == 1 and gpus else None
    if board:
        return NvSwitchSystem(f"command:{f['smi_parsed'].key}" if f.has("smi_parsed") else "nvml:devices",
                              f"{len(gpus)} x {gpus[0].name}: an {board} baseboard")
    return None


@fact("nvswitch")
def nvswitch(f: Facts) -> NvSwitchSystem:
    """What shows this is an NVSwitch system: NVSwitch devices, GPU fabric states, or an HGX baseboard's GPUs."""
    found = _from_devices(f) or _from_gpus(f)
    if found is not None:
        return found
    if f.has("gpus") or f.get("dev_nodes") is not None:
        raise NotApplicable("no NVSwitch: neither NVSwitch devices nor an NVSwitch baseboard's GPUs were found")
    raise f.missing_as("smi", "cannot tell whether this is an NVSwitch system")


@dataclass(frozen=True)
class FabricManager:
    """The NVIDIA fabric manager service as systemd and the binary report it."""

    state: Optional[str]     # `systemctl is-active nvidia-fabricmanager`: "active", "inactive", "failed" ...; None: unknown
    state_said: str          # how that was learned, for evidence
    version: Optional[str]   # `nv-fabricmanager --version` ("Fabric Manager version is : 525.60.13"); None: unknown
    version_said: str


def _fm_state(f: Facts) -> Tuple[Optional[str], str]:
    res = f.snapshot.command("fabricmanager_active")
    if res is None:
        return None, "`systemctl is-active nvidia-fabricmanager` was not recorded"
    word = (res.stdout.strip().splitlines() or [""])[0].strip()
    if res.ran and not res.timed_out and re.fullmatch(r"[a-z-]+", word):
        return word, f"`systemctl is-active nvidia-fabricmanager`: {word}"
    said = (res.stderr.strip().splitlines() or [""])[0]
    return None, res.describe() + (f": {said}" if said else "")


def _fm_version(f: Facts) -> Tuple[Optional[str], str]:
    res = f.snapshot.command("fabricmanager_version")
    if res is None or not res.ran or res.timed_out:
        return None, res.describe() if res is not None else "`nv-fabricmanager --version` was not recorded"
    for line in (res.stdout + "\n" + res.stderr).splitlines():  # "Fabric Manager version is : 525.60.13"
        m = re.search(r"version is\s*:?\s*(\d+\.\d+(?:\.\d+)?)", line, re.IGNORECASE)
        if m:
            return m.group(1), line.strip()
    return None, res.describe()


@fact("fabric_manager")
def fabric_manager(f: Facts) -> FabricManager:
    """The fabric manager service state and version (systemctl is-active, nv-fabricmanager --version)."""
    state, state_said = _fm_state(f)
    version, version_said = _fm_version(f)
    if f.snapshot.command("fabricmanager_active") is None and f.snapshot.command("fabricmanager_version") is None:
        raise Missing("the fabric manager state was not recorded in this snapshot")
    return FabricManager(state, state_said, version, version_said)


@fact("nvlink_status")
def nvlink_status(f: Facts) -> Tuple[nvlink.NvlinkGpu, ...]:
    """Each GPU's NVLinks and their speed, from `nvidia-smi nvlink -s` (a link down reads <inactive>)."""
    res = f.snapshot.command("nvidia_smi_nvlink_s")
    if res is not None and res.error == "not found":
        raise NotApplicable("nvidia-smi is not installed")
    res = command_result(f, "nvidia_smi_nvlink_s")
    return tuple(nvlink.parse_status(res.stdout))


@dataclass(frozen=True)
class NvlinkErrors:
    """`nvidia-smi nvlink -e` read twice, about a second apart, to see counters that are growing now."""

    first: Tuple[nvlink.NvlinkCounter, ...]
    later: Optional[Tuple[nvlink.NvlinkCounter, ...]]   # None: the second reading is missing
    gap_s: Optional[float]                              # seconds between the two readings' starts (about)


@fact("nvlink_errors")
def nvlink_errors(f: Facts) -> NvlinkErrors:
    """NVLink error counters per GPU and link (nvidia-smi nvlink -e), and a second reading a second later."""
    res = f.snapshot.command("nvidia_smi_nvlink_e")
    if res is not None and res.error == "not found":
        raise NotApplicable("nvidia-smi is not installed")
    first = nvlink.parse_errors(command_result(f, "nvidia_smi_nvlink_e").stdout)
    later = f.snapshot.command("nvidia_smi_nvlink_e_later")
    if later is None or not later.ok:
        return NvlinkErrors(tuple(first), None, None)
    from gpudoctor.probes.commands import reading_gap_s

    gap = reading_gap_s(f.snapshot.command("nvidia_smi_nvlink_e"), "nvidia_smi_nvlink_e_later")
    return NvlinkErrors(tuple(first), tuple(nvlink.parse_errors(later.stdout)), round(gap, 1))
