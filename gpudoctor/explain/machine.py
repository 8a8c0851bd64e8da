"""What `gpudoctor check` concludes about the machine an error came from (``--snapshot``/``--here``).

explain does not judge a machine itself: it runs the same checks over the same snapshot
and reads the report's diagnoses (root causes with their symptoms and one fix, see
``gpudoctor.diagnoses``). A diagnosis whose family is the text's family, or one of the
candidates of its differential, decides between them; a candidate whose distinguishing
check passed, or does not apply to this machine, is ruled out by that check's finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

from gpudoctor.findings import Finding, Status

PLACES = {"container": "a container", "wsl": "WSL"}


@dataclass
class Verdict:
    """What the machine says about one candidate family."""

    kind: str                       # "decided", "ruled_out" or "not_judged"
    text: str
    check: Optional[str] = None

    def to_dict(self) -> Dict[str, Optional[str]]:
        return {"verdict": self.kind, "evidence": self.text, "check": self.check}


@dataclass
class MachineView:
    diagnoses: Dict[str, object] = field(default_factory=dict)      # family -> gpudoctor.diagnoses.Diagnosis
    findings: Dict[str, Finding] = field(default_factory=dict)      # check id -> its first finding
    places: Dict[str, bool] = field(default_factory=dict)           # "container"/"wsl" -> inside it, when known

    def diagnosis(self, family: str):
        return self.diagnoses.get(family)

    def verdict(self, family: str, tell) -> Optional[Verdict]:
        """Decided by a machine diagnosis of ``family``; ruled out by the machine not being the place the
        cause needs (``tell.only_in``: a container, WSL) or by the distinguishing check passing."""
        diag = self.diagnoses.get(family)
        if diag is not None:
            return Verdict("decided", f"on this machine: {diag.title} (found by check {diag.cause.check_id})",
                           diag.cause.check_id)
        if tell.only_in and self.places.get(tell.only_in) is False:
            return Verdict("ruled_out", f"ruled out on this machine: it is not {PLACES[tell.only_in]}")
        finding = self.findings.get(tell.check or "")
        if finding is None:
            return None
        if finding.status is Status.OK:
            return Verdict("ruled_out", f"ruled out on this machine: {finding.title} (check {finding.check_id})",
                           finding.check_id)
        if finding.status is Status.SKIP:
            return Verdict("not_judged", f"not judged on this machine: {finding.title}", finding.check_id)
        return None

    def decided(self, diag) -> Dict[str, object]:
        """A machine diagnosis as explain's JSON shows it."""
        return {"family": diag.family, "title": diag.title, "check": diag.cause.check_id,
                "status": diag.status.value, "symptoms": [s.check_id for s in diag.symptoms]}


def view(facts) -> Optional[MachineView]:
    """The checks' report on the snapshot behind ``facts``, by family and by check; None without facts."""
    if facts is None:
        return None
    from gpudoctor.report import build_report

    report = build_report(facts.snapshot)
    out = MachineView()
    for diag in report.diagnoses:
        out.diagnoses.setdefault(diag.family, diag)
    for finding in report.findings:
        out.findings.setdefault(finding.check_id, finding)
    for place in PLACES:
        inside = getattr(facts.get(place), "inside", None)  # Container / Wsl; None: unknown here,
        if inside is not None:                                # so neither place is ruled out
            out.places[place] = bool(inside)
    return out
