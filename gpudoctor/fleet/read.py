"""Reading report streams for ``fleet``: bounded memory, linear time, nothing lost silently.

``split`` cuts the input into documents (JSON lines, pretty documents) and unreadable
stretches (``srun: error: ...``, a report cut short by a dying node), which are counted and
named by source and line (the first MAX_NAMED), and reading goes on. A report cut without
its newline, with the next node's report appended to the same line, is split at the next
report start (``{"checks":``, ``{"findings":``, ``{"schema":``): the cut one is named, the
next one read. Most reports take ``fast``; anything unusual the full JSON decoder, where a
report nested too deeply or holding a number too long to read is named, never a crash.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from typing import BinaryIO, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from gpudoctor.fleet.fast import fast
from gpudoctor.fleet.node import Damaged, Node, node_from_report
from gpudoctor.fleet.split import Split

MAX_NAMED = 1000  # unreadable stretches named one by one in the summary; all of them are counted

_DECODER = json.JSONDecoder()
_WS = re.compile(r"\s*")
# A report begins with its first key: "checks" as gpudoctor writes it (sorted keys), "findings"
# without checks, "schema" from other writers. Nested objects in a report never start so.
_REPORT_START = re.compile(r'\{\s*"(?:checks|findings|schema)"\s*:')


class Tally:
    """Nodes by host (the last report of a host counts), duplicates, unreadable stretches."""

    def __init__(self, nodes: Optional[Dict[str, Node]] = None, dupes: Optional[Counter] = None,
                 bad: Optional[List[Dict]] = None):
        self.nodes = {} if nodes is None else nodes
        self.dupes = Counter() if dupes is None else dupes
        self.bad = [] if bad is None else bad
        self.bad_count = 0
        self.order: List[Node] = []  # every node in reading order, for merging parts in order

    def node(self, node: Node) -> None:
        if node.host in self.nodes:
            self.dupes[node.host] += 1
        self.nodes[node.host] = node
        self.order.append(node)

    def merge(self, nodes: List[tuple], bad: List[Dict], bad_count: int, line_offset: int = 0) -> None:
        """Add another reader's results (read after everything here; nodes as plain tuples)."""
        make = Node._make
        for node in nodes:
            self.node(make(node))
        for entry in bad[:max(0, MAX_NAMED - len(self.bad))]:
            self.bad.append({**entry, "line": entry["line"] + line_offset})
        self.bad_count += bad_count

    def unreadable(self, source: str, line: int, reason: str) -> None:
        self.bad_count += 1
        if len(self.bad) < MAX_NAMED:
            self.bad.append({"source": source, "line": line, "reason": reason})


def _values(text: str) -> Iterator[Tuple[object, Optional[str]]]:
    """(value, None) for each JSON value in ``text``, (None, reason) for each stretch that is
    not one; after a broken stretch, decoding resumes at the next report start."""
    i, end = 0, len(text)
    while i < end:
        try:
            value, i = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError) as exc:
            broken = isinstance(exc, json.JSONDecodeError)
            resume = _REPORT_START.search(text, i + 1) if broken else None
            yield None, ("JSON nested too deeply" if isinstance(exc, RecursionError) else
                         "a number too long to read" if not broken else
                         "a report cut off (another one follows on the same line)" if resume
                         else "a report cut off, or not JSON")
            if resume is None:
                return
            i = resume.start()
            continue
        yield value, None
        i = _WS.match(text, i).end()


def read_doc(raw: bytes, where: Callable[[], int], source: str, tally: Tally) -> None:
    """The report(s) in one document; ``where()`` is its line number, asked for only to name
    a stretch."""
    doc = fast(raw)
    pairs = [(doc, None)] if doc is not None else _values(raw.decode("utf-8", "replace"))
    for value, why in pairs:
        if why is not None:
            tally.unreadable(source, where(), why)
            continue
        try:
            node = node_from_report(value, source)
        except Damaged as exc:
            tally.unreadable(source, where(), f"a damaged gpudoctor report ({exc})")
            continue
        if node is None:
            tally.unreadable(source, where(), "not a gpudoctor report")
        else:
            tally.node(node)


def read_stream(stream: BinaryIO, source: str, tally: Tally, stop: Optional[int] = None,
                first: Optional[int] = None, after_read: Optional[Callable[[], None]] = None) -> Split:
    """Read every document of ``stream`` into ``tally``; returns the Split (``lines()`` counts
    the newlines read). ``first``: the size of the first read (a small file's size);
    ``after_read``: called after each read."""
    split = Split(stream, stop, first, after_read)
    for kind, item, at in split:
        if kind == "doc":
            read_doc(item, lambda: split.line_of(at), source, tally)
        else:
            tally.unreadable(source, split.line_of(at), item)
    return split


def values(stream: BinaryIO) -> Iterator[object]:
    """Every JSON value, ``None`` for each unreadable stretch (``fleet.documents``)."""
    for kind, item, _ in Split(stream):
        yield from (v for v, _ in _values(item.decode("utf-8", "replace"))) if kind == "doc" else [None]


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
