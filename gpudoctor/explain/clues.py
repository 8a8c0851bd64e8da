"""What the text says about the whole machine, reordering a message's readings (``clue_families``).

A message proposes its readings by its own words; some words elsewhere in the text speak for the
machine as a whole and outrank them: another vendor's GPU named and no NVIDIA one (no NVIDIA GPU at
all, whatever the message blames), WSL (its GPU path is the Windows driver), a CUDA_VISIBLE_DEVICES
the text sets (it hides GPUs), or the host's kernel module shown (so the container is not to blame).
Each rule, a row of ``clue_families`` in ``knowledge/signatures/_context.json``, holds when its
``requires`` flags are set and its ``excludes`` are not; then either ``rules_out`` drops the readings
of a family that another clue lifted, or its ``family`` is put ``lift`` points above the best reading
of the families in ``over`` - the message's own reading of that family when it has one (its title and
words), else one with the rule's explanation.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable, List, Mapping, Set


def apply(rules: Iterable[Mapping[str, Any]], flags: Set[str], proposals: List[Any],
          new: Callable[..., Any]) -> List[Any]:
    """``proposals`` with every rule whose flags hold applied in order; ``new`` makes a proposal
    (family, recipe, score, hit, explanation)."""
    for rule in rules:
        if not all(f in flags for f in rule["requires"]) or any(f in flags for f in rule.get("excludes", ())):
            continue
        if "rules_out" in rule:
            proposals = [p for p in proposals if p.family != rule["rules_out"] or p.via != "alternative"]
        else:
            proposals = proposals + _lifted(rule, proposals, new)
    return proposals


def _lifted(rule: Mapping[str, Any], proposals: List[Any], new: Callable[..., Any]) -> List[Any]:
    under = [p for p in proposals if p.family in rule["over"]]
    if not under:
        return []
    score = max(p.score for p in under) + rule["lift"]
    own = max((p for p in proposals if p.family == rule["family"]), key=lambda p: p.score, default=None)
    if own is not None:
        return [replace(own, score=max(own.score, score))]
    best = max(under, key=lambda p: p.score)
    return [new(rule["family"], rule["recipe"], score, best.hit, list(rule["explanation"]))]
