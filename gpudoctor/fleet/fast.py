"""The fast path of ``fleet``'s reader: the three values a summary needs, out of a report
as gpudoctor writes it, without decoding the rest (checks, evidence and fixes are most of
its bytes; ``json.loads`` of a whole 20 KB report costs 4-5 times as much).

Anything that is not plainly one whole report in gpudoctor's own layout (sorted keys, one
line or ``indent=2``) returns None and goes to the full JSON decoder, which decides: the
fast path may only ever agree with it, never read something it would refuse.
"""

from __future__ import annotations

import json
import re
from typing import Dict, Optional

_DECODER = json.JSONDecoder()
# A finding with a problem status holds one of these strings; without any of them (the usual
# healthy node) the findings need no decoding. A false alarm only costs the decoding.
_PROBLEM_WORDS = (b'"fail"', b'"warn"', b'"error"')
_FIRST = re.compile(rb'\{\s*"checks"\s*:')
_COLON = re.compile(rb"\s*:\s*")
_SUMMARY = re.compile(rb'"summary"\s*:\s*')
_TOP_KEY = re.compile(rb'\n  "([a-z_]+)": ')  # in indent=2 JSON only top-level keys sit at two blanks


def fast(raw: bytes) -> Optional[Dict]:
    """``schema``, ``machine`` and ``findings`` of one report as gpudoctor writes it (keys
    sorted: ``checks``, ``findings``, ``machine``, ``schema``, ..., ``summary`` last), decoded
    without the rest: checks, evidence and fixes are most of its bytes. None when the bytes
    are anything else, for the full decoder to judge."""
    at = _pretty_keys(raw) if raw.startswith(b"{\n") else _compact_keys(raw)
    if at is None or raw[at["findings"]:at["findings"] + 1] != b"[":
        return None
    summary = _value(raw, at["summary"], len(raw), last=True)
    problem = any(raw.find(word, at["findings"], at["machine"]) >= 0 for word in _PROBLEM_WORDS)
    doc = {"machine": _value(raw, at["machine"], at["schema"]), "schema": _value(raw, at["schema"], at["summary"]),
           "findings": _value(raw, at["findings"], at["machine"]) if problem else []}
    if None in doc.values() or not _counted(raw, at, summary):
        return None
    machine = doc["machine"]
    return doc if isinstance(machine, dict) and isinstance(machine.get("hostname"), str) else None


def _counted(raw: bytes, at: Dict[str, int], summary) -> bool:
    """Findings left undecoded must be what the summary counts: as many objects with a
    ``check_id`` as the summary's statuses add up to (a list of anything else is damage,
    for the full decoder to name)."""
    if not isinstance(summary, dict) or not all(type(n) is int for n in summary.values()):
        return False
    findings = sum(n for status, n in summary.items() if status != "diagnoses")  # report/2 counts those too
    return raw.count(b'"check_id"', at["findings"], at["machine"]) == findings


def _compact_keys(raw: bytes) -> Optional[Dict[str, int]]:
    """Where each needed value starts in a JSON line. It is one whole report when it starts
    with ``{"checks":`` and holds that key once (a second one is a report glued to a cut one);
    ``_value`` checks that it ends right after ``summary``."""
    first = _FIRST.match(raw)
    if first is None or raw.find(b'"checks"', first.end()) >= 0:
        return None
    at, start = {}, first.end()
    for key in (b'"findings"', b'"machine"', b'"schema"'):  # in this order, each searched after the last
        start = raw.find(key, start)
        colon = _COLON.match(raw, start + len(key)) if start >= 0 else None
        if colon is None:
            return None
        at[key.strip(b'"').decode()] = start = colon.end()
    summary = _SUMMARY.search(raw, max(start, len(raw) - 400))
    if summary is None:
        return None
    at["summary"] = summary.end()
    return at


def _pretty_keys(raw: bytes) -> Optional[Dict[str, int]]:
    """The same for a pretty document (``indent=2``): its top-level keys are the lines indented
    by exactly two blanks, found in one pass; the splitter already cut it at column-0 braces."""
    at: Dict[str, int] = {}
    for found in _TOP_KEY.finditer(raw):
        key = found.group(1).decode()
        if key in at:
            return None
        at[key] = found.end()
    order = [at.get(k, -1) for k in ("checks", "findings", "machine", "schema", "summary")]
    return at if -1 not in order and order == sorted(order) else None


def _value(raw: bytes, start: int, stop: int, last: bool = False):
    """The JSON value at ``start``, followed by a comma (or, ``last``, by the closing brace)."""
    text = raw[start:stop].decode("utf-8", "replace")
    try:
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return None
    rest = text[end:].strip()
    return value if (rest == "}" if last else rest.startswith(",")) else None
