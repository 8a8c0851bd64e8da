"""DCGM's diagnostic: the probe, the JSON of DCGM 3.x and 4.x, severities to verdicts, and absent DCGM.

The 4.x documents are real GB10 captures (fixtures/dcgm/SOURCES.md). No public capture with a
hardware severity (ISOLATE, RESET) or in the 3.x layout was found: those documents are HAND-MADE
below, shaped like the real one and like DCGM's own JSON writer, and say so.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from gpudoctor.facts import Facts, Missing, NotApplicable
from gpudoctor.facts.dcgm import parse
from gpudoctor.knowledge import dcgm as knowledge
from gpudoctor.probes import active
from gpudoctor.report import build_report
from gpudoctor.requirements import Requirements
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import Snapshot
from tests.hook_snapshots import ROOT

REAL_L1 = (ROOT / "fixtures" / "dcgm" / "gb10-level1.json").read_text()
REAL_L2 = (ROOT / "fixtures" / "dcgm" / "gb10-level2-plugins-allowed.json").read_text()
ARGV = ("dcgmi", "diag", "-r", "1", "-j")


def handmade(code: int, severity: int, status: str = "Fail", test: str = "memory") -> str:
    """A 4.x-shaped document with one result (HAND-MADE: no real capture has these codes)."""
    result = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 3, "status": status,
              "warnings": [{"error_category": 10, "error_id": code, "error_severity": severity,
                            "warning": f"hand-made warning {code}"}]}
    return json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": test, "results": [result], "test_summary": {"status": status}}]}]},
        "metadata": {"version": "4.2.3"}})


def judged(result: CommandResult, level: int = 1):
    snap = Snapshot(meta={"hostname": "n1"})
    snap.commands["dcgmi_diag"] = result
    return [f for f in build_report(snap, requirements=Requirements(dcgm=level)).findings if f.check_id == "DCG001"]


def ran(stdout: str, rc: int = 226, level: int = 1) -> CommandResult:
    return CommandResult(active.dcgm_argv(level), rc, stdout, "", 3.0)


def test_real_4x_documents_parse():
    version, results, error = parse(REAL_L1)
    assert (version, error) == ("4.2.3", None)
    [r] = results
    assert (r.category, r.test, r.gpu, r.status) == ("Deployment", "software", "0", "fail")
    assert [(w.code, w.severity) for w in r.warnings] == [(29, 5)]
    version, results, _ = parse(REAL_L2)
    assert version == "4.5.2"
    assert [(r.test, r.status) for r in results] == [("software", "fail"), ("memory", "pass"), ("pcie", "pass")]
    assert results[2].info[1] == "Host to GPU bandwidth:\t\t58.88 GB/s"


def test_3x_layout_with_string_warnings_and_gpu_ids():
    """HAND-MADE in DCGM 3.x's layout (JsonOutput.cpp: "DCGM GPU Diagnostic", gpu_ids, string warnings)."""
    doc = ("Successfully ran diagnostic for group.\n" + json.dumps({"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Hardware", "tests": [{"name": "GPU Memory", "results": [
            {"gpu_ids": "1", "status": "Fail", "warnings": ["Memory miscompare on GPU 1"]}]}]}], "version": "3.3.1"}}))
    version, [r], _ = parse(doc)
    assert (version, r.test, r.gpu, r.status, r.warnings[0].text, r.warnings[0].code) == \
        ("3.3.1", "GPU Memory", "1", "fail", "Memory miscompare on GPU 1", None)
    [f] = judged(ran(doc))
    assert (f.status.value, f.title) == ("fail", "DCGM GPU Memory failed on GPU 1")  # no severity: fails


@pytest.mark.parametrize("code,severity,status,title", [
    (52, 2, "fail", "DCGM memory failed on GPU 3: DCGM_FR_FAULTY_MEMORY (ISOLATE)"),
    (85, 6, "fail", "DCGM memory failed on GPU 3: DCGM_FR_PENDING_ROW_REMAP (RESET)"),
    (14, 4, "fail", "DCGM memory failed on GPU 3: DCGM_FR_NVLINK_DOWN (TRIAGE)"),
    (5, 1, "warn", "DCGM memory failed on GPU 3: DCGM_FR_VOLATILE_SBE_DETECTED (MONITOR)"),
    (29, 5, "warn", "DCGM memory failed on GPU 3: DCGM_FR_PERSISTENCE_MODE (CONFIG)"),
    (999, 9, "fail", "DCGM memory failed on GPU 3: DCGM code 999"),
])
def test_severity_decides_fail_or_warn(code, severity, status, title):
    [f] = judged(ran(handmade(code, severity)))
    assert (f.status.value, f.title) == (status, title)
    assert f"hand-made warning {code}" in f.detail


def test_codes_judged_elsewhere_point_at_that_check_and_its_fix():
    [f] = judged(ran(handmade(85, 6)))
    assert f.symptom_of == ("DRV003",) and f.fix.kb_id == "driver_gpu_memory_errors"
    [f] = judged(ran(REAL_L1))
    assert f.symptom_of == ("NOD006", "NOD003") and f.fix.kb_id == "persistence_mode_off"
    [f] = judged(ran(handmade(52, 2)))
    assert f.symptom_of == () and f.fix.kb_id == "dcgm_diag_failure" and f.family == "dcgm_diag"


def test_knowledge_table_matches_dcgm_headers():
    assert knowledge.code(29).name == "DCGM_FR_PERSISTENCE_MODE" and knowledge.code(29).severity == "CONFIG"
    assert knowledge.code(80).name == "DCGM_FR_ROW_REMAP_FAILURE" and knowledge.code(80).severity == "RESET"
    assert knowledge.code(132).name == "DCGM_FR_UNCORRECTABLE_ROW_REMAP_LIMIT"
    assert knowledge.code(133) is None
    assert knowledge.severity_name(6) == "RESET" and knowledge.status_for("RESET") == "fail"
    assert knowledge.exit_meaning(235) == "dcgmi could not reach nv-hostengine"
    assert [knowledge.level_timeout_s(level) for level in knowledge.levels()] == [120.0, 600.0, 2400.0, 10800.0]


def test_all_skipped_is_cannot_tell_and_passes_report_figures():
    skipped = handmade(52, 2, status="Skip")
    [f] = judged(ran(skipped, rc=0))
    assert (f.status.value, f.cannot_tell, f.title) == ("skip", True, "DCGM 4.2.3 level 1: no test ran (1 skipped: memory)")
    passed = judged(ran(REAL_L2, level=2), level=2)
    assert [(f.status.value, f.title) for f in passed][1] == ("ok", "DCGM 4.5.2 level 2: 2 test(s) passed (memory, pcie)")


@pytest.mark.parametrize("result,kind,reason", [
    (CommandResult(ARGV, error="not found"), NotApplicable, "DCGM is not installed (dcgmi not found on PATH)"),
    (CommandResult(ARGV, 235, "Error: unable to establish a connection to the specified host: localhost\n"
                              "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"),
     NotApplicable, "DCGM's nv-hostengine is not running"),
    (CommandResult(ARGV, None, "", "", 120.0, True), Missing, "`dcgmi diag -r 1 -j` did not finish within 120s"),
    (ran(json.dumps({"DCGM Diagnostic": {"runtime_error": "No GPUs found"}})), Missing,
     "dcgmi diag could not run: No GPUs found"),
    (ran("Segmentation fault", rc=139), Missing, "`dcgmi diag -r 1 -j` exited 139: no JSON in dcgmi's output"),
])
def test_dcgm_that_cannot_run_says_why(result, kind, reason):
    snap = Snapshot()
    snap.commands["dcgmi_diag"] = result
    with pytest.raises(Missing) as exc:
        Facts(snap)["dcgm_diag"]
    assert type(exc.value) is kind and str(exc.value).startswith(reason)


def test_not_asked_means_not_run():
    with pytest.raises(Missing, match=r"dcgmi diag was not run \(gpudoctor check --dcgm LEVEL"):
        Facts(Snapshot())["dcgm_diag"]


def fake_tool(tmp_path, name, body):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    tool = bindir / name
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": str(bindir)}


def test_probe_runs_dcgmi_with_json_output(tmp_path):
    fixture = ROOT / "fixtures" / "dcgm" / "gb10-level1.json"
    env = fake_tool(tmp_path, "dcgmi", f'[ "$*" = "diag -r 1 -j" ] || exit 9\n/bin/cat "{fixture}"\nexit 226\n')
    res = active.run_dcgm(1, env, 10)
    assert (res.argv, res.returncode, res.stdout) == (ARGV, 226, REAL_L1)
    [f] = judged(res)
    assert f.title == "DCGM software failed on GPU 0: DCGM_FR_PERSISTENCE_MODE (CONFIG)"


def test_a_hung_dcgmi_is_killed_at_its_timeout(tmp_path):
    env = fake_tool(tmp_path, "dcgmi", "exec /bin/sleep 30\n")
    res = active.run_dcgm(2, env, 0.5)
    assert res.timed_out and res.duration_s < 5
    [f] = judged(res, level=2)
    assert (f.status.value, f.cannot_tell) == ("skip", True)
    assert "`dcgmi diag -r 2 -j` did not finish within 1s" in f.title


def test_hook_drains_on_an_isolate_code_and_not_on_a_configuration(tmp_path, capsys):
    from gpudoctor.cli import main

    def hook(stdout, *args):
        from tests import hook_snapshots as hs

        snap = Snapshot(meta={"hostname": "n1"})
        snap.commands["nvidia_smi_xml"] = CommandResult(hs.ARGV, 0, hs.xml(hs.HEALTHY), "", 0.3)
        snap.commands["dcgmi_diag"] = ran(stdout)
        snap.save(str(tmp_path / "s"))
        with pytest.raises(SystemExit) as exc:
            main(["hook", "--snapshot", str(tmp_path / "s"), "--json", *args])
        return exc.value.code, json.loads(capsys.readouterr().out)["reason"]

    assert hook(handmade(52, 2), "--dcgm", "1") == (
        1, "gpudoctor: DCGM memory failed on GPU 3: DCGM_FR_FAULTY_MEMORY (ISOLATE)")
    assert hook(REAL_L1, "--dcgm", "1") == (0, "")
    assert hook(handmade(52, 2)) == (0, "")  # not asked for: not judged
