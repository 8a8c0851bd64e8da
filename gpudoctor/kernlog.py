"""Parse the NVIDIA driver's kernel messages: Xid and SXid events, lost GPUs, driver loads, the boot.

The lines come from ``/dev/kmsg`` (``6,1234,5140900,-;NVRM: ...``), ``dmesg`` (``[ 1843.308145] NVRM:
...``, ``-T``: ``[Fri Aug 30 11:43:09 2024] NVRM: ...``), ``journalctl -k`` (``Feb 14 05:03:41 host
kernel: NVRM: ...``, ``-o short-monotonic``) or a syslog file; the patterns are searched anywhere in a
line, so any of these prefixes works. Real lines they read (the tests hold more)::

    NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
    NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No
    NVRM: Xid (PCI:0000:0b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)
    NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 ...)
    nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
    NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.
    NVRM: The NVIDIA GPU 0000:b3:00.0 / NVRM: (PCI ID: 10de:26b5) installed in this system has /
        NVRM: fallen off the bus and is not responding to commands.      (three lines)
    NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence

_PCI = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}"
# A recorded log is untrusted input: lines are read up to MAX_LINE_CHARS (as the live probe keeps
# them), codes of more than 9 digits are no code (int() of 5,000 digits raises), and the NVSwitch's
# name before "SXid" is read from the few characters before it (`[\w-]*:?\s*SXid` searched from every
# position was quadratic: a 20,000-character word took 11 s).
MAX_LINE_CHARS = 1000
XID = re.compile(rf"(?<!S)\bXid \((?:PCI:)?(?P<pci>{_PCI})(?:\.[0-7])?[^)]{{0,200}}\):\s*(?P<code>\d{{1,9}})(?!\d)"
                 r"(?:,\s*(?P<rest>.*))?")
SXID = re.compile(rf"SXid \(PCI:(?P<pci>{_PCI})(?:\.[0-7])?\):\s*(?P<code>\d{{1,9}}),\s*(?P<severity>Fatal|Non-fatal)\b")
_SWITCH_NAME = re.compile(r"([\w-]{1,64}):?\s{0,8}$")  # "nvidia-nvswitch1: " right before "SXid"
LOST = re.compile(rf"NVRM: GPU (?P<pci>{_PCI})(?:\.[0-7])?: GPU has fallen off the bus"
                  rf"|GPU (?P<pci2>{_PCI})(?:\.[0-7])?\b.*has failed to respond")
LOST_START = re.compile(rf"NVRM: The NVIDIA GPU (?P<pci>{_PCI})")
LOST_END = re.compile(r"fallen off the bus|not responding to commands")
LOAD = re.compile(r"NVRM: loading NVIDIA UNIX .*?Kernel Module(?: for \S+)?\s+(?P<version>\d+\.\d+(?:\.\d+)?)")
BOOT = re.compile(r"\bLinux version \d")
SWITCH_PROBE = re.compile(r"nvidia-nvswitch: Probing device .*Device Id = 0x(?P<device_id>[0-9a-fA-F]{4})")
RECOVERY = re.compile(r"recovery action changed from \S+ \([^)]*\) to \S+ \((?P<to>[^)]*)\)")
SEVERITY = re.compile(r"\b(?P<sev>Fatal|Nonfatal|Non-fatal)\b")
MAX_TEXT = 300  # an event keeps the start of its line, enough to quote as evidence


@dataclass(frozen=True)
class KernelEvent:
    """One NVIDIA event in the kernel log, in log order."""

    kind: str                       # "xid", "sxid", "lost" (fell off the bus), "driver_load", "boot", "switch"
    line_no: int                    # its place in the recorded log (0 = oldest): later events have larger ones
    text: str                       # the line as logged (cut)
    pci: Optional[str] = None       # "0000:91:00" (domain:bus:device): the GPU's, or the NVSwitch's for an SXid
    code: Optional[int] = None      # the Xid or SXid number
    fatal: Optional[bool] = None    # what an SXid or NVLink5 Xid line says (Fatal/Non-fatal); None: not said
    recovery: Optional[str] = None  # Xid 154: the recovery action it changed to ("GPU Reset Required")
    detail: Optional[str] = None    # the driver version of a load, the NVSwitch's device name or PCI id


def pci_key(text: Optional[str]) -> Optional[str]:
    """"00000000:3B:00.0", "0000:3b:00", "3b:00.0" -> "0000:3b:00": one spelling for comparing addresses."""
    m = re.search(r"(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.[0-7])?\s*$", (text or "").strip())
    if not m:
        return None
    return f"{int(m.group(1) or '0', 16):04x}:{m.group(2).lower()}:{m.group(3).lower()}"


def _xid(i: int, line: str, m: re.Match) -> KernelEvent:
    rest = m.group("rest") or ""
    sev = SEVERITY.search(rest)
    rec = RECOVERY.search(rest)
    return KernelEvent("xid", i, line[:MAX_TEXT], pci_key(m.group("pci")), int(m.group("code")),
                       fatal=None if sev is None else sev.group("sev") == "Fatal",
                       recovery=rec.group("to") if rec else None)


def _lost_start(i: int, lines: Sequence[str], m: re.Match) -> Optional[KernelEvent]:
    """The three-line "The NVIDIA GPU ... has fallen off the bus" message (one kmsg record, or three lines)."""
    if any(LOST_END.search(ln[:MAX_LINE_CHARS]) for ln in lines[i:i + 4]):
        return KernelEvent("lost", i, lines[i][:MAX_TEXT], pci_key(m.group("pci")))
    return None


def _sxid(i: int, line: str, m: re.Match) -> KernelEvent:
    name = _SWITCH_NAME.search(line, max(0, m.start() - 80), m.start())
    return KernelEvent("sxid", i, line[:MAX_TEXT], pci_key(m.group("pci")), int(m.group("code")),
                       fatal=m.group("severity") == "Fatal", detail=name.group(1) if name else None)


def parse_line(i: int, lines: Sequence[str]) -> Optional[KernelEvent]:
    line = lines[i][:MAX_LINE_CHARS]
    m = XID.search(line)
    if m:
        return _xid(i, line, m)
    m = SXID.search(line)
    if m:
        return _sxid(i, line, m)
    m = LOST.search(line)
    if m:
        return KernelEvent("lost", i, line[:MAX_TEXT], pci_key(m.group("pci") or m.group("pci2")))
    m = LOST_START.search(line)
    if m:
        return _lost_start(i, lines, m)
    return _other(i, line)


def _other(i: int, line: str) -> Optional[KernelEvent]:
    m = LOAD.search(line)
    if m:
        return KernelEvent("driver_load", i, line[:MAX_TEXT], detail=m.group("version"))
    m = SWITCH_PROBE.search(line)
    if m:
        return KernelEvent("switch", i, line[:MAX_TEXT], detail=f"10de:{m.group('device_id').lower()}")
    if BOOT.search(line):
        return KernelEvent("boot", i, line[:MAX_TEXT])
    return None


def parse(lines: Sequence[str]) -> List[KernelEvent]:
    """Every event in ``lines`` (oldest first). SXid lines without a severity (``Data {...}``,
    ``Severity 1 Engine instance ...``) continue the event before them and are not events."""
    return [e for e in (parse_line(i, lines) for i in range(len(lines))) if e is not None]
