"""Writing is atomic and bounded: no partial file after SIGTERM, SIGINT or a full disk; hangs cost --timeout."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from gpudoctor.bundle.write import AtomicFile, BundleWriteError, write_archive
from tests.bundle_support import ROOT, make_root, make_stubs, members, planted_env, run_cli


class _FullDisk:
    """A file that takes ``room`` bytes and then fails like a full disk."""

    def __init__(self, raw, room: int):
        self.raw, self.room = raw, room

    def write(self, data):
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.raw.write(data)

    def flush(self):
        self.raw.flush()


def test_a_full_disk_leaves_no_file_behind(tmp_path):
    target = tmp_path / "out.tar.gz"
    out = AtomicFile(str(target))
    assert os.path.exists(out.temp) and os.stat(out.temp).st_mode & 0o777 == 0o600
    with pytest.raises(BundleWriteError) as exc:
        write_archive(out, "top", [("snapshot/big.out", os.urandom(200_000))], wrap=lambda f: _FullDisk(f, 4096))
    assert str(exc.value) == f"{target}: cannot write the bundle (No space left on device)"
    assert os.listdir(tmp_path) == []


def test_a_successful_write_replaces_atomically(tmp_path):
    target = tmp_path / "out.tar.gz"
    out = AtomicFile(str(target))
    size = write_archive(out, "top", [("a.txt", b"hello"), ("dir/b.txt", b"world")])
    assert os.listdir(tmp_path) == ["out.tar.gz"] and target.stat().st_size == size
    assert members(target) == {"a.txt": b"hello", "dir/b.txt": b"world"}


@pytest.fixture
def machine(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return {"root": make_root(tmp_path / "root"), "tmp": tmp_path, "scratch": scratch}


def _hanging(machine):
    bindir = make_stubs(machine["tmp"] / "hang-bin", hang_smi=True)
    return bindir, planted_env(bindir, machine["scratch"])


def _dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _all_dead(pids, within: float = 5.0) -> bool:
    """SIGKILL takes effect when the process is next scheduled: allow a moment on a busy machine."""
    deadline = time.monotonic() + within
    while not all(_dead(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_hung_nvidia_smi_costs_only_the_timeout(machine):
    bindir, env = _hanging(machine)
    out = machine["tmp"] / "out"
    out.mkdir()
    start = time.monotonic()
    res = run_cli("bundle", "--no-frameworks", "--timeout", "3", "--root", str(machine["root"]), "-o", str(out),
                  "--json", env=env, timeout=60)
    took = time.monotonic() - start
    assert res.returncode == 0, res.stderr
    assert took < 15, f"bundle took {took:.1f}s with --timeout 3"
    path = json.loads(res.stdout)["bundle"]
    assert os.listdir(out) == [os.path.basename(path)]
    content = members(out / os.path.basename(path))
    manifest = json.loads(content["manifest.json"])
    smi = {c["key"]: c for c in manifest["commands"]}["nvidia_smi_xml"]
    assert smi["timed_out"] is True and smi["argv"] == ["nvidia-smi", "-q", "-x"] and smi["returncode"] is None
    report = json.loads(content["report.json"])
    drv = [f for f in report["findings"] if f["check_id"] == "DRV001"][0]
    assert drv["status"] == "fail" and "did not answer within" in drv["title"]
    pids = [int(p) for p in (bindir / "smi.pids").read_text().split()]
    assert pids and _all_dead(pids)  # every nvidia-smi call was killed
    assert os.listdir(machine["scratch"]) == []


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_run_leaves_no_partial_bundle(machine, sig, code):
    bindir, env = _hanging(machine)
    out = machine["tmp"] / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "gpudoctor", "bundle", "--no-frameworks", "--timeout", "60",
                             "--root", str(machine["root"]), "-o", str(out / "b.tar.gz")],
                            cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            parts = [n for n in os.listdir(out) if n.endswith(".part")]
            if parts and (bindir / "smi.pids").exists():
                break
            time.sleep(0.05)
        assert parts, "the temporary file never appeared"
        time.sleep(0.2)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code
    assert f"gpudoctor: interrupted by {sig.name}; no bundle written" in stderr
    assert os.listdir(out) == []  # neither b.tar.gz nor the .part file
    pids = [int(p) for p in (bindir / "smi.pids").read_text().split()]
    assert pids and _all_dead(pids)  # the hung nvidia-smi did not outlive us


def test_an_unwritable_destination_fails_before_collecting(machine):
    _, env = _hanging(machine)
    start = time.monotonic()
    res = run_cli("bundle", "--timeout", "60", "-o", "/proc/gpudoctor-bundle.tar.gz", env=env, timeout=60)
    assert time.monotonic() - start < 10
    assert res.returncode == 2
    assert res.stderr.startswith("gpudoctor: /proc/gpudoctor-bundle.tar.gz: cannot write here (")
    assert res.stderr.count("\n") == 1


def test_an_existing_file_is_kept_unless_forced(machine):
    target = machine["tmp"] / "b.tar.gz"
    target.write_text("precious")
    res = run_cli("bundle", "-o", str(target), env=dict(os.environ))
    assert res.returncode == 2
    assert res.stderr == f"gpudoctor: {target}: exists; choose another -o or add --force to replace it\n"
    assert target.read_text() == "precious"
    res = run_cli("bundle", "-o", str(machine["tmp"] / "nowhere" / "b.tar.gz"), env=dict(os.environ))
    assert res.returncode == 2 and "does not exist" in res.stderr


def test_a_tiny_filesystem_that_fills_up(machine):
    if os.geteuid() != 0:
        pytest.skip("mounting a tiny tmpfs needs root")
    mnt = machine["tmp"] / "tiny"
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(mnt)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        bindir = make_stubs(machine["tmp"] / "bin")
        res = run_cli("bundle", "--no-frameworks", "--root", str(machine["root"]), "-o", str(mnt / "b.tar.gz"),
                      env=planted_env(bindir, machine["scratch"]))
        assert res.returncode == 2
        assert res.stderr == f"gpudoctor: {mnt / 'b.tar.gz'}: cannot write the bundle (No space left on device)\n"
        assert os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_part_files_of_a_killed_bundle_run_are_swept_by_the_next(machine):
    out = machine["tmp"] / "out"
    out.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    ns = os.stat("/proc/self/ns/pid").st_ino
    stale = out / f".b.tar.gz.{ns}-{dead.stdout.strip()}-1-abcd1234.part"
    stale.write_bytes(b"half a bundle")
    keep = out / ".notes.part"  # not one of ours: never touched
    keep.write_text("mine")
    bindir = make_stubs(machine["tmp"] / "bin")
    res = run_cli("bundle", "--no-frameworks", "--root", str(machine["root"]), "-o", str(out / "c.tar.gz"),
                  env=planted_env(bindir, machine["scratch"]))
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(out)) == [".notes.part", "c.tar.gz"]
    assert os.listdir(machine["scratch"]) == []  # the stage folder is gone too
