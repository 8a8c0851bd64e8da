"""Which inputs ``fleet`` reads, and on how many cores.

Regular files (given, found below a directory, or stdin redirected from one) are cut into
jobs: small files in batches, a large file in byte ranges that start at a document start
(``{`` at the start of a line). With more than PARALLEL_BYTES to read and more than one core,
worker processes read the jobs while this process reads any pipe (stdin from ``srun``, a
FIFO); results are merged in input order, so the last report of a host still counts. A
device (``/dev/zero``) or socket is refused: it is not a report file.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import stat
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from gpudoctor.fleet.read import Tally, input_files, read_stream

PARALLEL_BYTES = 32 << 20
MIN_JOB_BYTES = 1 << 20
MAX_WORKERS = 8
WHOLE_BYTES = 1 << 20  # a file smaller than this is read in one read of its size
PREFETCH_BYTES = 8 << 20
AHEAD_BYTES = 256 << 20  # asked for ahead of the reader, at most
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


@dataclass
class Part:
    nodes: list
    bad: list
    bad_count: int
    lines: int
    error: Optional[str] = None


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


def run_job(job: Job) -> Part:
    """One job's nodes (as plain tuples: a worker sends them back pickled, and a NamedTuple
    costs a Python call each to pickle; see _plain), unreadable stretches and, for a byte
    range that another one continues, its number of lines."""
    tally, lines = Tally(), 0
    for path, name in job.files:
        try:
            with _open(path, job) as fh:
                if job.start:
                    fh.seek(job.start)
                first = _first_read(fh, job)
                ahead = _ReadAhead.of(fh, job.start, job.stop) if first is None and not job.pipe else None
                stop = None if job.stop is None else job.stop - job.start
                split = read_stream(fh, name, tally, stop, first, ahead)
                lines = split.lines() if job.stop is not None else 0
        except OSError as exc:
            return Part([], [], 0, 0, f"{name}: cannot read ({exc.strerror or exc})")
    return Part(_plain(tally.order), tally.bad, tally.bad_count, lines)


def _plain(nodes: list) -> List[tuple]:
    """Nodes as plain tuples whose repeated values are one object each: pickle sends such a
    value once per part instead of once per node (half the bytes), and the parent unpickles,
    counts and compares shared strings faster (~0.1 s less of its CPU for 100,000 nodes)."""
    share = {}.setdefault
    return [(host, source, status, share(driver, driver), share(cuda, cuda), gpus, share(model, model),
             share(torch, torch), share(problems, problems))
            for host, source, status, driver, cuda, gpus, model, torch, problems in nodes]


class _ReadAhead:
    """Asks the kernel to read the next AHEAD_BYTES of a large range ahead while the reader
    parses what it has (posix_fadvise WILLNEED, a hint only: nothing is read here), so that a
    file not in the page cache, or partly evicted from it, comes from the disk meanwhile. A
    window, not the whole range: a job of gigabytes does not fill the page cache ahead of use.
    Called after each read; one request per PREFETCH_BYTES (the kernel caps each request at
    its readahead size)."""

    def __init__(self, fd: int, stop: int, asked: int):
        self.fd, self.stop, self.asked = fd, stop, asked  # asked: where the requests so far end

    @classmethod
    def of(cls, fh, start: int, stop: Optional[int]) -> Optional["_ReadAhead"]:
        """For the range from ``start`` to ``stop`` (the end of the file when None) of ``fh``;
        None where there is nothing to ask for (a small range, no posix_fadvise)."""
        if not hasattr(os, "posix_fadvise"):
            return None
        try:
            fd = fh.fileno()
            stop = os.fstat(fd).st_size if stop is None else stop
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
            return None
        if stop - start < WHOLE_BYTES:
            return None
        ahead = cls(fd, stop, start)
        ahead()
        return ahead

    def __call__(self) -> None:
        try:
            until = min(self.stop, os.lseek(self.fd, 0, os.SEEK_CUR) + AHEAD_BYTES)
            while self.asked < until:
                size = min(PREFETCH_BYTES, self.stop - self.asked)
                os.posix_fadvise(self.fd, self.asked, size, os.POSIX_FADV_WILLNEED)
                self.asked += size
        except OSError:
            self.asked = self.stop  # a hint only: no more asking


def _first_read(fh, job: Job) -> Optional[int]:
    """A whole small file in one read of its size (a fresh block-sized buffer per file costs
    more than reading it); None for a range, a pipe or a large file."""
    if job.stop is not None or job.pipe:
        return None
    try:
        size = os.fstat(fh.fileno()).st_size
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
        return None
    return size + 1 if 0 < size < WHOLE_BYTES else None


def _open(path: str, job: Job):
    if path == STDIN and job.pipe:
        if not _real_stdin():  # replaced in-process (a test runner, an embedding program): read what it holds
            return contextlib.nullcontext(sys.stdin.buffer)
        return os.fdopen(os.dup(0), "rb")  # the pipe itself, read by this process only
    return open(path, "rb", buffering=0)  # reads are whole blocks or a whole file: a buffer would only copy


def _real_stdin() -> bool:
    """Whether ``sys.stdin`` is file descriptor 0, which the workers and the pipe reader use."""
    try:
        return sys.stdin is not None and sys.stdin.fileno() == 0
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: no descriptor behind it
        return False


def read_all(sources: Sequence[str]) -> Tally:
    """Every report in ``sources`` ("-" is stdin); raises Unreadable for an input that cannot be read."""
    jobs = plan(sources, _stdin_is_file())
    workers = workers_for(jobs)
    if workers > 1:
        jobs = balance(jobs, workers)
    tally, offset = Tally(), 0
    with contextlib.closing(run_all(jobs, workers)) as parts:
        for job, part in zip(jobs, parts):  # merged as they come, while later jobs run
            if part.error:
                raise Unreadable(part.error)
            offset = offset if job.cont else 0
            tally.merge(part.nodes, part.bad, part.bad_count, offset)
            offset += part.lines
    return tally


def _stdin_is_file() -> bool:
    try:
        return _real_stdin() and stat.S_ISREG(os.fstat(0).st_mode) and os.path.exists(STDIN)
    except OSError:
        return False


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


def workers_for(jobs: List[Job]) -> int:
    total = sum(job.size for job in jobs if not job.pipe)
    if total < PARALLEL_BYTES:
        return 1
    return max(1, min(cores(), MAX_WORKERS))


def cores() -> int:
    """The cores this process may run on (a Slurm job or a container is often given fewer
    than the machine has: os.cpu_count() would start workers that only wait for a turn)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def run_all(jobs: List[Job], workers: int) -> Iterator[Part]:
    """Each job's Part, in job order, as soon as it and those before it are done: files in
    worker processes, pipes here meanwhile."""
    if workers <= 1:
        yield from map(run_job, jobs)
        return
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        futures = [None if job.pipe else pool.submit(run_job, job) for job in jobs]
        local = {i: run_job(job) for i, job in enumerate(jobs) if job.pipe}
        for i, fut in enumerate(futures):
            yield local[i] if fut is None else fut.result()
    finally:
        pool.shutdown(cancel_futures=True)  # an unreadable input stops the reading: no job left to wait for
