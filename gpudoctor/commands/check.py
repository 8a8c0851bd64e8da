"""`gpudoctor check`: probe this machine (or replay a snapshot) and report problems with fixes."""

from __future__ import annotations

import sys

import click

from gpudoctor.commands.common import (TIMEOUT_SECONDS, InputError, Progress, color_option, json_option,
                                       load_snapshot, python_option, quiet_closed_stdout, snapshot_option)
from gpudoctor.exitcodes import ExitCode

LIST_SCHEMA = "gpudoctor.checks/1"  # --list-checks --json (gpudoctor/schemas/checks.schema.json)


def live_snapshot(python, timeout, root="/", frameworks=True, progress=None):
    from gpudoctor.probes.collect import CollectOptions, collect
    from gpudoctor.probes.frameworks import FRAMEWORKS

    opts = CollectOptions(root=root, timeout=timeout, progress=progress,
                          frameworks=FRAMEWORKS if frameworks else ())
    if python:
        opts.python = python
    return collect(opts)


def _list_checks(as_json: bool) -> None:
    from gpudoctor.plugins import load_checks
    from gpudoctor.render.json import dumps

    checks, problems = load_checks()
    if as_json:
        click.echo(dumps({"schema": LIST_SCHEMA, "checks": [c.info() for c in checks],
                          "plugin_problems": [p.to_dict() for p in problems]}), nl=False)
        return
    for c in checks:
        origin = "" if c.origin == "builtin" else f"  (from {c.origin})"
        click.echo(f"{c.id:<8} {c.name:<28} {c.title}{origin}")
    for p in problems:
        click.echo(f"warning: plugin {p.plugin}: {p.message}", err=True)


def _known_only(only_ids) -> None:
    """A typo in --only would silently leave a check out: name it, before any probing."""
    if not only_ids:
        return
    from gpudoctor.engine import select
    from gpudoctor.plugins import load_checks

    checks, _ = load_checks()
    unknown = [o.strip() for o in only_ids if not select(checks, [o])]
    if unknown:
        raise InputError(f"--only {','.join(unknown)} matches no check (see --list-checks)")


@click.command("check")
@snapshot_option
@json_option
@click.option("--jsonl", is_flag=True,
              help="Print the JSON report on one line (for `srun ... | gpudoctor fleet -`).")
@click.option("-v", "--verbose", is_flag=True, help="Show skipped checks, evidence for passing checks and tracebacks.")
@click.option("--only", "only", multiple=True, metavar="ID",
              help="Run only these checks (id like DRV001, a name, or an id family like DRV: all of the id's "
                   "letters, so TF is not TFM); repeatable or comma-separated.")
@click.option("--list-checks", is_flag=True, help="List the available checks and exit.")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@python_option
@click.option("--timeout", type=TIMEOUT_SECONDS, default=15.0, show_default=True,
              help="Seconds the whole collection may take; a probe that runs over is reported, not waited for.")
@click.option("--root", type=click.Path(exists=True, file_okay=False), default="/", hidden=True,
              help="Read machine files below this directory (for tests).")
@click.option("--no-frameworks", is_flag=True, help="Do not probe torch, TensorFlow or JAX.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Judge the node requirements of a `gpudoctor hook` config file too (GPU count, minimum "
                   "driver, temperature...): check then fails for the same reasons the hook drains.")
@click.option("--deep", is_flag=True,
              help="Also run the active smoke test in --python's interpreter: memory, fp32/fp16/bf16 matrix "
                   "products checked against the CPU, host<->GPU copy bandwidth against the PCIe link, and an "
                   "NCCL all-reduce across the GPUs (seconds to a minute; changes nothing on the machine).")
@click.option("--dcgm", "dcgm_level", type=click.IntRange(1, 4), default=None, metavar="LEVEL",
              help="Also run DCGM's diagnostic `dcgmi diag -r LEVEL -j` (1 takes seconds, 2 about two minutes, "
                   "3 about 15) and judge its results; skipped, saying why, without DCGM or nv-hostengine.")
@color_option
def command(snapshot_path, as_json, jsonl, verbose, only, list_checks, strict, python, timeout, root,
            no_frameworks, config_path, deep, dcgm_level, color):
    """Check this machine's NVIDIA driver, CUDA, cuDNN and framework builds; print problems and fixes.

    \b
    Examples:
      gpudoctor check                       # probe this machine
      gpudoctor check --json                # machine-readable report (schema gpudoctor.report/2)
      gpudoctor check --config hook.toml    # also the hook's node requirements
      gpudoctor check --deep                # also the active smoke test on every GPU
      gpudoctor check --dcgm 1              # also DCGM's quick diagnostic
      gpudoctor check --snapshot DIR        # replay a recorded snapshot or bundle
      gpudoctor check --only DRV --verbose  # only the driver checks, with details
      srun --ntasks-per-node=1 gpudoctor check --jsonl | gpudoctor fleet -
    """
    from gpudoctor.report import build_report

    if list_checks:
        _list_checks(as_json)
        return ExitCode.OK
    only_ids = [x for o in only for x in o.split(",") if x.strip()]
    if only and not only_ids:
        raise InputError("--only needs check ids, names or id prefixes (see --list-checks), got an empty value")
    _known_only(only_ids)
    requirements = _requirements(config_path, {"smoke": deep or None, "dcgm": dcgm_level})
    if snapshot_path:
        snap = load_snapshot(snapshot_path)
    else:
        progress = Progress(enabled=None if not (as_json or jsonl) else False)
        try:
            snap = live_snapshot(python, timeout, root, not no_frameworks, progress)
            if requirements is not None and (requirements.smoke or requirements.dcgm):
                import os

                from gpudoctor.probes import active

                active.record(snap, requirements, python or sys.executable, os.environ, note=progress)
        finally:
            progress.clear()
    report = build_report(snap, only=only_ids, requirements=requirements)
    try:
        _print(report, jsonl, as_json, verbose, color)
    except BrokenPipeError:  # piped into `head`: the report's verdict still stands
        quiet_closed_stdout()
    return report.exit_code(strict)


def _requirements(config_path, flags):
    """The hook's requirements from its config file and the active-test flags (None: nothing asked)."""
    asked = {k: v for k, v in flags.items() if v is not None}
    if not config_path and not asked:
        return None
    from gpudoctor.hook.config import ConfigError, merge, read_file

    import os

    from gpudoctor.hook.job import for_job

    try:
        return for_job(merge(read_file(config_path) if config_path else {}, asked).requirements, os.environ)
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def _print(report, jsonl: bool, as_json: bool, verbose: bool, color) -> None:
    from gpudoctor.render.json import dumps
    from gpudoctor.render.style import Style
    from gpudoctor.render.text import render

    if jsonl:
        import json

        click.echo(json.dumps(report.to_dict(), sort_keys=True, ensure_ascii=False, default=str,
                              separators=(",", ":")))
    elif as_json:
        click.echo(dumps(report.to_dict()), nl=False)
    else:
        style = Style.for_stream(sys.stdout, color)
        # click.echo strips escape codes off a non-terminal unless told the colour was decided.
        click.echo(render(report, style, verbose), nl=False, color=style.colour)
