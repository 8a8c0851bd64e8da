"""The hook's verdict: one exit code and one line that fits a Slurm drain reason or an NPD message.

Exit codes (:class:`~gpudoctor.exitcodes.HookExit`) follow node-problem-detector's plugin
protocol, which Slurm wrappers map easily: 0 healthy, 1 a problem with the node, 2 unknown
(a requirement could not be judged, or gpudoctor itself failed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Sequence

from gpudoctor.exitcodes import HookExit
from gpudoctor.hook.requirements import Result, State

PREFIX = "gpudoctor: "
MAX_REASON_CHARS = 200   # a drain reason people read in `sinfo -R`; long ones get cut there anyway
NPD_MAX_BYTES = 80       # node-problem-detector's default max_output_length


@dataclass
class Outcome:
    exit_code: HookExit
    line: str                                  # "" when healthy
    results: List[Result] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def state(self) -> str:
        return {HookExit.OK: "ok", HookExit.PROBLEM: "problem"}.get(self.exit_code, "unknown")

    def to_dict(self) -> dict:
        return {"schema": "gpudoctor.hook/1", "state": self.state, "exit_code": int(self.exit_code),
                "reason": self.line, "duration_s": round(self.duration_s, 3),
                "requirements": [r.to_dict() for r in self.results]}


def decide(results: Sequence[Result]) -> Outcome:
    """Problems win over unknowns; each kind is listed most important first."""
    problems = [r.message for r in results if r.state is State.PROBLEM]
    unknowns = [r.message for r in results if r.state is State.UNKNOWN]
    if problems:
        return Outcome(HookExit.PROBLEM, reason_line(problems), list(results))
    if unknowns:
        return Outcome(HookExit.UNKNOWN, reason_line(unknowns, "cannot tell: "), list(results))
    return Outcome(HookExit.OK, "", list(results))


def crashed(exc: BaseException) -> Outcome:
    """gpudoctor itself failed: unknown, never a problem (a bug must not drain a healthy node)."""
    return Outcome(HookExit.UNKNOWN, reason_line([f"hook failed: {type(exc).__name__}: {exc}"],
                                                 "internal error, not judging this node: "))


def clean(text: str) -> str:
    """One safe line: printable ASCII, no quotes or backslashes (scontrol and shells mangle them)."""
    text = text.encode("ascii", "replace").decode("ascii")
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
    problems = [r.message for r in outcome.results if r.state is State.PROBLEM]
    unknowns = [r.message for r in outcome.results if r.state is State.UNKNOWN]
    if problems:
        return reason_line(problems, limit=NPD_MAX_BYTES)
    if unknowns:
        return reason_line(unknowns, "cannot tell: ", limit=NPD_MAX_BYTES)
    return outcome.line[:NPD_MAX_BYTES]  # a crash: its line is already clean ASCII
