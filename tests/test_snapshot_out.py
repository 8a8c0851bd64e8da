"""`snapshot --out` appears whole or not at all: Ctrl-C, SIGTERM, SIGKILL and a full disk leave no partial folder.

The snapshot is staged in a hidden ``.part`` folder beside --out and renamed; what a
SIGKILL leaves behind is removed by the next run, which is never blocked by it.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudoctor.snapshot_folder import load
from tests.bundle_support import ROOT, make_stubs, planted_env, run_cli


@pytest.fixture
def machine(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return {"tmp": tmp_path, "scratch": scratch}


def _start(machine, out, hang=True, limit_bytes=None):
    bindir = make_stubs(machine["tmp"] / ("hang-bin" if hang else "bin"), hang_smi=hang)
    env = planted_env(bindir, machine["scratch"])

    def limit():  # a file-size limit: writes past it fail with EFBIG, like a disk that fills up
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.Popen([sys.executable, "-m", "gpudoctor", "snapshot", "--no-frameworks", "--timeout", "60",
                             "--out", str(out)], cwd=str(ROOT), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=limit), bindir


def _wait_for_stage(parent, bindir, proc):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        parts = [n for n in os.listdir(parent) if n.endswith(".part")]
        if parts and (bindir / "smi.pids").exists():
            return parts
        time.sleep(0.05)
    raise AssertionError("the staging folder never appeared")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_run_leaves_nothing(machine, sig, code):
    parent = machine["tmp"] / "snaps"
    parent.mkdir()
    proc, bindir = _start(machine, parent / "node17")
    try:
        parts = _wait_for_stage(parent, bindir, proc)
        assert parts[0].startswith(".node17.") and parts[0].endswith(".part")
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code
    assert f"gpudoctor: interrupted by {sig.name}; no snapshot written" in stderr
    assert os.listdir(parent) == []


def test_sigkill_leftovers_never_block_the_next_run_and_are_swept(machine):
    parent = machine["tmp"] / "snaps"
    parent.mkdir()
    proc, bindir = _start(machine, parent / "node17")
    try:
        parts = _wait_for_stage(parent, bindir, proc)
        proc.kill()
        proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_orphans(bindir)
    assert os.listdir(parent) == parts  # SIGKILL skips every cleanup
    again, _ = _start(machine, parent / "node17", hang=False)
    stdout, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    assert os.listdir(parent) == ["node17"]  # the dead run's .part is gone
    assert load(str(parent / "node17")).command("nvidia_smi_xml").returncode == 0


def _kill_orphans(bindir):
    """SIGKILL gives gpudoctor no chance to stop the hung nvidia-smi stubs it started (each in a session
    of its own): the test stops them, so that a suite run leaves no process behind. The pid file alone is
    not enough: a stub started just before the kill may not have written its pid yet (two leaked so, as
    `sleep 100000` orphans). Every process whose environment holds the stubs' folder (gpudoctor is dead, so
    only what it started) is killed, and again until none is left."""
    pidfile = bindir / "smi.pids"
    marker = str(bindir).encode()
    deadline = time.monotonic() + 5
    while True:
        pids = {int(p) for p in (pidfile.read_text().split() if pidfile.exists() else ())}
        for entry in (os.listdir("/proc") if os.path.isdir("/proc") else ()):   # elsewhere: the pid file alone
            try:
                if entry.isdigit() and marker in Path("/proc", entry, "environ").read_bytes():
                    pids.add(int(entry))
            except OSError:  # gone, or not ours to read
                pass
        alive = [pid for pid in pids if _running(pid)]
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not alive or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan waits as one until its new parent reaps it)."""
    try:
        stat = Path("/proc", str(pid), "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


@pytest.mark.parametrize("existing", [False, True])
def test_a_full_disk_leaves_no_partial_folder(machine, existing):
    parent = machine["tmp"] / "snaps"
    parent.mkdir()
    if existing:
        (parent / "node17").mkdir()  # an empty --out is allowed, and must stay as it was
    proc, _ = _start(machine, parent / "node17", hang=False, limit_bytes=16 * 1024)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert stderr == f"gpudoctor: {parent / 'node17'}: cannot write the snapshot (File too large)\n"
    assert os.listdir(parent) == (["node17"] if existing else [])
    assert not existing or os.listdir(parent / "node17") == []


def test_a_good_run_renames_into_an_empty_folder(machine):
    out = machine["tmp"] / "node17"
    out.mkdir()
    bindir = make_stubs(machine["tmp"] / "bin")
    res = run_cli("snapshot", "--no-frameworks", "--out", str(out), "--json",
                  env=planted_env(bindir, machine["scratch"]))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["snapshot"] == str(out)
    assert sorted(os.listdir(machine["tmp"])) == ["bin", "node17", "scratch"]
    assert (out / "snapshot.json").is_file() and os.stat(out).st_mode & 0o777 == 0o777 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("out, why", [("/proc/gpudoctor-snap", "No such file or directory"),
                                      ("/dev/null/snap", "Not a directory")])
def test_an_unwritable_destination_fails_before_collecting(out, why):
    start = time.monotonic()
    res = run_cli("snapshot", "--out", out, "--timeout", "60")
    assert time.monotonic() - start < 20
    assert res.returncode == 2 and res.stderr == f"gpudoctor: {out}: cannot write the snapshot here ({why})\n"
