"""Record only what the hook's requirements need, within the hook's deadline.

One ``nvidia-smi -q -x`` (through the runner: own process group, killed at the deadline)
and, only when a requirement reads them, framework build facts from installed files, read
in a thread beside nvidia-smi. When nvidia-smi gives no report, the cheap signs that say
why (the /dev nodes, /proc/driver/nvidia, lspci) are recorded too, so DRV001 can tell a
GPU whose driver is gone from a machine without a GPU. The result is an ordinary Snapshot,
judged by the same checks as a full one.

For the Xid checks the kernel log is read from /dev/kmsg without blocking (milliseconds);
only where that is refused does ``journalctl -k -b`` run, in a thread beside nvidia-smi and
bounded by the same deadline, so a slow journal makes the log "not read", never a late hook.
The fabric manager's state and the NVLink commands run the same way when they are asked for.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from datetime import datetime, timezone
from typing import Dict, Iterable, Mapping, Optional

import gpudoctor
from gpudoctor import waits
from gpudoctor.probes import commands, files, kernel_log
from gpudoctor.probes.owners import gpu_pids, process_owners
from gpudoctor.requirements import Requirements
from gpudoctor.snapshot import Snapshot

# Leave this much of the budget for judging, writing the textfile and exiting.
MARGIN_S = 0.25


def record(environ: Mapping[str, str], deadline: float, python: Optional[str] = None,
           req: Requirements = Requirements(), root: str = "/") -> Snapshot:
    """A minimal live snapshot; never runs past ``deadline`` (a ``time.monotonic()`` value).
    ``root``: where /dev/kmsg and /dev are read (a test's folder; "/" on a node)."""
    frameworks = req.needs_frameworks()
    snap = Snapshot(meta={"gpudoctor_version": gpudoctor.__version__, "hostname": socket.gethostname(),
                          "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          "recorded_by": "hook"})
    box: Dict[str, Dict] = {}
    worker = None
    if frameworks:
        worker = threading.Thread(target=_frameworks, args=(box, python, environ, deadline), daemon=True)
        worker.start()
    side = _side_commands(snap, environ, deadline, req, root)
    budget = max(0.1, deadline - time.monotonic() - MARGIN_S)
    snap.commands["nvidia_smi_xml"] = commands.run_command("nvidia_smi_xml", environ, budget)
    pids = gpu_pids(snap.commands["nvidia_smi_xml"])
    if pids is None:
        _presence(snap, environ, deadline)
    elif pids and req.no_foreign_processes and req.allow_users:
        snap.meta["process_owners"] = {str(k): v for k, v in process_owners(pids).items()}
    _join(side, snap, deadline)
    if worker is not None:
        waits.join(worker, max(0.0, deadline - time.monotonic() - MARGIN_S / 2))
        snap.frameworks = dict(box) if not worker.is_alive() else {
            name: {"probe": {"source": "files", "timed_out": True, "duration_s": round(budget, 1)}}
            for name in ("torch", "tensorflow")}
    if req.dcgm or req.smoke:  # asked for only: DCGM's diagnostic and the smoke test take seconds to minutes
        from gpudoctor.probes import active

        active.record(snap, req, python or sys.executable, environ, deadline - MARGIN_S)
    return snap


PRESENCE_FILES = ("/proc/driver/nvidia/version",)
FABRIC_COMMANDS = ("fabricmanager_active", "fabricmanager_version")
NVLINK_COMMANDS = ("nvidia_smi_nvlink_s", "nvidia_smi_nvlink_e", "nvidia_smi_nvlink_e_later")


def _side_commands(snap: Snapshot, environ: Mapping[str, str], deadline: float, req: Requirements,
                   root: str) -> Dict:
    """Record /dev/kmsg now and start the other commands the selected checks read, each in a thread."""
    keys = []
    if req.drain_xid_actions:
        snap.files[kernel_log.KMSG] = kernel_log.read_kmsg(root, deadline - MARGIN_S)
        if not snap.files[kernel_log.KMSG].exists:  # refused (kernel.dmesg_restrict): the journal may be readable
            keys.append("kernel_journal")
    if req.fabric_manager:
        keys += FABRIC_COMMANDS
        snap.listings["/dev"] = files.collect_listings(root).get("/dev", [])  # NVSwitch device nodes
    if req.nvlink:
        keys += NVLINK_COMMANDS
    threads, box = {}, {}  # results land in box; _join copies those done by the deadline
    for series in commands.series(keys):  # a second NVLink reading runs after the first, in its thread
        thread = threading.Thread(target=commands.run_series, daemon=True, args=(
            series, environ, lambda: max(0.1, deadline - time.monotonic() - MARGIN_S), box))
        thread.start()
        for key in series:
            threads[key] = (thread, time.monotonic(), box)
    return threads


def _join(threads: Dict, snap: Snapshot, deadline: float) -> None:
    """Wait for the side commands until the deadline; one still running is recorded as timed out."""
    from gpudoctor.runner import CommandResult

    for key, (thread, started, box) in threads.items():
        waits.join(thread, max(0.0, deadline - time.monotonic() - MARGIN_S / 2))
        done = box.get(key)  # a series still running may have finished its first command
        snap.commands[key] = done if done is not None else CommandResult(
            commands.COMMANDS[key], timed_out=True, duration_s=round(time.monotonic() - started, 1))


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
