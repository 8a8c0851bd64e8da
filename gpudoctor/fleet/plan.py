"""What ``fleet`` reads, cut into jobs.

Regular files (given, found below a directory, or stdin redirected from one) become jobs: small
files in batches, a large file in byte ranges that start at a document start (``{`` at the start
of a line). A pipe (stdin from ``srun``, a FIFO) is one job, never split. A device (``/dev/zero``)
or socket is refused: it is not a report file.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple

from gpudoctor.fleet.read import input_files

MIN_JOB_BYTES = 1 << 20
STDIN = "/proc/self/fd/0"  # stdin redirected from a file, reopened with an offset of its own


class Unreadable(Exception):
    """An input that cannot be read at all; ``str()`` is the one-line reason."""


@dataclass
class Job:
    files: List[Tuple[str, str]] = field(default_factory=list)  # (path to open, name to show)
    start: int = 0
    stop: Optional[int] = None     # a byte range of files[0], when set
    pipe: bool = False             # read by this process, never split
    size: int = 0                  # bytes of files[0] (a regular file)
    cont: bool = False             # a range after the first of its file: its line numbers go on


def plan(sources: Sequence[str], stdin_is_file: bool) -> List[Job]:
    jobs: List[Job] = []
    for source in sources:
        if source == "-":
            start = os.lseek(0, 0, os.SEEK_CUR) if stdin_is_file else 0  # what a caller already read stays read
            size = os.fstat(0).st_size - start if stdin_is_file else 0
            jobs.append(Job([(STDIN, "<stdin>")], start=start, pipe=not stdin_is_file, size=size))
            continue
        for path in input_files([source]):
            st = _stat(str(path))
            jobs.append(Job([(str(path), str(path))], pipe=stat.S_ISFIFO(st.st_mode), size=st.st_size))
    return jobs


def _stat(path: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise Unreadable(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not (stat.S_ISFIFO(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise Unreadable(f"{path}: cannot read (not a regular file or a pipe)")
    return st


def balance(jobs: List[Job], workers: int) -> List[Job]:
    """Large files cut into ranges, small ones batched, in jobs that shrink as the input goes
    (guided scheduling): each about 1/(4 x workers) of the bytes left, down to 1/(64 x workers)
    of all of them. Handed out as workers free up, the last jobs are small and every worker
    stays busy to the end (a report with problems costs twice the CPU per byte of a quiet one:
    equal jobs left one worker alone with the last for ~0.4 s of 100,000 reports' ~4)."""
    total = sum(job.size for job in jobs if not job.pipe)
    floor = max(MIN_JOB_BYTES, total // (workers * 64))

    def size_for(left: int) -> int:
        return max(floor, left // (workers * 4))

    out: List[Job] = []
    left = total
    batch = room = 0  # bytes in the last batch job and what it may hold: full, so the first file starts a new one
    for job in jobs:
        if job.pipe:
            out.append(job)
            batch = room = 0
            continue
        path, name = job.files[0]
        if job.size > 2 * size_for(left):
            after = left - job.size  # bytes left once this file is done
            cuts = _ranges(path, job.start, job.start + job.size, lambda at, stop: size_for(after + stop - at))
            out += [Job([(path, name)], a, b, cont=i > 0) for i, (a, b) in enumerate(cuts)]
            batch = room = 0
        elif batch < room:
            out[-1].files.append((path, name))
            batch += job.size
        else:
            out.append(Job([(path, name)], size=job.size))
            batch, room = job.size, size_for(left)
        left -= job.size
    return out


def _ranges(path: str, start: int, stop: int, size_for: Callable[[int, int], int]) -> List[Tuple[int, int]]:
    """Ranges of a file from ``start`` to ``stop`` that begin at a document start, each about
    ``size_for(where it begins, stop)`` bytes."""
    cuts = [start]
    with open(path, "rb") as fh:
        at = start + size_for(start, stop)
        while at < stop:
            fh.seek(at)
            found = _next_start(fh)
            if found is None or found >= stop:
                break
            cuts.append(found)
            at = found + size_for(found, stop)
    return list(zip(cuts, cuts[1:] + [stop]))


def _next_start(fh) -> Optional[int]:
    """The offset of the next line that starts with ``{`` (a report or a pretty document)."""
    if not _to_line_end(fh):
        return None
    while True:
        at = fh.tell()
        line = fh.readline(1 << 20)
        if not line:
            return None
        if line.startswith(b"{"):
            return at
        if not line.endswith(b"\n") and not _to_line_end(fh):
            return None


def _to_line_end(fh) -> bool:
    """Skip the rest of the current line (read in pieces: it may be gigabytes); False at the end."""
    while True:
        piece = fh.readline(1 << 20)
        if not piece:
            return False
        if piece.endswith(b"\n"):
            return True
