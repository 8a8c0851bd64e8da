"""Record only what the hook's requirements need, within the hook's deadline.

One ``nvidia-smi -q -x`` (through the runner: own process group, killed at the deadline)
and, only when a requirement reads them, framework build facts from installed files, read
in a thread beside nvidia-smi. When nvidia-smi gives no report, the cheap signs that say
why (the /dev nodes, /proc/driver/nvidia, lspci) are recorded too, so DRV001 can tell a
GPU whose driver is gone from a machine without a GPU. The result is an ordinary Snapshot,
judged by the same checks as a full one.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from datetime import datetime, timezone
from typing import Dict, Iterable, Mapping, Optional

import gpudoctor
from gpudoctor.probes import commands, files
from gpudoctor.requirements import Requirements
from gpudoctor.snapshot import Snapshot

# Leave this much of the budget for judging, writing the textfile and exiting.
MARGIN_S = 0.25


def record(environ: Mapping[str, str], deadline: float, python: Optional[str] = None,
           req: Requirements = Requirements()) -> Snapshot:
    """A minimal live snapshot; never runs past ``deadline`` (a ``time.monotonic()`` value)."""
    frameworks = req.needs_frameworks()
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
    pids = _gpu_pids(snap.commands["nvidia_smi_xml"])
    if pids is None:
        _presence(snap, environ, deadline)
    elif pids and req.no_foreign_processes and req.allow_users:
        snap.meta["process_owners"] = {str(k): v for k, v in process_owners(pids).items()}
    if worker is not None:
        worker.join(max(0.0, deadline - time.monotonic() - MARGIN_S / 2))
        snap.frameworks = dict(box) if not worker.is_alive() else {
            name: {"probe": {"source": "files", "timed_out": True, "duration_s": round(budget, 1)}}
            for name in ("torch", "tensorflow")}
    if req.dcgm or req.smoke:  # asked for only: DCGM's diagnostic and the smoke test take seconds to minutes
        from gpudoctor.probes import active

        active.record(snap, req, python or sys.executable, environ, deadline - MARGIN_S)
    return snap


PRESENCE_FILES = ("/proc/driver/nvidia/version",)


def _gpu_pids(result) -> Optional[list]:
    """PIDs of GPU processes in nvidia-smi's report, or None when it printed no report."""
    from gpudoctor import smi

    if not result.stdout.strip():
        return None
    try:
        report = smi.parse(result.stdout)
    except smi.SmiParseError:
        return None
    return [p.pid for p in report.processes if p.pid is not None] if report.gpus else None


def _presence(snap: Snapshot, environ: Mapping[str, str], deadline: float) -> None:
    """Signs of a GPU without a working nvidia-smi: device nodes, the kernel module, the PCI bus."""
    listings = files.collect_listings("/")
    snap.listings["/dev"] = listings.get("/dev", [])
    for path in PRESENCE_FILES:
        snap.files[path] = files.read_file("/", path)
    budget = deadline - time.monotonic() - MARGIN_S
    if budget > 0.2:
        snap.commands["lspci"] = commands.run_command("lspci", environ, min(budget, 2.0))


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
