"""Structured findings: what a check concluded, with its evidence and the fix.

Checks build findings with the helpers at the bottom (``ok``, ``warn``, ``fail``);
the engine stamps the check id, so a check never repeats its own id.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Optional, Sequence, Tuple


class Status(str, Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"  # the check itself crashed: a bug in gpudoctor or a plugin

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Status.OK: 0, Status.SKIP: 0, Status.WARN: 1, Status.ERROR: 2, Status.FAIL: 3}

# A finding quotes what a machine printed; a machine can print megabytes on one line
# (`cat /dev/zero` as nvidia-smi). Reports stay readable and small: longer texts are cut.
MAX_TITLE_CHARS = 500
MAX_TEXT_CHARS = 4000


def clip(text: Optional[str], limit: int = MAX_TITLE_CHARS) -> Optional[str]:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters cut]"


def _clip_fields(obj, limits) -> None:
    for name, limit in limits:
        value = getattr(obj, name)
        if isinstance(value, str) and len(value) > limit:
            object.__setattr__(obj, name, clip(value, limit))  # frozen: set once, at creation


@dataclass(frozen=True)
class Evidence:
    """Where in the snapshot a finding comes from: ``source`` names it, ``excerpt`` quotes it.

    Sources are ``command:<key>``, ``file:<path>``, ``env:<NAME>``, ``nvml:<field>``,
    ``framework:<name>`` or ``listing:<dir>``.
    """

    source: str
    excerpt: str = ""

    def __post_init__(self):
        _clip_fields(self, (("source", MAX_TITLE_CHARS), ("excerpt", MAX_TEXT_CHARS)))


@dataclass(frozen=True)
class Fix:
    """A fix recipe: printed, never run."""

    summary: str
    commands: Tuple[str, ...] = ()
    needs_root: bool = False
    needs_reboot: bool = False
    links: Tuple[str, ...] = ()
    kb_id: Optional[str] = None  # the knowledge-base recipe id shared with `explain`

    def to_dict(self) -> dict:
        return {**asdict(self), "commands": list(self.commands), "links": list(self.links)}


@dataclass(frozen=True)
class Finding:
    check_id: str
    status: Status
    title: str
    subject: Optional[str] = None
    detail: Optional[str] = None  # why it matters, one or two sentences
    evidence: Tuple[Evidence, ...] = ()
    fix: Optional[Fix] = None
    traceback: Optional[str] = None  # only for Status.ERROR
    cannot_tell: bool = False  # a skip because facts could not be read (not: does not apply here)
    family: Optional[str] = None  # the diagnosis family (shared with explain); default: the fix recipe's
    symptom_of: Tuple[str, ...] = ()  # check ids whose problem, when present, explains this one

    def __post_init__(self):
        _clip_fields(self, (("title", MAX_TITLE_CHARS), ("subject", MAX_TITLE_CHARS),
                            ("detail", MAX_TEXT_CHARS)))

    def with_id(self, check_id: str) -> "Finding":
        return replace(self, check_id=check_id)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["status"] = self.status.value
        d["evidence"] = [asdict(e) for e in self.evidence]
        if self.fix is not None:
            d["fix"] = self.fix.to_dict()
        d["symptom_of"] = list(self.symptom_of)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Finding":
        fix = d.get("fix")
        return cls(
            check_id=d["check_id"], status=Status(d["status"]), title=d["title"],
            subject=d.get("subject"), detail=d.get("detail"),
            evidence=tuple(Evidence(**e) for e in d.get("evidence") or ()),
            fix=Fix(**{**fix, "commands": tuple(fix.get("commands") or ()),
                       "links": tuple(fix.get("links") or ())}) if fix else None,
            traceback=d.get("traceback"), cannot_tell=bool(d.get("cannot_tell")),
            family=d.get("family"), symptom_of=tuple(d.get("symptom_of") or ()))


def _make(status: Status, title: str, subject=None, detail=None,
          evidence: Sequence[Evidence] = (), fix: Optional[Fix] = None, family: Optional[str] = None,
          symptom_of: Sequence[str] = ()) -> Finding:
    return Finding("", status, title, subject, detail, tuple(evidence), fix, family=family,
                   symptom_of=tuple(symptom_of))


def ok(title: str, **kw) -> Finding:
    return _make(Status.OK, title, **kw)


def warn(title: str, **kw) -> Finding:
    return _make(Status.WARN, title, **kw)


def fail(title: str, **kw) -> Finding:
    return _make(Status.FAIL, title, **kw)


def skip(title: str, **kw) -> Finding:
    """The check does not apply here (a CPU-only build needs no driver)."""
    return _make(Status.SKIP, title, **kw)


def unknown(title: str, **kw) -> Finding:
    """The check cannot judge: a fact it needs was not reported (a GPU without a temperature)."""
    return replace(_make(Status.SKIP, title, **kw), cannot_tell=True)
