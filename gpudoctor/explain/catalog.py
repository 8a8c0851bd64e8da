"""The error-signature catalog: ``knowledge/signatures/*.json`` loaded, checked and compiled once.

Each family file holds signatures (the real messages a broken GPU stack prints) with
their regular expressions, the values to pull out of them, the recipe that fixes them,
real example messages and the issue threads they come from. ``_catalog.json`` names the
families, the context flags and the *gates*: short literals that every anchor contains,
which the scanner searches for in large byte chunks before any regex runs. An anchor
that contains no listed gate becomes a gate of its own (correct, only slower).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from gpudoctor.explain.signature import (  # noqa: F401  (re-exported: the catalog's public names)
    KINDS, NOTES, STREAMED, VALUE_TYPES, Alternative, CatalogError, Prior, Signature, TellApart, parse)
from gpudoctor.knowledge import smi_failures


@dataclass
class Catalog:
    signatures: Tuple[Signature, ...]
    families: Tuple[str, ...]
    gates: Tuple[bytes, ...]
    flags: Tuple[str, ...]
    data: Mapping[str, object]               # extra tables (e.g. Xid meanings), by name
    _by_gate: Dict[bytes, Tuple[Signature, ...]] = field(default_factory=dict)
    _cache: Dict[Tuple[bytes, ...], Tuple["re.Pattern", Tuple[Signature, ...]]] = field(default_factory=dict)

    def __post_init__(self):
        self.by_id = {s.id: s for s in self.signatures}
        streamed = [s for s in self.signatures if s.kind in STREAMED]
        self.tails: Dict[bytes, Optional["re.Pattern"]] = {}
        owned: Dict[bytes, List[str]] = {g: [] for g in self.gates}
        for anchor, ignore_case in {(a, s.ignore_case) for s in streamed for a in s.anchors}:
            for gate in _owners(self.gates, anchor, ignore_case):
                owned[gate].append((anchor, ignore_case))
        for gate in self.gates:
            mine = set(owned[gate])
            self._by_gate[gate] = tuple(s for s in streamed if mine.intersection((a, s.ignore_case) for a in s.anchors))
            self.tails[gate] = _tails(gate.decode(), sorted(mine))

    def for_gates(self, gates: Iterable[bytes]) -> Tuple[Signature, ...]:
        return self.candidates(gates)[1]

    def candidates(self, gates: Iterable[bytes]) -> Tuple["re.Pattern", Tuple[Signature, ...]]:
        """For the gates found in a line: one regex matching any of their signatures' anchors, and those signatures.

        The regex lets a line that holds a gate but no anchor (``cuda:0`` in a progress line) be dropped
        with a single search instead of one substring test per signature."""
        key = tuple(gates)
        got = self._cache.get(key)
        if got is None:
            seen: Dict[str, Signature] = {}
            for gate in key:
                for sig in self._by_gate.get(gate, ()):
                    seen.setdefault(sig.id, sig)
            anchors = sorted({(a, sig.ignore_case) for sig in seen.values() for a in sig.anchors},
                             key=lambda x: len(x[0]), reverse=True)
            alternation = "|".join(f"(?i:{re.escape(a)})" if ci else re.escape(a) for a, ci in anchors)
            any_anchor = re.compile(alternation or "(?!)")
            got = self._cache[key] = (any_anchor, tuple(seen.values()))
        return got

    def of_kind(self, *kinds: str) -> List[Signature]:
        return [s for s in self.signatures if s.kind in kinds]


def _owners(gates: Tuple[bytes, ...], anchor: str, ignore_case: bool) -> List[bytes]:
    """The gates an anchor is found through: the first listed gate it contains; for an anchor of a
    case-insensitive signature, every gate it contains in any letter case (``CUDA`` and ``cud`` both
    find "CUDA out of memory" written as "cuda out of memory")."""
    if not ignore_case:
        return [g for g in gates if g.decode() in anchor][:1]
    low = anchor.lower()
    return [g for g in gates if g.decode().lower() in low]


def _tails(gate: str, anchors: List[Tuple[str, bool]]) -> Optional["re.Pattern"]:
    """A bytes regex of what follows ``gate`` inside the anchors that contain it; None if one ends with it.

    Matched at each gate occurrence, it drops ``cuda:0`` or ``NCCL INFO`` (no anchor continues like
    that) before the line is even located, which keeps chatty logs cheap. Tails of case-insensitive
    anchors match in any letter case."""
    tails = set()
    for anchor, ignore_case in anchors:
        text, needle = (anchor.lower(), gate.lower()) if ignore_case else (anchor, gate)
        start = text.find(needle)
        while start != -1:
            tail = text[start:]
            if tail == needle:
                return None
            tails.add((tail, ignore_case))
            start = text.find(needle, start + 1)
    if not tails:
        return None
    parts = [b"(?i:" + re.escape(t.encode()) + b")" if ci else re.escape(t.encode())
             for t, ci in sorted(tails, key=lambda x: len(x[0]), reverse=True)]
    return re.compile(b"|".join(parts))


def _files() -> List[Tuple[str, str]]:
    folder = resources.files("gpudoctor.knowledge").joinpath("signatures")
    return sorted((p.name, p.read_text(encoding="utf-8")) for p in folder.iterdir() if p.name.endswith(".json"))


def _gates(listed: Iterable[str], signatures: Iterable[Signature]) -> Tuple[bytes, ...]:
    """The listed gates, then every anchor no gate covers as written (each gate costs a pass over the
    input: an anchor of a case-insensitive signature is found in another case only through a listed gate)."""
    gates = list(dict.fromkeys(listed))
    anchors = {a for sig in signatures if sig.kind in STREAMED for a in sig.anchors}
    for anchor in sorted(anchors, key=lambda a: (len(a), a)):    # shortest first: it may cover longer ones
        if not any(g in anchor for g in gates):
            gates.append(anchor)              # uncovered as written: searched on its own
    return tuple(g.encode() for g in gates)


def _from_table(raw: Mapping, where: str) -> Mapping:
    """A signature naming a row of nvidia-smi's failure table (``smi_failure``) takes that row's pattern, in any
    letter case as the table matches it: explain, the nvidia-smi parsers and DRV001 read the message alike."""
    row_id = raw.get("smi_failure")
    if row_id is None:
        return raw
    if "patterns" in raw or "flags" in raw:
        raise CatalogError(f"{where}: takes its pattern from smi_failure {row_id!r}, so it may not set patterns or flags")
    row = next((f for f in smi_failures.failures() if f.id == row_id), None)
    if row is None:
        raise CatalogError(f"{where}: smi_failure {row_id!r} is not a row of nvidia_smi_failures.json")
    return {**raw, "patterns": [row.pattern.pattern], "flags": "i"}


def build(files: Iterable[Tuple[str, str]]) -> Catalog:
    """A catalog from (file name, JSON text) pairs; raises CatalogError naming the culprit."""
    meta: Dict = {}
    signatures: List[Signature] = []
    data: Dict[str, object] = {}
    for name, text in files:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise CatalogError(f"{name}: not valid JSON: {exc}") from None
        if name == "_catalog.json":
            meta = doc
            continue
        try:
            signatures.extend(parse(_from_table(raw, f"{name}: {raw.get('id', '?')}"), doc.get("family"), name)
                              for raw in doc.get("signatures", ()))
        except KeyError as exc:
            raise CatalogError(f"{name}: a signature has no {exc}") from None
        data.update(doc.get("tables") or {})
    ids = [s.id for s in signatures]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise CatalogError(f"duplicate signature ids: {', '.join(sorted(dup))}")
    for sig in signatures:
        if sig.kind in STREAMED and (not sig.anchors or not sig.patterns):
            raise CatalogError(f"{sig.file}: {sig.id}: needs anchors and patterns")
    return Catalog(tuple(signatures), tuple(meta.get("families", ())),
                   _gates(meta.get("gates", ()), signatures), tuple(meta.get("flags", ())), data)


@lru_cache(maxsize=None)
def load() -> Catalog:
    """The packaged catalog, read and compiled once per process."""
    return build(_files())
