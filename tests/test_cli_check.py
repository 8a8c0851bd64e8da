"""`gpudoctor check` and `gpudoctor snapshot`: the report, replay, exit codes and output contract."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gpudoctor.report import build_report
from gpudoctor.snapshot_folder import load
from tests.conftest import ROOT, invoke
from tests.scenarios import SCENARIOS

HEALTHY = SCENARIOS / "core-healthy-workstation"
NOT_LOADED = SCENARIOS / "core-driver-not-loaded"


@pytest.fixture(scope="module")
def live_check():
    """One live `gpudoctor check` (its framework probes cost seconds each), shared by the tests that read
    this machine: what it printed, and the snapshot it collected (kept by a pass-through wrapper)."""
    from gpudoctor.commands import check as check_command

    collected = []

    def keep(*args, **kwargs):
        collected.append(real(*args, **kwargs))
        return collected[-1]

    real, patch = check_command.live_snapshot, pytest.MonkeyPatch()
    patch.setattr(check_command, "live_snapshot", keep)
    try:
        proc = invoke("check", "--timeout", "120")  # a loaded CI machine imports torch slowly; not the point here
    finally:
        patch.undo()
    (snap,) = collected
    return proc, snap


def test_live_snapshot_replays_into_the_same_findings(live_check, tmp_path):
    live = live_check[1]
    assert live.frameworks, "the live run probed no framework"
    live_report = build_report(live)
    live.save(str(tmp_path / "snap"))
    replayed = build_report(load(str(tmp_path / "snap")))
    assert [(f.check_id, f.status) for f in replayed.findings] == [(f.check_id, f.status) for f in live_report.findings]
    assert [f.to_dict() for f in replayed.findings] == [f.to_dict() for f in live_report.findings]
    assert replayed.machine == live_report.machine


def _torch_here():
    """(version, CUDA) of the torch this interpreter has, from torch's own version.py (run without
    importing torch, which costs seconds); None if there is no torch."""
    import importlib.util
    import runpy

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    version = runpy.run_path(str(Path(list(spec.submodule_search_locations)[0]) / "version.py"))
    return version["__version__"], version.get("cuda")


def _driver_here():
    """The driver version `nvidia-smi -q -x` reports on this machine (read with ElementTree), or None."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        proc = subprocess.run(["nvidia-smi", "-q", "-x"], capture_output=True, text=True, timeout=60)
        return ET.fromstring(proc.stdout).findtext("driver_version") if proc.returncode == 0 else None
    except (ET.ParseError, subprocess.TimeoutExpired):
        return None


def test_live_report_says_what_this_machine_has(live_check):
    """Whatever the machine (GPU or not, healthy or not): its driver and torch as they answer themselves."""
    proc = live_check[0]
    out = proc.stdout
    assert proc.returncode in (0, 1), proc.stderr
    assert out.startswith("gpudoctor: ") and " (this machine)\n" in out.splitlines()[0] + "\n"
    assert "Summary:" in out and "Traceback" not in out + proc.stderr and "[☠]" not in out
    driver = _driver_here()
    if driver:
        assert f"  driver     {driver}" in out
    else:
        assert "  driver     none found (" in out
    if shutil.which("nvidia-smi") is None:
        assert "  driver     none found (`nvidia-smi -q -x`: not found)" in out
    torch = _torch_here()
    if torch is None:
        assert "\n  torch      " not in out
    elif not torch[1]:
        assert f"  torch      {torch[0]} (CPU-only build)" in out
    else:
        assert f"  torch      {torch[0]} (CUDA {torch[1]}, " in out


def test_snapshot_command_then_replay(tmp_path):
    out = tmp_path / "snap"
    rec = invoke("snapshot", "--out", out, "--no-frameworks")
    assert rec.returncode == 0 and "snapshot written" in rec.stdout
    assert (out / "snapshot.json").is_file() and (out / "commands" / "nvidia_smi_xml.out").is_file()
    data = json.loads((out / "snapshot.json").read_text())
    assert data["schema"] == "gpudoctor.snapshot/2"
    # recorded as this machine answered: "not found" exactly when nvidia-smi is not on PATH
    assert (data["commands"]["nvidia_smi_xml"]["error"] == "not found") == (shutil.which("nvidia-smi") is None)
    replay = invoke("check", "--snapshot", out, "--json")
    assert json.loads(replay.stdout)["findings"][0]["check_id"] == "DRV001"
    again = invoke("snapshot", "--out", out)
    assert again.returncode == 2 and again.stderr.startswith("gpudoctor: ") and len(again.stderr.splitlines()) == 1


def test_env_outside_the_allow_list_is_never_recorded(tmp_path):
    out = tmp_path / "snap"
    proc = invoke("snapshot", "--out", out, "--no-frameworks",
                         env={"HF_TOKEN": "hf_plantedsecret123", "CUDA_VISIBLE_DEVICES": "1,0"})
    assert proc.returncode == 0
    blob = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "hf_plantedsecret123" not in blob
    assert json.loads((out / "snapshot.json").read_text())["env"]["CUDA_VISIBLE_DEVICES"] == "1,0"


def test_json_schema():
    proc = invoke("check", "--snapshot", NOT_LOADED, "--json")
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
    proc = invoke("check", "--snapshot", HEALTHY, "--only", "INV001", "--json")
    assert [f["check_id"] for f in json.loads(proc.stdout)["findings"]] == ["INV001"]
    proc = invoke("check", "--snapshot", HEALTHY, "--only", "drv", "--json")
    assert {f["check_id"][:3] for f in json.loads(proc.stdout)["findings"]} == {"DRV"}
    proc = invoke("check", "--snapshot", HEALTHY, "--only", "NOPE999")
    assert proc.returncode == 2 and "matches no check" in proc.stderr
    listed = invoke("check", "--list-checks")
    assert listed.stdout.splitlines()[0].startswith("DRV001")
    listed_json = json.loads(invoke("check", "--list-checks", "--json").stdout)
    assert {"id", "name", "title", "needs", "description"} <= set(listed_json["checks"][0])


@pytest.mark.parametrize("args,needle", [
    (["check", "--snapshot", "/nonexistent/dir"], "not a snapshot folder"),
    (["check", "--snapshot", ROOT / "README.md"], "README.md"),
    (["check", "--timeout", "0"], "--timeout"),
    (["check", "--bogus-flag"], "No such option"),
    (["nosuchcommand"], "No such command"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
    proc = invoke(*args)
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_colour_only_when_asked_or_on_a_terminal():
    plain = invoke("check", "--snapshot", NOT_LOADED)
    assert "\x1b[" not in plain.stdout  # not a terminal
    forced = invoke("check", "--snapshot", NOT_LOADED, "--color")
    assert "\x1b[31m[✗]\x1b[0m" in forced.stdout
    from gpudoctor.render.style import want_colour

    class Tty:
        def isatty(self):
            return True

    assert want_colour(Tty()) is True


class _Tty:
    def isatty(self):
        return True


@pytest.mark.parametrize("value,colour", [(None, True), ("", True), ("1", False), ("false", False)])
def test_no_color_disables_colour_only_when_set_and_not_empty(monkeypatch, value, colour):
    """no-color.org: NO_COLOR present *and not an empty string* prevents colour."""
    from gpudoctor.render.style import want_colour

    monkeypatch.delenv("NO_COLOR", raising=False)
    if value is not None:
        monkeypatch.setenv("NO_COLOR", value)
    assert want_colour(_Tty()) is colour
    assert want_colour(_Tty(), forced=True) is True and want_colour(_Tty(), forced=False) is False


@pytest.mark.parametrize("value,colour", [("", True), ("1", False)])
def test_no_color_on_a_real_terminal(value, colour):
    """The report on a pseudo-terminal, as a person sees it: coloured unless NO_COLOR has a value."""
    import os
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "gpudoctor", "check", "--snapshot", str(NOT_LOADED)],
                                stdout=follower, stderr=subprocess.DEVNULL, cwd=str(ROOT),
                                env={**os.environ, "NO_COLOR": value, "TERM": "xterm"})
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=60)
    finally:
        os.close(leader)
    out = b"".join(chunks).decode()
    assert "DRV001" in out
    assert ("\x1b[31m[✗]\x1b[0m" in out) is colour


def test_verbose_shows_skips_with_reasons():
    proc = invoke("check", "--snapshot", NOT_LOADED, "--verbose")
    assert "[-] INV001 GPU inventory: skipped, `nvidia-smi -q -x` exited 9" in proc.stdout


def test_python_m_and_version(tmp_path):
    """`python -m gpudoctor` as a user runs it, from any folder: the process boundary itself."""
    import gpudoctor

    proc = subprocess.run([sys.executable, "-m", "gpudoctor", "--version"], capture_output=True, text=True,
                          cwd=str(tmp_path), timeout=60)
    assert proc.returncode == 0 and proc.stdout == f"gpudoctor, version {gpudoctor.__version__}\n"
    helped = invoke("--help")
    for name in ("check", "snapshot", "parse-smi"):
        assert name in helped.stdout


def test_the_console_script_exit_codes(tmp_path):
    """The `gpudoctor` script pip installed: 0 for --version, 2 and one line for bad usage."""
    script = shutil.which("gpudoctor", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip(f"no gpudoctor console script beside {sys.executable} (gpudoctor is not installed there)")
    ok = subprocess.run([script, "--version"], capture_output=True, text=True, cwd=str(tmp_path), timeout=60)
    assert ok.returncode == 0 and ok.stdout.startswith("gpudoctor, version ")
    bad = subprocess.run([script, "check", "--bogus-flag"], capture_output=True, text=True, cwd=str(tmp_path),
                         timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""
    # click words the option error differently across versions; the shape is gpudoctor's
    assert bad.stderr.startswith("gpudoctor: No such option") and "--bogus-flag" in bad.stderr
    assert bad.stderr.endswith(" (see `gpudoctor check --help`)\n") and bad.stderr.count("\n") == 1


def test_an_interpreter_without_frameworks_is_named_in_the_header(tmp_path):
    import sys as _sys

    # A bare venv: the probes run in it and find no torch, TensorFlow or JAX.
    import venv

    venv.EnvBuilder(with_pip=False).create(tmp_path / "bare")
    python = tmp_path / "bare" / "bin" / "python"
    proc = invoke("check", "--python", str(python), "--no-color")
    assert f"python     {python} ({_sys.version.split()[0]}): no torch, TensorFlow or JAX installed" in proc.stdout
    data = json.loads(invoke("check", "--python", str(python), "--json").stdout)
    assert data["machine"]["python"] == {"path": str(python), "version": _sys.version.split()[0]}
    assert data["machine"]["frameworks"]["torch"]["installed"] is False
