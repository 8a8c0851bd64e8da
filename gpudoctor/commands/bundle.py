"""`gpudoctor bundle`: one redacted .tar.gz for a support ticket, replayable into the same report."""

from __future__ import annotations

import os
import re
import signal
import sys
from datetime import datetime, timezone

import click

from gpudoctor.commands.common import TIMEOUT_SECONDS, InputError, Progress, json_option, python_option
from gpudoctor.exitcodes import ExitCode

SCHEMA = "gpudoctor.bundle-summary/1"  # the --json summary; manifest.json is gpudoctor.bundle/1


def default_name(host: str) -> str:
    host = re.sub(r"[^A-Za-z0-9._-]", "_", host)[:64] or "unknown"
    return f"gpudoctor-bundle-{host}-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.tar.gz"


def target_path(output, host: str, force: bool) -> str:
    """Where the bundle goes: -o FILE, -o FOLDER (default name inside), or the current folder."""
    if output is not None and not output.strip():
        raise InputError("-o needs a file or folder, got an empty value")
    if output is None or os.path.isdir(output):
        return os.path.join(output or os.getcwd(), default_name(host))
    folder = os.path.dirname(os.path.abspath(output))
    if output.endswith(os.sep) or not os.path.isdir(folder):
        raise InputError(f"{output}: folder {folder if not output.endswith(os.sep) else output} does not exist")
    if os.path.lexists(output) and not force:
        raise InputError(f"{output}: exists; choose another -o or add --force to replace it")
    return output


class _Status(Progress):
    """The collection progress line, then "sanitising" and "writing" steps (stderr, terminal only)."""

    def step(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\x1b[2Kgpudoctor: {text}")
            sys.stderr.flush()


@click.command("bundle")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=True), default=None, metavar="PATH",
              help="Bundle file to write, or a folder to write it into "
                   "(default: ./gpudoctor-bundle-<host>-<UTC time>.tar.gz).")
@click.option("--anonymize", is_flag=True,
              help="Also replace host and user names, home paths, IP and MAC addresses, GPU serials and UUIDs "
                   "with consistent pseudonyms.")
@click.option("--hide", multiple=True, metavar="TEXT",
              help="Also replace this word (a project, domain or cluster name) everywhere; repeatable.")
@python_option
@click.option("--timeout", type=TIMEOUT_SECONDS, default=15.0, show_default=True,
              help="Seconds the whole collection may take; a command that hangs is recorded as timed out.")
@click.option("--no-frameworks", is_flag=True, help="Do not probe torch, TensorFlow or JAX.")
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
@json_option
@click.option("--root", type=click.Path(exists=True, file_okay=False), default="/", hidden=True,
              help="Read machine files below this directory (for tests).")
def command(output, anonymize, hide, python, timeout, no_frameworks, force, as_json, root):
    """Write one redacted .tar.gz with everything a support engineer needs.

    Inside: the snapshot (every command output and file the checks read), report.json,
    report.txt, a self-contained report.html, the interpreter's pip list (and conda list),
    NVIDIA kernel messages, and manifest.json (sha256 of each file, the commands run).
    Secrets are always redacted; --anonymize also hides who and where.

    \b
    Examples:
      gpudoctor bundle                          # ./gpudoctor-bundle-<host>-<time>.tar.gz
      gpudoctor bundle --anonymize -o /tmp/     # pseudonyms for hosts, users, IPs, GPU UUIDs
      gpudoctor bundle --python ~/venv/bin/python --hide projectx
      gpudoctor check --snapshot gpudoctor-bundle-*.tar.gz   # replay it anywhere
    """
    from gpudoctor.bundle import make
    from gpudoctor.bundle.write import AtomicFile, BundleWriteError, Cleanup, on_signals
    from gpudoctor.render.json import dumps

    opts = make.Options(timeout=timeout, frameworks=not no_frameworks, anonymize=anonymize, hide=hide,
                        root=root, command_line=["gpudoctor"] + sys.argv[1:])
    if python:
        opts.python = python
    sanitizer = make.sanitizer_for(opts, os.environ)
    path = target_path(output, make.host_label(sanitizer), force)
    status = _Status(enabled=None if not as_json else False)
    cleanup = Cleanup()
    names = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}
    with on_signals(cleanup, lambda n: f"\ngpudoctor: interrupted by {names.get(n, n)}; no bundle written"):
        try:
            out = AtomicFile(path)
            cleanup.files.append(out.temp)
            try:
                result = make.build(opts, out, cleanup, _note(status), sanitizer)
            finally:
                out.discard()  # a no-op once committed
                cleanup.run_dirs()
        except BundleWriteError as exc:
            raise InputError(str(exc)) from None
        finally:
            status.clear()
    _print(result, as_json, dumps)
    return ExitCode.OK


def _note(status: _Status):
    def note(name: str, state: str) -> None:
        if name == "sanitising":
            status.step("redacting and writing the bundle" if state == "start" else "")
        else:
            status(name, state)
    return note


_LABELS = {"host": "host name", "user": "user name", "ip": "IP address", "mac": "MAC address",
           "serial": "GPU serial", "uuid": "UUID"}


def _print(result, as_json: bool, dumps) -> None:
    from gpudoctor.bundle.write import describe_size

    secrets = result.redactions.get("secrets", {})
    pseudonyms = result.redactions.get("pseudonyms", {})
    if as_json:
        click.echo(dumps({"schema": SCHEMA, "bundle": os.path.abspath(result.path), "size_bytes": result.size,
                          "members": result.members, "anonymized": result.anonymized,
                          "redactions": result.redactions, "report_summary": result.summary,
                          "duration_s": result.duration_s,
                          "replay": f"gpudoctor check --snapshot {result.path}"}), nl=False)
        return
    c = result.summary
    click.echo(f"gpudoctor: bundle written to {os.path.abspath(result.path)} "
               f"({describe_size(result.size)}, {len(result.members)} files)")
    removed = sum(v for k, v in secrets.items() if k != "hidden")
    kinds = sorted({"env values" if k.startswith("env:") else k for k in secrets if k != "hidden"})
    click.echo(f"  secrets  {removed} redacted" + (f" ({', '.join(kinds)})" if kinds else ""))
    if secrets.get("hidden"):
        click.echo(f"  hidden   {secrets['hidden']} occurrence(s) of --hide words")
    if result.anonymized:
        parts = ", ".join(f"{v} {_LABELS.get(k, k)}{('es' if k in ('ip', 'mac') else 's') * (v != 1)}"
                          for k, v in sorted(pseudonyms.items()))
        click.echo(f"  anonymized  {parts + ' replaced' if parts else 'nothing found to replace'}")
    click.echo(f"  report   {c.get('fail', 0)} failure(s), {c.get('warn', 0)} warning(s), {c.get('ok', 0)} ok")
    click.echo(f"  replay   gpudoctor check --snapshot {result.path}")
