"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from gpudoctor.exitcodes import ExitCode
from gpudoctor.snapshot import Snapshot, SnapshotError
from gpudoctor.snapshot_folder import load


class InputError(click.ClickException):
    """Bad input: printed as one line ``gpudoctor: <message>``, exit code 2."""

    exit_code = ExitCode.USAGE

    def show(self, file=None):
        click.echo(f"gpudoctor: {self.format_message()}", err=True)


class Seconds(click.FloatRange):
    """A FloatRange that also refuses nan: every comparison with nan is false, so click's range
    check lets `--timeout nan` through, and a deadline of nan seconds is no deadline."""

    name = "seconds"

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if rv != rv:
            self.fail(f"{value!r} is not a number of seconds.", param, ctx)
        return rv


TIMEOUT_SECONDS = Seconds(1, 600)


def json_option(fn):
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def color_option(fn):
    return click.option("--color/--no-color", "color", default=None,
                        help="Force colour on or off (default: on a terminal, unless NO_COLOR is set).")(fn)


def _resolve_python(ctx, param, value):
    import os
    import shutil

    if value is None:
        return None
    found = value if os.sep in value else shutil.which(value)
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise InputError(f"--python {value}: no such executable")
    return os.path.abspath(found)


def python_option(fn):
    return click.option("--python", "python", default=None, callback=_resolve_python, metavar="PATH",
                        help="The interpreter your jobs run with, to probe its torch/TensorFlow/JAX "
                             "(default: the one running gpudoctor).")(fn)


def nonempty_snapshot(ctx, param, value):
    """`--snapshot ""` (an unset shell variable) is a mistake, not a request to probe this machine."""
    if value is not None and not value.strip():
        raise InputError("--snapshot needs a snapshot folder or bundle, got an empty value")
    return value


def snapshot_option(fn):
    return click.option("--snapshot", "snapshot_path", type=click.Path(), default=None, callback=nonempty_snapshot,
                        help="Replay a recorded snapshot folder or support bundle (.tar.gz) "
                             "instead of probing this machine.")(fn)


def load_snapshot(path: str) -> Snapshot:
    """A snapshot folder, or the snapshot inside a support bundle (.tar.gz) when ``path`` is a file."""
    try:
        if Path(path).is_file():
            # tarfile, gzip and co. load for a bundle only: replaying a folder (the hook) starts fast
            from gpudoctor.bundle.read import load_bundle

            return load_bundle(path)
        return load(path)
    except SnapshotError as exc:
        raise InputError(str(exc)) from None


def quiet_closed_stdout() -> None:
    """After EPIPE on stdout (piped into `head`): later writes and the final flush go to /dev/null."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class Progress:
    """A one-line progress display on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: Optional[bool] = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.running: list = []
        self.done = 0

    def __call__(self, name: str, state: str) -> None:
        if not self.enabled:
            return
        if state == "start":
            self.running.append(name)
        elif name in self.running:
            self.running.remove(name)
            self.done += 1
        waiting = ", ".join(self.running[:4]) or "files"
        sys.stderr.write(f"\r\x1b[2Kgpudoctor: collecting ({self.done} done; waiting for {waiting})")
        sys.stderr.flush()

    def clear(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
