"""DCG001's findings in full: title, verdict, detail, evidence and fix per DCGM result, the worst warning
first, and the passes with DCGM's own figures.

The 4.x documents below are HAND-MADE in the shape of the real GB10 captures (fixtures/dcgm/SOURCES.md),
as tests/test_node_health_dcgm.py explains; REAL_L2 is a real capture.
"""

from __future__ import annotations

import json

from tests.test_node_health_dcgm import REAL_L2, judged, ran

RESET_CMD = "sudo nvidia-smi -r -i {}    # when DCGM asks for a reset: stop every process on that GPU first"


def doc(results, status="Fail", test="memory"):
    return json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": test, "results": results, "test_summary": {"status": status}}]}]}, "metadata": {"version": "4.2.3"}})


def warning(code, severity, text):
    return {"error_category": 10, "error_id": code, "error_severity": severity, "warning": text}


def result(status, warnings, gpu=0):
    out = {"entity_group": "GPU", "entity_group_id": 1, "status": status, "warnings": warnings}
    if gpu is not None:
        out["entity_id"] = gpu
    return out


def test_a_failed_test_names_dcgms_code_severity_words_and_the_gpu_to_reset():
    [f] = judged(ran(doc([result("Fail", [warning(52, 2, "Memory miscompare at 0x1f00")], gpu=3)])))
    assert (f.status.value, f.title, f.subject, f.family) == (
        "fail", "DCGM memory failed on GPU 3: DCGM_FR_FAULTY_MEMORY (ISOLATE)", "GPU 3", "dcgm_diag")
    assert f.detail == ("DCGM says: Memory miscompare at 0x1f00. Severity ISOLATE: the GPU cannot take work and "
                        "should be isolated.")
    assert [(e.source, e.excerpt) for e in f.evidence] == [("command:dcgmi_diag", "Memory miscompare at 0x1f00")]
    assert f.fix.kb_id == "dcgm_diag_failure"
    assert f.fix.commands == ("dcgmi diag -r 1 -j", RESET_CMD.format(3), "sudo nvidia-bug-report.sh")


def test_the_worst_of_several_warnings_decides_and_each_is_quoted():
    warnings = [warning(5, 1, "single-bit errors seen"), warning(52, 2, "  faulty memory  "),
                warning(29, 5, "persistence off.")]
    [f] = judged(ran(doc([result("Warn", warnings)], status="Warn")))
    # DCGM rated the test a warning: it stays one, with the most serious code named.
    assert (f.status.value, f.title) == ("warn", "DCGM memory warned on GPU 0: DCGM_FR_FAULTY_MEMORY (ISOLATE)")
    assert f.detail.startswith("DCGM says: faulty memory. Severity ISOLATE: ")
    assert [e.excerpt for e in f.evidence] == ["single-bit errors seen", "  faulty memory  ", "persistence off."]


def test_a_failure_without_a_warning_or_a_gpu_says_so():
    [f] = judged(ran(doc([result("Fail", [], gpu=None)])))
    assert (f.status.value, f.title, f.subject) == ("fail", "DCGM memory failed on all GPUs", "all GPUs")
    assert f.detail == "DCGM says: no reason given."
    assert [(e.source, e.excerpt) for e in f.evidence] == [("command:dcgmi_diag", "Hardware/memory: fail")]
    assert f.fix.commands[1] == RESET_CMD.format("<gpu_index>")


def test_only_four_warnings_are_quoted_each_cut_to_300_characters():
    warnings = [warning(5, 1, f"warning {i} " + "x" * 400) for i in range(6)]
    [f] = judged(ran(doc([result("Fail", warnings)])))
    assert [len(e.excerpt) for e in f.evidence] == [300] * 4
    assert f.evidence[3].excerpt.startswith("warning 3 ")
    assert f.status.value == "warn"  # MONITOR only: work can run


def test_an_unknown_code_with_a_severity_is_named_by_number():
    [f] = judged(ran(doc([result("Fail", [warning(777, 4, "new check")])])))
    assert (f.status.value, f.title) == ("fail", "DCGM memory failed on GPU 0: DCGM code 777 (TRIAGE)")
    [g] = judged(ran(doc([result("Fail", [{"warning": "no code at all"}])])))
    assert g.title == "DCGM memory failed on GPU 0" and g.detail == "DCGM says: no code at all."


def test_problems_come_with_the_tests_that_passed_and_their_figures():
    findings = judged(ran(REAL_L2, level=2), level=2)
    assert [(f.status.value, f.title) for f in findings] == [
        ("warn", "DCGM software failed on GPU 0: DCGM_FR_PERSISTENCE_MODE (CONFIG)"),
        ("ok", "DCGM 4.5.2 level 2: 2 test(s) passed (memory, pcie)")]
    assert findings[0].symptom_of == ("NOD006", "NOD003") and findings[0].family is None
    assert [e.excerpt for e in findings[1].evidence] == [
        "memory on GPU 0: Allocated 112427837082 bytes (87.5%)",
        "pcie on GPU 0: GPU to Host bandwidth: 58.62 GB/s; Host to GPU bandwidth: 58.88 GB/s; bidirectional "
        "bandwidth: 58.69 GB/s; GPU to Host latency: 1.563 us; Host to GPU latency: 1.740 us; bidirectional "
        "latency: 3.078 us"]


def test_passes_and_skips_are_summed_up():
    results = [result("Pass", []), result("Skip", [], gpu=1)]
    both = json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "memory", "results": results[:1]}, {"name": "pcie", "results": results[1:]},
        {"name": "diagnostic", "results": [result("Pass", [], gpu=1)]}]}]}, "metadata": {"version": "4.2.3"}})
    [f] = judged(ran(both, rc=0))
    assert (f.status.value, f.title, f.evidence) == (
        "ok", "DCGM 4.2.3 level 1: 2 test(s) passed (diagnostic, memory), 1 skipped (pcie)", ())
