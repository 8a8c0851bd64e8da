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
from dataclasses import dataclass
from typing import List, Optional, Tuple

HEADER = re.compile(r"^GPU (?P<index>\d+): (?P<name>.+?)(?: \(UUID: (?P<uuid>[^)]*)\))?\s*$")
STATUS = re.compile(r"^\s*Link (?P<link>\d+): (?:(?P<speed>[\d.]+) GB/s|(?P<inactive><inactive>))\s*$")
COUNTER = re.compile(r"^\s*Link (?P<link>\d+): (?P<name>[A-Za-z][A-Za-z ]*?): (?P<value>\d+)\s*$")


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


def parse_status(text: str) -> List[NvlinkGpu]:
    gpus: List[NvlinkGpu] = []
    for line in text.splitlines():
        head = HEADER.match(line)
        if head:
            gpus.append(NvlinkGpu(int(head.group("index")), head.group("name"), head.group("uuid"), ()))
            continue
        if not gpus or not line.strip():
            continue
        m = STATUS.match(line)
        last = gpus[-1]
        if m:
            speed = None if m.group("inactive") else float(m.group("speed"))
            gpus[-1] = NvlinkGpu(last.index, last.name, last.uuid, last.links + ((int(m.group("link")), speed),))
        elif last.note is None and not last.links:
            gpus[-1] = NvlinkGpu(last.index, last.name, last.uuid, (), line.strip())
    return gpus


def parse_errors(text: str) -> List[NvlinkCounter]:
    out: List[NvlinkCounter] = []
    gpu: Optional[int] = None
    for line in text.splitlines():
        head = HEADER.match(line)
        if head:
            gpu = int(head.group("index"))
            continue
        m = COUNTER.match(line)
        if m and gpu is not None:
            out.append(NvlinkCounter(gpu, int(m.group("link")), m.group("name"), int(m.group("value"))))
    return out
