"""Cutting a byte stream into report documents, in blocks, for ``fleet``.

A JSON line (``check --jsonl``) is one document; a pretty document (``check --json``) runs
from a ``{`` alone at column 0 to the ``}`` that closes it at column 0 (nothing else in
indented JSON starts at column 0, so a new column-0 line before it means the document was
cut). Everything else is an unreadable stretch. Lines and documents are capped at MAX_LINE
bytes (the rest skipped and named); a NUL byte ends the input (binary data). Memory stays
under about twice MAX_LINE whatever the input, ``/dev/zero`` or one endless line included.

Line numbers are counted only when asked for (``Split.line_of``): a stretch to name, or the
total of a byte range whose successor goes on counting. Counting the newlines of every
pretty document would cost as much as finding it.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Callable, Iterator, Optional, Tuple

MAX_LINE = 64 << 20      # bytes: a report is ~20 KB; a pretty document is capped the same


class _Blocks:
    """A byte stream read in growing blocks, with the position and line number of what was
    consumed. Reading ends at ``stop`` bytes, at the end, or at a NUL byte (binary data)."""

    def __init__(self, stream: BinaryIO, stop: Optional[int], first: Optional[int] = None,
                 after_read: Optional[Callable[[], None]] = None):
        self.stream, self.left, self.first, self.after_read = stream, stop, first, after_read
        self.buf, self.pos, self.eof, self.nul = b"", 0, False, False
        self.base = 0                  # stream offset of buf[0]
        self.mark, self.line = 0, 1    # buf offset up to which newlines are counted, and the line there
        self.seekable: Optional[bool] = None  # asked when first needed: a small file read whole never is

    def line_at(self, at: int) -> int:
        """The line number at buffer offset ``at`` (at or after ``mark``)."""
        if at > self.mark:
            self.line += self.buf.count(b"\n", self.mark, at)
            self.mark = at
        return self.line

    def more(self) -> bool:
        if self.eof:
            return False
        # doubling: a long document is read in O(n); the first read as large as the file
        whole, self.first = self.first, 0
        keep = len(self.buf) - self.pos  # not consumed yet: it stays in the buffer
        want = max(whole or BLOCK, keep)
        # From a file, what is kept is read again with the block (a seek back) rather than
        # copied in front of it: copying the whole block once more costs ~2 us per report.
        if keep and self.seekable is None:
            try:
                self.seekable = bool(self.stream.seekable())
            except (OSError, ValueError, AttributeError):
                self.seekable = False
        again = keep if keep and self.seekable else 0
        if again:
            self.stream.seek(-again, 1)
            if self.left is not None:
                self.left += again
        want += again
        chunk = self.stream.read(want if self.left is None else min(want, self.left))
        if self.after_read is not None:
            self.after_read()
        if len(chunk) <= again:
            self.eof = True
            return False
        self.eof = bool(whole) and len(chunk) < want  # a small file read whole: nothing more to ask for
        if self.left is not None:
            self.left -= len(chunk)
            self.eof = self.eof or self.left <= 0
        if b"\0" in chunk:
            chunk, self.nul, self.eof = chunk[:chunk.index(b"\0")], True, True
        self.line_at(self.pos)  # what is dropped is counted first
        self.base += self.pos
        self.buf = chunk if again or not keep else self.buf[self.pos:] + chunk
        self.pos = self.mark = 0
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
        self.pos += end
        return piece

    def skip_to(self, pattern, back: int = 0) -> None:
        """Drop everything up to the next match of ``pattern`` (less its last ``back`` bytes),
        block by block."""
        while True:
            found = pattern.search(self.buf, self.pos)
            if found is not None:
                self.take(found.end() - back - self.pos)
                return
            self.take(len(self.buf) - self.pos)
            if not self.more():
                return


_NL = re.compile(rb"\n")
_COL0 = re.compile(rb"\n[^ \t\r\n]")  # the next line that starts at column 0 (a class, not a lookahead: faster)
BLOCK = 256 << 10  # a block and the line cut from it stay in the L2 cache (1 MiB blocks: ~7 us more per report)


class Split:
    """("doc", bytes, at) for each pretty document or line starting with ``{``, ("bad", reason,
    at) for everything else, where ``at`` is a stream offset that ``line_of`` turns into a line
    number while the item is current (or at the end). ``first``: the size of the first read
    (a small file's size, so that it is read whole without a larger buffer); ``after_read``:
    called after each read of the stream (to ask the kernel for what comes next)."""

    def __init__(self, stream: BinaryIO, stop: Optional[int] = None, first: Optional[int] = None,
                 after_read: Optional[Callable[[], None]] = None):
        self.blocks = _Blocks(stream, stop, first, after_read)

    def line_of(self, at: int) -> int:
        return self.blocks.line_at(at - self.blocks.base)

    def lines(self) -> int:
        """How many newlines were read (after the iteration)."""
        return self.blocks.line_at(len(self.blocks.buf)) - 1

    def __iter__(self) -> Iterator[Tuple[str, object, int]]:
        blocks = self.blocks
        blocks.more()
        while True:
            end = blocks.newline(0)
            if end < 0 and blocks.eof and blocks.pos >= len(blocks.buf):
                break
            at = blocks.base + blocks.pos
            if end < 0 and not blocks.eof:
                yield "bad", f"a line over {MAX_LINE} bytes", at
                blocks.skip_to(_NL)
                continue
            end = end if end >= 0 else len(blocks.buf) - blocks.pos
            if end > MAX_LINE:
                yield "bad", f"a line over {MAX_LINE} bytes", at
                blocks.take(end + 1)
                continue
            raw = blocks.buf[blocks.pos:blocks.pos + end]
            text = raw.strip()
            if text == b"{" and raw.startswith(b"{"):
                yield from _pretty(blocks)
                continue
            start, blocks.pos = blocks.pos, blocks.pos + end + 1  # one line, its newline found above
            if text.startswith(b"{"):
                yield "doc", text, at
            elif text:
                yield "bad", "not JSON", at
            if blocks.mark == start:  # counted up to this line: one more, without a count
                blocks.mark, blocks.line = blocks.pos, blocks.line + 1
        if blocks.nul:
            yield "bad", "binary data (NUL bytes); the rest of this input was not read", blocks.base + blocks.pos


def _pretty(blocks: _Blocks) -> Iterator[Tuple[str, object, int]]:
    """A document from its ``{`` line to the ``}`` line that closes it at column 0."""
    at = blocks.base + blocks.pos
    close = blocks.find(_COL0, 1)
    if close is None and blocks.eof:
        blocks.take(len(blocks.buf) - blocks.pos)
        yield "bad", "a report cut off at the end of the input", at
        return
    if close is None or close.end() - 1 - blocks.pos > MAX_LINE:
        yield "bad", f"a document over {MAX_LINE} bytes", at
        blocks.skip_to(_COL0, back=1)  # up to the column-0 line, not into it
        closing = blocks.newline(0)
        if closing >= 0 and blocks.buf[blocks.pos:blocks.pos + closing].rstrip() == b"}":
            blocks.take(closing + 1)  # its closing brace, not a stretch of its own
        return
    opens = close.end() - 1 - blocks.pos  # offsets from pos: reading on may move the buffer
    stop = blocks.newline(opens)
    stop = stop if stop >= 0 else len(blocks.buf) - blocks.pos
    if blocks.buf[blocks.pos + opens:blocks.pos + stop].rstrip() != b"}":
        blocks.take(opens)  # a new document began at column 0: this one never closed
        yield "bad", "a report cut off (its closing brace never came)", at
        return
    yield "doc", blocks.take(stop + 1), at
