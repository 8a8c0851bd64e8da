"""Stream a log of any size through the signature catalog in bounded memory.

Most log lines hold none of the catalog's words, so the scan works on large byte chunks:
one search pass per *gate* (a short literal such as ``CUDA`` or ``NCCL``, see
``catalog.Catalog.gates``) picks the few candidate lines, and only those are decoded and
run through the full regular expressions. A line of any length is read in windows of at
most ``MAX_SEGMENT`` bytes, so a 1 GiB line without a newline costs no more memory than a
short one; excerpts are cut to ``EXCERPT`` characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Dict, List, Optional, Tuple

CHUNK = 1 << 20          # bytes read per step
LOOKAHEAD = 16 << 10     # bytes kept after a chunk's split so multi-line windows can see ahead
MAX_SEGMENT = 1 << 20    # a line longer than this is scanned in pieces
SPAN = 2048              # bytes around a gate hit that are matched, inside a very long line
MARGIN = 256             # a second gate hit this far inside an existing window shares it
WINDOW_CAP = 4096        # bytes of following lines a multi-line signature may see
HEAD_BYTES = 256 << 10   # the start of the input, kept for facts and context clues
SHORT_GATE = 8           # gates up to this long are searched with re, longer ones with bytes.find
EXCERPT = 300            # characters of a matching line that are stored and shown
MAX_LINES_KEPT = 50      # line numbers stored per signature (the count is exact)
MAX_WINDOWS_KEPT = 3     # text windows kept per signature, for facts and context
MEMO_SIZE = 256          # distinct candidate lines whose matches are remembered (repeated lines)


@dataclass
class SigHits:
    """Where one signature matched: exact count, the first line numbers, first excerpt and values."""

    count: int = 0
    lines: List[int] = field(default_factory=list)
    excerpt: str = ""
    values: Dict[str, str] = field(default_factory=dict)
    windows: List[str] = field(default_factory=list)
    matches: List[Tuple[int, Dict[str, str]]] = field(default_factory=list)  # (line, values), capped

    def add(self, line: int, excerpt: str, values: Dict[str, str], window: str) -> None:
        self.count += 1
        if len(self.lines) < MAX_LINES_KEPT:
            self.lines.append(line)
            self.matches.append((line, values))
        if not self.excerpt:
            self.excerpt, self.values = excerpt, values
        if len(self.windows) < MAX_WINDOWS_KEPT:
            self.windows.append(window)


@dataclass
class ScanResult:
    hits: Dict[str, SigHits]
    head: bytes
    bytes_read: int
    lines: int
    long_line: Optional[int] = None   # number of the first line longer than MAX_SEGMENT
    stopped_at: Optional[int] = None  # bytes read when the time limit stopped the scan (None: all read)


def _window(windows: List[Tuple[int, int]], pos: int, line_start: int, line_stop: int) -> Tuple[int, int]:
    """The window of a very long line around a gate hit at ``pos``: one already cut around a nearby
    hit of another gate when it holds this one well inside (the same message, seen once), else a new one."""
    for start, stop in windows:
        if start + MARGIN <= pos <= stop - MARGIN:
            return start, stop
    window = (max(line_start, pos - SPAN), min(line_stop, pos + SPAN))
    windows.append(window)
    return window


def _excerpt(line: str, start: int) -> str:
    line = line.rstrip("\r\n")
    if len(line) <= EXCERPT:
        return line
    lo = max(0, min(start - 40, len(line) - EXCERPT))
    return ("…" if lo else "") + line[lo:lo + EXCERPT - 2] + "…"


def _finder(gate: bytes) -> Callable[[bytes, int, int], int]:
    """``bytes.find`` for ``gate`` between two offsets, by the faster of two equivalent searches.

    CPython's ``bytes.find`` skips ahead by about the needle's length, so a 3-6 byte gate
    (``cud``, ``GPU``, ``NCCL``) crawls; ``re``'s literal search scans for the first byte in
    a tight loop and runs such gates 1.3-2x faster on log text (``bench/explain_bench.py``).
    Longer gates skip far enough that ``bytes.find`` is the faster one."""
    if len(gate) > SHORT_GATE:
        return lambda buf, start, end: buf.find(gate, start, end)
    search = re.compile(re.escape(gate)).search

    def find(buf: bytes, start: int, end: int) -> int:
        m = search(buf, start, end)
        return -1 if m is None else m.start()
    return find


class Scanner:
    """One pass over a byte stream; ``feed`` the chunks, then ``finish``."""

    def __init__(self, catalog):
        self.catalog = catalog
        self.gates = catalog.gates
        self._finders = [(gate, _finder(gate)) for gate in catalog.gates]
        self.hits: Dict[str, SigHits] = {}
        self.head = bytearray()
        self.buf = b""
        self.line_no = 1      # number of the line that starts (or continues) at buf[0]
        self.total = 0
        self.long_line: Optional[int] = None
        self._last = b""
        self.base = 0              # offset of buf[0] in the stream
        self.stop: Optional[int] = None   # no line starting at or after this offset is matched
        self.newlines = 0          # newlines before ``stop`` (all of them when there is no stop)
        # A log that repeats one error (3 MB of gzip held 3 GB of the same OOM line) costs a
        # dictionary lookup per repeat, not the catalog's regular expressions.
        self._memo: Dict[Tuple, List[Tuple[str, str, Dict[str, str], str]]] = {}

    def scan(self, stream: BinaryIO) -> ScanResult:
        while True:
            chunk = stream.read(CHUNK)
            if not chunk:
                break
            self.feed(chunk)
        return self.finish()

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._last = chunk[-1:]
        if len(self.head) < HEAD_BYTES:
            self.head += chunk[:HEAD_BYTES - len(self.head)]
        self.buf = self.buf + chunk if self.buf else chunk
        if len(self.buf) < CHUNK + LOOKAHEAD:
            return
        limit = len(self.buf) - LOOKAHEAD
        split = self.buf.rfind(b"\n", 0, limit) + 1
        if split == 0:
            if limit < MAX_SEGMENT:
                return
            split = limit                       # inside a very long line: scan what we have
            if self.long_line is None:
                self.long_line = self.line_no
        self._advance(split)

    def finish(self) -> ScanResult:
        if self.buf:
            self._advance(len(self.buf))
        lines = self.line_no - 1 + (1 if self.total and self._last != b"\n" else 0)
        return ScanResult(self.hits, bytes(self.head), self.total, lines, self.long_line)

    def _advance(self, split: int) -> None:
        buf = self.buf
        limit = split if self.stop is None else max(0, min(split, self.stop - self.base))
        if limit:
            self._process(buf, limit)
        counted = buf.count(b"\n", 0, split)
        self.newlines += counted if limit == split else buf.count(b"\n", 0, limit)
        self.line_no += counted
        self.base += split
        self.buf = buf[split:]

    # -- candidate regions ------------------------------------------------------------
    def _regions(self, buf: bytes, split: int) -> Dict[int, Tuple[int, int, List[bytes]]]:
        """Byte regions (start, first-line end, gates) around every gate hit before ``split``."""
        regions: Dict[int, Tuple[int, int, List[bytes]]] = {}
        windows: List[Tuple[int, int]] = []   # windows cut from very long lines, to share between gates
        n = len(buf)
        tails = self.catalog.tails
        for gate, find in self._finders:
            glen, tail = len(gate), tails.get(gate)
            end = min(n, split + glen - 1)
            pos = find(buf, 0, end)
            while pos != -1:
                if tail is not None and tail.match(buf, pos) is None:
                    pos = find(buf, pos + glen, end)      # e.g. "cuda:0": no anchor continues so
                    continue
                start = buf.rfind(b"\n", 0, pos) + 1
                stop = buf.find(b"\n", pos)
                stop = n if stop == -1 else stop + 1
                if stop - start > 2 * SPAN:          # a very long line: a window around the hit
                    start, stop = _window(windows, pos, start, stop)
                known = regions.get(start)
                if known is None:
                    regions[start] = (start, stop, [gate])
                elif gate not in known[2]:
                    known[2].append(gate)
                if stop >= end:
                    break
                pos = find(buf, stop, end)
        return regions

    def _process(self, buf: bytes, split: int) -> None:
        regions = self._regions(buf, split)
        if not regions:
            return
        line_no, counted = self.line_no, 0
        for start in sorted(regions):
            _, stop, gates = regions[start]
            line_no += buf.count(b"\n", counted, start)
            counted = start
            self._match(buf, start, stop, gates, line_no)

    def _match(self, buf: bytes, start: int, stop: int, gates: List[bytes], line_no: int) -> None:
        key = (buf[start:stop], buf[stop:stop + WINDOW_CAP], tuple(gates))
        found = self._memo.get(key)
        if found is None:
            found = self._matches(buf, start, stop, gates)
            if len(self._memo) >= MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = found
        for sig_id, excerpt, values, window in found:
            hits = self.hits.get(sig_id)
            if hits is None:
                hits = self.hits[sig_id] = SigHits()
            hits.add(line_no, excerpt, dict(values), window)

    def _matches(self, buf: bytes, start: int, stop: int, gates: List[bytes]) -> List[Tuple]:
        """(signature id, excerpt, values, window) of each signature matching the line at ``start``."""
        first = buf[start:stop].decode("utf-8", "replace")
        any_anchor, sigs = self.catalog.candidates(gates)
        if any_anchor.search(first) is None:
            return []
        window_text, lowered, found = None, None, []
        for sig in sigs:
            if sig.ignore_case and lowered is None:
                lowered = first.lower()
            if not sig.has_anchor(first, lowered):
                continue
            text = first
            if sig.window_lines > 1:
                if window_text is None:
                    window_text = first + self._following(buf, stop, sig.window_lines - 1)
                text = window_text
            for pattern in sig.patterns:
                m = pattern.search(text)
                if m is None or m.start() >= len(first):
                    continue
                values = {k: v for k, v in m.groupdict().items() if v is not None}
                if sig.drops(values):
                    break
                window = text if len(text) <= WINDOW_CAP else text[:WINDOW_CAP]
                found.append((sig.id, _excerpt(first, m.start()), values, window))
                break
        return found

    @staticmethod
    def _following(buf: bytes, stop: int, nlines: int) -> str:
        end = stop
        for _ in range(nlines):
            nxt = buf.find(b"\n", end, stop + WINDOW_CAP)
            if nxt == -1:
                end = min(len(buf), stop + WINDOW_CAP)
                break
            end = nxt + 1
        return buf[stop:end].decode("utf-8", "replace")
