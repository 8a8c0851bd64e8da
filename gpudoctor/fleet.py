"""Summarise many nodes' `gpudoctor check --json` reports: problems, version spread, outliers.

Input is what a cluster produces: one file per node (``srun -o reports/%N.json``), one
stream of JSON lines (``check --jsonl``), or pretty-printed documents one after another;
lines that are not JSON (``srun: error: ...``) are counted and skipped. Only each report's
``machine`` and ``findings`` are read.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

SCHEMA = "gpudoctor.fleet/1"
PROBLEM_STATUSES = ("fail", "error", "warn")  # worst first
ATTRIBUTES = ("driver", "cuda", "gpus", "torch")  # compared between peers
_WS = re.compile(r"\s*")
_DIGITS = re.compile(r"\d+(?:[.:]\d+)*")


@dataclass(frozen=True)
class Node:
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


def documents(text: str) -> Iterator[object]:
    """Every JSON value in ``text``: JSON lines, or pretty documents back to back.

    Yields ``None`` for each stretch of non-JSON (skipped up to the next line).
    """
    decoder = json.JSONDecoder()
    i, n = 0, len(text)
    while True:
        i = _WS.match(text, i).end()
        if i >= n:
            return
        try:
            value, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            nl = text.find("\n", i)
            i = n if nl < 0 else nl + 1
            yield None
            continue
        yield value


def node_from_report(doc: object, source: str) -> Optional[Node]:
    """A Node from one report, or None when ``doc`` is not a gpudoctor report."""
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("gpudoctor.report/"):
        return None
    machine = doc.get("machine") or {}
    gpus = machine.get("gpus") or []
    names = Counter(g.get("name") for g in gpus if isinstance(g, dict) and g.get("name"))
    torch = ((machine.get("frameworks") or {}).get("torch") or {})
    problems = tuple((f.get("check_id", "?"), f.get("status"), f.get("title", ""))
                     for f in doc.get("findings") or () if f.get("status") in PROBLEM_STATUSES)
    statuses = {p[1] for p in problems}
    status = next((s for s in PROBLEM_STATUSES if s in statuses), "ok")
    host = machine.get("hostname") or (doc.get("snapshot") or {}).get("hostname") or Path(source).stem
    return Node(str(host), source, status, machine.get("driver_version"), machine.get("cuda_driver_max"),
                len(gpus), names.most_common(1)[0][0] if names else None,
                torch.get("version") if torch.get("installed") else None, problems)


def read_text(text: str, source: str, nodes: Dict[str, Node], dupes: Counter, bad: List) -> None:
    for doc in documents(text):
        try:
            node = node_from_report(doc, source)
        except (AttributeError, TypeError):  # a report whose parts have the wrong types (edited, mangled)
            bad.append({"source": source, "reason": "a damaged gpudoctor report"})
            continue
        if node is None:
            bad.append({"source": source, "reason": "not JSON" if doc is None else "not a gpudoctor report"})
            continue
        if node.host in nodes:
            dupes[node.host] += 1
        nodes[node.host] = node


def input_files(paths: Iterable[str]) -> Iterator[Path]:
    """Files as given; a directory contributes every non-hidden file below it, sorted."""
    for p in map(Path, paths):
        if p.is_dir():
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):  # regular files only: a FIFO or socket would block the read
                    if not name.startswith(".") and (Path(root) / name).is_file():
                        yield Path(root) / name
        else:
            yield p


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


def summarise(nodes: Dict[str, Node], unreadable: List[Dict], duplicates: Counter) -> Dict:
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
        "unreadable": unreadable,
        "duplicates": sorted(duplicates),
    }
