"""Every recorded machine scenario replays into its expected findings (golden tests)."""

from __future__ import annotations

import json
import os

import pytest

from gpudoctor.findings import Status
from tests.scenarios import expected, finding_text, report_for, scenario_dirs, text_report

pytestmark = pytest.mark.usefixtures("smi_parse_memo")  # the recordings are parsed once (conftest)

DIRS = scenario_dirs()
# GPUDOCTOR_UPDATE_GOLDENS=1 rewrites each scenario's expected.txt from the current output, for a change
# that means to alter the report; review the diff before committing it.
UPDATE = os.environ.get("GPUDOCTOR_UPDATE_GOLDENS") == "1"


def test_there_are_scenarios():
    assert len(DIRS) >= 5


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_scenario(path):
    exp = expected(path)
    report = report_for(path)
    statuses = {}
    for f in report.findings:
        statuses.setdefault(f.check_id, set()).add(f.status.value)
    for check_id, status in exp.get("expect", {}).items():
        assert check_id in statuses, f"{check_id} produced no finding"
        worst = max((Status(s) for s in statuses[check_id]), key=lambda s: s.rank)
        assert worst.value == status, f"{check_id}: expected {status}, got {sorted(statuses[check_id])}"
    for check_id, needles in exp.get("contains", {}).items():
        text = finding_text(report, check_id)
        for needle in needles:
            assert needle in text, f"{check_id}: {needle!r} not in\n{text}"
    for check_id, needles in exp.get("lacks", {}).items():
        text = finding_text(report, check_id)
        for needle in needles:
            assert needle not in text, f"{check_id}: {needle!r} must not be offered here:\n{text}"
    if "diagnoses" in exp:
        got = [{"family": d.family, "cause": d.cause.check_id, "symptoms": [s.check_id for s in d.symptoms]}
               for d in report.diagnoses]
        assert got == exp["diagnoses"]
    forbidden = set(exp.get("no_other", [])) | {"error"}
    for check_id, found in statuses.items():
        if check_id not in exp.get("expect", {}):
            assert not (found & forbidden), f"{check_id} unexpectedly {sorted(found & forbidden)}"
    unpinned = sorted(set(statuses) - set(exp.get("expect", {})))
    assert not unpinned, f"every check's status must be pinned in expected.json; not pinned: {unpinned}"
    if "exit_code" in exp:
        assert int(report.exit_code()) == exp["exit_code"]


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_scenario_text_golden(path):
    """The whole report as a person reads it: any change in what is shown is a change to review."""
    golden = path / "expected.txt"
    text = text_report(path)
    if UPDATE:
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"{golden} is missing (GPUDOCTOR_UPDATE_GOLDENS=1 writes it)"
    assert text == golden.read_text(encoding="utf-8")


def _finding_record(f) -> dict:
    """A finding as the golden keeps it: every field the check set (defaults left out, to keep it short)."""
    return {k: v for k, v in f.to_dict().items() if v not in (None, [], False, "")}


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_scenario_findings_golden(path):
    """Every finding of every check, skips and passes included: title, detail, evidence and fix, exactly
    (the text report shows a skip's reason and a pass's evidence only with --verbose)."""
    golden = path / "expected-findings.json"
    got = [_finding_record(f) for f in report_for(path).findings]
    if UPDATE:
        golden.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert golden.is_file(), f"{golden} is missing (GPUDOCTOR_UPDATE_GOLDENS=1 writes it)"
    want = json.loads(golden.read_text(encoding="utf-8"))
    assert [f["check_id"] for f in got] == [f["check_id"] for f in want]
    for g, w in zip(got, want):
        assert g == w, f"{w['check_id']} changed"


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_scenario_replays_identically(path):
    a, b = report_for(path), report_for(path)
    assert [f.to_dict() for f in a.findings] == [f.to_dict() for f in b.findings]
