"""Explanations and fix recipes filled in with the message's values and the machine's facts.

Recipes are the ones the checks use (``gpudoctor.recipes.recipe``); with a snapshot, its
facts fill the machine placeholders exactly as for ``gpudoctor check``, and values read
from the message only fill what the machine did not say.
"""

from __future__ import annotations

import string
from typing import Any, Dict, Iterable, List, Mapping, Optional

from gpudoctor.explain.values import display
from gpudoctor.findings import Fix

_FORMATTER = string.Formatter()


def fields(template: str) -> List[str]:
    try:
        return [f for _, f, _, _ in _FORMATTER.parse(template) if f]
    except ValueError:
        return []


def fill_sentences(sentences: Iterable[str], values: Mapping[str, Any]) -> List[str]:
    """Each sentence with its placeholders filled; a sentence whose values are unknown is left out."""
    out = []
    for sentence in sentences:
        names = fields(sentence)
        if all(values.get(n) not in (None, "", []) for n in names):
            out.append(sentence.format(**{n: display(values[n]) for n in names}) if names else sentence)
    return out


def recipe_values(templates: Mapping[str, str], values: Mapping[str, Any]) -> Dict[str, str]:
    """A signature's defaults for recipe placeholders, themselves filled with the message's values."""
    out = {}
    for name, template in templates.items():
        filled = fill_sentences([template], values)
        if filled:
            out[name] = filled[0]
    return out


def build_fix(recipe_id: Optional[str], facts, values: Mapping[str, Any],
              defaults: Mapping[str, str]) -> Optional[Fix]:
    """The recipe tailored like the checks tailor it; message values only fill the gaps."""
    if not recipe_id:
        return None
    from gpudoctor import recipes

    machine = recipes.context(facts) if facts is not None else {"python": "python"}
    shown = {k: display(v) for k, v in values.items() if v not in (None, "", [])}
    merged = {**recipe_values(defaults, {**values, **machine}), **shown}
    extra = {k: v for k, v in merged.items() if machine.get(k) is None}
    try:
        return recipes.recipe(recipe_id, facts, **extra)
    except recipes.UnknownRecipe:
        return None
