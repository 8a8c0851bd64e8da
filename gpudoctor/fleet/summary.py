"""The fleet summary: reports turned into Nodes (``node``), Nodes into problems grouped across
nodes, the spread of versions and outliers among same-model peers (the --json output)."""


from __future__ import annotations

import io
import re
from collections import Counter, defaultdict
from operator import attrgetter
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from gpudoctor.fleet.node import PROBLEM_STATUSES, Damaged, Node, node_from_report  # noqa: F401 (the API)
from gpudoctor.fleet.read import MAX_NAMED, Tally, read_stream, values

SCHEMA = "gpudoctor.fleet/2"
ATTRIBUTES = ("driver", "cuda", "gpus", "torch")  # compared between peers
_DIGITS = re.compile(r"\d+(?:[.:]\d+)*")


def documents(text: str) -> Iterator[object]:
    """Every JSON value in ``text`` (JSON lines, or pretty documents); ``None`` for each
    stretch that is not JSON. See ``fleet.split`` for the rules."""
    yield from values(io.BytesIO(text.encode("utf-8")))


def read_text(text: str, source: str, nodes: Dict[str, Node], dupes: Counter, bad: List) -> None:
    """Add the reports in ``text`` to ``nodes``; what is not a report goes to ``bad``."""
    tally = Tally(nodes, dupes, bad)
    read_stream(io.BytesIO(text.encode("utf-8")), source, tally)


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
            get = attrgetter(attr)  # C-level access: this runs for every node and attribute
            counts = Counter(map(get, group))
            value, count = counts.most_common(1)[0]
            if count * 2 <= len(group) or count == len(group):
                continue
            for n in group:
                if get(n) != value:
                    out.append({"host": n.host, "attribute": attr, "value": get(n), "majority": value,
                                "majority_count": count, "peers": len(group), "model": model})
    return sorted(out, key=lambda o: (ATTRIBUTES.index(o["attribute"]), str(o["value"]), o["host"]))


def _spread(nodes: List[Node], attr: str) -> Dict[str, int]:
    counts: Counter = Counter()
    for value, count in Counter(map(attrgetter(attr), nodes)).items():  # values first seen first
        counts["none" if value is None else str(value)] += count
    return dict(counts.most_common())


def summarise(nodes: Dict[str, Node], unreadable: List[Dict], duplicates: Counter,
              unreadable_count: Optional[int] = None) -> Dict:
    """The fleet summary as plain data (the --json output, schema gpudoctor.fleet/2)."""
    ordered = sorted(nodes.values(), key=attrgetter("host"))
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
