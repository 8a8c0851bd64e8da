"""What ``explain`` reads: text given on the command line, files (plain or gzip), or stdin.

An argument that names an existing file is a file; one that merely looks like a path
(a single word ending in .log/.txt/.gz or containing a slash) but does not exist is an
error, anything else is the error text itself. Bad input - a directory, an unreadable
file, a corrupt gzip, binary data, nothing at all - raises ``BadInput`` with a one-line
message; invalid UTF-8 is read with replacement characters and reported as a note.
UTF-16 logs (PowerShell's `>` redirection writes them) are recognised by their BOM, or without one by their
pattern of NUL bytes (every other byte NUL, as UTF-16 spells ASCII text).
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import time
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, List, Optional, Sequence

from gpudoctor.explain import parallel
from gpudoctor.explain.scan import CHUNK, ScanResult, Scanner

_PATHLIKE = re.compile(r"^\S+$")
_PATH_HINT = re.compile(r"[/\\]|\.(?:log|txt|gz|out|err|json|jsonl)$", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


class BadInput(Exception):
    """Input that cannot be explained; ``str()`` is one line for the user."""


@dataclass
class Source:
    name: str             # what the user gave: the file name, "<stdin>" or "<text>"
    kind: str             # "file", "stdin" or "text"
    text: Optional[str] = None
    notes: List[str] = field(default_factory=list)


def resolve(args: Sequence[str], stdin_is_tty: bool) -> List[Source]:
    """Sources for the command's arguments; no argument reads stdin unless it is a terminal."""
    if not args:
        if stdin_is_tty:
            raise BadInput("nothing to explain: give the error TEXT, a log FILE, or - to read stdin")
        return [Source("<stdin>", "stdin")]
    return [_one(arg) for arg in args]


def _one(arg: str) -> Source:
    if arg == "-":
        return Source("<stdin>", "stdin")
    if os.path.isdir(arg):
        raise BadInput(f"{arg} is a directory, not a log file (give the files inside it)")
    if os.path.exists(arg):
        if not os.access(arg, os.R_OK):
            raise BadInput(f"cannot read {arg}: permission denied")
        return Source(arg, "file")
    if _PATHLIKE.match(arg) and _PATH_HINT.search(arg) and not arg.startswith(("http://", "https://")):
        raise BadInput(f"no such file: {arg} (to explain a message, quote the whole message)")
    if not arg.strip():
        raise BadInput("the text to explain is empty")
    return Source("<text>", "text", text=arg)


class _Recoded(io.RawIOBase):
    """A UTF-16 byte stream re-encoded as UTF-8, read in bounded pieces."""

    def __init__(self, raw: BinaryIO, encoding: str):
        self._reader = codecs.getreader(encoding)(raw, errors="replace")
        self._pending = b""

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self._pending) < max(n, 1):      # n < 0: all of it
            text = self._reader.read(CHUNK // 2)
            if not text:
                break
            self._pending += text.encode("utf-8")
        if n < 0:
            out, self._pending = self._pending, b""
        else:
            out, self._pending = self._pending[:n], self._pending[n:]
        return out


def _open(source: Source, stdin: Optional[BinaryIO]) -> BinaryIO:
    if source.kind == "text":
        return io.BytesIO(source.text.encode("utf-8", "surrogateescape"))
    if source.kind == "stdin":
        raw = stdin
    else:
        try:
            raw = open(source.name, "rb")
        except PermissionError:
            raise BadInput(f"cannot read {source.name}: permission denied") from None
        except OSError as exc:
            raise BadInput(f"cannot read {source.name}: {exc.strerror or exc}") from None
    return _unwrap(raw, source)


def _unwrap(raw: BinaryIO, source: Source) -> BinaryIO:
    """Peel gzip and UTF-16 off the stream, looking only at its first bytes."""
    buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
    try:
        head = buffered.peek(4)[:4]
    except OSError as exc:
        raise BadInput(f"cannot read {source.name}: {exc}") from None
    if head[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=buffered, mode="rb")
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            buffered.read(len(bom))
            source.notes.append(f"{source.name} is {encoding.upper()} text; read it as such")
            return _Recoded(buffered, encoding)
    try:
        head = buffered.peek(512)[:512]
        if len(head) < 512 and b"\x00" in head:     # a pipe gave its first bytes alone: read on to decide
            head = _read_head(buffered, 512)
            buffered = io.BufferedReader(_Prefixed(head, buffered))
    except OSError as exc:
        raise BadInput(f"cannot read {source.name}: {exc}") from None
    encoding = _bomless_utf16(head)
    if encoding is not None:
        source.notes.append(f"{source.name} is {encoding.upper()} text without a byte-order mark; read it as such")
        return _Recoded(buffered, encoding)
    return buffered


def _read_head(stream: io.BufferedReader, size: int) -> bytes:
    """Up to ``size`` bytes, reading until there are that many or the stream ends."""
    head = b""
    while len(head) < size:
        more = stream.read1(size - len(head))
        if not more:
            break
        head += more
    return head


class _Prefixed(io.RawIOBase):
    """Bytes already read, then the rest of the stream."""

    def __init__(self, head: bytes, rest: io.BufferedReader):
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n], self._head = self._head[:n], self._head[n:]
            return n
        data = self._rest.read1(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def _bomless_utf16(head: bytes) -> Optional[str]:
    """'utf-16-le' or 'utf-16-be' when the first bytes are text in UTF-16 without a BOM: nearly every pair of bytes
    a NUL beside a printable character (ASCII text in UTF-16; every pair of a short one); None for anything else,
    such as 16-bit binary samples, whose low bytes are not mostly printable."""
    pairs = [head[i:i + 2] for i in range(0, len(head) - 1, 2)]
    if len(pairs) < 2:
        return None
    for encoding, low, high in (("utf-16-le", 0, 1), ("utf-16-be", 1, 0)):
        chars = [p[low] for p in pairs if p[high] == 0 and p[low] != 0]
        if len(chars) < (0.9 * len(pairs) if len(pairs) >= 8 else len(pairs)):
            continue
        printable = sum(1 for c in chars if 32 <= c < 127 or c in (9, 10, 13))
        if printable >= 0.9 * len(chars):
            return encoding
    return None


def _check_text(first: bytes, source: Source) -> None:
    sample = first[:8192]
    if b"\x00" in sample:
        raise BadInput(f"{source.name} looks like binary data, not a log (it contains NUL bytes)")
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    if sample and controls > len(sample) // 10:
        raise BadInput(f"{source.name} looks like binary data, not a log")
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 4:      # not just a character cut at the sample's end
            source.notes.append(f"{source.name} is not valid UTF-8 (byte {exc.start}); "
                                "undecodable bytes were read as replacement characters")


def scan(source: Source, catalog, stdin: Optional[BinaryIO] = None, jobs: Optional[int] = None,
         deadline: Optional[float] = None) -> ScanResult:
    """Scan one source with the catalog; raises BadInput for input that is not a text log.

    A large plain file is split between worker processes (``parallel``); ``jobs=1`` keeps one.
    At ``deadline`` (a ``time.monotonic()`` value) reading stops: ``stopped_at`` says where."""
    stream = _open(source, stdin)
    if source.kind == "file" and not isinstance(stream, (gzip.GzipFile, _Recoded)):
        size = os.path.getsize(source.name)
        workers = parallel.worker_count(size, jobs)
        if workers > 1:
            try:
                _check_text(stream.peek(CHUNK)[:CHUNK], source)
                stream.seek(-1, os.SEEK_END)
                last = stream.read(1)
            finally:
                stream.close()
            return _checked(source, parallel.scan_parallel(source.name, size, workers, last, deadline))
    scanner = Scanner(catalog)
    stopped = False
    try:
        first = True
        while True:
            if deadline is not None and time.monotonic() > deadline:
                stopped = True
                break
            chunk = stream.read(CHUNK)
            if not chunk:
                break
            if first:
                _check_text(chunk, source)
                first = False
            scanner.feed(chunk)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise BadInput(f"{source.name}: not a valid gzip file ({exc or 'truncated'})") from None
    except OSError as exc:
        raise BadInput(f"cannot read {source.name}: {exc}") from None
    finally:
        if source.kind == "file":
            stream.close()
    result = scanner.finish()
    result.stopped_at = result.bytes_read if stopped else None
    return _checked(source, result)


def _checked(source: Source, result: ScanResult) -> ScanResult:
    if result.stopped_at is not None and result.bytes_read <= len(result.head):
        return result  # the time limit came first: what was read is no verdict on the input
    if result.bytes_read == 0:
        raise BadInput(f"{source.name} is empty: nothing to explain" if source.kind == "file"
                       else "no input: nothing to explain")
    if result.bytes_read <= len(result.head) and not result.head.strip():
        raise BadInput(f"{source.name} holds only whitespace: nothing to explain")
    if result.long_line is not None:
        source.notes.append(f"{source.name}: line {result.long_line} is longer than 1 MiB; it was scanned "
                            "in pieces and its excerpts are cut")
    return result
