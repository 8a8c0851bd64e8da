"""A report: the findings of one run over one snapshot, the diagnoses above them, what was checked.

One policy maps a report to the exit code (see :class:`~gpudoctor.exitcodes.ExitCode`).
Renderers only format a report: every verdict, grouping and order is decided here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import gpudoctor
from gpudoctor.diagnoses import Diagnosis, diagnose, family_of
from gpudoctor.engine import Check, run_checks
from gpudoctor.exitcodes import ExitCode
from gpudoctor.facts import Facts
from gpudoctor.findings import Finding, Status
from gpudoctor.plugins import PluginProblem, load_checks
from gpudoctor.requirements import Requirements
from gpudoctor.snapshot import Snapshot
from gpudoctor.summary import machine_summary

SCHEMA = "gpudoctor.report/2"


@dataclass
class Report:
    findings: List[Finding]
    checks: List[Check]
    plugin_problems: List[PluginProblem] = field(default_factory=list)
    snapshot_meta: Dict = field(default_factory=dict)
    source: Optional[str] = None
    machine: Dict = field(default_factory=dict)
    diagnoses: List[Diagnosis] = field(default_factory=list)
    devices: Optional[Dict] = None  # the CUDA_VISIBLE_DEVICES mapping (visible_devices.Mapping.to_dict)

    def diagnosis_of(self, finding: Finding) -> Optional[int]:
        """The index of the diagnosis that covers ``finding``, or None."""
        return next((i for i, d in enumerate(self.diagnoses) if d.covers(finding)), None)

    def passed(self) -> List[Finding]:
        return [f for f in self.findings if f.status is Status.OK]

    def could_not_tell(self) -> List[Finding]:
        """Checks that could not judge and say what to do about it (a fix): shown, never hidden as skips."""
        return [f for f in self.findings if f.status is Status.SKIP and f.cannot_tell and f.fix is not None]

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
        if strict and (Status.WARN in statuses or self.plugin_problems or self.could_not_tell()):
            return ExitCode.PROBLEM
        return ExitCode.OK

    def to_dict(self) -> Dict:
        return {
            "schema": SCHEMA,
            "gpudoctor_version": gpudoctor.__version__,
            "source": self.source or "live",
            "snapshot": {k: self.snapshot_meta.get(k) for k in ("created", "hostname", "gpudoctor_version")},
            "machine": self.machine,
            "summary": {**self.counts(), "diagnoses": len(self.diagnoses)},
            "diagnoses": [d.to_dict() for d in self.diagnoses],
            "devices": self.devices,
            "findings": [self._finding_dict(f) for f in self.findings],
            "checks": [c.info() for c in self.checks],
            "plugin_problems": [p.to_dict() for p in self.plugin_problems],
        }


    def _finding_dict(self, f: Finding) -> Dict:
        d = f.to_dict()
        d["family"] = family_of(f) if f.status in (Status.FAIL, Status.WARN) else f.family
        d["diagnosis"] = self.diagnosis_of(f)
        return d


def build_report(snapshot: Snapshot, only: Optional[Sequence[str]] = None,
                 checks: Optional[List[Check]] = None, requirements: Optional[Requirements] = None) -> Report:
    problems: List[PluginProblem] = []
    if checks is None:
        checks, problems = load_checks()
    findings = run_checks(snapshot, checks, only, requirements)
    ran = {f.check_id for f in findings}
    facts = Facts(snapshot, requirements)
    mapping = facts.get("visible_devices")
    return Report(findings=findings, checks=[c for c in checks if c.id in ran], plugin_problems=problems,
                  snapshot_meta=snapshot.meta, source=snapshot.source,
                  machine=machine_summary(facts), diagnoses=diagnose(findings),
                  devices=mapping.to_dict() if mapping is not None else None)
