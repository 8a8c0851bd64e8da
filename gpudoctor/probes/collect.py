"""Run every probe in parallel under one deadline and assemble the snapshot."""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Dict, Mapping, Optional, Sequence

import gpudoctor
from gpudoctor import runner, waits
from gpudoctor.probes import commands, environment, files, frameworks, kernel_log
from gpudoctor.probes.owners import gpu_pids, process_owners
from gpudoctor.snapshot import FileRecord, Snapshot

ProgressFn = Callable[[str, str], None]  # (probe name, "start" | "done" | "timeout")


@dataclass
class CollectOptions:
    root: str = "/"
    python: str = sys.executable
    timeout: float = 15.0  # the whole collection, every probe included
    command_timeout: float = commands.DEFAULT_TIMEOUT_S
    commands: Sequence[str] = tuple(commands.COMMANDS)
    frameworks: Sequence[str] = frameworks.FRAMEWORKS
    nvml: bool = True
    environ: Optional[Mapping[str, str]] = None  # default: os.environ
    progress: Optional[ProgressFn] = None


def _nvml(python: str, env: Mapping[str, str], timeout: float) -> Dict:
    res = runner.run((sys.executable, "-m", "gpudoctor.probes.nvml_child"), timeout=timeout, env=env,
                     max_bytes=1 << 20)
    if res.timed_out:
        return {"probe": {"timed_out": True, "duration_s": res.duration_s}}
    try:
        data = json.loads(res.stdout.strip().splitlines()[-1]) if res.stdout.strip() else {}
    except (json.JSONDecodeError, IndexError, RecursionError):
        data = {}
    data = data if isinstance(data, dict) else {}
    data["probe"] = {"returncode": res.returncode, "duration_s": res.duration_s, "timed_out": False,
                     "error": res.error, "stderr": res.stderr[-4000:]}
    return data


def _meta(opts: CollectOptions, env: Mapping[str, str]) -> Dict:
    return {
        "gpudoctor_version": gpudoctor.__version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "root": opts.root,
        "python": opts.python,
        "platform": {"system": platform.system(), "release": platform.release(),
                     "machine": platform.machine(), "python": platform.python_version()},
    }


class _Local:
    """Files, listings, links and /dev/kmsg, read in a daemon thread while the children run: a
    read that blocks in the kernel (a hung network mount) must not outlive the deadline, and a
    stuck thread must not keep the process from exiting (a pool worker would be joined at exit)."""

    def __init__(self, root: str, environ: Mapping[str, str], deadline: float):
        self.root, self.environ, self.deadline = root, environ, deadline
        self.files: Dict = {}
        self.rest: Dict = {}
        self.thread = threading.Thread(target=self._work, name="gpudoctor-files", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        try:
            files.collect_files(self.root, self.environ, self.files)
            self.rest["listings"] = files.collect_listings(self.root)
            self.rest["links"] = files.collect_links(self.root, self.environ, self.rest["listings"])
            self.files[kernel_log.KMSG] = kernel_log.read_kmsg(self.root, self.deadline)
        except BaseException as exc:  # re-raised in the caller's thread, as before
            self.rest["raised"] = exc

    def into(self, snap: Snapshot, note: ProgressFn) -> None:
        waits.join(self.thread, max(0.0, self.deadline - time.monotonic()))
        if "raised" in self.rest:
            raise self.rest["raised"]
        snap.files = dict(self.files)
        snap.listings = self.rest.get("listings", {})
        snap.links = self.rest.get("links", {})
        if self.thread.is_alive():
            note("files", "timeout")
            why = "not read: reading files did not finish within the deadline"
            for path in files.FIXED + tuple(files.extra_paths(self.environ)) + (kernel_log.KMSG,):
                snap.files.setdefault(os.path.normpath(path), FileRecord(os.path.normpath(path), error=why))


def collect(opts: Optional[CollectOptions] = None) -> Snapshot:
    """Record the live machine. Never raises for the machine's sake; never exceeds ``timeout``."""
    opts = opts or CollectOptions()
    environ = dict(os.environ if opts.environ is None else opts.environ)
    deadline = time.monotonic() + opts.timeout
    note = opts.progress or (lambda name, state: None)
    snap = Snapshot(meta=_meta(opts, environ), env=environment.collect_env(environ))

    def remaining(cap: float) -> float:
        return max(0.05, min(cap, deadline - time.monotonic() - 0.2))

    def job(name, fn):
        note(name, "start")
        value = fn()
        note(name, "done")
        return value

    tasks = {}
    pool = ThreadPoolExecutor(max_workers=len(opts.commands) + len(opts.frameworks) + 2)
    try:
        done: Dict[str, runner.CommandResult] = {}  # each series writes its results here as they come
        for keys in commands.series(list(opts.commands)):
            tasks[pool.submit(job, keys[0], lambda ks=keys: commands.run_series(
                ks, environ, lambda: remaining(opts.command_timeout), done))] = ("commands", keys)
        if opts.nvml:
            tasks[pool.submit(job, "nvml", lambda: _nvml(opts.python, environ,
                                                         remaining(opts.command_timeout)))] = ("nvml", "nvml")
        for name in opts.frameworks:
            tasks[pool.submit(job, name, lambda n=name: frameworks.probe(
                n, opts.python, environ, remaining(opts.timeout)))] = ("framework", name)
        local = _Local(opts.root, environ, deadline)
        waits.wait_all(tasks, max(0.1, deadline - time.monotonic() + 1.0))
        local.into(snap, note)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    for fut, (kind, key) in tasks.items():
        if not fut.done():
            note(key[0] if kind == "commands" else key, "timeout")
            value = None
        else:
            value = fut.result()
        if kind == "commands":
            for one in key:
                snap.commands[one] = done.get(one) or runner.CommandResult(
                    commands.COMMANDS[one], timed_out=True, duration_s=opts.timeout)
        elif kind == "nvml":
            snap.nvml = value or {"probe": {"timed_out": True}}
        else:
            snap.frameworks[key] = value or {"probe": {"timed_out": True, "python": opts.python}}
    _record_owners(snap)
    snap.meta["duration_s"] = round(opts.timeout - (deadline - time.monotonic()), 3)
    return snap


def _record_owners(snap: Snapshot) -> None:
    """Who runs each GPU process (nvidia-smi does not say), so a replay judges --allow-user like a live run."""
    for key in ("nvidia_smi_xml", "nvidia_smi"):
        res = snap.commands.get(key)
        pids = gpu_pids(res) if res is not None else None
        if pids:
            snap.meta["process_owners"] = {str(k): v for k, v in process_owners(pids).items()}
            return
