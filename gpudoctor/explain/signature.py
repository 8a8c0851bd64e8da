"""One error signature, as the catalog files declare it: patterns, values, titles, its differential.

``_catalog.json`` and the family files under ``knowledge/signatures`` are read into these
frozen dataclasses; ``parse`` checks each raw entry and names the file and signature of
anything malformed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Optional, Tuple

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
    differential diagnosis, ranked by ``prior`` unless a clue (``requires``) lifts it. ``if_value`` proposes it
    only when the message's values hold those words; with ``replaces`` it is then the message's one reading (a value
    that names the cause), and the signature's own family is not proposed beside it."""

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
    replaces: bool = False                  # when it holds, the message's own reading is not proposed beside it


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
    smi_failure: Optional[str] = None       # the row of nvidia_smi_failures.json its pattern comes from
    program_bug_if: Mapping[str, str] = field(default_factory=dict)   # value (derived too) -> needle: a note instead
    program_bug_unless: Tuple[str, ...] = ()  # ... unless one of these flags holds (the driver or machine hung)
    fallback: bool = False                  # a generic reading, dropped where a specific one matched the same lines

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
                          _prior(raw.get("prior")), _tuple(raw.get("title")), bool(raw.get("replaces", False)))
    except KeyError as exc:
        raise CatalogError(f"{where}: alternative without {exc}") from None
    if alt.specificity is None and alt.tell_apart is None:
        raise CatalogError(f"{where}: alternative {alt.family} is neither proposed (specificity) nor told apart")
    return alt


def parse(raw: Mapping, family: Optional[str], file: str) -> Signature:
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
        examples=tuple(raw.get("examples") or ()), sources=_tuple(raw.get("sources")), file=file,
        smi_failure=raw.get("smi_failure"), program_bug_if=dict(raw.get("program_bug_if") or {}),
        program_bug_unless=_tuple(raw.get("program_bug_unless")),
        fallback=bool(raw.get("fallback", False)))
