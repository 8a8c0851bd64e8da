"""Diagnoses: root causes above findings, each with its symptoms and one fix.

Several checks often see one problem: nouveau holding the GPU fails DRV001, NOU001 and
NOU002; a driver too old for torch's CUDA fails TRC002, and then TRC004 (CUDA unavailable)
and VIS001 (torch sees no GPU) follow from it. A person needs the cause named once, with
one fix. Two rules group findings, both declared by the checks themselves:

* a finding that names ``symptom_of`` checks is a symptom of their problem when one of
  them has one (TRC004 says which check's failure explains it);
* findings of the same family about the same subject whose fixes come from the same recipe
  are one diagnosis (the same recipe reached from three checks). Findings without a fix
  never merge this way: two thresholds an administrator set are two problems.

The cause of a diagnosis is its most severe finding (ties: the first check in report
order); its fix is that finding's fix, which the check chose against every fact of the
machine. Diagnoses are ordered by severity, then by family rank (``families.json``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from gpudoctor.findings import Finding, Fix, Status
from gpudoctor.knowledge.families import family as family_info
from gpudoctor.recipes import all_recipes

PROBLEMS = (Status.FAIL, Status.WARN)
SCHEMA_FIELDS = ("family", "status", "title", "subject", "cause", "symptoms", "fix")


def family_of(f: Finding) -> str:
    """The finding's declared family, else its fix recipe's, else one of its own."""
    if f.family:
        return f.family
    if f.fix is not None and f.fix.kb_id:
        return all_recipes().get(f.fix.kb_id, {}).get("family") or f.fix.kb_id
    return f"check:{f.check_id}"


@dataclass(frozen=True)
class Diagnosis:
    family: str
    status: Status
    cause: Finding
    symptoms: Tuple[Finding, ...] = ()

    @property
    def title(self) -> str:
        return self.cause.title

    @property
    def subject(self) -> Optional[str]:
        return self.cause.subject

    @property
    def fix(self) -> Optional[Fix]:
        return self.cause.fix or next((s.fix for s in self.symptoms if s.fix is not None), None)

    @property
    def findings(self) -> Tuple[Finding, ...]:
        return (self.cause,) + self.symptoms

    def covers(self, f: Finding) -> bool:
        return any(f is x for x in self.findings)

    def to_dict(self) -> Dict:
        ref = lambda f: {"check_id": f.check_id, "status": f.status.value, "title": f.title}  # noqa: E731
        return {"family": self.family, "family_title": family_info(self.family).title,
                "status": self.status.value, "title": self.title, "subject": self.subject,
                "cause": ref(self.cause), "symptoms": [ref(s) for s in self.symptoms],
                "fix": self.fix.to_dict() if self.fix is not None else None}


def diagnose(findings: Sequence[Finding]) -> List[Diagnosis]:
    """The diagnoses of a report's findings, most serious first."""
    problems = [f for f in findings if f.status in PROBLEMS]
    order = {id(f): i for i, f in enumerate(problems)}
    by_check: Dict[str, List[Finding]] = {}
    for f in problems:
        by_check.setdefault(f.check_id, []).append(f)
    parent = {id(f): _explainer(f, by_check) for f in problems}
    groups: Dict[int, Tuple[Finding, List[Finding]]] = {}
    for f in problems:
        root = _root(f, parent, order)
        groups.setdefault(id(root), (root, []))[1].append(f)
    diags = [_diagnosis(roots, members, order) for roots, members in _merge_same_family(groups.values())]
    return sorted(diags, key=lambda d: (-d.status.rank, family_info(d.family).rank, order[id(d.cause)]))


def _explainer(f: Finding, by_check: Dict[str, List[Finding]]) -> Optional[Finding]:
    """The finding that explains ``f``: the first problem of a check ``f`` names as its cause."""
    for check_id in f.symptom_of:
        for other in by_check.get(check_id, ()):
            if other is not f:
                return other
    return None


def _root(f: Finding, parent: Dict[int, Optional[Finding]], order: Dict[int, int]) -> Finding:
    """Follow the explainers up; a cycle (two checks naming each other) ends at its first finding."""
    seen = [f]
    while parent.get(id(seen[-1])) is not None:
        nxt = parent[id(seen[-1])]
        if any(nxt is s for s in seen):
            return min(seen, key=lambda x: order[id(x)])
        seen.append(nxt)
    return seen[-1]


def _merge_same_family(groups):
    """Groups whose roots share a family, a subject and a fix recipe are one root cause: (roots, members)."""
    merged: Dict[Tuple, Tuple[List[Finding], List[Finding]]] = {}
    for root, members in groups:
        recipe = root.fix.kb_id if root.fix is not None else None
        key = (family_of(root), root.subject, recipe) if recipe else (id(root),)  # no recipe: merges with none
        roots, all_members = merged.setdefault(key, ([], []))
        roots.append(root)
        all_members.extend(members)
    return list(merged.values())


def _diagnosis(roots: List[Finding], members: List[Finding], order: Dict[int, int]) -> Diagnosis:
    """The cause is the most severe root (ties: report order); a symptom never becomes the cause."""
    cause = min(roots, key=lambda f: (-f.status.rank, order[id(f)]))
    symptoms = tuple(sorted((f for f in members if f is not cause), key=lambda f: order[id(f)]))
    status = max((f.status for f in members), key=lambda s: s.rank)
    return Diagnosis(family_of(cause), status, cause, symptoms)
