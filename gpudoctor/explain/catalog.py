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

KINDS = ("diagnosis", "program_bug", "harmless", "cpu_only", "fact", "context")
STREAMED = ("diagnosis", "program_bug", "harmless", "cpu_only")   # matched line by line while scanning
NOTES = ("program_bug", "harmless", "cpu_only")      # matches that are not an environment problem
VALUE_TYPES = ("str", "int", "version", "size", "sm", "arch_list", "driver_api_int", "cudnn_version")


class CatalogError(ValueError):
    """A malformed signature file; the message names the file and the signature."""


@dataclass(frozen=True)
class TellApart:
    """The one command that tells a candidate cause apart, what it shows when it is the cause, and the
    check that reads the same fact on a recorded machine."""

    command: str
    shows: str
    check: Optional[str] = None
    only_in: Optional[str] = None           # "container" or "wsl": the cause exists only there


@dataclass(frozen=True)
class Prior:
    """How often a candidate was the cause among real cases this signature matches (``bench/explain_priors.py``)."""

    count: int
    threads: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Alternative:
    """Another family the same message can mean.

    With ``specificity`` it is also proposed as a diagnosis of its own when its ``requires`` flags hold
    (an empty ``requires`` always holds); with ``tell_apart`` it is a candidate of the signature's
    differential diagnosis, ranked by ``prior`` unless a clue (``requires``) lifts it."""

    family: str
    recipe: str
    specificity: Optional[int] = None
    requires: Tuple[str, ...] = ()
    if_value: Mapping[str, str] = field(default_factory=dict)
    explanation: Tuple[str, ...] = ()
    excludes: Tuple[str, ...] = ()
    tell_apart: Optional[TellApart] = None
    prior: Optional[Prior] = None
    title: Tuple[str, ...] = ()             # templates, the first whose values are known is used


@dataclass(frozen=True)
class Signature:
    id: str
    kind: str
    family: Optional[str]
    title: str                              # the plain title (no placeholders)
    anchors: Tuple[str, ...]
    patterns: Tuple["re.Pattern", ...]
    values: Mapping[str, str]
    specificity: int = 50
    recipe: Optional[str] = None
    explanation: Tuple[str, ...] = ()
    requires: Tuple[str, ...] = ()          # flags that must all be set
    excludes: Tuple[str, ...] = ()          # flags that must all be unset
    boost: Mapping[str, int] = field(default_factory=dict)
    suppresses: Tuple[str, ...] = ()        # signature ids, or "family:<name>"
    alternatives: Tuple[Alternative, ...] = ()
    drop_if_value: Mapping[str, str] = field(default_factory=dict)
    recipe_values: Mapping[str, str] = field(default_factory=dict)
    analysis: Optional[str] = None          # "oom", "xid": a module refines the diagnosis
    window_lines: int = 1
    flag: Optional[str] = None              # context signatures: the flag they set
    examples: Tuple[Mapping, ...] = ()
    sources: Tuple[str, ...] = ()
    file: str = ""
    titles: Tuple[str, ...] = ()            # title templates, most specific first, ``title`` last
    ignore_case: bool = False               # anchors and patterns match in any letter case
    tell_apart: Optional[TellApart] = None  # for its own family, when it has a differential
    prior: Optional[Prior] = None
    prior_of: int = 0                       # real cases the signature matched when the priors were counted

    @property
    def differential(self) -> bool:
        return self.tell_apart is not None or any(a.tell_apart is not None for a in self.alternatives)

    def has_anchor(self, line: str, lowered: Optional[str] = None) -> bool:
        if self.ignore_case:
            low = lowered if lowered is not None else line.lower()
            return any(a.lower() in low for a in self.anchors)
        return any(a in line for a in self.anchors)

    def drops(self, values: Mapping[str, str]) -> bool:
        """True when an extracted value marks the hit as something else (e.g. TensorRT's optional lib)."""
        return any(needle in (values.get(name) or "") for name, needle in self.drop_if_value.items())


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


def _tuple(value) -> tuple:
    if value is None:
        return ()
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def _compile(pattern: str, flags: str, where: str) -> "re.Pattern":
    try:
        return re.compile(pattern, re.IGNORECASE if "i" in flags else 0)
    except re.error as exc:
        raise CatalogError(f"{where}: bad pattern {pattern!r}: {exc}") from None


def _tell_apart(raw: Optional[Mapping], where: str) -> Optional[TellApart]:
    if raw is None:
        return None
    try:
        return TellApart(raw["command"], raw["shows"], raw.get("check"), raw.get("only_in"))
    except (KeyError, TypeError):
        raise CatalogError(f"{where}: tell_apart needs a command and what it shows") from None


def _prior(raw: Optional[Mapping]) -> Optional[Prior]:
    return None if raw is None else Prior(int(raw.get("count", 0)), _tuple(raw.get("threads")))


def _alternative(raw: Mapping, where: str) -> Alternative:
    try:
        spec = raw.get("specificity")
        alt = Alternative(raw["family"], raw["recipe"], None if spec is None else int(spec),
                          _tuple(raw.get("requires")), dict(raw.get("if_value") or {}), _tuple(raw.get("explanation")),
                          _tuple(raw.get("excludes")), _tell_apart(raw.get("tell_apart"), where),
                          _prior(raw.get("prior")), _tuple(raw.get("title")))
    except KeyError as exc:
        raise CatalogError(f"{where}: alternative without {exc}") from None
    if alt.specificity is None and alt.tell_apart is None:
        raise CatalogError(f"{where}: alternative {alt.family} is neither proposed (specificity) nor told apart")
    return alt


def _signature(raw: Mapping, family: Optional[str], file: str) -> Signature:
    where = f"{file}: {raw.get('id', '?')}"
    kind = raw.get("kind", "diagnosis")
    if kind not in KINDS:
        raise CatalogError(f"{where}: unknown kind {kind!r}")
    patterns = tuple(_compile(p, raw.get("flags", ""), where) for p in _tuple(raw.get("patterns")))
    values = dict(raw.get("values") or {})
    for name, vtype in values.items():
        if vtype not in VALUE_TYPES:
            raise CatalogError(f"{where}: value {name!r} has unknown type {vtype!r}")
    titles = _tuple(raw.get("title", raw["id"]))
    return Signature(
        id=raw["id"], kind=kind, family=raw.get("family", family if kind == "diagnosis" else None),
        title=titles[-1], titles=titles, ignore_case="i" in raw.get("flags", ""),
        tell_apart=_tell_apart(raw.get("tell_apart"), where), prior=_prior(raw.get("prior")),
        prior_of=int(raw.get("prior_of", 0)), anchors=_tuple(raw.get("anchors")), patterns=patterns, values=values,
        specificity=int(raw.get("specificity", 50)), recipe=raw.get("recipe"),
        explanation=_tuple(raw.get("explanation")), requires=_tuple(raw.get("requires")),
        excludes=_tuple(raw.get("excludes")), boost=dict(raw.get("boost") or {}),
        suppresses=_tuple(raw.get("suppresses")),
        alternatives=tuple(_alternative(a, where) for a in raw.get("alternatives") or ()),
        drop_if_value=dict(raw.get("drop_if_value") or {}), recipe_values=dict(raw.get("recipe_values") or {}),
        analysis=raw.get("analysis"), window_lines=int(raw.get("window_lines", 1)), flag=raw.get("flag"),
        examples=tuple(raw.get("examples") or ()), sources=_tuple(raw.get("sources")), file=file)


def _gates(listed: Iterable[str], signatures: Iterable[Signature]) -> Tuple[bytes, ...]:
    """The listed gates, then every anchor no gate covers as written (each gate costs a pass over the
    input: an anchor of a case-insensitive signature is found in another case only through a listed gate)."""
    gates = list(dict.fromkeys(listed))
    anchors = {a for sig in signatures if sig.kind in STREAMED for a in sig.anchors}
    for anchor in sorted(anchors, key=lambda a: (len(a), a)):    # shortest first: it may cover longer ones
        if not any(g in anchor for g in gates):
            gates.append(anchor)              # uncovered as written: searched on its own
    return tuple(g.encode() for g in gates)


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
            signatures.extend(_signature(raw, doc.get("family"), name) for raw in doc.get("signatures", ()))
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
