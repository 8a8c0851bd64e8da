"""The check engine: declare checks, validate them, run them over a snapshot.

A check is a pure function of :class:`~gpudoctor.facts.Facts`. It declares the facts
it needs; when one is missing the engine reports *skip* with the reason instead of
calling it, and when it raises the engine reports *error* and runs the others.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Sequence, Tuple, Union

from gpudoctor.facts import Facts, Missing, NotApplicable, known_facts
from gpudoctor.findings import Finding, Status
from gpudoctor.requirements import NAMES, Requirements
from gpudoctor.snapshot import Snapshot

CHECK_ID = re.compile(r"^[A-Z]{2,5}\d{3}$")  # flake8-style: a family prefix and three digits
CheckResult = Union[Finding, Iterable[Finding], None]


@dataclass(frozen=True)
class Check:
    id: str
    name: str
    title: str
    run: Callable[[Facts], CheckResult]
    needs: Tuple[str, ...] = ()
    description: str = ""
    origin: str = "builtin"
    params: Tuple[str, ...] = ()  # requirements that must be asked for (gpudoctor.requirements)

    def info(self) -> dict:
        return {"id": self.id, "name": self.name, "title": self.title, "needs": list(self.needs),
                "params": list(self.params), "description": self.description, "origin": self.origin}


def check(id: str, name: str, title: str, needs: Sequence[str] = (), params: Sequence[str] = ()):
    """Decorator turning ``fn(facts)`` into a :class:`Check`.

    ``params`` names requirements (``max_temp``...): the check runs only when one of them was
    asked for (hook flags, ``--config``), and skips saying which flag would ask for it."""

    def make(fn: Callable[[Facts], CheckResult]) -> Check:
        doc = (fn.__doc__ or "").strip()
        return Check(id=id, name=name, title=title, run=fn, needs=tuple(needs), description=doc,
                     params=tuple(params))

    return make


class InvalidCheck(ValueError):
    """A check that cannot be registered; the message names the offender."""


def validate(chk: object, seen: dict) -> Check:
    if not isinstance(chk, Check):
        raise InvalidCheck(f"{chk!r} is not a gpudoctor Check (use @gpudoctor.engine.check)")
    if not CHECK_ID.match(chk.id):
        raise InvalidCheck(f"check {chk.id!r} ({chk.name}): id must look like ABC123")
    if chk.id in seen:
        raise InvalidCheck(f"check {chk.id!r} from {chk.origin} duplicates one from {seen[chk.id].origin}")
    unknown = [n for n in chk.needs if n not in known_facts()]
    if unknown:
        raise InvalidCheck(f"check {chk.id} ({chk.name}) needs unknown facts: {', '.join(unknown)}")
    bad = [p for p in chk.params if p not in NAMES]
    if bad:
        raise InvalidCheck(f"check {chk.id} ({chk.name}) has unknown params: {', '.join(bad)}")
    if not callable(chk.run):
        raise InvalidCheck(f"check {chk.id} ({chk.name}): run is not callable")
    return chk


def _as_list(result: CheckResult) -> List[Finding]:
    if result is None:
        return []
    if isinstance(result, Finding):
        return [result]
    return list(result)


def asked(chk: Check, facts: Facts) -> bool:
    """A check with ``params`` runs only when one of them was asked for; others always run."""
    return not chk.params or any(facts.requirements.asked(p) for p in chk.params)


def run_one(chk: Check, facts: Facts) -> List[Finding]:
    missing = []
    for name in chk.needs:
        try:
            facts[name]
        except Missing as exc:
            missing.append((str(exc) or name, not isinstance(exc, NotApplicable)))
        except Exception:
            return [Finding(chk.id, Status.ERROR, f"{chk.title}: gpudoctor could not read the fact {name!r}",
                            traceback=traceback.format_exc())]
    if missing:
        # A fact that could not be read outranks one that does not apply: say what is unknown.
        reason, cannot_tell = sorted(missing, key=lambda m: not m[1])[0]
        return [Finding(chk.id, Status.SKIP, f"{chk.title}: skipped, {reason}", cannot_tell=cannot_tell)]
    try:
        results = _as_list(chk.run(facts))
    except Exception:
        tb = traceback.format_exc()
        last = tb.strip().splitlines()[-1]
        return [Finding(chk.id, Status.ERROR, f"{chk.title}: the check crashed ({last})", traceback=tb)]
    if not results:
        return [Finding(chk.id, Status.OK, chk.title)]
    return [r.with_id(chk.id) for r in results]


def run_checks(snapshot: Snapshot, checks: Sequence[Check], only: Optional[Sequence[str]] = None,
               requirements: Optional[Requirements] = None) -> List[Finding]:
    facts = Facts(snapshot, requirements)
    selected = select(checks, only)
    findings: List[Finding] = []
    for chk in selected:
        if asked(chk, facts):  # a requirement nobody set is not a check that ran
            findings.extend(run_one(chk, facts))
    return findings


def select(checks: Sequence[Check], only: Optional[Sequence[str]]) -> List[Check]:
    """Checks whose id, name or id family (``DRV``) is in ``only``; all when ``only`` is empty. A family is
    the id's letters: ``TF`` selects TF001-TF003, not the TFM family that starts with the same letters."""
    if not only:
        return list(checks)
    wanted = [o.strip() for o in only if o.strip()]
    return [c for c in checks if any(c.id == w.upper() or c.name == w or
                                     (w.isalpha() and c.id.rstrip("0123456789") == w.upper()) for w in wanted)]
