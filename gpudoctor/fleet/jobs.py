"""Reading ``fleet``'s inputs on as many cores as it may use.

The inputs are cut into jobs (``plan.py``). With more than PARALLEL_BYTES to read and more than
one core, worker processes read the jobs while this process reads any pipe (stdin from ``srun``,
a FIFO); results are merged in input order, so the last report of a host still counts.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import stat
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence

from gpudoctor.fleet.plan import STDIN, Job, Unreadable, balance, plan
from gpudoctor.fleet.read import Tally, read_stream
from gpudoctor.fleet.readahead import WHOLE_BYTES, ReadAhead

PARALLEL_BYTES = 32 << 20
MAX_WORKERS = 8


@dataclass
class Part:
    nodes: list
    bad: list
    bad_count: int
    lines: int
    error: Optional[str] = None


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
                ahead = ReadAhead.of(fh, job.start, job.stop) if first is None and not job.pipe else None
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
