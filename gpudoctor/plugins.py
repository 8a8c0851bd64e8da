"""Load checks from the versioned entry-point group ``gpudoctor.checks.v1``.

The built-in checks are one entry in that group, like any third-party package's. An
entry may point at a Check or at a sequence of Checks. A plugin that fails to import
or declares a broken check becomes a warning about gpudoctor, never a crash.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from importlib import metadata
from typing import Dict, List, Tuple

from gpudoctor.engine import Check, InvalidCheck, validate

GROUP = "gpudoctor.checks.v1"


class BuiltinChecksMissing(RuntimeError):
    """gpudoctor's own checks did not load: a broken install, not a healthy machine."""


@dataclass(frozen=True)
class PluginProblem:
    plugin: str
    message: str

    def to_dict(self) -> dict:
        return {"plugin": self.plugin, "message": self.message}


def _entry_points():
    eps = metadata.entry_points()
    if hasattr(eps, "select"):
        return list(eps.select(group=GROUP))
    # Python < 3.10 lists a distribution once per copy on sys.path (a source tree's gpudoctor.egg-info
    # beside the installed dist-info), so each check would load twice: keep the first copy, as 3.10+ does.
    seen, found = set(), []
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name not in seen:
            seen.add(name)
            found.extend(ep for ep in dist.entry_points if ep.group == GROUP)
    return found


def _origin(ep) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} ({ep.name})" if dist is not None else ep.name


# What one process found, per import path: scanning every installed distribution's entry points
# costs ~10 ms, and a test run or a fleet of replays asks thousands of times. A plugin installed
# on a new path (sys.path changes) or a replaced lookup is a new key, so it is found.
_LOADED: Dict[tuple, Tuple[List[Check], List[PluginProblem]]] = {}


def load_checks() -> Tuple[List[Check], List[PluginProblem]]:
    """Every registered check, built-ins first, sorted by id within each plugin."""
    key = (tuple(sys.path), _entry_points, metadata.entry_points)
    if key not in _LOADED:
        _LOADED[key] = _load_checks()
    checks, problems = _LOADED[key]
    return list(checks), list(problems)


def _load_checks() -> Tuple[List[Check], List[PluginProblem]]:
    checks: List[Check] = []
    problems: List[PluginProblem] = []
    seen: dict = {}
    eps = sorted(_entry_points(), key=lambda ep: (ep.value.split(":")[0] != "gpudoctor_checks", ep.name))
    if not eps or eps[0].value.split(":")[0] != "gpudoctor_checks":
        raise BuiltinChecksMissing("the built-in checks are not registered (entry point group "
                                   f"{GROUP}); reinstall gpudoctor")
    for ep in eps:
        origin = _origin(ep)
        try:
            obj = ep.load()
        except Exception as exc:
            if ep is eps[0]:  # without them a report would say "no problems found" about nothing
                raise BuiltinChecksMissing(f"the built-in checks could not be loaded "
                                           f"({type(exc).__name__}: {exc}); reinstall gpudoctor") from None
            problems.append(PluginProblem(origin, f"could not be loaded: {type(exc).__name__}: {exc}"))
            continue
        items = [obj] if isinstance(obj, Check) else obj
        try:
            items = list(items)
        except TypeError:
            problems.append(PluginProblem(origin, f"{ep.value} is neither a Check nor a list of Checks"))
            continue
        for item in items:
            if isinstance(item, Check) and ep.value.split(":")[0] != "gpudoctor_checks":
                item = replace(item, origin=origin)
            try:
                chk = validate(item, seen)
            except InvalidCheck as exc:
                problems.append(PluginProblem(origin, str(exc)))
                continue
            seen[chk.id] = chk
            checks.append(chk)
    return checks, problems
