"""Live file reads never block and never hold more than a cap (issue 15): FIFOs, devices,
huge files and reads that hang are recorded as data, within the collection's deadline."""

from __future__ import annotations

import os
import time

import pytest

from gpudoctor import liveread
from gpudoctor.probes import files
from gpudoctor.probes.collect import CollectOptions, collect
from gpudoctor.snapshot import MAX_FILE_BYTES


def _fifo_home(tmp_path):
    home = tmp_path / "cuda"
    home.mkdir()
    os.mkfifo(home / "version.json")
    return home


def test_a_fifo_a_device_a_directory_and_a_huge_file_are_refused_by_name(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    with open(tmp_path / "huge", "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)  # sparse: costs nothing on disk
    (tmp_path / "fits").write_bytes(b"x" * MAX_FILE_BYTES)
    start = time.monotonic()
    got = {name: files.read_file(str(tmp_path), name) for name in ("fifo", "dir", "huge", "fits", "nope")}
    got["zero"] = files.read_file("/", "/dev/zero")
    assert time.monotonic() - start < 5
    assert {k: r.error for k, r in got.items()} == {
        "fifo": "not a regular file", "dir": "is a directory", "huge": f"over {MAX_FILE_BYTES} bytes",
        "fits": None, "nope": "missing", "zero": "not a regular file"}
    assert len(got["fits"].content) == MAX_FILE_BYTES


def test_proc_files_of_size_zero_are_read_to_the_end():
    data = liveread.read_bytes("/proc/self/status", 1 << 20)
    assert b"Name:" in data and b"Pid:" in data


def test_reading_stops_at_the_cap_even_when_the_file_grows(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"a" * 100)
    with pytest.raises(liveread.Refused, match="over 99 bytes"):
        liveread.read_bytes(str(path), 99)
    assert liveread.read_bytes(str(path), 100) == b"a" * 100


def test_collect_with_a_fifo_as_cuda_home_version_json_finishes_and_says_why(tmp_path):
    home = _fifo_home(tmp_path)
    start = time.monotonic()
    snap = collect(CollectOptions(timeout=10, commands=(), frameworks=(), nvml=False,
                                  environ={"CUDA_HOME": str(home)}))
    assert time.monotonic() - start < 5
    assert snap.file(f"{home}/version.json").error == "not a regular file"


def test_a_read_that_hangs_is_cut_at_the_deadline_and_the_rest_recorded(monkeypatch, tmp_path):
    real = files.read_file

    def slow(root, path):
        if path == "/proc/cmdline":
            time.sleep(30)  # a read blocked in the kernel (hung NFS) cannot be interrupted
        return real(root, path)

    monkeypatch.setattr(files, "read_file", slow)
    start = time.monotonic()
    snap = collect(CollectOptions(root=str(tmp_path), timeout=2, commands=(), frameworks=(), nvml=False,
                                  environ={}))
    assert time.monotonic() - start < 4
    assert snap.file("/proc/modules").error == "missing"  # read before the one that hung
    assert snap.file("/proc/cmdline").error == "not read: reading files did not finish within the deadline"
