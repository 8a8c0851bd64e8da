"""Two per-GPU fields of ``nvidia-smi -q`` / ``-q -x`` that health checks need: fabric state, recovery action.

``<fabric><state>Completed</state><status>Success</status>`` (H100 and newer on NVSwitch systems;
``N/A`` or ``Not Supported`` elsewhere, absent before driver 525) and ``<gpu_recovery_action>None``
(driver 570 and newer) in the XML, or the ``Fabric`` block (``State : Completed``) and ``GPU Recovery
Action : None`` in the text, each under its ``<gpu id="00000000:3B:00.0">`` / ``GPU 00000000:3B:00.0``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import List, Optional

GPU_HEADER = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
FIELD = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z][A-Za-z ]*?)\s*(?::\s*(?P<value>.*?))?\s*$")


@dataclass(frozen=True)
class GpuState:
    pci_bus_id: str
    fabric_state: Optional[str]     # "Completed", "In Progress", "Not Started", "Not Supported", "N/A"; None: not printed
    fabric_status: Optional[str]    # "Success" once registered; None: not printed
    recovery_action: Optional[str]  # "None", "GPU Reset Required", "Node Reboot Required" ...; None: not printed


def _xml(text: str) -> List[GpuState]:
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError:
        return []
    return [GpuState(g.get("id", ""), g.findtext("fabric/state"), g.findtext("fabric/status"),
                     g.findtext("gpu_recovery_action")) for g in root.iter("gpu") if g.get("id")]


def _text(text: str) -> List[GpuState]:
    out, bus, fields, section = [], None, {}, None
    for line in text.splitlines() + ["GPU 0000:00:00.0"]:
        head = GPU_HEADER.match(line)
        if head:
            if bus:
                out.append(GpuState(bus, fields.get("Fabric.State"), fields.get("Fabric.Status"),
                                    fields.get("GPU Recovery Action")))
            bus, fields, section = head.group("bus"), {}, None
            continue
        m = FIELD.match(line)
        if bus and m and len(m.group("indent")) == 4:
            section = m.group("key") if m.group("value") is None else None
            fields[m.group("key")] = m.group("value")
        elif bus and m and section == "Fabric":
            fields.setdefault(f"Fabric.{m.group('key')}", m.group("value"))
    return out


def gpu_states(text: str) -> List[GpuState]:
    """The fabric state and recovery action of each GPU in an ``nvidia-smi -q`` or ``-q -x`` output."""
    return _xml(text) if text.lstrip().startswith("<") else _text(text)
