"""What the cells of `nvidia-smi --query-gpu=... --format=csv` can look like.

A CSV is only taken for nvidia-smi's when its cells have the shapes nvidia-smi prints
(`nvidia-smi --help-query-gpu` lists the fields and their values; the recordings in
fixtures/nvidia-smi/csv and the bundles' query-gpu sections show them): numbers with the
units it appends (`15360 MiB`, `38 %`, `32.70 W`, `1410 MHz`), bracketed placeholders
(`[N/A]`, `[Not Supported]`), hex masks (`0x0000000000000001`), versions (`535.104.05`,
`90.04.7a.40.73`, `G001.0000.02.04`), timestamps (`2021/06/26 16:19:47.995`), GPU and MIG
UUIDs, PCI bus ids, P-states, a small vocabulary of mode words, and product names, which
always begin with a brand or a model code (`NVIDIA H100 NVL`, `Tesla T4`, `A100-SXM4-40GB`).
`hello, I am not nvidia-smi` has none of these shapes, so it is not a GPU.
"""

import re
from typing import Callable, Dict, Optional

UUID = re.compile(r"^GPU-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
MIG_UUID = re.compile(r"^MIG-[0-9a-zA-Z/-]{8,}$")
BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
# A product name is a brand and a model ("Tesla V100-SXM2-32GB", "NVIDIA H100 80GB HBM3", "Quadro 4000")
# or a model code alone ("A100-SXM4-40GB"); the words after it are capitalised or numbers, apart from
# "with" ("Quadro RTX 4000 with Max-Q Design") and a note in brackets ("Orin (nvgpu)"); tables cut
# long names with "...". A brand alone ("Tesla", "NVIDIA") is not a product.
_BRAND = r"(?:NVIDIA|Tesla|GeForce|Quadro|TITAN|Titan|GRID|RTX|CMP|DGX|NVS|Jetson|Orin|Xavier|Tegra|DRIVE)"
_MODEL = r"[A-Z]{1,2}\d{1,4}[A-Za-z]{0,3}\b(?:[-/][\w.+/-]*)?"
_FIRST = r"(?:[A-Z][\w.+/-]*|\d{3,4}\b[\w+-]*|\([\w .-]{1,40}\))"
_WORD = r"(?:[A-Z0-9][\w.+/-]*|with|\([\w .-]{1,40}\))"
PRODUCT = re.compile(rf"^(?!P\d{{1,2}}$)(?:Graphics Device|{_BRAND} {_FIRST}(?: {_WORD}){{0,12}}"
                     rf"|{_MODEL}(?: {_WORD}){{0,12}})(?: ?\.\.\.)?$")
NUMBER = re.compile(r"^[+-]?\d{1,20}(\.\d{1,20})?( ?(%|[KMGT]iB|W|MHz|mJ|J|C|RPM|GT/s|KB/s|MB/s|ms|us|s|V|mV))?$")
HEX = re.compile(r"^0x[0-9A-Fa-f]{1,32}$")
VERSION = re.compile(r"^(?=[^ ]*\d)[0-9A-Za-z]{1,8}(\.[0-9A-Za-z]{1,8}){1,5}$")
TIMESTAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?$")
PLACEHOLDER = re.compile(r"^\[[A-Za-z][A-Za-z /!.-]{0,60}\]$|^(N/A|ERR!)$")
PSTATE = re.compile(r"^P\d{1,2}$")
# Mode and state words (persistence, display, compute and driver models, GOM, MIG, clock event
# reasons, fabric state, addressing mode, pending flags).
WORDS = frozenset((
    "Enabled Disabled Active Not Yes No On Off Default Exclusive_Process Exclusive_Thread Prohibited "
    "WDDM TCC MCDM All Compute Low Double Precision Supported Unsupported None Unknown Pass Fail "
    "In Progress Completed Success Failure HMM ATS Pending Required Healthy Degraded Limited Full "
    "Idle Ready Uninitialized Initialized").split())

# `--help-query-gpu` (and -compute-apps, -accounted-apps, -retired-pages) of drivers 590-610, recorded
# in fixtures/nvidia-smi/bundle: every field name without "." or "_". Newer fields are dotted or
# underscored, so a CSV header may hold those unknown; any other bare word is not a field.
BARE_FIELDS = frozenset(("count", "hostname", "index", "name", "pid", "pstate", "serial", "time", "timestamp",
                         "uuid"))

SHAPES = (NUMBER, PLACEHOLDER, HEX, UUID, MIG_UUID, BUS_ID, TIMESTAMP, PSTATE, VERSION, PRODUCT)


def is_value(cell: str) -> bool:
    """Could nvidia-smi have printed this cell in a `--query-gpu` CSV?"""
    text = cell.strip()
    if not text:
        return True  # some fields print nothing at all (an empty inforom.oem)
    if any(rx.match(text) for rx in SHAPES):
        return True
    return all(word in WORDS for word in text.split())


def _either(rx) -> Callable[[str], bool]:
    return lambda cell: bool(rx.match(cell.strip())) or bool(PLACEHOLDER.match(cell.strip()))


# Shapes of the columns gpudoctor reads: a value there must fit, or the row is not nvidia-smi's.
FIELD_SHAPES: Dict[str, Callable[[str], bool]] = {
    "index": _either(re.compile(r"^\d{1,4}$")),
    "name": _either(PRODUCT), "gpu_name": _either(PRODUCT),
    "uuid": _either(UUID), "gpu_uuid": _either(UUID),
    "pci.bus_id": _either(BUS_ID), "gpu_bus_id": _either(BUS_ID),
    "memory.total": _either(NUMBER), "memory.used": _either(NUMBER),
    "temperature.gpu": _either(NUMBER), "power.draw": _either(NUMBER),
    "driver_version": _either(VERSION), "count": _either(re.compile(r"^\d{1,4}$")),
}


def misfit(record: Dict[str, str]) -> Optional[str]:
    """The first ``field=value`` of a CSV record whose value nvidia-smi would not print there."""
    for field, cell in record.items():
        check = FIELD_SHAPES.get(field)
        if check is not None and not check(cell):
            return f"{field}={cell.strip()[:40]!r}"
    return None
