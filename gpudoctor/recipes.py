"""Fix recipes: data files tailored with the machine's own numbers.

A recipe lives in ``gpudoctor/knowledge/recipes/<id>.json``. The same recipe serves a
check (facts from a snapshot) and ``gpudoctor explain`` (values pulled out of an error
message, and a snapshot when one is given), so both give the same fix.

Recipe file fields: ``id``, ``family``, ``title``, ``explanation``, ``summary``
(template), ``commands`` (list of templates, or a dict keyed by distribution family
``debian``/``rhel``/``suse``/``arch``/``wsl``/``windows``/``default``, and ``runfile`` for a driver
from NVIDIA's .run installer, which takes precedence), ``needs_root``,
``needs_reboot``, ``links`` (sources). Templates use ``{name}`` placeholders filled from
the context below; a placeholder with no value is shown as ``<name>`` for the user to fill.
An optional ``generic`` object holds a ``summary`` (a string, or a list from most to least
specific) and/or ``commands`` written with fewer machine values: the first text whose
placeholders are all known replaces tailored text that would have unfilled ones
(``gpudoctor explain`` on a message alone, with no snapshot).
"""

from __future__ import annotations

import json
import string
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from gpudoctor.findings import Fix
from gpudoctor.recipe_context import distro_family, machine_context  # noqa: F401 (distro_family: public here too)

RECIPE_DIR = Path(__file__).parent / "knowledge" / "recipes"


class UnknownRecipe(KeyError):
    pass


@lru_cache(maxsize=None)
def all_recipes() -> Dict[str, Dict]:
    out = {}
    for path in sorted(RECIPE_DIR.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[data["id"]] = data
    return out


def get(recipe_id: str) -> Dict:
    try:
        return all_recipes()[recipe_id]
    except KeyError:
        raise UnknownRecipe(recipe_id) from None


class _Blank(dict):
    def __missing__(self, key):
        return f"<{key}>"


def fill(template: str, ctx: Mapping[str, Any]) -> str:
    values = _Blank({k: v for k, v in ctx.items() if v is not None})
    return string.Formatter().vformat(template, (), values)


def unfilled(template: str, ctx: Mapping[str, Any]) -> set:
    """Placeholders in ``template`` that ``ctx`` has no value for."""
    names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    return {n for n in names if ctx.get(n) is None}


def _pick(commands, ctx: Mapping[str, Any]) -> list:
    """A recipe's commands for this machine: a driver from NVIDIA's .run installer first (its files
    must be removed with nvidia-uninstall before any package), then the distribution family."""
    if isinstance(commands, dict):
        if ctx.get("driver_install") == "runfile" and commands.get("runfile"):
            return list(commands["runfile"])
        family = ctx.get("platform_family") or "default"
        return list(commands.get(family) or commands.get("default") or [])
    return list(commands or [])


def context(facts=None, values: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Template values from a snapshot's facts, overridden by ``values`` (e.g. from an error message)."""
    ctx: Dict[str, Any] = {}
    if facts is not None:
        ctx.update(machine_context(facts))
    if values:
        ctx.update({k: v for k, v in values.items() if v is not None})
    ctx.setdefault("python", "python")
    return ctx


def recipe(recipe_id: str, facts=None, **values: Any) -> Fix:
    """The :class:`Fix` for ``recipe_id``, tailored with ``facts`` and explicit ``values``."""
    data = get(recipe_id)
    ctx = context(facts, values)
    generic = data.get("generic") or {}
    summary = data.get("summary") or data.get("title", recipe_id)
    fallbacks = generic.get("summary") or []
    candidates = [summary] + ([fallbacks] if isinstance(fallbacks, str) else list(fallbacks))
    summary = next((c for c in candidates if not unfilled(c, ctx)), candidates[-1])
    commands = _pick(data.get("commands"), ctx)
    if generic.get("commands") is not None and any(unfilled(c, ctx) for c in commands):
        commands = _pick(generic["commands"], ctx)
    return Fix(
        summary=fill(summary, ctx),
        commands=tuple(fill(c, ctx) for c in commands),
        needs_root=bool(data.get("needs_root")),
        needs_reboot=bool(data.get("needs_reboot")),
        links=tuple(data.get("links") or ()),
        kb_id=recipe_id,
    )


def explanation(recipe_id: str, facts=None, **values: Any) -> str:
    return fill(get(recipe_id).get("explanation", ""), context(facts, values))
