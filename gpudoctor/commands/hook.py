"""`gpudoctor hook`: a fast pre-job health check for Slurm (Prolog, HealthCheckProgram) and
Kubernetes node-problem-detector. Quiet when healthy; one line and exit 1 on a problem."""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import replace

import click

from gpudoctor.commands.common import InputError, color_option, json_option, nonempty_snapshot
from gpudoctor.exitcodes import HookExit
from gpudoctor.hook.config import DEFAULT_TIMEOUT_S
from gpudoctor.output import OutputError

EPILOG = """\b
Exit codes (Slurm Prolog / HealthCheckProgram, node-problem-detector plugin):
  0  healthy: every requirement holds
  1  problem: the node should not run jobs (stderr: the drain reason)
  2  unknown: a requirement could not be judged, bad usage, or gpudoctor itself failed;
     a bug in the doctor never reports a problem
"""


def _opt_flag(name, help_text, **kw):
    return click.option(name, default=None, help=help_text, **kw)


def _npd_reason(message: str) -> None:
    """node-problem-detector shows only stdout: with --npd, a usage or config error is said there too."""
    from gpudoctor.hook.outcome import NPD_MAX_BYTES, reason_line

    click.echo(reason_line([message], limit=NPD_MAX_BYTES))


class _HookCommand(click.Command):
    def parse_args(self, ctx, args):
        npd = "--npd" in args  # before parsing: the bad option may be what stops the parse
        try:
            return super().parse_args(ctx, args)
        except click.ClickException as exc:
            if npd:
                _npd_reason(exc.format_message())
            raise


@click.command("hook", cls=_HookCommand, epilog=EPILOG)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="GPUDOCTOR_HOOK_CONFIG",
              help="Requirements file (.toml, .json or .ini; keys are the flag names, e.g. min_driver). "
                   "Flags override it. [env: GPUDOCTOR_HOOK_CONFIG]")
@click.option("--snapshot", "snapshot", type=click.Path(), envvar="GPUDOCTOR_SNAPSHOT", callback=nonempty_snapshot,
              help="Judge a recorded snapshot folder or bundle instead of this machine. [env: GPUDOCTOR_SNAPSHOT]")
@_opt_flag("--gpus", "At least this many GPUs must be visible.", type=int, metavar="N")
@_opt_flag("--min-driver", "Oldest acceptable NVIDIA driver, e.g. 535.104.05.", metavar="VERSION")
@_opt_flag("--min-free-mem", "Free memory every GPU must have: 70GiB, 40960MiB, 80GB or MiB.", metavar="SIZE")
@click.option("--no-foreign-processes", "no_foreign_processes", is_flag=True, default=None,
              help="No compute process may be running on any GPU (see --allow-process/--allow-user).")
@click.option("--allow-process", "allow_processes", multiple=True, metavar="NAME",
              help="A process name allowed on the GPUs (e.g. nvidia-cuda-mps-server); repeatable.")
@click.option("--allow-user", "allow_users", multiple=True, metavar="USER",
              help="GPU processes of this user are allowed; repeatable.")
@_opt_flag("--cuda", "CUDA version jobs need: the driver must support it, and installed torch/TensorFlow "
                     "builds must not need a newer CUDA than the driver's.", metavar="VERSION")
@click.option("--persistence/--no-persistence", "persistence", default=None,
              help="Require persistence mode on every GPU.")
@click.option("--pending-retirement/--ignore-pending-retirement", "pending_retirement", default=None,
              help="Fail on retired pages or row remaps waiting for a GPU reset (default: on).")
@_opt_flag("--max-temp", "Hottest acceptable GPU temperature in degrees C.", type=int, metavar="C")
@_opt_flag("--drain-xid-actions", "Xids in the kernel log since boot whose NVIDIA action (Xid catalog) is one of "
                                  "these fail the node: comma-separated, or none to skip the kernel log.  "
                                  "[default: RESET_GPU,RESTART_BM,CONTACT_SUPPORT]", metavar="ACTIONS")
@click.option("--fabric-manager/--no-fabric-manager", "fabric_manager", default=None,
              help="On NVSwitch systems, require the fabric manager running at the driver's version (default: on).")
@click.option("--nvlink/--no-nvlink", "nvlink", default=None,
              help="Require every NVLink up and no NVLink error counter growing.")
@click.option("--pcie-width/--no-pcie-width", "pcie_width", default=None,
              help="Require every GPU's PCIe link at its full width (a narrower link is a fault).")
@click.option("--no-slowdown/--allow-slowdown", "no_slowdown", default=None,
              help="Fail while a GPU's clocks are held down by heat or its power supply (HW/SW thermal, power brake).")
@_opt_flag("--dcgm", "Also run DCGM's diagnostic `dcgmi diag -r LEVEL` (1-4) and judge its results; needs DCGM "
                     "and nv-hostengine (skipped, saying why, without them). Without --timeout the run may take "
                     "as long as that level is allowed.", type=click.IntRange(1, 4), metavar="LEVEL")
@click.option("--smoke", "smoke", is_flag=True, default=None,
              help="Also run the active smoke test in the job's interpreter (--python): memory, fp32/fp16/bf16 "
                   "matrix products checked against the CPU, host<->GPU copy bandwidth, an NCCL all-reduce "
                   "across the GPUs. Takes seconds to a minute; without --timeout the run may take up to 190s.")
@_opt_flag("--timeout", "Seconds the whole run may take; a hung nvidia-smi is a problem.  [default: 10]",
           type=float, metavar="SECONDS")
@_opt_flag("--python", "The interpreter jobs use, whose torch/TensorFlow builds are read "
                       "(default: the one running gpudoctor).", type=click.Path(dir_okay=False))
@_opt_flag("--prometheus", "Also write node_exporter textfile metrics to FILE (atomically).",
           type=click.Path(dir_okay=False), metavar="FILE")
@click.option("--npd", is_flag=True, help="Print the verdict on stdout in at most 80 bytes (node-problem-detector).")
@json_option
@click.option("-v", "--verbose", is_flag=True, help="List every requirement and its result.")
@color_option
def command(config_path, snapshot, npd, as_json, verbose, color, **flags):
    """Check this node before a job starts: quiet when healthy, one line and exit 1 when not.

    Requirements come from flags and from a config file (--config or
    $GPUDOCTOR_HOOK_CONFIG); only nvidia-smi -q -x runs, and framework builds are read from
    their installed files (never imported), so a run takes a fraction of a second.

    \b
    Examples:
      gpudoctor hook --gpus 8 --min-driver 535.104.05 --max-temp 85
      gpudoctor hook --config /etc/gpudoctor/hook.toml --prometheus /var/lib/node_exporter/gpudoctor.prom
      gpudoctor hook --cuda 12.4 --python /opt/venv/bin/python --min-free-mem 70GiB
      gpudoctor hook --npd --timeout 20           # node-problem-detector custom plugin
      GPUDOCTOR_SNAPSHOT=DIR gpudoctor hook -v    # judge a recorded machine
      gpudoctor hook --smoke --dcgm 1 --python /opt/venv/bin/python   # active tests: seconds to minutes
    """
    start = time.monotonic()
    try:
        settings = _checked_settings(config_path, snapshot, npd, as_json, verbose, flags)
        outcome, view = _watched_judgement(settings, start)
    except InputError as exc:  # bad usage, config or snapshot
        if npd:
            _npd_reason(exc.format_message())
        raise
    code = int(outcome.exit_code)
    try:
        _print(outcome, view, npd, as_json, verbose, color)
    except BrokenPipeError:  # nobody reads stdout any more; the verdict still stands
        from gpudoctor.commands.common import quiet_closed_stdout

        quiet_closed_stdout()
    except OutputError as exc:  # stdout is a full disk: a problem found stays one, else unknown
        from gpudoctor.commands.common import quiet_closed_stdout

        quiet_closed_stdout()
        click.echo(f"gpudoctor: {exc}", err=True)
        code = code if code == HookExit.PROBLEM else int(HookExit.UNKNOWN)
    if outcome.line:  # last: the wrappers take stderr's last line as the drain reason
        click.echo(outcome.line, err=True)
    return code


def _checked_settings(config_path, snapshot, npd, as_json, verbose, flags):
    if npd and (as_json or verbose):  # node-problem-detector reads stdout as the message
        raise InputError("--npd prints the verdict alone on stdout; leave out --json and -v")
    # Reading a config file on a stuck mount must not hang the hook either: --timeout (if sane) bounds it too.
    t = flags.get("timeout")
    guard = _Watchdog((t if t and 0.5 <= t <= 600 else DEFAULT_TIMEOUT_S) + 1.5)
    try:
        return _settings(config_path, snapshot, flags)
    finally:
        guard.cancel()


def _watched_judgement(settings, start):
    watchdog = _Watchdog(settings.timeout + 1.5)
    try:
        outcome, view = _judge(settings, start)
        outcome.duration_s = time.monotonic() - start
        _write_metrics(settings.prometheus, outcome, view)  # so is a stuck textfile directory
        return outcome, view
    finally:
        watchdog.cancel()


def _settings(config_path, snapshot, flags):
    from gpudoctor.hook.config import ConfigError, merge, read_file

    try:
        file_values = read_file(config_path) if config_path else {}
        return merge(file_values, {**flags, "snapshot": snapshot or None})
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def _judge(settings, start):
    try:
        return _judge_node(settings, start)
    except InputError:
        raise
    except Exception as exc:  # a bug in gpudoctor must not drain a healthy node
        from gpudoctor.hook.outcome import crashed

        if os.environ.get("GPUDOCTOR_DEBUG"):
            import traceback
            traceback.print_exc()
        return crashed(exc), None


def _judge_node(settings, start):
    """The same engine as `gpudoctor check`, over a fast snapshot, with the hook's selection."""
    from gpudoctor.diagnoses import diagnose
    from gpudoctor.engine import run_checks
    from gpudoctor.facts import Facts
    from gpudoctor.hook.outcome import decide
    from gpudoctor.hook.select import lenient_ids, select
    from gpudoctor.plugins import load_checks

    req = settings.requirements
    if settings.snapshot:
        from gpudoctor.commands.common import load_snapshot

        snap = load_snapshot(settings.snapshot)
    else:
        from gpudoctor.hook import live

        from gpudoctor.hook.job import for_job

        req = for_job(req, os.environ)  # in a Slurm job: only its GPUs, its user allowed
        snap = live.record(os.environ, start + settings.timeout, settings.python, req)
    checks, _problems = load_checks()  # a broken plugin is gpudoctor's problem, not the node's
    findings = run_checks(snap, select(checks, req), requirements=req)
    return decide(findings, diagnose(findings), lenient_ids(checks, req)), Facts(snap, req)


def _write_metrics(path, outcome, view):
    if not path:
        return
    from gpudoctor.hook import prometheus

    try:
        smi = view.get("smi") if view is not None else None
        driver_fact = view.get("driver_version") if view is not None else None
        driver = driver_fact.version if driver_fact is not None else None
        text = prometheus.render(outcome, time.time(), smi.gpus if smi else (), driver)
        prometheus.write(path, text)
    except OSError as exc:
        click.echo(f"gpudoctor: cannot write {path} ({exc.strerror or exc})", err=True)
    except Exception as exc:  # even a bug in the textfile writer leaves the verdict as it is
        click.echo(f"gpudoctor: cannot write {path} ({type(exc).__name__}: {exc})", err=True)


def _print(outcome, view, npd, as_json, verbose, color):
    if as_json:
        from gpudoctor.render.json import dumps

        data = outcome.to_dict()
        data["node"] = _node_dict(view)
        click.echo(dumps(data), nl=False)
    elif verbose:
        _print_verbose(outcome, color)
    if npd:
        from gpudoctor.hook.outcome import npd_message

        click.echo(npd_message(outcome))


def _node_dict(view):
    """The node as the checks saw it (the same summary `check --json` gives as `machine`)."""
    if view is None:
        return None
    from gpudoctor.summary import machine_summary

    return machine_summary(view)


def _print_verbose(outcome, color):
    from gpudoctor.findings import Status
    from gpudoctor.render.style import Style

    style = Style.for_stream(sys.stdout, color)
    from gpudoctor.hook.outcome import verdict

    for f in outcome.findings:
        # click.echo strips escape codes off a non-terminal unless told the colour was decided.
        shown = Status.SKIP if verdict(f, outcome.lenient) == "unknown" else f.status
        click.echo(f"{style.status(shown)} {f.check_id:<8} {f.title}", color=style.colour)
    click.echo(f"{outcome.state} in {outcome.duration_s:.2f}s")


class _Watchdog:
    """Ends the process with "unknown" if the hook itself hangs (e.g. on a stuck filesystem):
    a scheduler must never wait on the doctor, and a stuck doctor proves nothing about the node."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True
        self.timer.start()

    def _fire(self):
        from gpudoctor import runner

        runner.kill_active()  # nvidia-smi and whatever it started must not outlive the hook
        os.write(2, f"gpudoctor: internal error, not judging this node: the hook did not finish "
                    f"within {self.seconds:g}s\n".encode())
        os._exit(int(HookExit.UNKNOWN))

    def cancel(self):
        self.timer.cancel()
