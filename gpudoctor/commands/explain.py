"""`gpudoctor explain`: an error message or a log -> diagnosis and fix recipe."""

from __future__ import annotations

import sys

import click

from gpudoctor.commands.common import (TIMEOUT_SECONDS, InputError, color_option, json_option, load_snapshot,
                                       nonempty_snapshot, python_option)
from gpudoctor.exitcodes import ExitCode

CONTEXTS = ("container", "wsl", "windows", "macos", "tensorflow", "suspend")


@click.command("explain")
@click.argument("inputs", nargs=-1, metavar="[TEXT | FILE... | -]")
@json_option
@click.option("--snapshot", "snapshot_path", type=click.Path(), default=None, callback=nonempty_snapshot,
              help="Tailor the fixes with a recorded snapshot folder or bundle (.tar.gz) of the machine the error came from.")
@click.option("--here", is_flag=True, help="Tailor the fixes with this machine's facts (probes it, like `gpudoctor check`).")
@click.option("--context", "contexts", multiple=True, type=click.Choice(CONTEXTS),
              help="Where the error happened, when the text does not say: container, wsl, windows, macos (a Mac: "
                   "no NVIDIA GPU), tensorflow or suspend (repeatable).")
@click.option("--jobs", type=click.IntRange(1, 64), default=None,
              help="Worker processes for a large log file (default: one per CPU, up to 8, for files over 64 MiB).")
@python_option
@click.option("--timeout", type=TIMEOUT_SECONDS, default=15.0, show_default=True,
              help="Seconds --here may spend probing this machine.")
@click.option("--time-limit", type=click.FloatRange(0.1, 86400), default=60.0, show_default=True,
              help="Seconds reading the inputs may take; past it, what was read is diagnosed and the "
                   "output says where reading stopped.")
@color_option
def command(inputs, as_json, snapshot_path, here, contexts, jobs, python, timeout, time_limit, color):
    """Explain CUDA / driver / PyTorch / TensorFlow errors: what they mean and how to fix them.

    Give the error text, one or more log files (any size, .gz too), or - to read stdin.
    An argument that is an existing file is read as a file; anything else is the text.

    \b
    Examples:
      gpudoctor explain "RuntimeError: CUDA error: no kernel image is available for execution on the device"
      gpudoctor explain train.log worker-*.log.gz
      python train.py 2>&1 | gpudoctor explain -
      gpudoctor explain --snapshot bundle.tar.gz job-1234.err   # the fix uses that machine's driver and torch
      gpudoctor explain --here --json error.txt

    \b
    Exit codes: 0 a diagnosis was found, 1 nothing matched (or only a bug in the program),
                2 bad input (missing, unreadable, binary or empty input; a directory).
    """
    from gpudoctor.explain.pipeline import BadInput, explain, resolve
    from gpudoctor.explain.render import dumps, render
    from gpudoctor.render.style import Style

    if snapshot_path and here:
        raise InputError("--snapshot and --here both describe the machine: give one of them")
    try:
        sources = resolve(inputs, sys.stdin is None or sys.stdin.isatty())
    except BadInput as exc:
        raise InputError(str(exc)) from None
    facts = _facts(snapshot_path, here, python, timeout)
    stdin = sys.stdin.buffer if sys.stdin is not None else None
    try:
        result = explain(sources, contexts, facts, stdin, jobs=jobs, time_limit=time_limit)
    except BadInput as exc:
        raise InputError(str(exc)) from None
    for warning in result.warnings:
        click.echo(f"gpudoctor: note: {warning}", err=True)
    if as_json:
        click.echo(dumps(result), nl=False)
    else:
        style = Style.for_stream(sys.stdout, color)
        click.echo(render(result, style), nl=False, color=style.colour)
    return ExitCode.OK if result.diagnoses else ExitCode.PROBLEM


def _facts(snapshot_path, here, python, timeout):
    if not (snapshot_path or here):
        return None
    from gpudoctor.facts import Facts

    if snapshot_path:
        return Facts(load_snapshot(snapshot_path))
    from gpudoctor.commands.check import live_snapshot

    return Facts(live_snapshot(python, timeout))
