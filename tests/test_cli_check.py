"""`gpudoctor check` and `gpudoctor snapshot`: the report, replay, exit codes and output contract."""

from __future__ import annotations

import json

import pytest

from gpudoctor.probes.collect import CollectOptions, collect
from gpudoctor.report import build_report
from gpudoctor.snapshot import load
from tests.conftest import run_gpudoctor

HEALTHY = "fixtures/scenarios/core-healthy-workstation"
NOT_LOADED = "fixtures/scenarios/core-driver-not-loaded"


def test_live_snapshot_replays_into_the_same_findings(tmp_path):
    live = collect(CollectOptions())
    live_report = build_report(live)
    live.save(str(tmp_path / "snap"))
    replayed = build_report(load(str(tmp_path / "snap")))
    assert [(f.check_id, f.status) for f in replayed.findings] == [(f.check_id, f.status) for f in live_report.findings]
    assert [f.to_dict() for f in replayed.findings] == [f.to_dict() for f in live_report.findings]
    assert replayed.machine == live_report.machine


def test_gpu_less_machine_gives_a_plain_report():
    proc = run_gpudoctor("check")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "no NVIDIA GPU or driver found" in out
    assert "  torch      2.13.0+cpu (CPU-only build)" in out
    assert "tensorflow" in out and "CPU build" in out
    assert "Summary:" in out and "Traceback" not in out + proc.stderr


def test_snapshot_command_then_replay(tmp_path):
    out = tmp_path / "snap"
    rec = run_gpudoctor("snapshot", "--out", str(out), "--no-frameworks")
    assert rec.returncode == 0 and "snapshot written" in rec.stdout
    assert (out / "snapshot.json").is_file() and (out / "commands" / "nvidia_smi_xml.out").is_file()
    data = json.loads((out / "snapshot.json").read_text())
    assert data["schema"] == "gpudoctor.snapshot/1"
    assert data["commands"]["nvidia_smi_xml"]["error"] == "not found"
    replay = run_gpudoctor("check", "--snapshot", str(out), "--json")
    assert json.loads(replay.stdout)["findings"][0]["check_id"] == "DRV001"
    again = run_gpudoctor("snapshot", "--out", str(out))
    assert again.returncode == 2 and again.stderr.startswith("gpudoctor: ") and len(again.stderr.splitlines()) == 1


def test_env_outside_the_allow_list_is_never_recorded(tmp_path):
    out = tmp_path / "snap"
    proc = run_gpudoctor("snapshot", "--out", str(out), "--no-frameworks",
                         env={"HF_TOKEN": "hf_plantedsecret123", "CUDA_VISIBLE_DEVICES": "1,0"})
    assert proc.returncode == 0
    blob = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "hf_plantedsecret123" not in blob
    assert json.loads((out / "snapshot.json").read_text())["env"]["CUDA_VISIBLE_DEVICES"] == "1,0"


def test_json_schema():
    proc = run_gpudoctor("check", "--snapshot", NOT_LOADED, "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["schema"] == "gpudoctor.report/2"
    drv = next(f for f in data["findings"] if f["check_id"] == "DRV001")
    assert set(drv) >= {"check_id", "status", "title", "subject", "evidence", "fix"}
    assert drv["status"] == "fail"
    assert drv["fix"]["needs_root"] is True and drv["fix"]["kb_id"] == "driver_not_loaded"
    assert "sudo modprobe nvidia && nvidia-smi" in drv["fix"]["commands"]
    assert drv["evidence"][0]["source"] == "command:nvidia_smi_xml"
    assert data["summary"]["fail"] >= 1


def test_only_and_list_checks():
    proc = run_gpudoctor("check", "--snapshot", HEALTHY, "--only", "INV001", "--json")
    assert [f["check_id"] for f in json.loads(proc.stdout)["findings"]] == ["INV001"]
    proc = run_gpudoctor("check", "--snapshot", HEALTHY, "--only", "drv", "--json")
    assert {f["check_id"][:3] for f in json.loads(proc.stdout)["findings"]} == {"DRV"}
    proc = run_gpudoctor("check", "--snapshot", HEALTHY, "--only", "NOPE999")
    assert proc.returncode == 2 and "matches no check" in proc.stderr
    listed = run_gpudoctor("check", "--list-checks")
    assert listed.stdout.splitlines()[0].startswith("DRV001")
    listed_json = json.loads(run_gpudoctor("check", "--list-checks", "--json").stdout)
    assert {"id", "name", "title", "needs", "description"} <= set(listed_json["checks"][0])


@pytest.mark.parametrize("args,needle", [
    (["check", "--snapshot", "/nonexistent/dir"], "not a snapshot folder"),
    (["check", "--snapshot", "README.md"], "README.md"),
    (["check", "--timeout", "0"], "--timeout"),
    (["check", "--bogus-flag"], "No such option"),
    (["nosuchcommand"], "No such command"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
    proc = run_gpudoctor(*args)
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_colour_only_when_asked_or_on_a_terminal():
    plain = run_gpudoctor("check", "--snapshot", NOT_LOADED)
    assert "\x1b[" not in plain.stdout  # not a terminal
    forced = run_gpudoctor("check", "--snapshot", NOT_LOADED, "--color")
    assert "\x1b[31m[✗]\x1b[0m" in forced.stdout
    from gpudoctor.render.style import want_colour

    class Tty:
        def isatty(self):
            return True

    assert want_colour(Tty()) is True


def test_no_color_env_is_respected(monkeypatch):
    from gpudoctor.render.style import want_colour

    class Tty:
        def isatty(self):
            return True

    monkeypatch.setenv("NO_COLOR", "")
    assert want_colour(Tty()) is False


def test_verbose_shows_skips_with_reasons():
    proc = run_gpudoctor("check", "--snapshot", NOT_LOADED, "--verbose")
    assert "[-] INV001 GPU inventory: skipped, `nvidia-smi -q -x` exited 9" in proc.stdout


def test_python_m_and_version():
    proc = run_gpudoctor("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("gpudoctor, version ")
    helped = run_gpudoctor("--help")
    for name in ("check", "snapshot", "parse-smi"):
        assert name in helped.stdout


def test_an_interpreter_without_frameworks_is_named_in_the_header(tmp_path):
    import sys as _sys

    # A bare venv: the probes run in it and find no torch, TensorFlow or JAX.
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "bare")
    python = tmp_path / "bare" / "bin" / "python"
    proc = run_gpudoctor("check", "--python", str(python), "--no-color")
    assert f"python     {python} ({_sys.version.split()[0]}): no torch, TensorFlow or JAX installed" in proc.stdout
    data = json.loads(run_gpudoctor("check", "--python", str(python), "--json").stdout)
    assert data["machine"]["python"] == {"path": str(python), "version": _sys.version.split()[0]}
    assert data["machine"]["frameworks"]["torch"]["installed"] is False
