"""Parsers for ``nvidia-smi nvlink -s`` (each link's state) and ``nvidia-smi nvlink -e`` (its error counters).

``-s`` prints a ``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)`` header, then ``\\t Link 0: 26.562 GB/s``
per link, ``Link 3: <inactive>`` for a link that is down (V100 SXM2, driver 460), or one line instead of the
links: ``NVML: Unable to retrieve Nvlink information as all links are inActive`` (a GeForce card without
its bridge), ``Device does not have or support Nvlink``, ``Nvlink queries are not supported for Devices in
MIG mode``. ``-e`` prints ``Link 0: Replay Errors: 0``, ``Link 0: Recovery Errors: 0``, ``Link 0: CRC
Errors: 0`` (older drivers: ``CRC Flit Errors``, ``CRC Data Errors``) under the same headers; the GB300
header carries no UUID.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

# Bounded numbers (an index or a counter of 5,000 digits is no value, not a crash) and a greedy
# name: a lazy `(.+?)(?: \(UUID: ...\))?\s*$` was quadratic in a run of blanks (8,000: 1 s).
HEADER = re.compile(r"^GPU (?P<index>\d{1,6}): (?P<rest>.+)$")
STATUS = re.compile(r"^\s*Link (?P<link>\d{1,6}): (?:(?P<speed>\d{1,9}(?:\.\d{1,9})?) GB/s|(?P<inactive><inactive>))\s*$")
COUNTER = re.compile(r"^\s*Link (?P<link>\d{1,6}): (?P<name>[A-Za-z][A-Za-z ]*?): (?P<value>\d{1,20})\s*$")
_UUID_AT = " (UUID: "


@dataclass(frozen=True)
class NvlinkGpu:
    """One GPU in ``nvidia-smi nvlink -s``."""

    index: int
    name: str
    uuid: Optional[str]
    links: Tuple[Tuple[int, Optional[float]], ...]   # (link, GB/s); None: "<inactive>"
    note: Optional[str] = None                      # what nvidia-smi printed instead of links

    @property
    def down(self) -> Tuple[int, ...]:
        return tuple(link for link, speed in self.links if speed is None)


@dataclass(frozen=True)
class NvlinkCounter:
    """One error counter of one link in ``nvidia-smi nvlink -e``."""

    gpu: int
    link: int
    name: str    # "Replay Errors", "Recovery Errors", "CRC Errors", "CRC Flit Errors" ...
    value: int


def _header(line: str) -> Optional[Tuple[int, str, Optional[str]]]:
    """(index, name, uuid) of a ``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)`` line."""
    m = HEADER.match(line)
    if m is None:
        return None
    rest = m.group("rest").rstrip()
    name, at, uuid = rest.rpartition(_UUID_AT)
    if at and name and uuid.endswith(")") and ")" not in uuid[:-1]:
        return int(m.group("index")), name, uuid[:-1]
    return (int(m.group("index")), rest, None) if rest else None


def parse_status(text: str) -> List[NvlinkGpu]:
    gpus: List[NvlinkGpu] = []
    links: List[List[Tuple[int, Optional[float]]]] = []  # per GPU: appended, not copied (100,000 links)
    for line in text.splitlines():
        head = _header(line)
        if head:
            gpus.append(NvlinkGpu(*head, ()))
            links.append([])
            continue
        if not gpus or not line.strip():
            continue
        m = STATUS.match(line)
        if m:
            links[-1].append((int(m.group("link")), None if m.group("inactive") else float(m.group("speed"))))
        elif gpus[-1].note is None and not links[-1]:
            gpus[-1] = replace(gpus[-1], note=line.strip())
    return [replace(g, links=tuple(found)) for g, found in zip(gpus, links)]


def parse_errors(text: str) -> List[NvlinkCounter]:
    out: List[NvlinkCounter] = []
    gpu: Optional[int] = None
    for line in text.splitlines():
        head = _header(line)
        if head:
            gpu = head[0]
            continue
        m = COUNTER.match(line)
        if m and gpu is not None:
            out.append(NvlinkCounter(gpu, int(m.group("link")), m.group("name"), int(m.group("value"))))
    return out
