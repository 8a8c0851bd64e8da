"""Assemble a bundle: collect, sanitise, compute the report from the sanitised snapshot, write.

The report inside is built from the snapshot exactly as it is stored in the archive
(saved, sanitised, and loaded back), so `gpudoctor check --snapshot BUNDLE` elsewhere
gives the same findings.
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from gpudoctor import liveread, staging
from gpudoctor.bundle import collect, html, manifest
from gpudoctor.bundle.anonymize import Anonymizer
from gpudoctor.bundle.members import extra_members
from gpudoctor.bundle.redact import SecretRedactor, secret_env
from gpudoctor.bundle.sanitize import Sanitizer, snapshot_texts
from gpudoctor.bundle.write import AtomicFile, Cleanup, Member, write_archive
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import Snapshot
from gpudoctor.snapshot_folder import load

Note = Callable[[str, str], None]


@dataclass
class Options:
    python: str = sys.executable
    timeout: float = 15.0
    frameworks: bool = True
    anonymize: bool = False
    hide: Sequence[str] = ()
    root: str = "/"
    command_line: Sequence[str] = ()
    environ: Optional[Mapping[str, str]] = None


@dataclass
class Result:
    path: str
    size: int
    members: List[str]
    redactions: Dict[str, Dict[str, int]]
    summary: Dict[str, int]
    anonymized: bool
    duration_s: float = 0.0
    commands: List[Dict] = field(default_factory=list)


def machine_names(root: str, environ: Mapping[str, str]) -> Tuple[List[str], List[str]]:
    """This machine's host names and user names, to be replaced by --anonymize."""
    hosts = [socket.gethostname()]
    for rel in ("etc/hostname", "proc/sys/kernel/hostname"):
        text, _ = liveread.read_text(str(Path(root, rel)), 4096)  # a FIFO here must not hang the bundle
        hosts.append((text or "").strip())
    users = [environ.get(k, "") for k in ("USER", "LOGNAME", "SUDO_USER", "USERNAME")]
    try:
        users.append(pwd.getpwuid(os.getuid()).pw_name)
    except (KeyError, OSError):
        pass
    return [h for h in hosts if h], [u for u in users if u]


def sanitizer_for(opts: Options, environ: Mapping[str, str]) -> Sanitizer:
    secrets = SecretRedactor(secret_env(environ), hide=opts.hide)
    if not opts.anonymize:
        return Sanitizer(secrets)
    hosts, users = machine_names(opts.root, environ)
    anonymizer = Anonymizer()
    anonymizer.exact("host", hosts[0])  # this machine is host1, even when its name is generic ("ubuntu")
    for h in hosts:
        anonymizer.add("host", h)
    for u in users:
        anonymizer.add("user", u)
    return Sanitizer(secrets, anonymizer)


def host_label(s: Sanitizer) -> str:
    """The host part of the default file name: the pseudonym under --anonymize."""
    if s.anonymizer is not None:
        return s.anonymizer.exact("host", socket.gethostname())
    return s.text(socket.gethostname())


def collect_all(opts: Options, environ: Mapping[str, str], note: Note) -> Tuple[Snapshot, Dict[str, CommandResult]]:
    """The snapshot and the extra commands, all in parallel under one deadline."""
    from gpudoctor.commands.check import live_snapshot

    start = time.monotonic()
    running = collect.Collection.start(collect.plan(opts.python, environ), environ, opts.timeout, note)
    snap = live_snapshot(opts.python, opts.timeout, opts.root, opts.frameworks, note)
    extras = running.results(opts.timeout + 1.0 - (time.monotonic() - start))
    return snap, extras


def build(opts: Options, out: AtomicFile, cleanup: Cleanup, note: Note = lambda n, s: None,
          sanitizer: Optional[Sanitizer] = None) -> Result:
    started = time.monotonic()
    environ = dict(os.environ if opts.environ is None else opts.environ)
    s = sanitizer or sanitizer_for(opts, environ)
    snap, extras = collect_all(opts, environ, note)
    note("sanitising", "start")
    pkg_env = collect.package_env(environ)
    s.learn(list(snapshot_texts(snap)) + [r.stdout + r.stderr + " ".join(r.argv) for r in extras.values()]
            + list(pkg_env.values()) + list(opts.command_line))
    staging.sweep()  # stage folders of bundle runs that were killed
    stage = staging.private_dir("stage")
    cleanup.dirs.append(stage)
    s.snapshot(snap).save(os.path.join(stage, "snapshot"))
    replay = load(os.path.join(stage, "snapshot"))
    replay.source = None
    members = _snapshot_members(stage)
    members += _report_members(replay, s)
    members += extra_members(extras, pkg_env, environ, s)
    commands = manifest.commands(replay, extras, s, opts.python)
    text = manifest.manifest(s, members, commands, opts.command_line, opts.python)
    members.append(("manifest.json", s.text(text).encode("utf-8")))
    note("sanitising", "done")
    top = os.path.basename(out.target)
    top = top[:-len(".tar.gz")] if top.endswith(".tar.gz") else top.rsplit(".", 1)[0] or "gpudoctor-bundle"
    top = s.text(top).replace("/", "_")  # the archive's top folder is named after the file: it is data too
    size = write_archive(out, top, members)
    summary = json.loads(next(d for n, d in members if n == "report.json")).get("summary", {})
    return Result(out.target, size, [n for n, _ in members], s.counts(), summary, s.anonymize,
                  round(time.monotonic() - started, 3), commands)


def _snapshot_members(stage: str) -> List[Member]:
    base = Path(stage)
    files = sorted(p for p in (base / "snapshot").rglob("*") if p.is_file())
    return [(p.relative_to(base).as_posix(), p.read_bytes()) for p in files]


def _report_members(snap: Snapshot, s: Sanitizer) -> List[Member]:
    from gpudoctor.render.json import dumps
    from gpudoctor.render.style import Style
    from gpudoctor.render.text import render
    from gpudoctor.report import build_report

    # Rendered from the sanitised snapshot and not rewritten afterwards: a pass over gpudoctor's own
    # words ("a cloud VM" on a host named vm) would make the bundled report differ from its replay.
    report = build_report(snap)
    data = report.to_dict()
    notice = ("Secrets were redacted" + (" and host names, user names, addresses, GPU serials and UUIDs "
                                          "replaced by consistent pseudonyms" if s.anonymize else "") +
              " before this report was made.")
    return [("report.json", dumps(data).encode("utf-8")),
            ("report.txt", render(report, Style(colour=False), verbose=True).encode("utf-8")),
            ("report.html", html.render(data, notice).encode("utf-8"))]
