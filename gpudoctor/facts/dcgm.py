"""The DCGM diagnostic fact: what ``dcgmi diag -r LEVEL -j`` reported (recorded only when asked).

DCGM 3.x writes ``{"DCGM GPU Diagnostic": {"test_categories": [...]}}`` with ``gpu_ids`` per
result and warnings as strings or objects; DCGM 4.x writes ``{"DCGM Diagnostic": ...}`` with
``entity_group``/``entity_id`` per result, warnings as objects carrying ``error_id`` (a
DCGM_FR_* code), ``error_severity`` and ``error_category``, and ``metadata`` with the versions
(4.2.3 and 4.5.2 captures: fixtures/dcgm/). When the diagnostic cannot run, the JSON holds
``runtime_error``; when nv-hostengine is down, dcgmi prints "Error: Unable to connect to host
engine" as plain text and exits 235.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from gpudoctor.facts import Facts, Missing, NotApplicable, fact

KEY = "dcgmi_diag"


@dataclass(frozen=True)
class DcgmWarning:
    """One reason DCGM gave for a result."""

    text: str
    code: Optional[int]       # DCGM_FR_* number (error_id); None in DCGM 3.x string warnings
    severity: Optional[int]   # dcgmErrorSeverity_t (error_severity): 2 ISOLATE, 5 CONFIG, 6 RESET ...


@dataclass(frozen=True)
class DcgmResult:
    """One test's result on one GPU (or on all of them: the deployment test in DCGM 3.x)."""

    category: str             # "Deployment", "Hardware", "Integration", "Stress"
    test: str                 # "software", "memory", "pcie", "Persistence Mode" ...
    gpu: Optional[str]        # "0", "0,1" (3.x), None when the result names no GPU
    status: str               # "pass", "fail", "warn", "skip"
    warnings: Tuple[DcgmWarning, ...]
    info: Tuple[str, ...]


@dataclass(frozen=True)
class DcgmDiag:
    level: Optional[int]      # the -r level that ran
    version: Optional[str]    # DCGM's version ("4.2.3")
    results: Tuple[DcgmResult, ...]
    exit_code: Optional[int]  # dcgmi's exit status: 0, 226 (an error reported), 205 (isolate) ...


def _warnings(raw: Any) -> Tuple[DcgmWarning, ...]:
    out: List[DcgmWarning] = []
    for w in raw if isinstance(raw, list) else []:
        if isinstance(w, dict):
            out.append(DcgmWarning(str(w.get("warning") or w.get("message") or ""), _int(w.get("error_id")),
                                   _int(w.get("error_severity"))))
        elif isinstance(w, str):
            out.append(DcgmWarning(w, None, None))
    return tuple(out)


def _int(value: Any) -> Optional[int]:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _result(category: str, test: Dict, r: Dict) -> DcgmResult:
    gpu = r.get("entity_id") if r.get("entity_group", "GPU") == "GPU" else None
    gpu = r.get("gpu_ids", r.get("gpu_id", gpu))
    warnings = _warnings(r.get("warnings"))
    summary = test.get("test_summary") or {}
    if not warnings and str(r.get("status", "")).lower() == "fail":  # 4.x may keep them in the summary only
        warnings = _warnings(summary.get("warnings"))
    info = tuple(str(x) for x in (r.get("info") or summary.get("info") or []) if isinstance(x, str))
    return DcgmResult(category, str(test.get("name") or "?"), None if gpu is None else str(gpu),
                      str(r.get("status") or "").lower(), warnings, info)


def parse(text: str) -> Tuple[Optional[str], Tuple[DcgmResult, ...], Optional[str]]:
    """(DCGM version, results, runtime error) from dcgmi's JSON; raises ValueError when there is none."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON in dcgmi's output")
    doc, _ = json.JSONDecoder().raw_decode(text[start:])
    root = doc.get("DCGM Diagnostic") or doc.get("DCGM GPU Diagnostic")
    if not isinstance(root, dict):
        raise ValueError("dcgmi's JSON has no 'DCGM Diagnostic' object")
    results = tuple(_result(str(cat.get("category") or ""), test, r)
                    for cat in root.get("test_categories") or [] for test in cat.get("tests") or []
                    for r in test.get("results") or [])
    version = (doc.get("metadata") or {}).get("version") or root.get("version")
    return version, results, root.get("runtime_error") or None


@fact("dcgm_diag")
def dcgm_diag(f: Facts) -> DcgmDiag:
    """DCGM's diagnostic results (``dcgmi diag -r LEVEL -j``), per test and GPU."""
    from gpudoctor.knowledge import dcgm

    res = f.snapshot.command(KEY)
    if res is None:
        raise Missing("dcgmi diag was not run (gpudoctor check --dcgm LEVEL, or hook --dcgm LEVEL)")
    if res.error == "not found":
        raise NotApplicable("DCGM is not installed (dcgmi not found on PATH)")
    if res.timed_out:
        raise Missing(f"`{' '.join(res.argv)}` did not finish within {res.duration_s:.0f}s")
    if dcgm.no_hostengine(res.stdout + res.stderr):
        raise NotApplicable("DCGM's nv-hostengine is not running (dcgmi: Unable to connect to host engine); "
                            "start it with: sudo systemctl start nvidia-dcgm")
    try:
        version, results, runtime_error = parse(res.stdout)
    except ValueError as exc:
        said = (res.stdout.strip() or res.stderr.strip()).splitlines()[:1]
        raise Missing(f"{res.describe()}: {exc}" + (f" ({said[0][:200]})" if said else "")) from None
    if runtime_error:
        raise Missing(f"dcgmi diag could not run: {runtime_error.strip()[:300]}")
    level = _int(res.argv[3]) if len(res.argv) > 3 else None
    return DcgmDiag(level, version, results, res.returncode)
