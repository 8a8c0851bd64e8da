"""DCGM's diagnostic (``--dcgm LEVEL``): its results and DCGM_FR failure codes as findings.

A failed result is judged by DCGM's own severity for its code (``knowledge/data/dcgm_errors.json``):
ISOLATE, RESET, TRIAGE and unknown codes fail (the hook drains), MONITOR and CONFIG warn. A
code that a gpudoctor check judges from nvidia-smi too (persistence, pending row remaps, PCIe
width, clock slowdowns) names that check, so one cause is one diagnosis. DCGM not installed or
nv-hostengine not running is a skip with the reason (the fact says which).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, Finding, fail, ok, unknown, warn
from gpudoctor.knowledge import dcgm as dcgm_knowledge
from gpudoctor.recipes import recipe

_SEVERITY_ORDER = ("RESET", "ISOLATE", "TRIAGE", "UNKNOWN", "MONITOR", "CONFIG", "NONE")


def _worst(warnings) -> Tuple[Optional[str], Optional[object]]:
    """(DCGM severity name, the warning that carries it) of the most serious warning."""
    rated = []
    for w in warnings:
        known = dcgm_knowledge.code(w.code)
        severity = dcgm_knowledge.severity_name(w.severity) or (known.severity if known else None)
        rated.append((severity, w))
    rated.sort(key=lambda sw: _SEVERITY_ORDER.index(sw[0]) if sw[0] in _SEVERITY_ORDER else 3)
    return rated[0] if rated else (None, None)


def _on(result) -> str:
    return f"GPU {result.gpu}" if result.gpu not in (None, "") else "all GPUs"


def _finding(f: Facts, diag, result) -> Finding:
    severity, warning = _worst(result.warnings)
    known = dcgm_knowledge.code(warning.code) if warning is not None else None
    # DCGM's own "warn" stays a warning; a failed test fails when its severity says so
    make = fail if result.status != "warn" and dcgm_knowledge.status_for(severity) == "fail" else warn
    name = known.name if known else (f"DCGM code {warning.code}" if warning and warning.code is not None else None)
    said = warning.text.strip() if warning is not None and warning.text else "no reason given"
    rated = f" ({severity})" if severity else ""
    title = f"DCGM {result.test} {'warned' if result.status == 'warn' else 'failed'} on {_on(result)}" + (
        f": {name}{rated}" if name else rated)
    return make(title, subject=_on(result), family=None if known and known.recipe else "dcgm_diag",
                symptom_of=known.explained_by if known else (),
                detail=f"DCGM says: {said}" + ("" if said[-1] in ".!?" else ".") + (f" Severity {severity}: {dcgm_knowledge.severity_meaning(severity)}."
                                               if severity else ""),
                evidence=[Evidence(f"command:dcgmi_diag", w.text[:300]) for w in result.warnings[:4]]
                or [Evidence("command:dcgmi_diag", f"{result.category}/{result.test}: {result.status}")],
                fix=recipe(known.recipe if known and known.recipe else "dcgm_diag_failure", f, level=diag.level,
                           what=said, gpu=_on(result), gpus=_on(result), gpu_index=result.gpu))


@check("DCG001", "dcgm-diag", "DCGM's diagnostic passes on every GPU", needs=("dcgm_diag",), params=("dcgm",))
def dcgm_diag(f: Facts):
    """``dcgmi diag -r LEVEL -j``: a finding per failed or warned test and GPU; passes and skips summed up."""
    diag = f["dcgm_diag"]
    problems: List[Finding] = [_finding(f, diag, r) for r in diag.results if r.status in ("fail", "warn")]
    passed = _passed(diag)
    if problems:
        return problems + ([passed] if passed is not None else [])
    if passed is None:
        skipped = sorted({r.test for r in diag.results if r.status == "skip"})
        return unknown(f"{_head(diag)}: no test ran" + (f" ({len(skipped)} skipped: {', '.join(skipped)})"
                                                         if skipped else ""))
    return passed


def _head(diag) -> str:
    return f"DCGM {diag.version} level {diag.level}" if diag.version else f"DCGM level {diag.level}"


def _passed(diag) -> Optional[Finding]:
    """The tests that passed, with DCGM's figures (PCIe bandwidth...), and those it skipped; None if none passed."""
    ran = [r for r in diag.results if r.status == "pass"]
    if not ran:
        return None
    tests = sorted({r.test for r in ran})
    skipped = sorted({r.test for r in diag.results if r.status == "skip"})
    return ok(f"{_head(diag)}: {len(tests)} test(s) passed ({', '.join(tests)})"
              + (f", {len(skipped)} skipped ({', '.join(skipped)})" if skipped else ""),
              evidence=[Evidence("command:dcgmi_diag", f"{r.test} on {_on(r)}: " + "; ".join(
                  " ".join(i.split()) for i in r.info)) for r in ran if r.info])


CHECKS = (dcgm_diag,)
