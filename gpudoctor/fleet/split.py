"""Cutting a byte stream into report documents, in blocks, for ``fleet``.

A JSON line (``check --jsonl``) is one document; a pretty document (``check --json``) runs
from a ``{`` alone at column 0 to the ``}`` that closes it at column 0 (nothing else in
indented JSON starts at column 0, so a new column-0 line before it means the document was
cut). Everything else is an unreadable stretch. Lines and documents are capped at MAX_LINE
bytes (the rest skipped and named); a NUL byte ends the input (binary data). Memory stays
under about twice MAX_LINE whatever the input, ``/dev/zero`` or one endless line included.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator, List, Optional, Tuple

MAX_LINE = 64 << 20      # bytes: a report is ~20 KB; a pretty document is capped the same


class _Blocks:
    """A byte stream read in growing blocks, with the position and line number of what was
    consumed. Reading ends at ``stop`` bytes, at the end, or at a NUL byte (binary data)."""

    def __init__(self, stream: BinaryIO, stop: Optional[int]):
        self.stream, self.left = stream, stop
        self.buf, self.pos, self.line, self.eof = b"", 0, 1, False
        self.nul = False

    def more(self) -> bool:
        if self.eof:
            return False
        want = max(BLOCK, len(self.buf) - self.pos)  # doubling: a long document is read in O(n)
        chunk = self.stream.read(want if self.left is None else min(want, self.left))
        if not chunk:
            self.eof = True
            return False
        if self.left is not None:
            self.left -= len(chunk)
            self.eof = self.left <= 0
        if b"\0" in chunk:
            chunk, self.nul, self.eof = chunk[:chunk.index(b"\0")], True, True
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def find(self, pattern, start: int):
        """The first match of ``pattern`` at or after ``start`` (an offset from ``pos``), reading
        on as needed; None at the end or past MAX_LINE bytes."""
        while True:
            found = pattern.search(self.buf, self.pos + start)
            if found is not None:
                return found
            start = max(0, len(self.buf) - self.pos - 1)
            if start > MAX_LINE or not self.more():
                return None

    def newline(self, start: int) -> int:
        """Offset from ``pos`` of the next newline at or after ``start``, reading on as needed;
        -1 at the end or past MAX_LINE bytes. (bytes.find: memchr, faster than a pattern.)"""
        while True:
            found = self.buf.find(b"\n", self.pos + start)
            if found >= 0:
                return found - self.pos
            start = len(self.buf) - self.pos
            if start > MAX_LINE or not self.more():
                return -1

    def take(self, end: int) -> bytes:
        """Consume the buffer up to offset ``end`` from ``pos``."""
        piece = self.buf[self.pos:self.pos + end]
        self.line += piece.count(b"\n")
        self.pos += end
        return piece

    def skip_to(self, pattern) -> None:
        """Drop everything up to the next match of ``pattern``, block by block."""
        while True:
            found = pattern.search(self.buf, self.pos)
            if found is not None:
                self.take(found.end() - self.pos)
                return
            self.take(len(self.buf) - self.pos)
            if not self.more():
                return


_NL = re.compile(rb"\n")
_COL0 = re.compile(rb"\n(?=[^ \t\r\n])")  # the next line that starts at column 0
BLOCK = 1 << 20


def split(stream: BinaryIO, stop: Optional[int] = None, lines: Optional[List[int]] = None
          ) -> Iterator[Tuple[str, object, int]]:
    """("doc", text, line) for each pretty document or line starting with ``{``, ("bad", reason,
    line) for everything else; memory stays under about twice MAX_LINE. At the end, ``lines``
    (a list) receives the number of newlines read."""
    blocks = _Blocks(stream, stop)
    blocks.more()
    while True:
        end = blocks.newline(0)
        if end < 0 and blocks.eof and blocks.pos >= len(blocks.buf):
            break
        if end < 0 and not blocks.eof:
            yield "bad", f"a line over {MAX_LINE} bytes", blocks.line
            blocks.skip_to(_NL)
            continue
        end = end if end >= 0 else len(blocks.buf) - blocks.pos
        if end > MAX_LINE:
            yield "bad", f"a line over {MAX_LINE} bytes", blocks.line
            blocks.take(end + 1)
            continue
        raw = blocks.buf[blocks.pos:blocks.pos + end]
        text = raw.strip()
        if text == b"{" and raw.startswith(b"{"):
            yield from _pretty(blocks)
            continue
        line = blocks.line
        blocks.line, blocks.pos = line + 1, blocks.pos + end + 1  # one line, its newline found above
        if text.startswith(b"{"):
            yield "doc", text, line
        elif text:
            yield "bad", "not JSON", line
    if blocks.nul:
        yield "bad", "binary data (NUL bytes); the rest of this input was not read", blocks.line
    if lines is not None:
        lines.append(blocks.line - 1)


def _pretty(blocks: _Blocks) -> Iterator[Tuple[str, object, int]]:
    """A document from its ``{`` line to the ``}`` line that closes it at column 0."""
    line = blocks.line
    close = blocks.find(_COL0, 1)
    if close is None and blocks.eof:
        blocks.take(len(blocks.buf) - blocks.pos)
        yield "bad", "a report cut off at the end of the input", line
        return
    if close is None or close.end() - blocks.pos > MAX_LINE:
        yield "bad", f"a document over {MAX_LINE} bytes", line
        blocks.skip_to(_COL0)
        closing = blocks.newline(0)
        if closing >= 0 and blocks.buf[blocks.pos:blocks.pos + closing].rstrip() == b"}":
            blocks.take(closing + 1)  # its closing brace, not a stretch of its own
        return
    opens = close.end() - blocks.pos  # offsets from pos: reading on may move the buffer
    stop = blocks.newline(opens)
    stop = stop if stop >= 0 else len(blocks.buf) - blocks.pos
    if blocks.buf[blocks.pos + opens:blocks.pos + stop].rstrip() != b"}":
        blocks.take(opens)  # a new document began at column 0: this one never closed
        yield "bad", "a report cut off (its closing brace never came)", line
        return
    yield "doc", blocks.take(stop + 1), line
