"""A real single-node Slurm cluster on loopback with gpudoctor as its Prolog and HealthCheckProgram.

munged, slurmctld and slurmd run from a temporary directory (own munge socket, own ports,
own state). The Prolog is contrib/slurm/gpudoctor-prolog, the HealthCheckProgram (every
2 s) contrib/slurm/gpudoctor-healthcheck; each judges a recorded snapshot replayed through
GPUDOCTOR_SNAPSHOT, through a link of its own. A healthy machine runs the job, a machine
whose driver is not loaded gets drained with gpudoctor's reason and the job never starts;
the health check resumes a node gpudoctor drained once it is healthy again, drains it
again when it breaks, and keeps an administrator's drain reason whatever it finds. Every
process started here is stopped at the end. Needs root and Debian's slurmctld, slurmd,
slurm-client and munge packages (CI installs them).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "fixtures" / "scenarios"
HEALTHY = SCENARIOS / "core-healthy-workstation" / "snapshot"   # RTX 4090, driver 535.86.05
BROKEN = SCENARIOS / "core-driver-not-loaded" / "snapshot"      # nvidia-smi: couldn't communicate
SBIN = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TOOLS = ("munged", "slurmctld", "slurmd", "srun", "sinfo", "scontrol")


def _which(name):
    return shutil.which(name, path=f"{os.environ.get('PATH', '')}:{SBIN}")


MISSING = [t for t in TOOLS if _which(t) is None]
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"Slurm/munge not installed (missing {', '.join(MISSING)}); "
                                             "apt-get install slurmctld slurmd slurm-client munge"),
    pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() != 0, reason="slurmd must run as root"),
    pytest.mark.timeout(240),
]


def _free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _wait(predicate, timeout, what, logs=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    tails = "\n".join(f"--- {p}:\n{_tail(p)}" for p in logs)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{tails}")


def _tail(path, n=40):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError as exc:
        return f"({exc})"


class Cluster:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.node = socket.gethostname().split(".")[0]
        self.procs = []
        self.env = {**os.environ, "SLURM_CONF": str(tmp / "slurm.conf"), "PATH": f"{os.environ['PATH']}:{SBIN}"}
        self.current = tmp / "current-snapshot"   # the Prolog judges whatever this link points at
        self.hc_current = tmp / "hc-snapshot"     # the health check's; missing at first: "unknown"
        self.prom = tmp / "gpudoctor.prom"
        self.prolog_log = tmp / "prolog.log"
        self.hc_log = tmp / "healthcheck.log"
        self.logs = [tmp / "slurmctld.log", tmp / "slurmd.log", tmp / "munged.log", self.prolog_log, self.hc_log]

    # --- set-up ---------------------------------------------------------------------
    def start(self):
        self._munge()
        ctld_port, slurmd_port = _free_ports(2)
        (self.tmp / "state").mkdir()
        (self.tmp / "spool").mkdir()
        self._write_prolog()
        self._write_healthcheck()
        (self.tmp / "hook.toml").write_text(
            f'[hook]\ngpus = 1\nmin_driver = "525.60.13"\nmax_temp = 85\ntimeout = 8\n'
            # The replayed recordings predate the kernel-log probe: judge them without the Xid checks.
            f'drain_xid_actions = "none"\nprometheus = "{self.prom}"\n')
        (self.tmp / "slurm.conf").write_text(SLURM_CONF.format(
            tmp=self.tmp, node=self.node, cpus=os.cpu_count() or 1, ctld_port=ctld_port,
            slurmd_port=slurmd_port))
        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-f", str(self.tmp / "slurm.conf")])
        self._spawn("slurmd", [_which("slurmd"), "-D", "-f", str(self.tmp / "slurm.conf"), "-N", self.node])
        _wait(lambda: self.node_state() in ("idle",), 60, f"node {self.node} to become idle", self.logs)

    def _munge(self):
        mdir = self.tmp / "munge"
        mdir.mkdir()
        key = mdir / "munge.key"
        if Path("/etc/munge/munge.key").is_file():
            shutil.copyfile("/etc/munge/munge.key", key)
        else:
            key.write_bytes(os.urandom(1024))
        try:
            user = pwd.getpwnam("munge")
        except KeyError:
            user = None
        key.chmod(0o600)
        if user is not None:
            for p in (mdir, key):
                os.chown(p, user.pw_uid, user.pw_gid)
        self.munge_socket = mdir / "munge.sock"
        argv = [_which("munged"), "-F", f"--socket={self.munge_socket}", f"--key-file={key}",
                f"--log-file={self.tmp / 'munged.log'}", f"--pid-file={mdir / 'munged.pid'}",
                f"--seed-file={mdir / 'munged.seed'}"]
        if user is None:
            argv.append("--force")
        kw = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []} if user is not None else {}
        (self.tmp / "munged.log").touch()
        if user is not None:
            os.chown(self.tmp / "munged.log", user.pw_uid, user.pw_gid)
        self._spawn("munged", argv, **kw)
        _wait(self.munge_socket.exists, 20, "munged's socket", self.logs)

    def _write_prolog(self):
        gpudoctor = f"{sys.executable} -m gpudoctor"
        script = self.tmp / "prolog.sh"
        script.write_text(
            "#!/bin/sh\n"
            "# The test's Prolog: the shipped wrapper, judging a replayed snapshot.\n"
            f"GPUDOCTOR='{gpudoctor}'\n"
            f"GPUDOCTOR_SNAPSHOT='{self.current}'\n"
            f"GPUDOCTOR_HOOK_CONFIG='{self.tmp / 'hook.toml'}'\n"
            f"XDG_CACHE_HOME='{self.tmp / 'cache'}'\n"
            "export GPUDOCTOR GPUDOCTOR_SNAPSHOT GPUDOCTOR_HOOK_CONFIG XDG_CACHE_HOME\n"
            f"'{ROOT / 'contrib' / 'slurm' / 'gpudoctor-prolog'}'\n"
            "rc=$?\n"
            f"echo \"job=$SLURM_JOB_ID rc=$rc\" >> '{self.prolog_log}'\n"
            "exit $rc\n")
        script.chmod(0o755)
        self.prolog_log.touch()

    def _write_healthcheck(self):
        script = self.tmp / "healthcheck.sh"
        script.write_text(
            "#!/bin/sh\n"
            "# The test's HealthCheckProgram: the shipped wrapper, judging its own replayed snapshot.\n"
            f"GPUDOCTOR='{sys.executable} -m gpudoctor'\n"
            f"GPUDOCTOR_SNAPSHOT='{self.hc_current}'\n"
            f"GPUDOCTOR_HOOK_CONFIG='{self.tmp / 'hc.toml'}'\n"
            f"SLURM_CONF='{self.tmp / 'slurm.conf'}'\n"
            f"XDG_CACHE_HOME='{self.tmp / 'cache'}'\n"
            "export GPUDOCTOR GPUDOCTOR_SNAPSHOT GPUDOCTOR_HOOK_CONFIG SLURM_CONF XDG_CACHE_HOME\n"
            f"'{ROOT / 'contrib' / 'slurm' / 'gpudoctor-healthcheck'}' 2>> '{self.hc_log}'\n"
            "rc=$?\n"
            f"echo \"healthcheck rc=$rc\" >> '{self.hc_log}'\n"
            "exit $rc\n")
        script.chmod(0o755)
        (self.tmp / "hc.toml").write_text('[hook]\ngpus = 1\nmin_driver = "525.60.13"\ntimeout = 8\n')
        self.hc_log.touch()

    def _spawn(self, name, argv, **kw):
        out = open(self.tmp / f"{name}.out", "wb")
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=self.env, cwd=str(self.tmp), start_new_session=True, **kw)
        out.close()
        self.procs.append((name, proc))
        self.logs.append(self.tmp / f"{name}.out")
        return proc

    # --- use ------------------------------------------------------------------------
    def run(self, *argv, timeout=60):
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env, cwd=str(self.tmp),
                              timeout=timeout)

    def node_state(self):
        res = self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%T", timeout=15)
        return res.stdout.strip().rstrip("*~#!%$@^-").lower() if res.returncode == 0 else ""

    def reasons(self):
        res = self.run("sinfo", "-R", "-h", "-o", "%N|%E", timeout=15)
        return dict(line.split("|", 1) for line in res.stdout.splitlines() if "|" in line)

    def judge(self, snapshot: Path, link: Optional[Path] = None):
        link = link or self.current
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(snapshot)

    def health_checks(self) -> int:
        return self.hc_log.read_text().count("healthcheck rc=")

    def after_health_checks(self, n: int = 2):
        """Wait until the HealthCheckProgram has run ``n`` more times from now."""
        start = self.health_checks()
        _wait(lambda: self.health_checks() >= start + n, 30, f"{n} more health checks", self.logs)

    def reason(self) -> str:
        return self.reasons().get(self.node, "")

    # --- tear-down ------------------------------------------------------------------
    def stop(self):
        # Jobs first, so that slurmd's job step daemons (slurmstepd) end with them.
        if any(name == "slurmctld" and proc.poll() is None for name, proc in self.procs):
            try:
                self.run("scancel", "--full", "--partition=gpu", timeout=15)
                _wait(lambda: not self.run("squeue", "-h", timeout=15).stdout.strip(), 20, "jobs to end")
            except (AssertionError, subprocess.TimeoutExpired, OSError):
                pass
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    proc.terminate()
        for name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=5)


SLURM_CONF = """\
# A one-node cluster on loopback for gpudoctor's Prolog and HealthCheckProgram test.
ClusterName=gpudoctortest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={tmp}/munge/munge.sock
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
SlurmctldLogFile={tmp}/slurmctld.log
SlurmdLogFile={tmp}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
Prolog={tmp}/prolog.sh
PrologFlags=Alloc
PrologEpilogTimeout=60
HealthCheckProgram={tmp}/healthcheck.sh
HealthCheckInterval=2
HealthCheckNodeState=ANY
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=gpu Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture(scope="module")
def cluster():
    for snap in (HEALTHY, BROKEN):
        if not (snap / "snapshot.json").is_file():
            pytest.skip(f"scenario {snap.parent.name} is not in this checkout")
    tmp = Path(tempfile.mkdtemp(prefix="gpudoctor-slurm-", dir="/tmp"))
    tmp.chmod(0o755)  # munged runs as the munge user and must reach its directory
    c = Cluster(tmp)
    try:
        c.start()
        yield c
    finally:
        c.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_healthy_node_runs_the_job(cluster):
    cluster.judge(HEALTHY)
    res = cluster.run("srun", "-N1", "-w", cluster.node, "-t", "1", "/bin/echo", "gpudoctor-job-ran")
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}\n{_tail(cluster.logs[1])}"
    assert res.stdout.strip() == "gpudoctor-job-ran"
    assert "rc=0" in cluster.prolog_log.read_text()  # the Prolog ran gpudoctor, which passed the node
    prom = cluster.prom.read_text()
    assert "gpudoctor_hook_status 0\n" in prom
    assert 'name="NVIDIA GeForce RTX 4090"' in prom and 'driver="535.86.05"' in prom
    assert cluster.node_state() in ("idle", "mixed", "allocated", "completing")


def test_failing_node_is_drained_with_gpudoctors_reason_and_the_job_never_starts(cluster):
    cluster.judge(BROKEN)
    marker = cluster.tmp / "job-started"
    res = cluster.run("srun", "-N1", "-w", cluster.node, "-t", "1", "/usr/bin/touch", str(marker))
    assert res.returncode != 0, res.stdout + res.stderr
    _wait(lambda: cluster.node in cluster.reasons(), 30, "the node to show a drain reason", cluster.logs)
    assert cluster.reasons()[cluster.node] == "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded"
    assert cluster.node_state() in ("drained", "draining")
    assert not marker.exists()
    assert "rc=1" in cluster.prolog_log.read_text()
    assert "gpudoctor_hook_status 1\n" in cluster.prom.read_text()


# --- HealthCheckProgram, beside the Prolog (the node is drained by the Prolog test above) -------------

def test_health_check_resumes_a_node_gpudoctor_drained_once_it_is_healthy(cluster):
    if not cluster.reason().startswith("gpudoctor: "):  # run alone: let the health check drain it first
        cluster.judge(BROKEN, cluster.hc_current)
        _wait(lambda: cluster.reason().startswith("gpudoctor: "), 30, "gpudoctor's drain", cluster.logs)
    cluster.judge(HEALTHY, cluster.hc_current)
    _wait(lambda: cluster.node_state() == "idle", 30, "the health check to resume the node", cluster.logs)
    assert cluster.reason() == ""
    assert "resumed " in cluster.hc_log.read_text()
    cluster.judge(HEALTHY)  # the Prolog's machine is repaired too
    res = cluster.run("srun", "-N1", "-w", cluster.node, "-t", "1", "/bin/echo", "ran-after-resume")
    assert res.returncode == 0 and res.stdout.strip() == "ran-after-resume", res.stderr


def test_health_check_drains_with_gpudoctors_reason(cluster):
    cluster.judge(BROKEN, cluster.hc_current)
    _wait(lambda: cluster.reason() != "", 30, "the health check to drain the node", cluster.logs)
    assert cluster.reason() == "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded"
    assert cluster.node_state() in ("drained", "draining")
    cluster.after_health_checks(2)  # found broken again: the reason stays, nothing is re-set
    assert cluster.reason() == "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded"
    cluster.judge(HEALTHY, cluster.hc_current)
    _wait(lambda: cluster.node_state() == "idle", 30, "the node to be resumed", cluster.logs)


def test_health_check_keeps_an_administrators_drain_reason(cluster):
    admin = "admin: bad DIMM in slot 3, ticket 4711"
    cluster.judge(HEALTHY, cluster.hc_current)
    res = cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=drain", f"reason={admin}")
    assert res.returncode == 0, res.stderr
    try:
        cluster.after_health_checks(2)  # healthy: still not resumed, it was not gpudoctor's drain
        assert (cluster.node_state(), cluster.reason()) == ("drained", admin)
        cluster.judge(BROKEN, cluster.hc_current)
        cluster.after_health_checks(2)  # broken: the administrator's reason is kept
        assert (cluster.node_state(), cluster.reason()) == ("drained", admin)
        assert f"already drain for another reason, kept: {admin}" in cluster.hc_log.read_text()
    finally:
        cluster.judge(HEALTHY, cluster.hc_current)
        cluster.run("scontrol", "update", f"nodename={cluster.node}", "state=resume")
