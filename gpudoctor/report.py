"""A report: the findings of one run over one snapshot, plus what was checked.

One policy maps a report to the exit code (see :class:`~gpudoctor.exitcodes.ExitCode`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import gpudoctor
from gpudoctor.engine import Check, run_checks
from gpudoctor.exitcodes import ExitCode
from gpudoctor.facts import Facts
from gpudoctor.findings import Finding, Status
from gpudoctor.plugins import PluginProblem, load_checks
from gpudoctor.snapshot import Snapshot
from gpudoctor.summary import machine_summary

SCHEMA = "gpudoctor.report/1"


@dataclass
class Report:
    findings: List[Finding]
    checks: List[Check]
    plugin_problems: List[PluginProblem] = field(default_factory=list)
    snapshot_meta: Dict = field(default_factory=dict)
    source: Optional[str] = None
    machine: Dict = field(default_factory=dict)

    def counts(self) -> Dict[str, int]:
        counts = {s.value: 0 for s in Status}
        for f in self.findings:
            counts[f.status.value] += 1
        return counts

    def exit_code(self, strict: bool = False) -> ExitCode:
        statuses = {f.status for f in self.findings}
        if Status.FAIL in statuses:
            return ExitCode.PROBLEM
        if Status.ERROR in statuses:
            return ExitCode.INTERNAL
        if strict and (Status.WARN in statuses or self.plugin_problems):
            return ExitCode.PROBLEM
        return ExitCode.OK

    def to_dict(self) -> Dict:
        return {
            "schema": SCHEMA,
            "gpudoctor_version": gpudoctor.__version__,
            "source": self.source or "live",
            "snapshot": {k: self.snapshot_meta.get(k) for k in ("created", "hostname", "gpudoctor_version")},
            "machine": self.machine,
            "summary": self.counts(),
            "findings": [f.to_dict() for f in self.findings],
            "checks": [c.info() for c in self.checks],
            "plugin_problems": [p.to_dict() for p in self.plugin_problems],
        }


def build_report(snapshot: Snapshot, only: Optional[Sequence[str]] = None,
                 checks: Optional[List[Check]] = None) -> Report:
    problems: List[PluginProblem] = []
    if checks is None:
        checks, problems = load_checks()
    findings = run_checks(snapshot, checks, only)
    ran = {f.check_id for f in findings}
    return Report(findings=findings, checks=[c for c in checks if c.id in ran], plugin_problems=problems,
                  snapshot_meta=snapshot.meta, source=snapshot.source,
                  machine=machine_summary(Facts(snapshot)))
