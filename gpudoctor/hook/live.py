"""Record only what the hook's requirements need, within the hook's deadline.

One ``nvidia-smi -q -x`` (through the runner: own process group, killed at the deadline)
and, only when a requirement reads them, framework build facts from installed files, read
in a thread beside nvidia-smi. The result is an ordinary Snapshot, so a live hook and a
replayed one are judged by the same code.
"""

from __future__ import annotations

import socket
import threading
import time
from datetime import datetime, timezone
from typing import Dict, Iterable, Mapping, Optional

import gpudoctor
from gpudoctor.probes import commands
from gpudoctor.snapshot import Snapshot

# Leave this much of the budget for judging, writing the textfile and exiting.
MARGIN_S = 0.25


def record(environ: Mapping[str, str], deadline: float, python: Optional[str] = None,
           frameworks: bool = False) -> Snapshot:
    """A minimal live snapshot; never runs past ``deadline`` (a ``time.monotonic()`` value)."""
    snap = Snapshot(meta={"gpudoctor_version": gpudoctor.__version__, "hostname": socket.gethostname(),
                          "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          "recorded_by": "hook"})
    box: Dict[str, Dict] = {}
    worker = None
    if frameworks:
        worker = threading.Thread(target=_frameworks, args=(box, python, environ, deadline), daemon=True)
        worker.start()
    budget = max(0.1, deadline - time.monotonic() - MARGIN_S)
    snap.commands["nvidia_smi_xml"] = commands.run_command("nvidia_smi_xml", environ, budget)
    if worker is not None:
        worker.join(max(0.0, deadline - time.monotonic() - MARGIN_S / 2))
        snap.frameworks = dict(box) if not worker.is_alive() else {
            name: {"probe": {"source": "files", "timed_out": True, "duration_s": round(budget, 1)}}
            for name in ("torch", "tensorflow")}
    return snap


def _frameworks(box: Dict, python: Optional[str], environ: Mapping[str, str], deadline: float) -> None:
    from gpudoctor.hook.fastfacts import framework_facts

    box.update(framework_facts(python, environ, max(0.1, deadline - time.monotonic() - MARGIN_S)))


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
