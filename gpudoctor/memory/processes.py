"""Who owns a GPU process and what it runs: read live with psutil for ``--live``.

nvidia-smi and NVML name a process by PID and (nvidia-smi) its executable; the owner and
the command line come from /proc through psutil. A PID that is not visible here belongs
to another PID namespace (nvidia-smi inside a container lists the host's PIDs); a process
of another user may hide its command line. Either is recorded as the reason, not dropped.
"""

from __future__ import annotations

from typing import Dict, Iterable

MAX_COMMAND = 200


def describe(pids: Iterable[int]) -> Dict[int, Dict[str, str]]:
    import psutil

    out: Dict[int, Dict[str, str]] = {}
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                user = proc.username()
                command = " ".join(proc.cmdline()) or proc.name()
            out[pid] = {"user": user, "command": command[:MAX_COMMAND]}
        except psutil.NoSuchProcess:
            out[pid] = {"error": "not visible from here (ended, or another PID namespace such as a container)"}
        except psutil.AccessDenied:
            out[pid] = {"error": "not readable by this user"}
    return out
