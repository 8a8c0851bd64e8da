"""Find and kill every process a command started, new sessions included (Linux ``/proc``).

Killing a command's process group misses a grandchild that called ``setsid()`` (a daemon, or
a hostile ``nvidia-smi`` stub that double-forks while holding our pipe): it leads a group of
its own, and once its parent exits it is re-parented to init, so no ancestry leads back to
us. Two traces survive both: the environment, which children inherit (each run gets a
unique ``GPUDOCTOR_RUN_ID``), and the pid, which Linux hands out in increasing order. A
process counts as the command's when it was created after the command (pid range) and
either carries the run's id or descends from the command. Without ``/proc`` nothing is
found and the process-group kill is all that happens.
"""

from __future__ import annotations

import itertools
import os
import signal
from typing import Dict, Iterable, List, Optional, Set, Tuple

MARK = "GPUDOCTOR_RUN_ID"
_counter = itertools.count(1)


def new_mark() -> str:
    """A run id unique on this machine for this gpudoctor process's lifetime."""
    return f"{os.getpid()}.{next(_counter)}"


def _last_pid() -> Optional[int]:
    """The most recently allocated pid (last field of ``/proc/loadavg``, e.g. ``4/121 15783``)."""
    try:
        with open("/proc/loadavg", "rb") as fh:
            return int(fh.read(256).split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def _candidates(first: int) -> List[int]:
    """Pids allocated since ``first`` was; allocation wraps at ``pid_max`` (32768 on many hosts)."""
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
    last = _last_pid()
    if last is None:
        return [p for p in pids if p >= first]
    if last >= first:
        return [p for p in pids if first <= p <= last]
    return [p for p in pids if p >= first or p <= last]


def _ppid(pid: int) -> Optional[int]:
    """Field 4 of ``/proc/PID/stat``; the command name before it may hold spaces and ``)``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read(4096).rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _marked(pid: int, needle: bytes) -> bool:
    """Whether the process's environment holds the run id (readable for our own processes only)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read(1 << 20)
    except OSError:
        return False
    return (b"\0" + needle) in data or data.startswith(needle)


def descendants(root: int, mark: str) -> List[int]:
    """Live processes started by ``root``'s run, ``root`` itself excluded."""
    needle = f"{MARK}={mark}\0".encode()
    parents: Dict[int, Optional[int]] = {p: _ppid(p) for p in _candidates(root) if p != root}
    ours: Set[int] = {p for p in parents if _marked(p, needle)}
    grown = True
    while grown:  # children of ours are ours even when they dropped the environment
        new = {p for p, pp in parents.items() if p not in ours and (pp == root or pp in ours)}
        grown = bool(new)
        ours |= new
    return sorted(ours)


def _kill(pid: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def kill_tree(root: int, mark: str, rounds: int = 3) -> int:
    """SIGKILL ``root``'s process group and everything ``descendants`` finds; returns how many
    processes were found. Call it before ``root`` is reaped, so its pid cannot be reused."""
    _kill(root, group=True)
    found: Set[int] = set()
    for _ in range(2):  # after the wait, once more: a process killed while it forked may have left a child
        for _ in range(rounds):  # one may fork between the scan and the kill
            pids = [p for p in descendants(root, mark) if p not in found]
            if not pids:
                break
            for pid in pids:
                _kill(pid, group=_leads_group(pid))
                _kill(pid, group=False)
            found.update(pids)
        # A killed process may take a while to go on a loaded machine (one blocked in a write); the wait
        # ends as soon as all are gone, so it costs milliseconds when nothing is slow.
        _wait_gone(found, 3.0)
    return len(found)


def _wait_gone(pids: Set[int], limit_s: float) -> None:
    """SIGKILL is delivered asynchronously: wait (briefly) until the killed are really gone."""
    import time

    end = time.monotonic() + limit_s
    while pids and alive(pids) and time.monotonic() < end:
        time.sleep(0.005)


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def alive(pids: Iterable[int]) -> List[int]:
    """The pids still running (zombies count as gone): what tests and the campaign check."""
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read(4096).rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            out.append(pid)
    return out


def marked_processes(mark_prefix: str) -> List[Tuple[int, str]]:
    """(pid, run id) of every live process whose run id starts with ``mark_prefix`` (tests)."""
    out = []
    needle = f"{MARK}={mark_prefix}".encode()
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if name.isdigit() and alive([int(name)]):
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    env = fh.read(1 << 20).split(b"\0")
            except OSError:
                continue
            out += [(int(name), e.split(b"=", 1)[1].decode()) for e in env if e.startswith(needle)]
    return out
