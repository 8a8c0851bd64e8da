"""Small builders for hand-made snapshots in unit tests."""

from __future__ import annotations

from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import FileRecord, Snapshot


def snap(files=None, commands=None, env=None, listings=None, links=None) -> Snapshot:
    s = Snapshot(env=env or {}, listings=listings or {}, links=links or {})
    s.files = {p: FileRecord(p, content=c) for p, c in (files or {}).items()}
    s.commands = commands or {}
    return s


def ran(argv, stdout="", rc=0, stderr=""):
    return CommandResult(tuple(argv), rc, stdout, stderr, 0.05)
