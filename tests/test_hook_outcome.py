"""The hook's selection of checks, its requirements and its verdict, in-process and exact
(gpudoctor/hook/select.py, gpudoctor/hook/outcome.py, gpudoctor/requirements.py)."""

from __future__ import annotations

import pytest

from gpudoctor.diagnoses import Diagnosis, diagnose
from gpudoctor.exitcodes import HookExit
from gpudoctor.findings import Fix, Status, fail, ok, skip, unknown, warn
from gpudoctor.hook import outcome
from gpudoctor.hook.outcome import (Outcome, clean, crashed, decide, message, npd_message, reason_line,
                                    verdict)
from gpudoctor.hook.select import lenient_ids, select, selected_ids
from gpudoctor.plugins import load_checks
from gpudoctor.requirements import FLAGS, NAMES, Requirements

CHECKS = load_checks()[0]
BASE = ["DRV001", "DRV003", "DRV006", "XID001", "XID002", "XID003", "XID004", "SXID001", "FAB001"]


def _f(check_id, maker=fail, title=None, **kw):
    return maker(title or f"{check_id} says so", **kw).with_id(check_id)


# --- selection -------------------------------------------------------------------------------------

def test_the_default_hook_runs_the_driver_memory_errors_board_failures_xids_and_fabric():
    assert selected_ids(CHECKS, Requirements()) == BASE
    assert [c.id for c in select(CHECKS, Requirements())] == BASE


@pytest.mark.parametrize("req, added, removed", [
    (Requirements(pending_retirement=False), [], ["DRV003"]),
    (Requirements(drain_xid_actions=()), [], ["XID001", "XID002", "XID003", "XID004", "SXID001"]),
    (Requirements(fabric_manager=False), [], ["FAB001"]),
    (Requirements(nvlink=True), ["NVL001", "NVL002"], []),
    (Requirements(cuda="12.4"), ["TRC001", "TRC002", "TF001", "TF003", "CUDA003"], []),
    (Requirements(gpus=8), ["NOD001"], []),
    (Requirements(min_driver="535.104.05"), ["DRV005"], []),
    (Requirements(max_temp=85, persistence=True), ["NOD002", "NOD003"], []),
    (Requirements(min_free_mem_mib=1000, no_foreign_processes=True), ["NOD005", "NOD004"], []),
    (Requirements(pcie_width=True, no_slowdown=True), ["PCI002", "CLK002"], []),
    (Requirements(dcgm=1), ["DCG001"], []),
    (Requirements(smoke=True), ["SMK001", "SMK002", "SMK003"], []),
])
def test_each_requirement_selects_its_checks_in_report_order(req, added, removed):
    ids = selected_ids(CHECKS, req)
    assert set(ids) == (set(BASE) | set(added)) - set(removed)
    assert ids == [c.id for c in CHECKS if c.id in ids]


def test_checks_not_asked_for_stay_out_even_with_params():
    assert "NOD001" not in selected_ids(CHECKS, Requirements(gpus=None, max_temp=None))
    assert "DCG001" not in selected_ids(CHECKS, Requirements(dcgm=None))


def test_lenient_checks_are_the_default_on_ones_the_administrator_did_not_set():
    assert lenient_ids(CHECKS, Requirements()) == ["XID001", "XID002", "XID003", "XID004", "SXID001", "FAB001"]
    assert lenient_ids(CHECKS, Requirements(explicit=("fabric_manager",))) == \
        ["XID001", "XID002", "XID003", "XID004", "SXID001"]
    assert lenient_ids(CHECKS, Requirements(explicit=("drain_xid_actions", "fabric_manager"))) == []
    assert lenient_ids(CHECKS, Requirements(fabric_manager=False, drain_xid_actions=())) == []


# --- requirements ----------------------------------------------------------------------------------

def test_asked_means_set_to_something_other_than_none_false_or_empty():
    r = Requirements(gpus=0, max_temp=None, nvlink=False, allow_users=(), cuda="12.4")
    assert r.asked("gpus") and r.asked("cuda") and r.asked("fabric_manager") and r.asked("drain_xid_actions")
    assert not r.asked("max_temp") and not r.asked("nvlink") and not r.asked("allow_users")
    assert r.needs_frameworks() and not Requirements().needs_frameworks()


def test_strict_is_an_administrators_setting_or_a_requirement_off_by_default():
    r = Requirements()
    assert r.strict(["max_temp"]) and r.strict(["smoke"]) and r.strict(["allow_users"])
    assert not r.strict(["fabric_manager"]) and not r.strict(["drain_xid_actions", "pending_retirement"])
    assert Requirements(explicit=("fabric_manager",)).strict(["fabric_manager"])
    assert Requirements(explicit=("fabric_manager",)).strict(["pending_retirement", "fabric_manager"])


def test_every_requirement_has_its_flag():
    assert set(FLAGS) == set(NAMES) and "explicit" not in NAMES and NAMES[0] == "gpus"
    assert FLAGS["min_free_mem_mib"] == "--min-free-mem" and FLAGS["job_gpus"] == "SLURM_JOB_GPUS"


# --- verdicts ---------------------------------------------------------------------------------------

def test_verdict_of_each_status():
    assert verdict(_f("A1")) == "problem"
    assert verdict(_f("A1", maker=warn)) == "ok"
    assert verdict(_f("A1", maker=ok)) == "ok"
    assert verdict(_f("A1", maker=skip)) == "ok"
    assert verdict(_f("A1", maker=unknown)) == "unknown"
    assert verdict(_f("A1", maker=unknown), lenient=("A1",)) == "ok"
    assert verdict(_f("A1", maker=unknown), lenient=("B1",)) == "unknown"
    crash = _f("A1", maker=ok).__class__("A1", Status.ERROR, "boom")
    assert verdict(crash) == "unknown" and verdict(crash, lenient=("A1",)) == "unknown"
    assert message(crash) == "check A1 crashed"


def test_message_drops_the_engines_skip_lead_only():
    assert message(_f("A1", maker=unknown, title="Fabric manager: skipped, the log was not readable")) == \
        "the log was not readable"
    assert message(_f("A1", title="a: b: skipped, c: skipped, d")) == "c: skipped, d"
    assert message(_f("A1", title="plain: title")) == "plain: title"


def test_a_failure_is_a_problem_named_by_its_diagnosis_once():
    fix = Fix("blacklist", kb_id="nouveau_conflict")
    drv = _f("DRV001", title="nvidia-smi cannot talk to the driver", fix=fix)
    nou = _f("NOU001", title="nouveau holds the GPU", fix=fix)
    lone = _f("NOD001", title="2 GPUs, expected 8")
    findings = [drv, nou, _f("NOD002", maker=unknown, title="no temperature"), lone]
    got = decide(findings, diagnose(findings))
    assert got.exit_code is HookExit.PROBLEM and got.state == "problem" and got.lead == ""
    assert got.reasons == ["nvidia-smi cannot talk to the driver", "2 GPUs, expected 8"]
    assert got.line == "gpudoctor: nvidia-smi cannot talk to the driver; 2 GPUs, expected 8"
    assert got.findings == findings and [d.cause for d in got.diagnoses] == [drv, lone]
    assert got.to_dict()["diagnoses"][0]["family"] == "nouveau_conflict"
    # without diagnoses, each failure names itself
    assert decide(findings).reasons == ["nvidia-smi cannot talk to the driver", "nouveau holds the GPU",
                                        "2 GPUs, expected 8"]


def test_a_diagnosis_without_a_failed_finding_is_no_reason():
    w = _f("PCI001", maker=warn, title="x8 of x16")
    f = _f("NOD001", title="2 GPUs, expected 8")
    assert decide([w, f], [Diagnosis("pcie", Status.WARN, w)]).reasons == ["2 GPUs, expected 8"]


def test_unknowns_prefer_the_ones_that_say_what_to_do_and_are_deduplicated():
    a = _f("A1", maker=unknown, title="A: skipped, nvidia-smi timed out")
    b = _f("B1", maker=unknown, title="B: skipped, nvidia-smi timed out")
    c = _f("C1", maker=unknown, title="the kernel log is not readable", fix=Fix("run as root"))
    got = decide([a, b, _f("D1", maker=warn)])
    assert got.exit_code is HookExit.UNKNOWN and got.state == "unknown" and got.lead == outcome.UNKNOWN_LEAD
    assert got.reasons == ["nvidia-smi timed out"]
    assert got.line == "gpudoctor: cannot tell: nvidia-smi timed out"
    assert decide([a, c, b]).reasons == ["the kernel log is not readable"]
    assert (got.findings, got.lenient) == ([a, b, got.findings[2]], ())
    diag = [Diagnosis("fam", Status.WARN, got.findings[2])]
    unsure = decide([a, got.findings[2]], diag, lenient=("Z1",))
    assert (unsure.diagnoses, unsure.lenient, unsure.findings) == (diag, ("Z1",), [a, got.findings[2]])
    assert decide([a], lenient=("A1",)).exit_code is HookExit.OK
    assert decide([a, _f("E1")]).exit_code is HookExit.PROBLEM  # a problem wins over an unknown


def test_a_healthy_node_has_no_reason_and_says_ok_to_npd():
    got = decide([_f("A1", maker=ok), _f("B1", maker=warn), _f("C1", maker=unknown)], lenient=("C1",))
    assert (got.exit_code, got.state, got.line, got.reasons, got.lenient) == (HookExit.OK, "ok", "", [], ("C1",))
    assert got.lead == "" and len(got.findings) == 3
    diag = [Diagnosis("fam", Status.WARN, got.findings[1])]
    assert decide(got.findings, diag, lenient=("C1",)).diagnoses == diag
    assert npd_message(got) == "gpudoctor: ok"


def test_the_json_names_each_selected_checks_state():
    a, b = _f("DRV001", maker=ok, title="driver 550"), _f("XID001", maker=unknown, title="no log")
    got = decide([a, b], lenient=("XID001",))
    got.duration_s = 1.23456
    assert got.to_dict() == {
        "schema": "gpudoctor.hook/2", "state": "ok", "exit_code": 0, "reason": "", "duration_s": 1.235,
        "diagnoses": [],
        "checks": [{"check": "DRV001", "state": "ok", "status": "ok", "title": "driver 550"},
                   {"check": "XID001", "state": "ok", "status": "skip", "title": "no log"}]}
    d = decide([_f("NOD001", title="2 GPUs")]).to_dict()
    assert (d["state"], d["exit_code"], d["reason"], d["checks"][0]["state"]) == ("problem", 1, "gpudoctor: 2 GPUs",
                                                                                   "problem")


def test_a_crash_is_unknown_never_a_problem():
    got = crashed(ValueError("bad 'thing'"))
    assert got.exit_code is HookExit.UNKNOWN and got.state == "unknown"
    assert got.line == "gpudoctor: internal error, not judging this node: hook failed: ValueError: bad thing"
    assert got.to_dict()["checks"] == [] and got.findings == [] and got.diagnoses == []


# --- one line ---------------------------------------------------------------------------------------

def test_clean_keeps_one_safe_ascii_line():
    assert clean('  GPU "0"\'s\tlink `x8`\\ \n é ') == "GPU 0s link x8 ?"
    assert clean("") == ""


def test_reason_line_joins_parts_within_the_limit():
    assert reason_line([]) == "gpudoctor: "
    assert reason_line(["a", "", " ", "b"]) == "gpudoctor: a; b"
    assert reason_line(["a"], "cannot tell: ") == "gpudoctor: cannot tell: a"
    parts = ["x" * 30, "y" * 30, "z" * 30]
    assert reason_line(parts, limit=11 + 30 + 2 + 30 + 10) == "gpudoctor: " + "x" * 30 + "; " + "y" * 30 + " (+1 more)"
    assert reason_line(parts, limit=11 + 30 + 10) == "gpudoctor: " + "x" * 30 + " (+2 more)"
    exact = "gpudoctor: " + "x" * 30 + "; " + "y" * 30 + "; " + "z" * 30
    assert reason_line(parts, limit=len(exact)) == exact
    assert reason_line(parts, limit=len(exact) - 1).endswith(" (+1 more)")
    # the "(+N more)" tail counts: two parts fit in 83 characters with it, not in 82
    assert reason_line(parts, limit=11 + 62 + 10) == "gpudoctor: " + "x" * 30 + "; " + "y" * 30 + " (+1 more)"
    assert reason_line(parts, limit=11 + 62 + 10 - 1) == "gpudoctor: " + "x" * 30 + " (+2 more)"


def test_a_first_part_too_long_is_cut_with_an_ellipsis():
    got = reason_line(["a" * 300, "b"], limit=80)
    assert got == "gpudoctor: " + "a" * (80 - 11 - 10 - 3) + "... (+1 more)"
    assert len(got) == 80
    assert reason_line(["a" * 300], limit=80) == "gpudoctor: " + "a" * 66 + "..."
    assert reason_line(["a" * 300], limit=20) == "gpudoctor: " + "a" * 10 + "..."   # never fewer than 10
    assert reason_line(["word " * 60], limit=29) == "gpudoctor: word word word...", "the cut drops its trailing blank"


def test_npd_message_fits_80_bytes():
    got = npd_message(Outcome(HookExit.PROBLEM, ["z" * 200]))
    assert len(got) == 80 and got.startswith("gpudoctor: zzz") and got.endswith("...")
    assert npd_message(Outcome(HookExit.UNKNOWN, ["log"], outcome.UNKNOWN_LEAD)) == "gpudoctor: cannot tell: log"
    assert len(reason_line(["q" * 300])) == 200
