"""Owners of the processes on the GPUs: nvidia-smi does not print them, and a replay cannot look them up,
so live runs record them in the snapshot (meta["process_owners"])."""

from __future__ import annotations

from typing import Dict, Iterable, Optional


def gpu_pids(result) -> Optional[list]:
    """PIDs of GPU processes in nvidia-smi's report, or None when it printed no report."""
    from gpudoctor import smi

    if not result.stdout.strip():
        return None
    try:
        report = smi.parse(result.stdout)
    except smi.SmiParseError:
        return None
    return [p.pid for p in report.processes if p.pid is not None] if report.gpus else None


def process_owners(pids: Iterable[int]) -> Dict[int, str]:
    """User names of GPU processes (``nvidia-smi`` does not print them); unknown ones left out."""
    import psutil

    owners = {}
    for pid in set(p for p in pids if p is not None):
        try:
            owners[pid] = psutil.Process(pid).username()
        except (psutil.Error, KeyError, OSError):
            continue
    return owners
