"""Diagnoses above findings: grouping by symptom_of and by family+subject+recipe, the cause, the
fix, the order, and the JSON a diagnosis becomes (gpudoctor/diagnoses.py)."""

from __future__ import annotations

from gpudoctor.diagnoses import Diagnosis, diagnose, family_of
from gpudoctor.findings import Fix, Status, fail, ok, skip, warn
from tests.scenarios import SCENARIOS, report_for


def _f(check_id, maker=fail, title=None, **kw):
    return maker(title or f"{check_id} says so", **kw).with_id(check_id)


def _shape(diags):
    return [(d.family, d.status.value, d.cause.check_id, [s.check_id for s in d.symptoms]) for d in diags]


def test_family_of_prefers_the_declared_family_then_the_recipes_then_the_check():
    assert family_of(_f("A1", family="gpu_slowdown", fix=Fix("x", kb_id="nouveau_conflict"))) == "gpu_slowdown"
    # recipe cuda_device_order belongs to the family cuda_visible_devices (knowledge/recipes)
    assert family_of(_f("A1", fix=Fix("x", kb_id="cuda_device_order"))) == "cuda_visible_devices"
    assert family_of(_f("A1", fix=Fix("x", kb_id="no_such_recipe"))) == "no_such_recipe"
    assert family_of(_f("A1", fix=Fix("x"))) == "check:A1"
    assert family_of(_f("A1")) == "check:A1"


def test_a_recorded_nouveau_machine_is_one_diagnosis_with_its_json():
    report = report_for(SCENARIOS / "sys-nouveau-loaded")
    (d,) = report.diagnoses
    got = d.to_dict()
    fix = got.pop("fix")
    assert got == {
        "family": "nouveau_conflict", "family_title": "nouveau holds the GPU", "status": "fail",
        "title": "nvidia-smi cannot talk to the NVIDIA driver: nouveau holds the GPU", "subject": None,
        "cause": {"check_id": "DRV001", "status": "fail",
                  "title": "nvidia-smi cannot talk to the NVIDIA driver: nouveau holds the GPU"},
        "symptoms": [
            {"check_id": "NOU001", "status": "fail",
             "title": "nouveau is loaded and holds GPU 01:00.0: the NVIDIA driver cannot take it"},
            {"check_id": "NOU002", "status": "warn",
             "title": "nouveau is not blacklisted: at the next boot it can take the NVIDIA GPU before the "
                      "NVIDIA driver"}]}
    assert fix["kb_id"] == "nouveau_conflict" and fix["needs_root"] is True and fix["needs_reboot"] is True
    assert fix["commands"][1:3] == ["sudo dracut --force", "sudo reboot"]
    assert [report.diagnosis_of(f) for f in report.findings if f.check_id in ("DRV001", "NOU001", "NOU002")] \
        == [0, 0, 0]
    assert report.diagnosis_of(next(f for f in report.findings if f.check_id == "SEC001")) is None


def test_a_diagnosis_covers_its_own_findings_only():
    cause, symptom, other = _f("A1"), _f("B1", maker=warn), _f("C1")
    d = Diagnosis("fam", Status.FAIL, cause, (symptom,))
    assert d.findings == (cause, symptom)
    assert d.covers(cause) and d.covers(symptom) and not d.covers(other)
    assert not d.covers(_f("A1"))  # an equal finding is not the same finding


def test_the_fix_is_the_causes_else_the_first_symptom_with_one():
    first, second = Fix("first", kb_id="r1"), Fix("second", kb_id="r2")
    assert Diagnosis("fam", Status.FAIL, _f("A1"), (_f("B1"), _f("C1", fix=first), _f("D1", fix=second))).fix == first
    assert Diagnosis("fam", Status.FAIL, _f("A1", fix=second), (_f("C1", fix=first),)).fix == second
    d = Diagnosis("fam", Status.WARN, _f("A1", maker=warn))
    assert d.fix is None and d.to_dict()["fix"] is None and d.subject is None
    assert Diagnosis("fam", Status.FAIL, _f("A1", subject="GPU 3")).to_dict()["subject"] == "GPU 3"


def test_symptoms_follow_their_explainer_up_to_the_root():
    root = _f("ROOT1", fix=Fix("r", kb_id="driver_too_old"))
    mid = _f("MID1", symptom_of=("ROOT1",))
    leaf = _f("LEAF1", maker=warn, symptom_of=("MID1",))
    quiet = _f("ROOT1", maker=ok)  # not a problem: explains nothing
    (d,) = diagnose([leaf, quiet, mid, root])
    assert _shape([d]) == [("driver_too_old", "fail", "ROOT1", ["LEAF1", "MID1"])]


def test_a_named_cause_without_a_problem_leaves_the_symptom_its_own_diagnosis():
    lone = _f("LEAF1", maker=warn, symptom_of=("ROOT1", "OTHER1"))
    assert _shape(diagnose([_f("ROOT1", maker=ok), lone, _f("OTHER1", maker=skip)])) == \
        [("check:LEAF1", "warn", "LEAF1", [])]
    # the first named check with a problem explains it, in symptom_of's order
    a, b = _f("A1"), _f("B1")
    leaf = _f("LEAF1", maker=warn, symptom_of=("B1", "A1"))
    shapes = _shape(diagnose([a, b, leaf]))
    assert ("check:B1", "fail", "B1", ["LEAF1"]) in shapes and ("check:A1", "fail", "A1", []) in shapes


def test_a_finding_never_explains_itself_but_another_of_its_check_does():
    first, second = _f("A1", title="one", symptom_of=("A1",)), _f("A1", title="two", symptom_of=("A1",))
    (d,) = diagnose([first, second])  # a two-cycle: the first in report order is the cause
    assert d.cause is first and d.symptoms == (second,)
    alone = _f("A1", symptom_of=("A1",))
    assert [(d.cause, d.symptoms) for d in diagnose([alone])] == [(alone, ())]


def test_a_cycle_of_three_ends_at_its_first_finding_in_report_order():
    a = _f("A1", maker=warn, symptom_of=("C1",))
    b = _f("B1", symptom_of=("A1",))
    c = _f("C1", symptom_of=("B1",))
    (d,) = diagnose([a, b, c])
    assert d.cause is a and [s.check_id for s in d.symptoms] == ["B1", "C1"] and d.status is Status.FAIL


def test_same_family_subject_and_recipe_merge_the_most_severe_becomes_the_cause():
    fix = Fix("blacklist", kb_id="nouveau_conflict")
    w = _f("NOU002", maker=warn, fix=fix)
    f1 = _f("NOU001", fix=fix)
    f2 = _f("DRV001", fix=fix)
    (d,) = diagnose([w, f1, f2])
    assert d.cause is f1 and d.symptoms == (w, f2) and d.status is Status.FAIL
    assert d.family == "nouveau_conflict"


def test_findings_without_a_recipe_or_on_other_subjects_stay_apart():
    a, b = _f("T1", maker=warn, family="gpu_slowdown"), _f("T2", maker=warn, family="gpu_slowdown")
    assert len(diagnose([a, b])) == 2
    fix = Fix("reseat", kb_id="pcie_link_degraded")
    g0, g1 = _f("PCI001", maker=warn, subject="GPU 0", fix=fix), _f("PCI001", maker=warn, subject="GPU 1", fix=fix)
    assert [d.cause for d in diagnose([g0, g1])] == [g0, g1]
    other = _f("CLK001", maker=warn, subject="GPU 0", fix=Fix("x", kb_id="gpu_slowdown"))
    assert len(diagnose([g0, other])) == 2


def test_diagnoses_are_ordered_by_severity_then_family_rank_then_report_order():
    late = _f("Z1", family="xid_or_hardware")            # rank 10
    early = _f("A1", family="persistence_mode_off")      # ranks after xid_or_hardware
    w = _f("W1", maker=warn, family="xid_or_hardware")
    unknown1, unknown2 = _f("U1", family="zz_unknown"), _f("U2", family="zz_unknown")
    got = [d.cause.check_id for d in diagnose([w, unknown1, early, unknown2, late, _f("OK1", maker=ok)])]
    assert got == ["Z1", "A1", "U1", "U2", "W1"]
