"""`nvidia-smi -q -x`: the XML report, DTD v9 (driver 384) to v13 (driver 590+).

The schema grew over the years, so every value is looked up under each name it has had.
A cut-off file (a capture killed mid-write) still yields the `<gpu>` elements that closed.

Bounded: the text is fed in chunks and reading stops (keeping the GPUs read so far, with a
note) at MAX_DEPTH levels of nesting or MAX_ELEMENTS elements. nvidia-smi nests 6 deep and
prints about 1,000 elements per GPU; 7 MB of nested tags once took 459 MB of memory.
"""

import re
import xml.etree.ElementTree as ET
from typing import List, Optional, Tuple

from .errors import SmiParseError
from .model import SmiGpu, SmiMigDevice, SmiProcess, SmiReport
from .values import clean, to_bool, to_float, to_int, to_mib, to_mode, to_version

MAX_DEPTH = 32
MAX_ELEMENTS = 250_000
_CHUNK = 1 << 16


def _text(node: Optional[ET.Element], *paths: str) -> Optional[str]:
    """The first of `paths` present under `node` that holds a real value."""
    for path in paths:
        found = node.find(path) if node is not None else None
        if found is not None and clean(found.text) is not None:
            return clean(found.text)
    return None


def _ecc_uncorrected(gpu: ET.Element) -> Optional[int]:
    """Volatile uncorrected ECC count. DTD v9/v10 print `double_bit/total`; v11+ split it
    into `sram_uncorrectable` + `dram_uncorrectable`; 570+ split SRAM into parity/SECDED."""
    volatile = gpu.find("ecc_errors/volatile")
    if volatile is None:
        return None
    total = to_int(_text(volatile, "double_bit/total"))
    if total is not None:
        return total
    parts = [to_int(child.text) for child in volatile if "uncorrectable" in child.tag]
    parts = [p for p in parts if p is not None]
    return sum(parts) if parts else None


def _retired_pending(gpu: ET.Element) -> Optional[bool]:
    """Driver 384-418 print `pending_retirement`; 430 prints only `pending_blacklist`."""
    return to_bool(_text(gpu, "retired_pages/pending_retirement", "retired_pages/pending_blacklist"))


def _clock_events(gpu: ET.Element) -> Optional[Tuple[str, ...]]:
    """Active clock reasons: `<clocks_throttle_reasons>` up to 530, `<clocks_event_reasons>` from
    535 on; each child is `Active` / `Not Active` (`N/A` on GPUs without the reason, e.g. 384's GT 730)."""
    section = gpu.find("clocks_event_reasons")
    section = gpu.find("clocks_throttle_reasons") if section is None else section
    states = {re.sub(r"^clocks_(?:event|throttle)_reason_", "", child.tag): clean(child.text)
              for child in (section if section is not None else ())}
    if not any(states.values()):
        return None
    return tuple(reason for reason, state in states.items() if (state or "").lower() == "active")


def _lanes(text: Optional[str]) -> Optional[int]:
    """`16x` -> 16."""
    return to_int((text or "").rstrip("xX "))


def _mig_devices(gpu: ET.Element, index: int) -> Tuple[SmiMigDevice, ...]:
    """`<mig_devices>` (DTD v11+); the XML has neither the profile name nor the MIG UUID."""
    return tuple(SmiMigDevice(
        gpu_index=index,
        gi_id=to_int(_text(dev, "gpu_instance_id")),
        ci_id=to_int(_text(dev, "compute_instance_id")),
        mig_index=to_int(_text(dev, "index")),
        profile=None, uuid=None,
        memory_total_mib=to_mib(_text(dev, "fb_memory_usage/total")),
        memory_used_mib=to_mib(_text(dev, "fb_memory_usage/used")),
    ) for dev in gpu.findall("mig_devices/mig_device"))


def _gpu(gpu: ET.Element, index: int) -> SmiGpu:
    return SmiGpu(
        index=index,
        name=_text(gpu, "product_name"),
        uuid=_text(gpu, "uuid"),
        pci_bus_id=clean(gpu.get("id")) or _text(gpu, "pci/pci_bus_id"),
        memory_total_mib=to_mib(_text(gpu, "fb_memory_usage/total")),
        memory_used_mib=to_mib(_text(gpu, "fb_memory_usage/used")),
        mig_mode=_text(gpu, "mig_mode/current_mig"),
        serial=_text(gpu, "serial"),
        vbios_version=_text(gpu, "vbios_version"),
        driver_model=_text(gpu, "driver_model/current_dm"),
        persistence_mode=to_mode(_text(gpu, "persistence_mode")),
        compute_mode=_text(gpu, "compute_mode"),
        compute_cap=None,
        temperature_c=to_int(_text(gpu, "temperature/gpu_temp")),
        # power_readings (<= v11), gpu_power_readings (v12), instant/average (570+)
        power_draw_w=to_float(_text(
            gpu, "power_readings/power_draw", "gpu_power_readings/power_draw",
            "gpu_power_readings/instant_power_draw", "gpu_power_readings/average_power_draw")),
        retired_pages_pending=_retired_pending(gpu),
        remapped_rows_pending=to_bool(_text(gpu, "remapped_rows/remapped_row_pending")),
        ecc_uncorrected_volatile=_ecc_uncorrected(gpu),
        mig_devices=_mig_devices(gpu, index),
        product_brand=_text(gpu, "product_brand"),
        pcie_gen_current=to_int(_text(gpu, _LINK + "pcie_gen/current_link_gen")),
        pcie_gen_max=to_int(_text(gpu, _LINK + "pcie_gen/max_link_gen")),
        pcie_width_current=_lanes(_text(gpu, _LINK + "link_widths/current_link_width")),
        pcie_width_max=_lanes(_text(gpu, _LINK + "link_widths/max_link_width")),
        utilization_pct=to_int(_text(gpu, "utilization/gpu_util")),
        clock_events=_clock_events(gpu),
        remapped_rows_failure=to_bool(_text(gpu, "remapped_rows/remapped_row_failure")),
    )


_LINK = "pci/pci_gpu_link_info/"


def _processes(gpu: ET.Element, index: int, uuid: Optional[str]) -> List[SmiProcess]:
    """`<process_info>`; DTD v11+ add GPU/compute instance ids, Windows WDDM prints
    `N/A` for used memory and sometimes an empty `<process_name>`."""
    return [SmiProcess(
        gpu_index=index, pid=to_int(_text(p, "pid")), type=_text(p, "type"),
        name=_text(p, "process_name"), used_memory_mib=to_mib(_text(p, "used_memory")),
        gpu_uuid=uuid, gi_id=to_int(_text(p, "gpu_instance_id")),
        ci_id=to_int(_text(p, "compute_instance_id")),
    ) for p in gpu.findall("processes/process_info")]


def _read_tree(text: str) -> Tuple[ET.Element, List[ET.Element], Optional[str]]:
    """The root, the `<gpu>` elements that closed, and a note when the XML is cut off."""
    if "<!ENTITY" in text:
        raise SmiParseError("XML declares entities, which nvidia-smi never does; refusing it")
    parser = ET.XMLPullParser(events=("start", "end"))
    walk = _Walk()
    try:
        for at in range(0, len(text), _CHUNK):
            parser.feed(text[at:at + _CHUNK])  # a syntax error is queued and raised by read_events()
            walk.read(parser.read_events())
        parser.close()
        walk.read(parser.read_events())
    except ET.ParseError as exc:
        walk.note = "XML is incomplete or malformed (%s); kept the GPUs read before that" % exc
    except _TooBig as exc:
        walk.note = "%s; kept the GPUs read before that" % exc
    if walk.root is None:
        raise SmiParseError("no XML element found")
    if walk.root.tag != "nvidia_smi_log":
        raise SmiParseError("XML root is <%s>, not nvidia-smi's <nvidia_smi_log>" % walk.root.tag[:40])
    return walk.root, walk.closed, walk.note


class _TooBig(Exception):
    pass


class _Walk:
    """Follows the parser's events: the root, each `<gpu>` closed directly below it, the depth."""

    def __init__(self):
        self.root, self.closed, self.note = None, [], None
        self.depth = self.count = 0

    def read(self, events) -> None:
        for event, elem in events:
            if event == "end":
                self.depth -= 1
                if self.depth == 1 and elem.tag == "gpu":
                    self.closed.append(elem)
                continue
            self.root = elem if self.root is None else self.root
            self.depth += 1
            self.count += 1
            if self.depth > MAX_DEPTH:
                raise _TooBig("XML nested deeper than %d levels, which nvidia-smi never does" % MAX_DEPTH)
            if self.count > MAX_ELEMENTS:
                raise _TooBig("XML has more than %d elements, more than nvidia-smi prints" % MAX_ELEMENTS)


def parse_xml(text: str) -> SmiReport:
    """Parse `nvidia-smi -q -x`. Pre-410 drivers have no `<cuda_version>`; without libcuda
    it reads `Not Found`; trimmed fragments lack `driver_version` and `attached_gpus`."""
    start = min((i for i in (text.find("<?xml"), text.find("<nvidia_smi_log")) if i >= 0), default=-1)
    if start < 0:
        raise SmiParseError("no <nvidia_smi_log> XML found")
    end = text.find("</nvidia_smi_log>", start)
    more = end >= 0 and "<nvidia_smi_log" in text[end:]
    # Stop at the closing tag: a shell prompt or a second report may follow it.
    root, gpus, note = _read_tree(text[start:end + len("</nvidia_smi_log>")] if end >= 0 else text[start:])
    if note and not gpus and root.find("driver_version") is None:
        raise SmiParseError(note.split(";")[0])
    parsed = [_gpu(g, i) for i, g in enumerate(gpus)]
    processes = [p for i, g in enumerate(gpus) for p in _processes(g, i, parsed[i].uuid)]
    return SmiReport(
        format="xml",
        driver_version=to_version(_text(root, "driver_version")),
        cuda_version=to_version(_text(root, "cuda_version")),
        attached_gpus=to_int(_text(root, "attached_gpus")),
        gpus=tuple(parsed), processes=tuple(processes),
        warnings=((note,) if note else ()) + (("several XML reports found; only the first was read",) if more else ()),
    )
