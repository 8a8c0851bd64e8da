"""`gpudoctor fleet`: one summary of many nodes' `gpudoctor check` reports."""

from __future__ import annotations

import sys

import click

from gpudoctor.commands.common import InputError, color_option, json_option
from gpudoctor.exitcodes import ExitCode


@click.command("fleet")
@click.argument("reports", nargs=-1, required=True, metavar="REPORTS...")
@json_option
@click.option("--limit", type=click.IntRange(1, 100000), default=20, show_default=True,
              help="Rows of problems and outliers shown as text.")
@color_option
def command(reports, as_json, limit, color):
    """Summarise many nodes' reports: problems by check, driver/CUDA/torch spread, outliers.

    REPORTS are files, directories (every file below) or - for standard input; each holds
    `gpudoctor check --json` or `--jsonl` reports (pretty documents back to back and JSON
    lines both work; other lines, such as srun's own messages, are skipped).
    An outlier is a node whose driver, CUDA, GPU count or torch version differs from a
    majority of the nodes with the same GPU model.

    \b
    Examples:
      srun -N 64 --ntasks-per-node=1 -o 'reports/%N.json' gpudoctor check --json
      gpudoctor fleet reports/
      srun -N 64 --ntasks-per-node=1 gpudoctor check --jsonl | gpudoctor fleet -
      gpudoctor fleet --json reports/ > fleet.json

    Exit codes: 0 no node failed, 1 at least one node reports a failure, 2 no report in the
    input or an unreadable file.
    """
    from gpudoctor.fleet import summary as fleet
    from gpudoctor.fleet.jobs import Unreadable, read_all

    try:
        tally = read_all(reports)
    except Unreadable as exc:
        raise InputError(str(exc)) from None
    if not tally.nodes:
        raise InputError("no gpudoctor report found in the input "
                         "(expected `gpudoctor check --json` or `--jsonl` output)")
    summary = fleet.summarise(tally.nodes, tally.bad, tally.dupes, tally.bad_count)
    if as_json:
        from gpudoctor.render.json import dumps

        click.echo(dumps(summary), nl=False)
    else:
        from gpudoctor.render.fleet import render
        from gpudoctor.render.style import Style

        style = Style.for_stream(sys.stdout, color)
        # click.echo strips escape codes off a non-terminal unless told the colour was decided.
        click.echo(render(summary, style, limit), nl=False, color=style.colour)
    return ExitCode.PROBLEM if summary["status"]["fail"] else ExitCode.OK

