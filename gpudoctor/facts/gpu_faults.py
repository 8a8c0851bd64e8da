"""The GPU faults the kernel log shows, classified from NVIDIA's Xid catalog (knowledge/data/xid.json).

Events of one kind on one device are one fault (Xid 119 five times on GPU 4 is one fault, with
its first and last line). What NVIDIA's catalog says to do decides its bucket; a later event
can show the fault is gone: the log is read since boot only (a reboot clears everything), a
later "NVRM: loading" line means the driver re-initialised every GPU, and a GPU whose driver
(R565+ for most Xids, see the catalog's Xid 154 linkage) now reports no recovery action has
been reset since. A GPU reset by ``nvidia-smi -r`` leaves no line in the kernel log, so for
an Xid without that linkage (119) only a driver reload or a reboot clears it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from gpudoctor.facts import Facts, fact
from gpudoctor.kernlog import KernelEvent, pci_key
from gpudoctor.knowledge import xid as catalog

RELOADED = "the NVIDIA driver was loaded again after it, which re-initialised every GPU"
RECOVERED = "the driver reports no recovery action for this GPU now (GPU Recovery Action: None): it was reset since"


@dataclass(frozen=True)
class GpuFault:
    """One kind of NVIDIA error on one device since boot."""

    what: str                    # "Xid 79", "SXid 20034", "GPU lost"
    name: str                    # "GPU has fallen off the bus": the catalog's description, or the line's words
    device: str                  # "GPU 3 (00000000:44:00.0)", "GPU at PCI 0000:44:00", "NVSwitch at PCI 0000:06:00"
    gpu_index: Optional[int]     # nvidia-smi's index of that GPU, when the inventory names it
    bucket: str                  # what gpudoctor acts on: NVIDIA's bucket, workflows resolved (RESET_GPU ...)
    nvidia: Optional[str]        # NVIDIA's immediate bucket as the catalog writes it (WORKFLOW_XID_48); None: not listed
    klass: str                   # reset, reboot, service, application, informational
    count: int                   # how many lines logged it
    lines: Tuple[str, ...]       # its first and (when more) its last line
    cleared: Optional[str]       # why it no longer applies; None while it stands
    code: Optional[int] = None   # the Xid or SXid number
    pci: Optional[str] = None    # the GPU's PCI address as the log names it ("0000:9b:00"); None for SXids


def _devices(f: Facts) -> Dict[str, Tuple[str, int]]:
    """PCI key -> (label, index) for the GPUs nvidia-smi or NVML listed."""
    return {pci_key(g.pci_bus_id): (f"GPU {g.index} ({g.pci_bus_id})", g.index)
            for g in f.get("gpus") or () if pci_key(g.pci_bus_id)}


def _recovered(f: Facts, code: Optional[int], pci: Optional[str]) -> bool:
    """The driver set a recovery action for this Xid (catalog linkage, this driver) and reports None now."""
    info = catalog.xid(code) if code is not None else None
    since = info.recovery_since if info else None
    driver = f.get("driver_version")
    major = int(re.match(r"\d+", driver.version).group()) if driver and re.match(r"\d+", driver.version) else None
    if since is None or (since != "any" and (major is None or major < int(since.lstrip("R")))):
        return False
    states = {pci_key(s.pci_bus_id): s.recovery_action for s in f.get("gpu_states") or ()}
    return states.get(pci) == "None"


def _bucket(e: KernelEvent, earlier: List[KernelEvent]) -> str:
    if e.kind == "sxid":
        return catalog.sxid_bucket("Fatal" if e.fatal else "Non-fatal")
    if e.kind == "lost":
        return catalog.acts_as(79)
    other = any(x.kind == "xid" and x.pci == e.pci and x.code != e.code for x in earlier)
    return catalog.acts_as(e.code, fatal=e.fatal, recovery=e.recovery, after_other_xid=other)


def _what(e: KernelEvent) -> Tuple[str, str]:
    if e.kind == "lost":
        return "GPU lost", "the GPU has fallen off the bus and does not respond"
    if e.kind == "sxid":
        return f"SXid {e.code}", ("Fatal" if e.fatal else "Non-fatal") + " NVSwitch error"
    info = catalog.xid(e.code)
    return f"Xid {e.code}", info.description if info else "an Xid NVIDIA's catalog does not list"


def _cleared(f: Facts, e: KernelEvent, last: KernelEvent, events, bucket: str) -> Optional[str]:
    cleared_by = catalog.bucket(bucket).cleared_by
    if "driver_load" in cleared_by and any(x.kind == "driver_load" and x.line_no > last.line_no for x in events):
        return RELOADED
    if "recovery_action_none" in cleared_by and e.kind == "xid" and _recovered(f, e.code, e.pci):
        return RECOVERED
    return None


def _switches(group: List[KernelEvent]) -> str:
    pcis = sorted({e.pci for e in group if e.pci})
    return f"NVSwitch at PCI {pcis[0]}" if len(pcis) == 1 else f"{len(pcis)} NVSwitches (PCI {', '.join(pcis)})"


@fact("gpu_faults")
def gpu_faults(f: Facts) -> Tuple[GpuFault, ...]:
    """The NVIDIA errors of this boot per device and kind, each with the action NVIDIA's Xid catalog names."""
    events = f["kernel_events"]
    lost_known = {e.pci for e in events if e.kind == "xid" and e.code == 79}
    groups: Dict[Tuple, List[KernelEvent]] = {}
    for i, e in enumerate(events):
        if e.kind in ("xid", "sxid") or (e.kind == "lost" and e.pci not in lost_known):
            pci = None if e.kind == "sxid" else e.pci  # one SXid is one fault, whichever switches logged it
            groups.setdefault((e.kind, pci, e.code, _bucket(e, events[:i])), []).append(e)
    devices = _devices(f)
    return tuple(_fault(f, key, group, events, devices) for key, group in groups.items())


def _fault(f: Facts, key: Tuple, group: List[KernelEvent], events, devices) -> GpuFault:
    kind, pci, code, bucket = key
    first, last = group[0], group[-1]
    what, name = _what(first)
    label, index = devices.get(pci, (f"GPU at PCI {pci}", None)) if kind != "sxid" else (_switches(group), None)
    info = catalog.xid(code) if kind == "xid" else None
    nvidia = info.immediate if info else (catalog.acts_as(79) if kind == "lost" else None)
    lines = (first.text,) if first is last else (first.text, last.text)
    return GpuFault(what, name, label, index, bucket, nvidia, catalog.bucket(bucket).klass, len(group), lines,
                    _cleared(f, first, last, events, bucket), code, pci)
