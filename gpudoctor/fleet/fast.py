"""The fast path of ``fleet``'s reader: the three values a summary needs, out of a report
as gpudoctor writes it, without decoding the rest (checks, evidence and fixes are most of
its bytes; ``json.loads`` of a whole 30 KB report costs 8-10 times as much).

Only gpudoctor's own two layouts take it (keys sorted; ``check --jsonl``: separators ``,``
and ``:``; ``check --json``: ``indent=2``). Everything else returns None and goes to the full
JSON decoder, which decides: the fast path may only ever agree with it, never read
something it would refuse, for the damage a fleet's reports meet (cut, cut and glued to the
next, interleaved with other lines, reordered by another writer, numbers too long to read;
tests/test_fleet_fast.py fuzzes these). What it does not decode it does not validate: a byte
flipped inside the checks, which only a full decode would see, is read. The work per report is a few scans for fixed byte strings and
one decode of the report's tail (``machine`` to the end, ~2.5 KB); bytes.rfind runs at
several GB/s, a regular expression or a Python loop per byte would not.
"""

from __future__ import annotations

import json
import re
import sys
from itertools import repeat
from operator import itemgetter
from typing import Callable, Dict, List, NamedTuple, Optional

_DECODER = json.JSONDecoder()
# The decoder refuses an integer of more digits than this (Python 3.11+; 0: no limit). A run of
# that many digits holds two bytes _STRIDE apart, the first followed by over _STRIDE digits.
_MAX_DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 0)()
_STRIDE = max(1, _MAX_DIGITS // 2 - 1)
_DIGIT = re.compile(rb"[0-9]")
_RUN = re.compile(rb"[0-9]*")
_ESCAPE = b"\\"  # "st\u0061tus" is "status" to a decoder: a region with escapes is decoded


class _Layout(NamedTuple):
    first: bytes      # how the report starts
    findings: bytes   # the top-level key before its value, as this layout writes it
    machine: bytes
    version: bytes    # the key between findings and machine (sorted keys)
    quiet: tuple      # what follows "status" in a finding that is no problem
    tell: Callable    # the byte that tells them apart: "o" or "s"


_COMPACT = _Layout(b'{"checks":', b',"findings":', b',"machine":', b',"gpudoctor_version":', (b':"ok"', b':"skip"'),
                   itemgetter(2))
# indent=2: a top-level key is the only one at two blanks after a newline (strings hold no newline)
_PRETTY = _Layout(b'{\n  "checks": ', b',\n  "findings": ', b',\n  "machine": ', b',\n  "gpudoctor_version": ',
                  (b': "ok"', b': "skip"'), itemgetter(3))


def fast(raw: bytes) -> Optional[Dict]:
    """``schema``, ``machine`` and ``findings`` of one report as gpudoctor writes it (keys
    sorted: ``checks``, ..., ``findings``, ``gpudoctor_version``, ``machine``, ..., ``schema``,
    ..., ``summary``), decoded without the rest. None when the bytes are anything else.
    ``raw`` is one document as ``split`` cuts it: a line, or a pretty document that no other
    line at column 0 interrupts (checking that again here would cost as much as the rest)."""
    layout = _PRETTY if raw.startswith(b"{\n") else _COMPACT
    # Found from the end: the tail is decoded exactly, so a "machine" key nested anywhere
    # would leave an unbalanced tail and be refused below.
    machine_at = raw.rfind(layout.machine)
    findings_at = raw.rfind(layout.findings, 0, machine_at) if machine_at > 0 else -1
    if findings_at < 0 or not raw.startswith(layout.first):
        return None
    # A second report start before the findings is a cut report with the next one glued on
    # (anything glued later would have put its own findings and machine last). rfind: the same
    # answer as find, twice as fast over JSON (it tests the needle's first byte, not its last).
    if raw.rfind(b'"checks"', len(layout.first), findings_at) >= 0:
        return None
    tail = _tail(raw, machine_at)
    if tail is None or _long_number(raw):
        return None
    findings = _findings(raw, layout, findings_at, machine_at, tail["summary"])
    if findings is None:
        return None
    return {"machine": tail["machine"], "schema": tail["schema"], "findings": findings}


def _tail(raw: bytes, machine_at: int) -> Optional[Dict]:
    """``machine`` to the end, decoded as one object that must end where the report ends."""
    text = "{" + raw[machine_at + 1:].decode("utf-8", "replace")
    try:
        tail, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return None
    if text[end:].strip() or "findings" in tail:  # a later "findings" key is the one a decoder keeps
        return None
    summary, machine = tail.get("summary"), tail.get("machine")
    if not (isinstance(summary, dict) and all(type(n) is int for n in summary.values())
            and isinstance(machine, dict) and isinstance(machine.get("hostname"), str) and "schema" in tail):
        return None
    return tail


def _long_number(raw: bytes) -> bool:
    """Whether ``raw`` may hold an integer too long for the decoder, which would refuse the
    report (a run of digits that long is seen by sampling every _STRIDE-th byte)."""
    if not _MAX_DIGITS:
        return False
    for digit in _DIGIT.finditer(raw[::_STRIDE]):  # a report has a sampled digit or two, not sixteen
        at = digit.start() * _STRIDE
        if _RUN.match(raw, at).end() - at > _STRIDE:
            return True
    return False


def _findings(raw: bytes, layout: _Layout, findings_at: int, machine_at: int, summary: Dict) -> Optional[list]:
    """The findings a summary needs: [] when each one is "ok" or "skip" (not decoded), else
    all of them, decoded. The list must end right before ``gpudoctor_version``, whose value is
    a plain string that ends right before ``machine``."""
    start = findings_at + len(layout.findings)
    version_at = raw.rfind(layout.version, start, machine_at)
    version = raw[version_at + len(layout.version):machine_at]
    if (version_at < 0 or raw[start:start + 1] != b"[" or raw[version_at - 1:version_at] != b"]"
            or version.count(b'"') != 2 or not version.startswith(b'"') or not version.endswith(b'"')
            or _ESCAPE in version):
        return None
    region = raw[start:version_at]
    after = None if _ESCAPE in region else region.split(b'"status"')[1:]
    if after is not None and (after or region == b"[]") and _quiet(after, layout, summary):
        return []  # (a list without a "status" must be empty: [1, 2] is damage for the decoder to name)
    text = region.decode("utf-8", "replace")
    try:
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, list) and end == len(text) else None


def _quiet(after: List[bytes], layout: _Layout, summary: Dict) -> bool:
    """Whether no finding has a problem status, read from what follows each "status" (without
    escapes, every "status" key is those bytes; one with blanks around its colon, or any other
    value, is not quiet) and checked against the summary's counts, which must be those of the
    "ok" and "skip" found and nothing else. (map over C methods: no Python call per finding.)"""
    quiet = sum(map(bytes.startswith, after, repeat(layout.quiet)))
    if quiet != len(after):
        return False
    ok = bytes(map(layout.tell, after)).count(b"o")  # each starts with one of the two: one byte tells which
    others = dict(summary)  # (its values are ints: _tail checked)
    return (others.pop("ok", 0) == ok and others.pop("skip", 0) == quiet - ok and others.pop("diagnoses", 0) >= 0
            and not any(others.values()))
