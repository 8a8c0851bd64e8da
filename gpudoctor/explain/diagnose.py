"""From signature matches to ranked diagnoses, one per family, most likely first.

A matched signature proposes its own family and, when the context allows, alternative
families (the same "CUDA driver version is insufficient" inside a container more likely
means the GPU was not passed in). Each proposal is scored by the signature's specificity
plus its boosts for the context flags; a more specific signature can suppress a generic
one ("sm_120 is not compatible" over "no kernel image is available"). Proposals of the
same family merge, keeping the best one's explanation and every matching line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from gpudoctor.explain import oom
from gpudoctor.explain.derive import derive
from gpudoctor.explain.tailor import build_fix, fill_sentences
from gpudoctor.explain.values import convert, display, jsonable
from gpudoctor.findings import Fix

MAX_OCCURRENCES = 50
CONFIRMED_BONUS = 10      # a diagnosis the machine's own checks also report
# Derived values worth showing next to the message's own (the rest only feed the recipes).
DERIVED_SHOWN = ("driver_cuda", "compute_cap", "arch_max", "driver_max_cuda", "xid_meaning", "xid_cause")


@dataclass
class Hit:
    """One signature's matches in the inputs."""

    sig: Any                                  # catalog.Signature
    source: str
    lines: List[int]
    count: int
    excerpt: str
    values: Dict[str, Any]                    # typed, from the first match
    occurrences: List[Tuple[str, int]] = field(default_factory=list)


@dataclass
class Diagnosis:
    id: str
    family: str
    title: str
    score: int
    recipe: Optional[str]
    source: str
    lines: List[int]
    count: int
    excerpt: str
    values: Dict[str, Any]
    explanation: List[str]
    fix: Optional[Fix]
    also_matched: List[str] = field(default_factory=list)
    occurrences: List[Tuple[str, int]] = field(default_factory=list)
    analysis: Optional[Dict[str, Any]] = None
    via: str = "signature"                    # "signature", or "alternative" of another family
    confirmed_by: Optional[Dict[str, str]] = None   # the check that found the same problem on the machine

    @property
    def confidence(self) -> str:
        return "high" if self.score >= 85 else "medium" if self.score >= 55 else "low"

    def to_dict(self) -> Dict[str, Any]:
        fix = None
        if self.fix is not None:
            fix = {"summary": self.fix.summary, "commands": list(self.fix.commands), "needs_root": self.fix.needs_root,
                   "needs_reboot": self.fix.needs_reboot, "links": list(self.fix.links), "recipe": self.fix.kb_id}
        return {"id": self.id, "family": self.family, "title": self.title, "confidence": self.confidence,
                "score": self.score, "via": self.via, "input": self.source, "lines": self.lines,
                "count": self.count, "excerpt": self.excerpt,
                "values": {k: jsonable(v) for k, v in self.values.items()},
                "explanation": " ".join(self.explanation), "fix": fix, "also_matched": self.also_matched,
                "occurrences": [{"input": s, "line": n} for s, n in self.occurrences],
                **({"analysis": self.analysis} if self.analysis else {}),
                **({"confirmed_by": self.confirmed_by} if self.confirmed_by else {})}


@dataclass
class Note:
    """A match that is not an environment problem: a program bug, or a harmless warning."""

    id: str
    kind: str
    title: str
    source: str
    lines: List[int]
    excerpt: str
    explanation: List[str]

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "title": self.title, "input": self.source, "lines": self.lines,
                "excerpt": self.excerpt, "explanation": " ".join(self.explanation)}


def typed_values(sig, raw: Mapping[str, str]) -> Dict[str, Any]:
    return {name: convert(sig.values.get(name, "str"), text) for name, text in raw.items()}


def _flags_ok(requires, excludes, flags: Set[str]) -> bool:
    return all(f in flags for f in requires) and not any(f in flags for f in excludes)


def _values_ok(if_value: Mapping[str, str], values: Mapping[str, Any]) -> bool:
    return all(needle.lower() in display(values.get(name) or "").lower() for name, needle in if_value.items())


@dataclass
class _Proposal:
    family: str
    recipe: Optional[str]
    score: int
    hit: Hit
    sentences: List[str]
    via: str
    analysis: Optional[oom.OomAnalysis] = None


class Diagnoser:
    """Turns hits plus context into diagnoses and notes; ``facts`` (a snapshot's) tailor the fixes."""

    def __init__(self, catalog, ctx, facts=None):
        self.catalog, self.ctx, self.facts = catalog, ctx, facts
        self.findings = _machine_findings(facts)

    def run(self, hits: List[Hit]) -> Tuple[List[Diagnosis], List[Note]]:
        notes = [self._note(h) for h in hits if h.sig.kind in ("program_bug", "harmless")]
        suppressed: Dict[str, Set[str]] = {}          # signature id or "family:X" -> by whom
        for h in hits:
            for target in h.sig.suppresses:
                suppressed.setdefault(target, set()).add(h.sig.id)
        proposals: List[_Proposal] = []
        for hit in hits:
            if hit.sig.kind == "diagnosis" and hit.sig.id not in suppressed:
                proposals.extend(self._propose(hit, notes))
        proposals = [p for p in proposals
                     if not suppressed.get(f"family:{p.family}", set()) - {p.hit.sig.id}]
        return self._merge(proposals), notes

    def _values(self, hit: Hit) -> Tuple[Dict[str, Any], Set[str]]:
        values = {**self.ctx.values, **hit.values}
        flags = derive(values, dict(self.catalog.data)) | self.ctx.flags
        return values, flags

    def _propose(self, hit: Hit, notes: List[Note]) -> List[_Proposal]:
        sig = hit.sig
        values, flags = self._values(hit)
        out: List[_Proposal] = []
        if _flags_ok(sig.requires, sig.excludes, flags):
            score = sig.specificity + sum(b for f, b in sig.boost.items() if f in flags)
            main = _Proposal(sig.family, sig.recipe, score, hit, list(sig.explanation), "signature")
            if sig.analysis == "oom":
                main.analysis = oom.analyse(values)
                if main.analysis.kind == "program_bug":
                    notes.append(Note(sig.id, "program_bug", sig.title, hit.source, hit.lines, hit.excerpt,
                                      main.analysis.explanation))
                    return []
                main.recipe = main.analysis.recipe or main.recipe
                main.sentences = main.sentences + main.analysis.explanation
            out.append(main)
        for alt in sig.alternatives:
            if _flags_ok(alt.requires, alt.excludes, flags) and _values_ok(alt.if_value, values):
                out.append(_Proposal(alt.family, alt.recipe, alt.specificity, hit,
                                     list(alt.explanation or sig.explanation), "alternative"))
        return out

    def _merge(self, proposals: List[_Proposal]) -> List[Diagnosis]:
        by_family: Dict[str, List[_Proposal]] = {}
        for p in proposals:
            by_family.setdefault(p.family, []).append(p)
        diagnoses = []
        for family, group in by_family.items():
            group.sort(key=lambda p: (-p.score, p.hit.lines[0] if p.hit.lines else 0))
            diagnoses.append(self._diagnosis(family, group))
        for d in diagnoses:
            finding = self.findings.get(d.recipe or "")
            if finding is not None:     # the machine shows the same problem: the checks' fix, ranked higher
                d.fix, d.score = finding.fix, d.score + CONFIRMED_BONUS
                d.confirmed_by = {"check": finding.check_id, "status": finding.status.value, "title": finding.title}
        diagnoses.sort(key=lambda d: (-d.score, d.lines[0] if d.lines else 0))
        return diagnoses

    def _diagnosis(self, family: str, group: List[_Proposal]) -> Diagnosis:
        best = group[0]
        hit, sig = best.hit, best.hit.sig
        values, _ = self._values(hit)
        shown = {k: v for k, v in values.items() if k in hit.values or k in DERIVED_SHOWN}
        sentences = fill_sentences(best.sentences, values)
        fix = build_fix(best.recipe, self.facts, values, sig.recipe_values)
        lines = sorted({n for p in group if p.hit.source == hit.source for n in p.hit.lines})
        occurrences = sorted({o for p in group for o in p.hit.occurrences})[:MAX_OCCURRENCES]
        also = sorted({p.hit.sig.id for p in group} - {sig.id})
        title = sig.title if best.via == "signature" else f"{family.replace('_', ' ')} (from: {sig.title})"
        return Diagnosis(sig.id, family, title, best.score, best.recipe, hit.source, lines[:MAX_OCCURRENCES],
                         sum(p.hit.count for p in group if p.hit.sig.id == sig.id), hit.excerpt,
                         {k: v for k, v in shown.items() if v not in (None, "", [])}, sentences, fix, also,
                         occurrences, best.analysis.to_dict() if best.analysis else None, best.via)

    def _note(self, hit: Hit) -> Note:
        values, _ = self._values(hit)
        return Note(hit.sig.id, hit.sig.kind, hit.sig.title, hit.source, hit.lines, hit.excerpt,
                    fill_sentences(hit.sig.explanation, values))


def _machine_findings(facts) -> Dict[str, Any]:
    """Failing/warning findings of the checks on the snapshot, by recipe id (the shared knowledge-base id)."""
    if facts is None:
        return {}
    from gpudoctor.findings import Status
    from gpudoctor.report import build_report

    out: Dict[str, Any] = {}
    for f in build_report(facts.snapshot).findings:
        if f.fix is not None and f.fix.kb_id and f.status in (Status.FAIL, Status.WARN):
            known = out.get(f.fix.kb_id)
            if known is None or f.status.rank > known.status.rank:
                out[f.fix.kb_id] = f
    return out
