"""contrib/slurm and contrib/npd wrappers, with gpudoctor, sinfo and scontrol played by stubs.

The stubs keep one node's state in a file the way slurmctld would: `sinfo -o '%t|%E'` prints
it, `scontrol update ... state=drain reason=R` and `state=resume` change it, and every
scontrol call is logged. tests/test_slurm.py runs the same wrappers against a real Slurm.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROLOG = ROOT / "contrib" / "slurm" / "gpudoctor-prolog"
HEALTHCHECK = ROOT / "contrib" / "slurm" / "gpudoctor-healthcheck"
NPD = ROOT / "contrib" / "npd" / "gpudoctor-npd"
REASON = "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded"
TRACEBACK = 'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: x'

SINFO = """#!/bin/sh
[ -e "$STUBS/sinfo-fails" ] && { echo "sinfo: error: Unable to contact slurm controller" >&2; exit 1; }
cat "$STUBS/node"
"""
SCONTROL = """#!/bin/sh
echo "$*" >> "$STUBS/scontrol.log"
[ -e "$STUBS/scontrol-fails" ] && { echo "slurm_update error: Invalid node state specified" >&2; exit 1; }
for a in "$@"; do
  case $a in
    state=drain) state=drain ;;
    state=resume) printf 'idle|none\\n' > "$STUBS/node"; exit 0 ;;
    reason=*) reason=${a#reason=} ;;
  esac
done
printf '%s|%s\\n' "$state" "$reason" > "$STUBS/node"
"""


class Node:
    """One node's Slurm state in files, and runs of the wrappers against it."""

    def __init__(self, tmp: Path):
        self.dir = tmp
        for name, text in (("sinfo", SINFO), ("scontrol", SCONTROL)):
            (tmp / name).write_text(text)
            (tmp / name).chmod(0o755)
        self.set("idle", "none")

    def set(self, state: str, reason: str):
        (self.dir / "node").write_text(f"{state}|{reason}\n")

    @property
    def state(self):
        return tuple((self.dir / "node").read_text().rstrip("\n").split("|", 1))

    @property
    def calls(self):
        log = self.dir / "scontrol.log"
        return log.read_text().splitlines() if log.exists() else []

    def run(self, wrapper: Path, rc: int, stderr: str = "", stdout: str = ""):
        fake = self.dir / "gpudoctor"
        fake.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{stderr}\nEOF\ncat <<'EOF'\n{stdout}\nEOF\nexit {rc}\n")
        fake.chmod(0o755)
        env = {"PATH": os.environ["PATH"], "STUBS": str(self.dir), "GPUDOCTOR": str(fake),
               "GPUDOCTOR_SINFO": str(self.dir / "sinfo"), "GPUDOCTOR_SCONTROL": str(self.dir / "scontrol"),
               "GPUDOCTOR_LOGGER": "true", "SLURMD_NODENAME": "gpu017", "GPUDOCTOR_HOOK_CONFIG": "/dev/null"}
        return subprocess.run([str(wrapper)], capture_output=True, text=True, env=env, timeout=30)


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


# --- the Prolog ---------------------------------------------------------------------------------

def test_prolog_healthy_runs_the_job_untouched(node):
    res = node.run(PROLOG, 0)
    assert (res.returncode, node.calls, res.stderr) == (0, [], "")


def test_prolog_problem_drains_with_gpudoctors_reason_and_fails_the_job(node):
    node.set("alloc", "none")
    res = node.run(PROLOG, 1, "some warning first\n" + REASON)
    assert res.returncode == 1
    assert node.calls == [f"update nodename=gpu017 state=drain reason={REASON}"]
    assert node.state == ("drain", REASON)
    assert res.stderr == f"gpudoctor-prolog: {REASON} (drained gpu017)\n"


@pytest.mark.parametrize("rc, stderr", [
    (1, TRACEBACK),                                      # a broken Python install
    (1, ""),                                             # exit 1 and not a word
    (1, "gpudoctor is not gpudoctor: "),                 # the prefix must start the line
    (2, "gpudoctor: internal error, not judging this node: hook failed: KeyError: x"),
    (3, "gpudoctor: internal error: boom"),
    (127, "sh: 1: gpudoctor: not found"),
])
def test_prolog_never_drains_on_anything_but_gpudoctors_problem_verdict(node, rc, stderr):
    node.set("alloc", "none")
    res = node.run(PROLOG, rc, stderr)
    assert (res.returncode, node.calls, node.state) == (0, [], ("alloc", "none"))
    last = stderr.splitlines()[-1] if stderr else "gpudoctor printed nothing"
    assert res.stderr == f"gpudoctor-prolog: {last} (exit {rc}: unknown, not changing gpu017)\n"


def test_prolog_keeps_an_administrators_reason(node):
    node.set("drng", "bad DIMM, ticket 4711")
    res = node.run(PROLOG, 1, REASON)
    assert (res.returncode, node.calls, node.state) == (1, [], ("drng", "bad DIMM, ticket 4711"))
    assert "already drng for another reason, kept: bad DIMM, ticket 4711" in res.stderr


# --- HealthCheckProgram -------------------------------------------------------------------------

def test_healthcheck_drains_an_idle_node_and_exits_0(node):
    res = node.run(HEALTHCHECK, 1, REASON)
    assert (res.returncode, node.state) == (0, ("drain", REASON))
    assert res.stderr == f"gpudoctor-healthcheck: {REASON} (drained gpu017)\n"


def test_healthcheck_never_overwrites_a_reason_it_did_not_set(node):
    node.set("drain", "Kill task failed")
    res = node.run(HEALTHCHECK, 1, REASON)
    assert (res.returncode, node.calls, node.state) == (0, [], ("drain", "Kill task failed"))


def test_healthcheck_keeps_a_foreign_reason_on_a_node_it_drains(node):
    node.set("idle", "waiting for firmware update")  # a reason on a node that is not drained (NHC keeps it too)
    res = node.run(HEALTHCHECK, 1, REASON)
    assert node.calls == ["update nodename=gpu017 state=drain reason=waiting for firmware update"]
    assert res.returncode == 0 and node.state == ("drain", "waiting for firmware update")


def test_healthcheck_leaves_a_node_drained_without_a_reason(node):
    node.set("drain", "none")
    assert node.run(HEALTHCHECK, 1, REASON).returncode == 0
    assert node.calls == []


def test_healthcheck_updates_its_own_older_reason_but_not_the_same_one(node):
    node.set("drain", "gpudoctor: GPU 3 at 91C > 85C")
    node.run(HEALTHCHECK, 1, REASON)
    node.run(HEALTHCHECK, 1, REASON)
    assert node.calls == [f"update nodename=gpu017 state=drain reason={REASON}"]


@pytest.mark.parametrize("state", ["drain", "drng", "drain*"])
def test_healthcheck_resumes_a_node_it_drained_once_healthy(node, state):
    node.set(state, REASON)
    res = node.run(HEALTHCHECK, 0)
    assert (res.returncode, node.calls, node.state) == (0, ["update nodename=gpu017 state=resume"], ("idle", "none"))
    assert res.stderr == f"gpudoctor-healthcheck: resumed gpu017: healthy again (it was drained with: {REASON})\n"


@pytest.mark.parametrize("state, reason", [("drain", "bad DIMM"), ("drain", "none"), ("down", REASON),
                                           ("idle", "none"), ("alloc", "none")])
def test_healthcheck_resumes_nothing_else(node, state, reason):
    node.set(state, reason)
    res = node.run(HEALTHCHECK, 0)
    assert (res.returncode, node.calls, res.stderr) == (0, [], "")


def test_healthcheck_does_not_resume_on_an_unknown_verdict(node):
    node.set("drain", REASON)
    res = node.run(HEALTHCHECK, 2, "gpudoctor: cannot tell: GPU 0: temperature not reported")
    assert (res.returncode, node.calls, node.state) == (0, [], ("drain", REASON))


def test_healthcheck_reports_a_failing_scontrol(node):
    (node.dir / "scontrol-fails").touch()
    res = node.run(HEALTHCHECK, 1, REASON)
    assert res.returncode == 1
    assert res.stderr == (f"gpudoctor-healthcheck: scontrol update nodename=gpu017 state=drain reason={REASON} "
                          "failed (exit 1: slurm_update error: Invalid node state specified)\n")
    node.set("drain", REASON)
    res = node.run(HEALTHCHECK, 0)
    assert res.returncode == 1 and "state=resume failed (exit 1:" in res.stderr


def test_healthcheck_reports_a_failing_sinfo_and_changes_nothing(node):
    (node.dir / "sinfo-fails").touch()
    res = node.run(HEALTHCHECK, 1, REASON)
    assert (res.returncode, node.calls) == (1, [])
    assert res.stderr == ("gpudoctor-healthcheck: cannot read the state of gpu017 (sinfo exit 1: sinfo: error: "
                          "Unable to contact slurm controller); not changing it\n")


# --- node-problem-detector ----------------------------------------------------------------------

@pytest.mark.parametrize("rc, stdout, code, message", [
    (0, "gpudoctor: ok", 0, "gpudoctor: ok"),
    (1, "gpudoctor: 7 of 8 GPUs visible", 1, "gpudoctor: 7 of 8 GPUs visible"),
    (2, "gpudoctor: cannot tell: driver version unknown", 2, "gpudoctor: cannot tell: driver version unknown"),
    (1, "", 2, "gpudoctor: unknown (hook exited 1 without a verdict)"),
    (1, "RuntimeError: x", 2, "gpudoctor: unknown (hook exited 1 without a verdict)"),
    (3, "", 2, "gpudoctor: unknown (hook exited 3 without a verdict)"),
    (1, "gpudoctor: " + "x" * 200, 1, ("gpudoctor: " + "x" * 200)[:80]),
])
def test_npd_plugin_marks_a_problem_only_on_gpudoctors_verdict(node, rc, stdout, code, message):
    res = node.run(NPD, rc, TRACEBACK, stdout)
    assert (res.returncode, res.stdout) == (code, message + "\n")
