"""Scan one large plain log file with several worker processes, each over its own byte range.

The file is cut at line starts into one range per worker; each worker streams its range
through the same ``Scanner`` (reading a little past its end so a message split over lines
is still seen whole, but matching only lines that start inside its range) and returns its
matches with line numbers counted from its range start and its newline count. The parent
adds the earlier ranges' newline counts. Memory stays bounded per worker; a gzip file,
stdin or a UTF-16 log is scanned in one process.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import List, Optional, Tuple

from gpudoctor.explain import catalog
from gpudoctor.explain.scan import CHUNK, HEAD_BYTES, LOOKAHEAD, ScanResult, Scanner, SigHits, MAX_LINES_KEPT

MIN_BYTES = 64 << 20       # below this, starting workers costs more than it saves
PER_WORKER = 32 << 20      # at least this much work for each worker
MAX_WORKERS = 8


def worker_count(size: int, jobs: Optional[int]) -> int:
    if jobs is not None:
        return max(1, jobs)
    if size < MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS, size // PER_WORKER))


def _boundaries(path: str, size: int, n: int) -> List[int]:
    cuts = [0]
    with open(path, "rb") as f:
        for i in range(1, n):
            f.seek(i * size // n)
            piece = f.read(CHUNK)
            nl = piece.find(b"\n")
            cut = i * size // n + (nl + 1 if nl != -1 else 0)
            if cut > cuts[-1]:
                cuts.append(cut)
    return cuts + [size]


def _scan_range(args: Tuple[str, int, int, Optional[float]]):
    path, start, end, deadline = args
    scanner = Scanner(catalog.load())
    scanner.stop = end - start
    stopped = None
    with open(path, "rb") as f:
        f.seek(start)
        remaining = end - start + LOOKAHEAD          # a little past the end: windows see the next lines
        while remaining > 0:
            if deadline is not None and time.monotonic() > deadline:  # CLOCK_MONOTONIC: system-wide
                stopped = start + scanner.total
                break
            chunk = f.read(min(CHUNK, remaining))
            if not chunk:
                break
            scanner.feed(chunk)
            remaining -= len(chunk)
    result = scanner.finish()
    return result.hits, result.head if start == 0 else b"", scanner.newlines, result.long_line, stopped


def scan_parallel(path: str, size: int, workers: int, last_byte: bytes,
                  deadline: Optional[float] = None) -> ScanResult:
    """Every range's matches, merged. A range that the deadline cut short leaves the line
    numbers of the ranges after it unknown: their matches count, their numbers are left out."""
    cuts = _boundaries(path, size, workers)
    ranges = [(path, a, b, deadline) for a, b in zip(cuts, cuts[1:])]
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(max_workers=len(ranges), mp_context=context) as pool:
        parts = list(pool.map(_scan_range, ranges))
    hits, offset, long_line, stopped = {}, 0, None, None
    for part_hits, _, newlines, part_long, part_stopped in parts:
        for sig_id, h in part_hits.items():
            _merge(hits.setdefault(sig_id, SigHits()), h, None if stopped is not None else offset)
        if long_line is None and part_long is not None and stopped is None:
            long_line = part_long + offset
        offset += newlines
        stopped = part_stopped if stopped is None else stopped
    lines = offset + (1 if size and last_byte != b"\n" else 0)
    result = ScanResult(hits, parts[0][1][:HEAD_BYTES], size, lines, long_line)
    result.stopped_at = stopped
    return result


def _merge(into: SigHits, part: SigHits, offset: Optional[int]) -> None:
    if not into.count:
        into.excerpt, into.values = part.excerpt, part.values
    into.count += part.count
    for line, values in part.matches if offset is not None else ():
        if len(into.lines) < MAX_LINES_KEPT:
            into.lines.append(line + offset)
            into.matches.append((line + offset, values))
    into.windows.extend(part.windows[:max(0, 3 - len(into.windows))])
