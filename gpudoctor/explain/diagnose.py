"""From signature matches to ranked diagnoses, one per family, most likely first.

A matched signature proposes its own family and, when the context allows, alternative
families (the same "CUDA driver version is insufficient" inside a container more likely
means the GPU was not passed in). Each proposal is scored by the signature's specificity
plus its boosts for the context flags; a more specific signature can suppress a generic
one ("sm_120 is not compatible" over "no kernel image is available"). Proposals of the
same family merge, keeping the best one's explanation and every matching line. A message
that the text alone cannot decide carries its differential (``differential``); on a recorded
machine the diagnosis `gpudoctor check` reaches there decides it (``machine``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from gpudoctor.explain import clues, differential, oom
from gpudoctor.explain.catalog import NOTES
from gpudoctor.explain.derive import derive
from gpudoctor.explain.machine import view as machine_view
from gpudoctor.explain.model import Diagnosis, Hit, Note, typed_values
from gpudoctor.explain.tailor import build_fix, fill_sentences
from gpudoctor.explain.values import display
from gpudoctor.knowledge.families import family as family_info

__all__ = ["Diagnoser", "Diagnosis", "Hit", "Note", "typed_values"]

MAX_OCCURRENCES = 50
DECIDED_BONUS = 40        # the machine's own checks reach this family: it outranks any reading of the text
# Derived values worth showing next to the message's own (the rest only feed the recipes).
DERIVED_SHOWN = ("driver_cuda", "compute_cap", "arch_max", "driver_max_cuda", "xid_meaning", "xid_cause")


def _flags_ok(requires, excludes, flags: Set[str]) -> bool:
    return all(f in flags for f in requires) and not any(f in flags for f in excludes)


def _values_ok(if_value: Mapping[str, str], values: Mapping[str, Any]) -> bool:
    return all(needle.lower() in display(values.get(name) or "").lower() for name, needle in if_value.items())


def _holds(alt, values: Mapping[str, Any], flags: Set[str]) -> bool:
    """An alternative is proposed here: it has a score of its own, and its flags and values hold."""
    return (alt.specificity is not None and _flags_ok(alt.requires, alt.excludes, flags)
            and _values_ok(alt.if_value, values))


def _near(a: Hit, b: Hit) -> bool:
    return a.source == b.source and any(abs(x - y) <= 1 for x in a.lines for y in b.lines)


def _without_covered_fallbacks(proposals: List["_Proposal"]) -> List["_Proposal"]:
    """A generic reading ("CUDA failed to initialize") gives way to a specific one of the same lines
    ("... failed to initialize CUDA: system not yet initialized"), but still speaks where nothing else does."""
    specific = [p.hit for p in proposals if not p.hit.sig.fallback]
    return [p for p in proposals if not p.hit.sig.fallback or not any(_near(p.hit, h) for h in specific)]


@dataclass
class _Proposal:
    family: str
    recipe: Optional[str]
    score: int
    hit: Hit
    sentences: List[str]
    via: str
    titles: Tuple[str, ...] = ()
    analysis: Optional[oom.OomVerdict] = None


def _clued(family: str, recipe: str, score: int, hit: Hit, explanation: List[str]) -> _Proposal:
    """A reading a clue about the whole machine proposes (``clues``), on the line of the reading it outranks."""
    return _Proposal(family, recipe, score, hit, explanation, "alternative")


class Diagnoser:
    """Turns hits plus context into diagnoses and notes; ``facts`` (a snapshot's) tailor and decide."""

    def __init__(self, catalog, ctx, facts=None):
        self.catalog, self.ctx, self.facts = catalog, ctx, facts
        self.machine = machine_view(facts)

    def run(self, hits: List[Hit]) -> Tuple[List[Diagnosis], List[Note]]:
        notes = [self._note(h) for h in hits if h.sig.kind in NOTES]
        suppressed: Dict[str, Set[str]] = {}          # signature id or "family:X" -> by whom
        for h in hits:
            for target in h.sig.suppresses:
                suppressed.setdefault(target, set()).add(h.sig.id)
        proposals: List[_Proposal] = []
        for hit in hits:
            if hit.sig.id in suppressed:
                continue
            if hit.sig.kind == "diagnosis":
                proposals.extend(self._propose(hit, notes))
            else:        # a note, unless a clue in the text says the machine is the problem (a Mac, a container)
                proposals.extend(self._alternatives(hit, *self._values(hit), clued_only=True))
        proposals = [p for p in proposals
                     if not suppressed.get(f"family:{p.family}", set()) - {p.hit.sig.id}]
        proposals = _without_covered_fallbacks(proposals)
        proposals = clues.apply(self.catalog.data.get("clue_families", ()), self.ctx.flags, proposals, _clued)
        diagnoses = self._merge(proposals)
        self._attach_differentials(diagnoses, proposals)
        return diagnoses, notes

    def _values(self, hit: Hit) -> Tuple[Dict[str, Any], Set[str]]:
        values = {**self.ctx.values, **hit.values}
        flags = derive(values, dict(self.catalog.data)) | self.ctx.flags
        return values, flags

    def _propose(self, hit: Hit, notes: List[Note]) -> List[_Proposal]:
        sig = hit.sig
        values, flags = self._values(hit)
        out: List[_Proposal] = []
        if (sig.program_bug_if and _values_ok(sig.program_bug_if, values)
                and not any(f in flags for f in sig.program_bug_unless)):
            notes.append(self._note(hit, "program_bug"))    # an Xid the application causes: the program's doing
            return []
        # an alternative that ``replaces`` the message's reading when it holds (a value naming the cause: NVML's reason
        # is the version mismatch) is the one judgment of this line, not a second finding beside it
        replaced = any(alt.replaces and _holds(alt, values, flags) for alt in sig.alternatives)
        if _flags_ok(sig.requires, sig.excludes, flags) and not replaced:
            score = sig.specificity + sum(b for f, b in sig.boost.items() if f in flags)
            main = _Proposal(sig.family, sig.recipe, score, hit, list(sig.explanation), "signature", sig.titles)
            if sig.analysis == "oom":
                main.analysis = oom.analyse(values)
                if main.analysis.kind == "program_bug":
                    notes.append(Note(sig.id, "program_bug", sig.title, hit.source, hit.lines, hit.excerpt,
                                      main.analysis.explanation))
                    return []
                main.recipe = main.analysis.recipe or main.recipe
                main.sentences = main.sentences + main.analysis.explanation
            out.append(main)
        out += self._alternatives(hit, values, flags)
        return out + self._decided(hit, flags, out)

    @staticmethod
    def _alternatives(hit: Hit, values: Mapping[str, Any], flags: Set[str], clued_only: bool = False) -> List[_Proposal]:
        """The other families the message proposes here; ``clued_only``: only those a clue (``requires``) lifts."""
        sig = hit.sig
        return [_Proposal(alt.family, alt.recipe, alt.specificity, hit, list(alt.explanation or sig.explanation),
                          "alternative", alt.title)
                for alt in sig.alternatives if (alt.requires or not clued_only) and _holds(alt, values, flags)]

    def _decided(self, hit: Hit, flags: Set[str], proposed: List[_Proposal]) -> List[_Proposal]:
        """A family this message can mean that the checks find on the recorded machine, when the text did not
        propose it: the machine decides between the message's causes."""
        if self.machine is None:
            return []
        have = {p.family for p in proposed}
        base = max((p.score for p in proposed), default=hit.sig.specificity)
        out = []
        for family in differential.families(hit.sig, flags):
            if family in have or self.machine.diagnosis(family) is None:
                continue
            sig = hit.sig
            alt = next((a for a in sig.alternatives if a.family == family), None)
            recipe, titles = (sig.recipe, sig.titles) if alt is None else (alt.recipe, alt.title)
            # the text's own explanation: an alternative's is written for the clue that lifts it
            out.append(_Proposal(family, recipe, base, hit, list(sig.explanation), "machine", titles))
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
            found = self.machine.diagnosis(d.family) if self.machine is not None else None
            if found is not None:     # the machine shows this problem: the checks' own fix, ranked first
                d.fix, d.score = found.fix or d.fix, d.score + DECIDED_BONUS
                d.machine = self.machine.decided(found)
        diagnoses.sort(key=lambda d: (-d.score, d.lines[0] if d.lines else 0))
        return diagnoses

    def _title(self, family: str, best: _Proposal, values: Mapping[str, Any]) -> str:
        """The first title template whose values this text gave; for an alternative without one, the family's."""
        filled = fill_sentences(best.titles, values)
        if filled:
            return filled[0]
        title = family_info(family).title
        first = title.split(" ", 1)[0]
        if any(c.isupper() for c in first[1:]):     # a name spelt with capitals inside (cuDNN) keeps its spelling
            return title
        return title[:1].upper() + title[1:]

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
        return Diagnosis(sig.id, family, self._title(family, best, values), best.score, best.recipe, hit.source,
                         lines[:MAX_OCCURRENCES], sum(p.hit.count for p in group if p.hit.sig.id == sig.id),
                         hit.excerpt, {k: v for k, v in shown.items() if v not in (None, "", [])}, sentences, fix,
                         also, occurrences, best.analysis.to_dict() if best.analysis else None, best.via)

    def _attach_differentials(self, diagnoses: List[Diagnosis], proposals: List[_Proposal]) -> None:
        """Each message with a differential gives it to the diagnosis of its top candidate (once)."""
        seen = set()
        for p in proposals:
            sig = p.hit.sig
            if not sig.differential or sig.id in seen:
                continue
            seen.add(sig.id)
            scores: Dict[str, int] = {}
            for q in proposals:
                if q.hit is p.hit:
                    scores[q.family] = max(scores.get(q.family, 0), q.score)
            diff = differential.build(sig, self._values(p.hit)[1], scores, self.ctx, self.machine)
            if diff is None:
                continue
            target = next((d for d in diagnoses if d.family == diff.candidates[0].family and d.differential is None),
                          None)
            if target is not None:
                target.differential = diff
                self._fold(diagnoses, target, diff, proposals, sig.id)

    @staticmethod
    def _fold(diagnoses: List[Diagnosis], target: Diagnosis, diff, proposals: List[_Proposal], sig_id: str) -> None:
        """Candidates of ``target``'s differential that only this message proposed are listed there, not again."""
        listed = {c.family for c in diff.candidates} - {target.family}
        for d in list(diagnoses):
            if d.family in listed and {p.hit.sig.id for p in proposals if p.family == d.family} == {sig_id}:
                diagnoses.remove(d)

    def _note(self, hit: Hit, kind: Optional[str] = None) -> Note:
        values, _ = self._values(hit)
        title = (fill_sentences(hit.sig.titles, values) or [hit.sig.title])[0]
        return Note(hit.sig.id, kind or hit.sig.kind, title, hit.source, hit.lines, hit.excerpt,
                    fill_sentences(hit.sig.explanation, values))
