"""Defects found by a QA pass over the CLI: bad input, odd input, and reports that contradict themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from gpudoctor.recipes import recipe
from gpudoctor.snapshot import SnapshotError
from gpudoctor.snapshot_folder import load
from tests.conftest import ROOT, gpudoctor_argv, invoke, run_gpudoctor
from tests.scenarios import SCENARIOS, report_for

HEALTHY = SCENARIOS / "core-healthy-workstation"
SERVER = SCENARIOS / "core-8gpu-server"
NOT_LOADED = SCENARIOS / "core-driver-not-loaded"
SMI_TABLE = ROOT / "fixtures" / "nvidia-smi" / "text" / "h100-80gb-hbm3-x8_driver-550.90.07_cuda-12.4.txt"


def one_line_error(proc, code=2):
    """The process failed with exactly one stderr line `gpudoctor: ...` and the given exit code."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpudoctor: "), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    return lines[0]


# --- click's own usage errors are one line too --------------------------------------------

@pytest.mark.parametrize("args,needles", [
    (["check", "--snapshot", HEALTHY, "--timeout", "-1"], ["--timeout", "-1", "gpudoctor check --help"]),
    (["check", "--bogus-flag"], ["No such option", "--bogus-flag"]),
    (["nosuchcommand"], ["No such command", "nosuchcommand"]),
    (["parse-smi"], ["Missing argument", "FILE", "gpudoctor parse-smi --help"]),
    (["devices", "--snapshot", SERVER, "--order", "bogus"], ["--order", "bogus"]),
    (["check", "--snapshot"], ["--snapshot", "requires an argument"]),
    (["hook", "--snapshot", SERVER, "--gpus", "x"], ["--gpus", "'x'"]),
])
def test_usage_errors_are_one_gpudoctor_line(args, needles):
    line = one_line_error(invoke(*args))
    for needle in needles:
        assert needle in line


def test_bare_gpudoctor_still_shows_the_help():
    proc = invoke()
    text = proc.stdout + proc.stderr
    assert text.startswith("Usage: gpudoctor [OPTIONS] COMMAND") and "Commands:" in text and "parse-smi" in text
    assert "gpudoctor: Usage" not in text and proc.returncode in (0, 2)


# --- a corrupt snapshot folder is bad input, not a crash ----------------------------------

def _snapshot(tmp_path, doc) -> str:
    folder = tmp_path / "snap"
    folder.mkdir()
    (folder / "snapshot.json").write_text(json.dumps({"schema": "gpudoctor.snapshot/1", **doc}))
    return str(folder)


BAD_SECTIONS = [
    ({"env": "x"}, "'env'"),
    ({"meta": [1]}, "'meta'"),
    ({"meta": {"platform": "Linux"}}, "'meta.platform'"),
    ({"commands": {"nvidia_smi": "oops"}}, "'commands.nvidia_smi'"),
    ({"commands": {"nvidia_smi": {"argv": "nvidia-smi"}}}, "'commands.nvidia_smi.argv'"),
    ({"file_errors": ["a"]}, "'file_errors'"),
    ({"frameworks": {"torch": "x"}}, "'frameworks.torch'"),
    ({"env": {"CUDA_VISIBLE_DEVICES": 5}}, "'env.CUDA_VISIBLE_DEVICES'"),
    ({"listings": {"/dev": "nvidia0"}}, "'listings./dev'"),
]


@pytest.mark.parametrize("doc,where", BAD_SECTIONS, ids=[w for _, w in BAD_SECTIONS])
def test_wrongly_typed_snapshot_sections_are_refused_by_name(tmp_path, doc, where):
    folder = _snapshot(tmp_path, doc)
    with pytest.raises(SnapshotError) as exc:
        load(folder)
    assert "snapshot.json" in str(exc.value) and where in str(exc.value)


@pytest.mark.parametrize("command", ["check", "devices", "hook"])
def test_corrupt_snapshot_exits_2_with_one_line_in_every_replaying_command(tmp_path, command):
    folder = _snapshot(tmp_path, {"meta": {"platform": "x"}, "env": "x"})
    line = one_line_error(invoke(command, "--snapshot", folder))
    assert "snapshot.json" in line


def test_explain_with_a_corrupt_snapshot_exits_2(tmp_path):
    folder = _snapshot(tmp_path, {"frameworks": {"torch": "x"}})
    one_line_error(invoke("explain", "--snapshot", folder, "CUDA error: out of memory"))


@pytest.mark.parametrize("key", ["../../etc/passwd", "a/b", ".hidden", ""])
def test_command_keys_cannot_name_files_outside_the_snapshot(tmp_path, key):
    folder = _snapshot(tmp_path, {"commands": {key: {"argv": ["x"], "returncode": 0}}})
    with pytest.raises(SnapshotError) as exc:
        load(folder)
    assert "command key" in str(exc.value)


def test_a_well_formed_hand_written_snapshot_still_loads(tmp_path):
    folder = _snapshot(tmp_path, {"meta": {"hostname": "n1", "platform": {"system": "Linux"}},
                                  "env": {"CUDA_VISIBLE_DEVICES": "0"},
                                  "commands": {"nvidia_smi_L": {"argv": ["nvidia-smi", "-L"], "returncode": 0}},
                                  "file_errors": {"/proc/driver/nvidia/version": "missing"},
                                  "frameworks": {"torch": {"installed": False}}, "nvml": None})
    snap = load(folder)
    assert snap.env == {"CUDA_VISIBLE_DEVICES": "0"}
    assert snap.command("nvidia_smi_L").argv == ("nvidia-smi", "-L")
    assert snap.file("/proc/driver/nvidia/version").error == "missing"


# --- empty values that silently meant "everything" ----------------------------------------

@pytest.mark.parametrize("args", [
    ["check", "--snapshot", ""],
    ["devices", "--snapshot", ""],
    ["explain", "--snapshot", "", "CUDA error: out of memory"],
    ["hook", "--snapshot", ""],
])
def test_an_empty_snapshot_path_is_bad_input_not_a_live_probe(args):
    line = one_line_error(invoke(*args))
    assert "--snapshot" in line


@pytest.mark.parametrize("value", ["", ",", " , "])
def test_an_empty_only_is_bad_input_not_every_check(value):
    line = one_line_error(invoke("check", "--snapshot", HEALTHY, "--only", value))
    assert "--only" in line


# --- the hook keeps to 0/1/2 and to one stdout format ---------------------------------------

def test_hook_config_that_is_not_text_is_a_config_error(tmp_path):
    cfg = tmp_path / "hook.toml"
    cfg.write_bytes(b"\xe7\xff\x00\x01gpus = 8\n")
    line = one_line_error(invoke("hook", "--snapshot", SERVER, "--config", str(cfg)))
    assert str(cfg) in line


@pytest.mark.parametrize("extra", [["--json"], ["-v"]])
def test_hook_npd_output_cannot_be_mixed_with_another_stdout_format(extra):
    proc = invoke("hook", "--snapshot", SERVER, "--npd", *extra)
    line = one_line_error(proc)
    assert "--npd" in line and proc.stdout == line + "\n"  # NPD reads only stdout: the reason is there too


def test_hook_names_why_the_framework_probe_could_not_run():
    proc = invoke("hook", "-v", "--cuda", "12.1", "--python", "/nonexistent/python")
    line = next(l for l in proc.stdout.splitlines() if "TRC001" in l)
    assert "the torch probe could not run /nonexistent/python: not found" in line
    assert "exit code None" not in line


# --- output piped into `head` ------------------------------------------------------------

def _into_closed_pipe(*args):
    """Run gpudoctor with stdout a pipe nobody reads (`gpudoctor ... | head -0`): the first write gets EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(gpudoctor_argv(*args), stdout=write_end, stderr=subprocess.PIPE, text=True,
                              cwd=str(ROOT), timeout=60)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args,code", [
    (["check", "--snapshot", SERVER, "-v"], 0),
    (["check", "--snapshot", NOT_LOADED, "--json"], 1),  # the verdict stands
    (["check", "--list-checks"], 0),
    (["devices", "--snapshot", SERVER], 0),
])
def test_a_closed_stdout_pipe_ends_quietly_with_the_commands_own_exit_code(args, code):
    proc = _into_closed_pipe(*args)
    assert proc.returncode == code and proc.stderr == ""


def test_the_hook_verdict_survives_a_closed_stdout_pipe():
    proc = _into_closed_pipe("hook", "--snapshot", SERVER, "-v", "--gpus", "9")
    assert proc.returncode == 1 and proc.stderr == "gpudoctor: 8 of 9 GPUs visible\n"


# --- devices validates --python like every other command -------------------------------------

def test_devices_refuses_a_python_that_is_not_an_executable():
    line = one_line_error(invoke("devices", "--torch", "--python", "/etc/passwd"))
    assert "--python /etc/passwd: no such executable" in line


# --- help text --------------------------------------------------------------------------

def test_fleet_help_names_every_exit_code():
    out = " ".join(invoke("fleet", "--help").stdout.split())
    assert "0 no node failed, 1 at least one node reports a failure, 2 no report in the input" in out


@pytest.mark.parametrize("command,example", [
    ("snapshot", "gpudoctor snapshot --out"),
    ("parse-smi", "gpudoctor parse-smi"),
])
def test_help_has_examples(command, example):
    out = invoke(command, "--help").stdout
    assert "Examples:" in out
    assert example in out.split("Examples:")[1]


# --- parse-smi reads what PowerShell's `nvidia-smi > file` writes ---------------------------

@pytest.mark.parametrize("encoding,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_parse_smi_reads_a_utf16_capture(tmp_path, encoding, bom):
    text = SMI_TABLE.read_text(encoding="utf-8").replace("\n", "\r\n")
    path = tmp_path / "smi.txt"
    path.write_bytes(bom + text.encode(encoding))
    proc = invoke("parse-smi", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["driver_version"] == "550.90.07" and data["cuda_version"] == "12.4" and len(data["gpus"]) == 8


# --- reports that contradicted themselves ---------------------------------------------------

def test_wsl002_does_not_claim_wsl_libcuda_wins_when_a_linux_one_comes_first():
    report = report_for(SCENARIOS / "sys-wsl2-linux-driver-installed")
    wsl002 = next(f for f in report.findings if f.check_id == "WSL002")
    assert "libcuda.so.1 comes from /usr/lib/wsl/lib" not in wsl002.title
    assert "/lib/x86_64-linux-gnu/libcuda.so.1" in wsl002.title and "WSL001" in wsl002.title
    healthy = report_for(SCENARIOS / "sys-wsl2-healthy")
    assert next(f for f in healthy.findings if f.check_id == "WSL002").title.startswith(
        "libcuda.so.1 comes from /usr/lib/wsl/lib")


@pytest.mark.parametrize("family", ["debian", "rhel", "default"])
def test_cudnn_recipe_offers_no_cudnn_8_for_cuda_13(family):
    fix = recipe("cudnn_mismatch_or_missing", cuda_major="13", cuda_root="/usr/local/cuda-13.0",
                 platform_family=family)
    text = "\n".join(fix.commands)
    assert "nvidia-cudnn-cu13==8" not in text
    assert "pip install nvidia-cudnn-cu13" in text
    assert "nvidia-cudnn-cu12==8.*" in text  # cuDNN 8 programs: the CUDA 12 wheel, and no CUDA 13 one


# --- fleet: one damaged report is skipped and counted, not a crash of the whole summary --------

@pytest.mark.parametrize("damage", [
    {"findings": "x"}, {"findings": [1, 2]}, {"machine": [1]}, {"machine": {"frameworks": {"torch": "2.4"}}},
])
def test_fleet_skips_a_damaged_report_and_summarises_the_rest(tmp_path, damage):
    good = json.loads(invoke("check", "--snapshot", SERVER, "--json").stdout)
    (tmp_path / "good.json").write_text(json.dumps(good))
    (tmp_path / "bad.json").write_text(json.dumps({**good, **damage}))
    proc = invoke("fleet", "--json", str(tmp_path))
    assert proc.returncode == 0 and "internal error" not in proc.stderr, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["nodes"] == 1
    # Named with its line; the reason says which part has the wrong type (issue 15's streaming reader).
    assert [(u["source"], u["line"], u["reason"].split(" (")[0]) for u in summary["unreadable"]] == [
        (str(tmp_path / "bad.json"), 1, "a damaged gpudoctor report")]


# --- --color forces colour in every command, also when stdout is not a terminal -------------

def test_color_flag_forces_colour_in_hook_and_fleet(tmp_path):
    hook = invoke("hook", "--snapshot", NOT_LOADED, "-v", "--color")
    assert "\x1b[31m[✗]\x1b[0m DRV001" in hook.stdout
    report = invoke("check", "--snapshot", NOT_LOADED, "--json").stdout
    (tmp_path / "n1.json").write_text(report)
    fleet = invoke("fleet", "--color", str(tmp_path))
    assert "\x1b[31m" in fleet.stdout
    plain = invoke("fleet", str(tmp_path))
    assert "\x1b[" not in plain.stdout


# --- an empty output path is not "the current folder" -----------------------------------------

@pytest.mark.parametrize("args,flag", [(["snapshot", "--no-frameworks", "--out", ""], "--out"),
                                       (["bundle", "--no-frameworks", "-o", ""], "-o")])
def test_an_empty_output_path_is_bad_input(tmp_path, monkeypatch, args, flag):
    monkeypatch.chdir(tmp_path)
    line = one_line_error(invoke(*args))
    assert line.startswith(f"gpudoctor: {flag} needs a ") and line.endswith("got an empty value")
    assert list(tmp_path.iterdir()) == []  # nothing was written into the current folder


# --- a typo in --only is named, not silently dropped ----------------------------------------

@pytest.mark.parametrize("value,unknown", [("DRV001,NOPE999", "NOPE999"), ("DRV,CUDA01", "CUDA01"),
                                           ("NOPE999", "NOPE999")])
def test_only_names_the_entries_that_match_no_check(value, unknown):
    line = one_line_error(invoke("check", "--snapshot", HEALTHY, "--only", value))
    assert line == f"gpudoctor: --only {unknown} matches no check (see --list-checks)"


@pytest.mark.parametrize("data,reason", [("", "empty input"), ("\x00\x01binary", "binary data, not nvidia-smi output")])
def test_parse_smi_names_stdin_as_stdin(data, reason):
    line = one_line_error(invoke("parse-smi", "-", input=data))
    assert line == f"gpudoctor: <stdin>: {reason}"


# --- never hang, never blow up: files that never end ------------------------------------------

def test_hook_config_that_never_ends_reading_is_bounded(tmp_path):
    fifo = tmp_path / "hook.toml"
    os.mkfifo(fifo)  # like a config on a stuck mount: open() blocks forever
    start = time.monotonic()
    proc = run_gpudoctor("hook", "--snapshot", SERVER, "--config", str(fifo), timeout=60)
    assert time.monotonic() - start < 30
    assert proc.returncode == 2
    assert proc.stderr.startswith("gpudoctor: internal error, not judging this node: the hook did not finish")


def test_hook_config_larger_than_any_config_is_refused():
    # A child: a read of /dev/zero that were not capped would never end.
    line = one_line_error(run_gpudoctor("hook", "--snapshot", SERVER, "--config", "/dev/zero", timeout=60))
    assert line == "gpudoctor: /dev/zero: larger than 1 MiB, not a config file"


def test_fleet_skips_fifos_and_devices_inside_a_directory(tmp_path):
    (tmp_path / "n1.json").write_text(invoke("check", "--snapshot", SERVER, "--json").stdout)
    os.mkfifo(tmp_path / "n2.json")  # a FIFO nobody writes to: reading it would wait forever
    proc = run_gpudoctor("fleet", "--json", str(tmp_path), timeout=60)  # a hang ends the child, not the session
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["nodes"] == 1


def _copy_scenario(tmp_path, name="core-healthy-workstation"):
    import shutil

    target = tmp_path / "snap"
    shutil.copytree(SCENARIOS / name / "snapshot", target)
    return target


def test_a_fifo_in_place_of_a_command_output_is_refused_not_waited_on(tmp_path):
    snap = _copy_scenario(tmp_path)
    out = snap / "commands" / "nvidia_smi_xml.out"
    out.unlink()
    os.mkfifo(out)
    line = one_line_error(run_gpudoctor("check", "--snapshot", str(snap), timeout=30))
    assert line == f"gpudoctor: {out}: not a regular file"


def test_a_fifo_among_the_recorded_files_is_recorded_as_unreadable(tmp_path):
    snap = _copy_scenario(tmp_path)
    os.mkfifo(snap / "files" / "etc" / "fifo.conf")
    loaded = load(str(snap))
    assert loaded.file("/etc/fifo.conf").error == "not a regular file"
    assert "Ubuntu 22.04" in loaded.text("/etc/os-release")
