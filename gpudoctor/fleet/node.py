"""One node's report, reduced to what the fleet summary needs, with its types checked.

A report is the node's own word, so it is read like any other untrusted input: a list where
an object belongs, an object where text belongs, is a ``Damaged`` report (named in the
summary), never a crash further on; texts are cut to MAX_TEXT characters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

PROBLEM_STATUSES = ("fail", "error", "warn")  # worst first
MAX_TEXT = 500  # characters kept of a host name, version or finding title


class Node(NamedTuple):
    """One node's report, reduced to what the summary needs (a tuple: cheap to send between
    the worker processes that read large inputs)."""

    host: str
    source: str
    status: str                 # the worst finding: fail > error > warn > ok
    driver: Optional[str]
    cuda: Optional[str]
    gpus: int
    model: Optional[str]        # the node's most common GPU name
    torch: Optional[str]
    problems: Tuple[Tuple[str, str, str], ...]  # (check_id, status, title)

    def attribute(self, name: str):
        return getattr(self, name)


class Damaged(ValueError):
    """A gpudoctor report whose parts have the wrong types (edited, mangled, hostile)."""


def _obj(value, where: str) -> Dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Damaged(f"{where} is not an object")
    return value


def _list(value, where: str) -> List:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Damaged(f"{where} is not a list")
    return value


def _text(value, where: str) -> Optional[str]:
    """A scalar as text, cut to MAX_TEXT; a list or object where text belongs is damage."""
    if type(value) is str:  # the usual case first: this runs for every GPU of every node
        return value[:MAX_TEXT] or None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise Damaged(f"{where} is not text")
    return str(value)[:MAX_TEXT]


def _model(gpus: List) -> Optional[str]:
    """The most common GPU name (the first of equals), or None."""
    same = [g.get("name") for g in gpus if type(g) is dict]
    if same and type(same[0]) is str and same[0] and same.count(same[0]) == len(same):
        return same[0][:MAX_TEXT]  # the usual node: one model, named alike on every GPU
    names: Dict[str, int] = {}
    for g in gpus:
        name = _text(g.get("name"), "gpus[].name") if type(g) is dict else None
        if name:
            names[name] = names.get(name, 0) + 1
    return max(names, key=names.__getitem__) if names else None


def node_from_report(doc: object, source: str) -> Optional[Node]:
    """A Node from one report, or None when ``doc`` is not a gpudoctor report; raises
    Damaged when it is one whose parts have the wrong types."""
    if not isinstance(doc, dict) or not str(doc.get("schema", ""))[:40].startswith("gpudoctor.report/"):
        return None
    machine = _obj(doc.get("machine"), "machine")
    gpus = _list(machine.get("gpus"), "machine.gpus")
    torch = _obj(_obj(machine.get("frameworks"), "machine.frameworks").get("torch"), "frameworks.torch")
    problems = []
    for f in _list(doc.get("findings"), "findings"):
        status = _obj(f, "findings[]").get("status")
        if isinstance(status, str) and status in PROBLEM_STATUSES:
            problems.append((_text(f.get("check_id"), "check_id") or "?", status, _text(f.get("title"), "title") or ""))
    rank = {p[1] for p in problems}
    host = (_text(machine.get("hostname"), "machine.hostname")
            or _text(_obj(doc.get("snapshot"), "snapshot").get("hostname"), "snapshot.hostname") or Path(source).stem)
    return Node(host, source, next((s for s in PROBLEM_STATUSES if s in rank), "ok") if rank else "ok",
                _text(machine.get("driver_version"), "driver_version"),
                _text(machine.get("cuda_driver_max"), "cuda_driver_max"), len(gpus), _model(gpus),
                _text(torch.get("version"), "torch.version") if torch.get("installed") else None, tuple(problems))
