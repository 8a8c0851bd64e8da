"""A snapshot folder is untrusted input: nothing outside it is read, every read is capped.

Each test is an attack the hostile-input campaign (issue 15) ran: links to host files and
folders, huge sparse files, FIFOs, deep or wide trees, odd names and damaged JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import tracemalloc

import pytest

from gpudoctor.runner import MAX_OUTPUT_BYTES
from gpudoctor.snapshot import MAX_FILE_BYTES, SnapshotError
from gpudoctor.snapshot_folder import load
from gpudoctor.snapshot_folder import MAX_JSON_BYTES, load_folder
from tests.conftest import invoke, run_gpudoctor
from tests.scenarios import SCENARIOS

MARKER = "host-secret-marker-7f3a9c"
GB2 = 2 * 1024 ** 3


@pytest.fixture
def snap(tmp_path):
    target = tmp_path / "snap"
    shutil.copytree(SCENARIOS / "core-healthy-workstation" / "snapshot", target)
    return target


@pytest.fixture
def host_file(tmp_path):
    """A file outside the snapshot folder standing in for /etc/shadow."""
    outside = tmp_path / "host"
    outside.mkdir()
    (outside / "os-release").write_text(f'PRETTY_NAME="{MARKER}"\n')
    return outside / "os-release"


def test_a_link_to_a_host_file_is_recorded_as_refused_not_read(snap, host_file):
    target = snap / "files" / "etc" / "os-release"
    target.unlink()
    target.symlink_to(host_file)
    loaded = load(str(snap))
    assert loaded.file("/etc/os-release").error == "symbolic link, not followed"
    assert loaded.text("/etc/os-release") is None
    res = invoke("check", "--snapshot", str(snap), "--json")
    assert res.returncode in (0, 1), res.stderr
    assert MARKER not in res.stdout + res.stderr


def test_a_link_inside_the_folder_is_not_followed_either(snap):
    (snap / "files" / "etc" / "copy.conf").symlink_to("os-release")
    assert load(str(snap)).file("/etc/copy.conf").error == "symbolic link, not followed"


@pytest.mark.parametrize("link, key", [("files", "/"), ("files/etc", "/etc"), ("files/proc", "/proc")])
def test_a_linked_folder_is_not_walked(snap, host_file, link, key):
    shutil.rmtree(snap / link)
    (snap / link).symlink_to(host_file.parent, target_is_directory=True)
    loaded = load(str(snap))
    assert loaded.file(key).error == "symbolic link, not followed"
    assert not any(MARKER in (r.content or "") for r in loaded.files.values())
    assert loaded.text("/etc/os-release") is None or "Ubuntu" in loaded.text("/etc/os-release")


def test_links_in_place_of_snapshot_json_or_a_command_output_are_refused(snap, host_file):
    out = snap / "commands" / "uname_r.out"
    out.unlink()
    out.symlink_to(host_file)
    with pytest.raises(SnapshotError) as exc:
        load(str(snap))
    assert str(exc.value) == f"{out}: not a regular file"
    meta = snap / "snapshot.json"
    shutil.move(meta, snap.parent / "real.json")
    meta.symlink_to(snap.parent / "real.json")
    with pytest.raises(SnapshotError) as exc:
        load(str(snap))
    assert str(exc.value) == f"{meta}: unreadable snapshot.json (symbolic link, not followed)"


def test_a_linked_snapshot_subfolder_is_not_followed(tmp_path, snap):
    holder = tmp_path / "fixture"
    holder.mkdir()
    (holder / "snapshot").symlink_to(snap, target_is_directory=True)
    with pytest.raises(SnapshotError) as exc:
        load(str(holder))
    assert str(exc.value) == f"{holder}: not a snapshot folder (no snapshot.json inside)"


def _sparse(path, size=GB2):
    with open(path, "wb") as fh:
        fh.truncate(size)


def test_huge_sparse_files_are_cut_where_the_live_probes_cut(snap):
    _sparse(snap / "files" / "etc" / "huge.conf")
    _sparse(snap / "commands" / "uname_r.out")
    tracemalloc.start()
    loaded = load(str(snap))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(loaded.text("/etc/huge.conf")) == MAX_FILE_BYTES
    uname = loaded.command("uname_r")
    assert len(uname.stdout) == MAX_OUTPUT_BYTES and uname.truncated is True
    assert peak < 6 * MAX_OUTPUT_BYTES  # a few copies of the capped reads, never the 2 GB


def test_a_huge_snapshot_json_is_refused_unread(snap):
    meta = snap / "snapshot.json"
    _sparse(meta, MAX_JSON_BYTES + 1)
    with pytest.raises(SnapshotError) as exc:
        load(str(snap))
    assert str(exc.value) == f"{meta}: over {MAX_JSON_BYTES} bytes; not a snapshot.json gpudoctor wrote"


def test_too_many_entries_are_refused_and_too_deep_folders_recorded(snap):
    many = snap / "files" / "many"
    many.mkdir()
    for i in range(30):
        (many / f"f{i}").write_text("x")
    with pytest.raises(SnapshotError) as exc:
        load_folder(str(snap), max_entries=25)
    assert str(exc.value) == f"{snap}/files: refusing the snapshot folder (over 25 entries)"
    deep = snap / "files" / "deep"
    deep.mkdir()
    (deep / "a" / "b" / "c").mkdir(parents=True)
    loaded = load_folder(str(snap), max_depth=3)
    assert loaded.file("/deep/a/b").error == "folder nested over 3 levels, not read"


def test_fifos_devices_and_odd_names_are_data(snap):
    os.mkfifo(snap / "files" / "etc" / "fifo.conf")
    (snap / "files" / os.fsdecode(b"bad-\xff-name")).write_text("x")
    loaded = load(str(snap))
    assert loaded.file("/etc/fifo.conf").error == "not a regular file"
    assert loaded.file("/bad-\ufffd-name").error == "file name is not UTF-8"
    res = run_gpudoctor("check", "--snapshot", str(snap), "--json", timeout=60)  # a child: a FIFO read could hang
    assert res.returncode in (0, 1), res.stderr
    json.loads(res.stdout)


def test_damaged_snapshot_json_is_one_line_never_a_traceback(snap):
    meta = snap / "snapshot.json"
    data = json.loads(meta.read_text())
    data["meta"]["note"] = "\udc80 lone surrogate"
    meta.write_text(json.dumps(data))
    assert load(str(snap)).meta["note"].startswith("\ufffd")
    res = invoke("check", "--snapshot", str(snap))
    assert res.returncode in (0, 1) and "Traceback" not in res.stderr
    data["meta"]["deep"] = json.loads("[" * 200 + "]" * 200)
    meta.write_text(json.dumps(data))
    with pytest.raises(SnapshotError) as exc:
        load(str(snap))
    assert str(exc.value) == f"{meta}: damaged snapshot (nested over 64 levels)"
    meta.write_text('{"schema": "gpudoctor.snapshot/1", "meta": ' + "[" * 100000 + "]" * 100000 + "}")
    res = invoke("check", "--snapshot", str(snap))
    assert res.returncode == 2 and res.stderr == f"gpudoctor: {meta}: unreadable snapshot.json (nested too deeply)\n"
