"""`gpudoctor snapshot`: record everything the checks read into a folder, to replay anywhere."""

from __future__ import annotations

import os
import signal

import click

from gpudoctor.commands.common import TIMEOUT_SECONDS, InputError, Progress, json_option, python_option
from gpudoctor.exitcodes import ExitCode

SCHEMA = "gpudoctor.snapshot-summary/1"  # the --json summary (gpudoctor/schemas/snapshot-summary.schema.json)


@click.command("snapshot")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="Folder to write the snapshot into (created if missing; must be empty if it exists). "
                   "It appears whole or not at all: the snapshot is written to a hidden .part folder "
                   "beside it and renamed.")
@python_option
@click.option("--timeout", type=TIMEOUT_SECONDS, default=15.0, show_default=True,
              help="Seconds the whole collection may take.")
@click.option("--no-frameworks", is_flag=True, help="Do not probe torch, TensorFlow or JAX.")
@click.option("--deep", is_flag=True, help="Also record the active smoke test (see `gpudoctor check --deep`).")
@click.option("--dcgm", "dcgm_level", type=click.IntRange(1, 4), default=None, metavar="LEVEL",
              help="Also record DCGM's diagnostic `dcgmi diag -r LEVEL -j`.")
@json_option
def command(out, python, timeout, no_frameworks, deep, dcgm_level, as_json):
    """Record this machine's raw facts into a snapshot folder.

    Replay it with `gpudoctor check --snapshot DIR` on any machine: the same findings
    come out. Only allow-listed environment variables are recorded.

    \b
    Examples:
      gpudoctor snapshot --out /tmp/node17                 # then, anywhere: gpudoctor check --snapshot /tmp/node17
      gpudoctor snapshot --out node17 --python ~/venv/bin/python --timeout 30
      gpudoctor snapshot --out node17 --no-frameworks --json
      gpudoctor snapshot --out node17 --deep --dcgm 1       # replay: check --snapshot node17 --deep --dcgm 1
    """
    from gpudoctor.bundle.write import Cleanup, on_signals
    from gpudoctor.commands.check import live_snapshot
    from gpudoctor.render.json import dumps
    from gpudoctor.staging import StagedFolder

    if not out.strip():
        raise InputError("--out needs a new or empty folder, got an empty value")
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise InputError(f"{out}: exists and is not an empty folder; choose a new --out")
    try:
        stage = StagedFolder(out)  # before collecting: an unwritable place is reported at once
    except OSError as exc:
        raise InputError(f"{out}: cannot write the snapshot here ({exc.strerror or exc})") from None
    cleanup = Cleanup()
    cleanup.dirs.append(stage.path)
    names = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}
    with on_signals(cleanup, lambda n: f"\ngpudoctor: interrupted by {names.get(n, n)}; no snapshot written"):
        try:
            snap = _record(python, timeout, no_frameworks, deep, dcgm_level, as_json, live_snapshot)
            snap.save(stage.path, sync=True)
            stage.commit()
        except OSError as exc:
            raise InputError(f"{out}: cannot write the snapshot ({exc.strerror or exc})") from None
        finally:
            stage.discard()  # a no-op once committed
    summary = {"schema": SCHEMA, "snapshot": os.path.abspath(out), "commands": len(snap.commands),
               "files": sum(1 for r in snap.files.values() if r.exists),
               "frameworks": sorted(snap.frameworks), "duration_s": snap.meta.get("duration_s")}
    if as_json:
        click.echo(dumps(summary), nl=False)
    else:
        click.echo(f"gpudoctor: snapshot written to {summary['snapshot']} "
                   f"({summary['commands']} commands, {summary['files']} files, {summary['duration_s']}s). "
                   f"Replay: gpudoctor check --snapshot {out}")
    return ExitCode.OK


def _record(python, timeout, no_frameworks, deep, dcgm_level, as_json, live_snapshot):
    progress = Progress(enabled=None if not as_json else False)
    try:
        snap = live_snapshot(python, timeout, "/", not no_frameworks, progress)
        if deep or dcgm_level:  # the active tests, recorded so a replay judges them (check --deep / --dcgm)
            import sys

            from gpudoctor.probes import active
            from gpudoctor.requirements import Requirements

            active.record(snap, Requirements(smoke=deep, dcgm=dcgm_level), python or sys.executable,
                          os.environ, note=progress)
        return snap
    finally:
        progress.clear()
