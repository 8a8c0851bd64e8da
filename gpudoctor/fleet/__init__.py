"""Summarise many nodes' `gpudoctor check --json` reports: problems, version spread, outliers.

Input is what a cluster produces: one file per node (``srun -o reports/%N.json``), one
stream of JSON lines (``check --jsonl``), or pretty-printed documents one after another;
stretches that are not a readable report (``srun: error: ...``, a cut report) are counted
and named. Only each report's ``machine`` and ``findings`` are read. Reading is streamed
(``split``, ``read``, ``fast``) and spread over the cores for large inputs (``jobs``); this
module turns reports into Nodes and Nodes into the summary.
"""

from __future__ import annotations

import io
import os
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

SCHEMA = "gpudoctor.fleet/1"
PROBLEM_STATUSES = ("fail", "error", "warn")  # worst first
MAX_NAMED = 1000  # unreadable stretches named one by one in the summary; all of them are counted
ATTRIBUTES = ("driver", "cuda", "gpus", "torch")  # compared between peers
MAX_TEXT = 500  # characters kept of a host name, version or finding title
_DIGITS = re.compile(r"\d+(?:[.:]\d+)*")


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
    return Node(host, source, next((s for s in PROBLEM_STATUSES if s in rank), "ok"),
                _text(machine.get("driver_version"), "driver_version"),
                _text(machine.get("cuda_driver_max"), "cuda_driver_max"), len(gpus), _model(gpus),
                _text(torch.get("version"), "torch.version") if torch.get("installed") else None, tuple(problems))


def documents(text: str) -> Iterator[object]:
    """Every JSON value in ``text`` (JSON lines, or pretty documents); ``None`` for each
    stretch that is not JSON. See ``fleet.split`` for the rules."""
    from gpudoctor.fleet.read import values

    yield from values(io.BytesIO(text.encode("utf-8")))


def read_text(text: str, source: str, nodes: Dict[str, Node], dupes: Counter, bad: List) -> None:
    """Add the reports in ``text`` to ``nodes``; what is not a report goes to ``bad``."""
    from gpudoctor.fleet.read import Tally, read_stream

    tally = Tally(nodes, dupes, bad)
    read_stream(io.BytesIO(text.encode("utf-8")), source, tally)


def input_files(paths: Iterable[str]) -> Iterator[str]:
    """Files as given; a directory contributes every non-hidden regular file below it, sorted
    (a FIFO or socket inside would block the read)."""
    for path in paths:
        if os.path.isdir(path):
            yield from _walk(path)
        else:
            yield path


def _walk(folder: str) -> Iterator[str]:
    try:
        entries = sorted((e for e in os.scandir(folder) if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir():
            yield from _walk(entry.path)
        elif entry.is_file():
            yield entry.path


def hostlist(hosts: Iterable[str]) -> str:
    """Slurm-style compression: gpu001 gpu002 gpu003 gpu010 -> gpu[001-003,010]."""
    groups: Dict[Tuple[str, int], List[int]] = defaultdict(list)
    plain: List[str] = []
    for h in sorted(set(hosts)):
        m = re.fullmatch(r"(.*?)(\d+)", h)
        if m:
            groups[(m.group(1), len(m.group(2)))].append(int(m.group(2)))
        else:
            plain.append(h)
    out = list(plain)
    for (prefix, width), nums in sorted(groups.items()):
        nums.sort()
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        ranges, start = [], nums[0]
        for prev, cur in zip(nums, nums[1:] + [None]):
            if cur != prev + 1:
                ranges.append(f"{start:0{width}d}" + (f"-{prev:0{width}d}" if prev != start else ""))
                start = cur
        out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)


def pattern(title: str) -> str:
    """A title with its numbers and versions masked, so that the same problem groups together."""
    return _DIGITS.sub("#", title)


def _problems(nodes: List[Node]) -> List[Dict]:
    groups: Dict[Tuple[str, str, str], List[Tuple[str, str]]] = defaultdict(list)
    for node in nodes:
        for check_id, status, title in set(node.problems):
            groups[(check_id, status, pattern(title))].append((node.host, title))
    rank = {s: i for i, s in enumerate(PROBLEM_STATUSES)}
    out = []
    for (check_id, status, pat), members in groups.items():
        hosts = sorted({h for h, _ in members})
        titles = Counter(t for _, t in members)
        out.append({"check_id": check_id, "status": status, "pattern": pat,
                    "example": titles.most_common(1)[0][0], "variants": len(titles),
                    "count": len(hosts), "hosts": hostlist(hosts), "hostnames": hosts})
    return sorted(out, key=lambda g: (rank[g["status"]], -g["count"], g["check_id"], g["pattern"]))


def _outliers(nodes: List[Node]) -> List[Dict]:
    """Nodes whose driver/CUDA/GPU count/torch differs from a strict majority of their peers
    (the nodes with the same GPU model). Nodes that show no GPU have no peers to compare
    with: their driver failure is already a problem of their own."""
    peers: Dict[str, List[Node]] = defaultdict(list)
    for node in nodes:
        if node.model is not None:
            peers[node.model].append(node)
    out = []
    for model, group in peers.items():
        for attr in ATTRIBUTES:
            counts = Counter(n.attribute(attr) for n in group)
            value, count = counts.most_common(1)[0]
            if count * 2 <= len(group) or count == len(group):
                continue
            for n in group:
                if n.attribute(attr) != value:
                    out.append({"host": n.host, "attribute": attr, "value": n.attribute(attr), "majority": value,
                                "majority_count": count, "peers": len(group), "model": model})
    return sorted(out, key=lambda o: (ATTRIBUTES.index(o["attribute"]), str(o["value"]), o["host"]))


def _spread(nodes: List[Node], attr: str) -> Dict[str, int]:
    counts = Counter("none" if n.attribute(attr) is None else str(n.attribute(attr)) for n in nodes)
    return dict(counts.most_common())


def summarise(nodes: Dict[str, Node], unreadable: List[Dict], duplicates: Counter,
              unreadable_count: Optional[int] = None) -> Dict:
    """The fleet summary as plain data (the --json output, schema gpudoctor.fleet/1)."""
    ordered = sorted(nodes.values(), key=lambda n: n.host)
    status = Counter(n.status for n in ordered)
    return {
        "schema": SCHEMA,
        "nodes": len(ordered),
        "status": {s: status.get(s, 0) for s in ("ok", "warn", "error", "fail")},
        "problems": _problems(ordered),
        "spread": {"driver_version": _spread(ordered, "driver"), "cuda_driver_max": _spread(ordered, "cuda"),
                   "gpu_count": _spread(ordered, "gpus"), "gpu_model": _spread(ordered, "model"),
                   "torch": _spread(ordered, "torch")},
        "outliers": _outliers(ordered),
        "unreadable": unreadable[:MAX_NAMED],
        "unreadable_count": unreadable_count if unreadable_count is not None else len(unreadable),
        "duplicates": sorted(duplicates),
    }
