"""A differential diagnosis: the causes one message can have, ranked, each with the command that decides.

"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" reads the
same whether the module was not built for a new kernel, Secure Boot refused it, nouveau
holds the GPU, a Linux driver was installed inside WSL or the container got no GPU. A
signature that declares ``tell_apart`` for its own family and its alternatives lists them
all: first the causes the rest of the text points to (a clue: ``requires`` flags that hold,
by specificity), then the others by ``prior`` - how often each was the cause among the
real cases that signature matches (``bench/explain_priors.py`` counts them) - a cause that
needs a container or WSL after the others when nothing says this is one. On a recorded
machine, a cause the checks find there comes first and the causes its checks rule out last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Set

from gpudoctor.knowledge.families import family as family_info


@dataclass
class Candidate:
    family: str
    recipe: Optional[str]
    tell_apart: Any                           # catalog.TellApart
    prior: int
    score: int = 0                            # its proposal's score when the text proposed it, else 0
    clue: Optional[str] = None                # what in the text (or --context) points to it
    verdict: Optional[Any] = None             # machine.Verdict
    unplaced: bool = False                    # it needs a container or WSL, and nothing says this is one

    @property
    def title(self) -> str:
        return family_info(self.family).title

    def rank_key(self):
        kind = self.verdict.kind if self.verdict is not None else ""
        return (kind != "decided", kind == "ruled_out", -self.score, self.unplaced, -self.prior)

    def to_dict(self, of: int) -> Dict[str, Any]:
        t = self.tell_apart
        return {"family": self.family, "title": self.title, "recipe": self.recipe,
                "prior": {"count": self.prior, "of": of},
                "tell_apart": {"command": t.command, "shows": t.shows, "check": t.check, "only_in": t.only_in},
                **({"clue": self.clue} if self.clue else {}),
                **({"machine": self.verdict.to_dict()} if self.verdict is not None else {})}


@dataclass
class Differential:
    signature: str
    of: int                                   # real cases the signature matched when the priors were counted
    candidates: List[Candidate]
    basis: Optional[str] = None               # the vocabulary fallback: the word whose real cases ``of`` counts

    def to_dict(self) -> Dict[str, Any]:
        return {"signature": self.signature, "cases": self.of,
                **({"basis": self.basis} if self.basis is not None else {}),
                "candidates": [c.to_dict(self.of) for c in self.candidates]}


def _held(flags_needed, flags: Set[str]) -> bool:
    return bool(flags_needed) and all(f in flags for f in flags_needed)


def _clue(flags_needed, ctx) -> str:
    return "; ".join(f"{f}: {ctx.sources.get(f, 'context')}" for f in flags_needed)


def build(sig, flags: Set[str], scores: Mapping[str, int], ctx, machine=None) -> Optional[Differential]:
    """The ranked candidates of ``sig``'s message; ``scores`` are this hit's proposals by family."""
    if not sig.differential or sig.tell_apart is None:
        return None
    own = Candidate(sig.family, sig.recipe, sig.tell_apart, sig.prior.count if sig.prior else 0)
    by_family: Dict[str, Candidate] = {sig.family: own}
    for alt in sig.alternatives:
        if alt.tell_apart is None or any(f in flags for f in alt.excludes):
            continue
        cand = by_family.setdefault(alt.family, Candidate(alt.family, alt.recipe, alt.tell_apart,
                                                          alt.prior.count if alt.prior else 0))
        if _held(alt.requires, flags) and cand.clue is None:
            cand.clue = _clue(alt.requires, ctx)
    for cand in by_family.values():
        cand.score = scores.get(cand.family, 0)
        cand.unplaced = bool(cand.tell_apart.only_in) and cand.tell_apart.only_in not in flags
        if machine is not None:
            cand.verdict = machine.verdict(cand.family, cand.tell_apart)
    ranked = sorted(by_family.values(), key=Candidate.rank_key)
    return Differential(sig.id, sig.prior_of or sum(c.prior for c in ranked), ranked)


def families(sig, flags: Set[str]) -> List[str]:
    """Every family ``sig``'s message can mean: its own, and its alternatives' that the flags allow."""
    out = [sig.family]
    for alt in sig.alternatives:
        if not any(f in flags for f in alt.excludes) and alt.family not in out:
            out.append(alt.family)
    return out
