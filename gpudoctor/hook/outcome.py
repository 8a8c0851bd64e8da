"""The hook's verdict: one exit code and one line that fits a Slurm drain reason or an NPD message.

The verdict is read off the findings of the checks the hook selected, the same findings
``gpudoctor check`` prints. Exit codes (:class:`~gpudoctor.exitcodes.HookExit`) follow
node-problem-detector's plugin protocol, which Slurm wrappers map easily: 0 healthy, 1 a
problem with the node, 2 unknown (a check could not judge, or gpudoctor itself failed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Sequence

from gpudoctor.exitcodes import HookExit
from gpudoctor.findings import Finding, Status

PREFIX = "gpudoctor: "
UNKNOWN_LEAD = "cannot tell: "
CRASH_LEAD = "internal error, not judging this node: "
MAX_REASON_CHARS = 200   # a drain reason people read in `sinfo -R`; long ones get cut there anyway
NPD_MAX_BYTES = 80       # node-problem-detector's default max_output_length
SCHEMA = "gpudoctor.hook/2"


@dataclass
class Outcome:
    exit_code: HookExit
    reasons: List[str] = field(default_factory=list)   # one per problem (or unknown), most important first
    lead: str = ""                                      # "", UNKNOWN_LEAD or CRASH_LEAD
    findings: List[Finding] = field(default_factory=list)  # of the selected checks, in check order
    diagnoses: List = field(default_factory=list)          # gpudoctor.diagnoses.Diagnosis
    duration_s: float = 0.0
    lenient: Sequence[str] = ()                            # checks whose cannot-tell is "not judged"

    @property
    def state(self) -> str:
        return {HookExit.OK: "ok", HookExit.PROBLEM: "problem"}.get(self.exit_code, "unknown")

    @property
    def line(self) -> str:
        """The one-line reason ("" when healthy)."""
        return reason_line(self.reasons, self.lead) if self.exit_code != HookExit.OK else ""

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, "state": self.state, "exit_code": int(self.exit_code),
                "reason": self.line, "duration_s": round(self.duration_s, 3),
                "diagnoses": [d.to_dict() for d in self.diagnoses],
                "checks": [{"check": f.check_id, "state": verdict(f, self.lenient), "status": f.status.value,
                            "title": f.title} for f in self.findings]}


def verdict(f: Finding, lenient: Sequence[str] = ()) -> str:
    """What one finding means to a scheduler: a failure is a problem with the node; a check that
    crashed or could not read its facts is unknown; a warning, a pass or a check that does not
    apply is ok (a warning is for a person, not a reason to drain). A ``lenient`` check (one the hook
    runs because a requirement is on by default, not because the administrator asked) that cannot
    tell is not judged: ok, with its skip in the JSON and -v."""
    if f.status is Status.FAIL:
        return "problem"
    if f.status is Status.ERROR:
        return "unknown"
    if f.status is Status.SKIP and f.cannot_tell:
        return "ok" if f.check_id in lenient else "unknown"
    return "ok"


def message(f: Finding) -> str:
    """The finding's own words, without the engine's "<check title>: skipped, " lead."""
    if f.status is Status.ERROR:
        return f"check {f.check_id} crashed"
    return f.title.split(": skipped, ", 1)[1] if ": skipped, " in f.title else f.title


def decide(findings: Sequence[Finding], diagnoses: Sequence = (), lenient: Sequence[str] = ()) -> Outcome:
    """Problems win over unknowns. A problem is named once per root cause: by its diagnosis when
    the failed finding has one (``diagnoses``), else by the finding's title."""
    failed = [f for f in findings if verdict(f) == "problem"]
    if failed:
        return Outcome(HookExit.PROBLEM, _problem_reasons(failed, diagnoses), "", list(findings), list(diagnoses))
    unsure = [f for f in findings if verdict(f, lenient) == "unknown"]
    # A check that says it cannot tell, and what to do (a fix), is the reason; the skips of checks that
    # merely lack the same facts follow from it.
    unsure = [f for f in unsure if f.fix is not None] or unsure
    unknowns = list(dict.fromkeys(message(f) for f in unsure))
    if unknowns:
        return Outcome(HookExit.UNKNOWN, unknowns, UNKNOWN_LEAD, list(findings), list(diagnoses), lenient=lenient)
    return Outcome(HookExit.OK, [], "", list(findings), list(diagnoses), lenient=lenient)


def _problem_reasons(failed: Sequence[Finding], diagnoses: Sequence) -> List[str]:
    """Diagnoses with a failure, most serious first (their order), then failures none covers."""
    out = [d.title for d in diagnoses if any(d.covers(f) for f in failed)]
    out += [message(f) for f in failed if not any(d.covers(f) for d in diagnoses)]
    return list(dict.fromkeys(out))


def crashed(exc: BaseException) -> Outcome:
    """gpudoctor itself failed: unknown, never a problem (a bug must not drain a healthy node)."""
    return Outcome(HookExit.UNKNOWN, [f"hook failed: {type(exc).__name__}: {exc}"], CRASH_LEAD)


def clean(text: str) -> str:
    """One safe line: printable ASCII, no quotes or backslashes (scontrol and shells mangle them)."""
    # pragma below: codec names are case-insensitive, so the "ASCII" mutants are this same line.
    text = text.encode("ascii", "replace").decode("ascii")  # pragma: no mutate
    text = re.sub(r"[\"'`\\]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def reason_line(parts: Sequence[str], lead: str = "", limit: int = MAX_REASON_CHARS) -> str:
    """``gpudoctor: <lead>a; b (+2 more)`` within ``limit`` characters."""
    parts = [clean(p) for p in parts if clean(p)]
    head = PREFIX + clean(lead) + (" " if lead else "")
    out = ""
    for i, part in enumerate(parts):
        candidate = f"{out}; {part}" if out else part
        rest = len(parts) - i - 1
        tail = f" (+{rest} more)" if rest else ""
        if len(head) + len(candidate) + len(tail) <= limit:
            out = candidate
            continue
        if not out:  # even the first part is too long: cut it
            room = limit - len(head) - len(tail) - 3
            out = part[:max(room, 10)].rstrip() + "..."
            rest = len(parts) - 1
        else:
            rest = len(parts) - i
        return head + out + (f" (+{rest} more)" if rest else "")
    return head + out


def npd_message(outcome: Outcome) -> str:
    """The stdout line for node-problem-detector: at most ``NPD_MAX_BYTES`` bytes."""
    if outcome.exit_code == HookExit.OK:
        return PREFIX + "ok"
    return reason_line(outcome.reasons, outcome.lead, limit=NPD_MAX_BYTES)
