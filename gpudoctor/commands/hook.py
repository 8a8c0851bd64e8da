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

EPILOG = """\b
Exit codes (Slurm Prolog / HealthCheckProgram, node-problem-detector plugin):
  0  healthy: every requirement holds
  1  problem: the node should not run jobs (stderr: the drain reason)
  2  unknown: a requirement could not be judged, bad usage, or gpudoctor itself failed;
     a bug in the doctor never reports a problem
"""


def _opt_flag(name, help_text, **kw):
    return click.option(name, default=None, help=help_text, **kw)


@click.command("hook", epilog=EPILOG)
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
    """
    start = time.monotonic()
    if npd and (as_json or verbose):  # node-problem-detector reads stdout as the message
        raise InputError("--npd prints the verdict alone on stdout; leave out --json and -v")
    # Reading a config file on a stuck mount must not hang the hook either: --timeout (if sane) bounds it too.
    t = flags.get("timeout")
    guard = _Watchdog((t if t and 0.5 <= t <= 600 else DEFAULT_TIMEOUT_S) + 1.5)
    try:
        settings = _settings(config_path, snapshot, flags)
    finally:
        guard.cancel()
    watchdog = _Watchdog(settings.timeout + 1.5)
    try:
        outcome, view = _judge(settings, start)
        outcome.duration_s = time.monotonic() - start
        _write_metrics(settings.prometheus, outcome, view)  # so is a stuck textfile directory
    finally:
        watchdog.cancel()
    try:
        _print(outcome, view, npd, as_json, verbose, color)
    except BrokenPipeError:  # nobody reads stdout any more; the verdict still stands
        from gpudoctor.commands.common import quiet_closed_stdout

        quiet_closed_stdout()
    if outcome.line:
        click.echo(outcome.line, err=True)
    return int(outcome.exit_code)


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
    from gpudoctor.hook import node
    from gpudoctor.hook.outcome import decide
    from gpudoctor.hook.requirements import evaluate

    req = settings.requirements
    if settings.snapshot:
        from gpudoctor.commands.common import load_snapshot

        snap = load_snapshot(settings.snapshot)
    else:
        from gpudoctor.hook import live

        snap = live.record(os.environ, start + settings.timeout, settings.python, req.needs_frameworks())
    view = node.from_snapshot(snap)
    if not settings.snapshot and req.no_foreign_processes and req.allow_users and view.processes:
        view = replace(view, owners=live.process_owners(p.pid for p in view.processes))
    return decide(evaluate(view, req)), view


def _write_metrics(path, outcome, view):
    if not path:
        return
    from gpudoctor.hook import prometheus

    text = prometheus.render(outcome, time.time(), view.gpus if view else (), view.driver_version if view else None)
    try:
        prometheus.write(path, text)
    except OSError as exc:
        click.echo(f"gpudoctor: cannot write {path} ({exc.strerror or exc})", err=True)


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
    if view is None:
        return None
    return {"hostname": view.hostname, "driver_version": view.driver_version,
            "cuda_driver_max": view.cuda_driver_max, "gpus": len(view.gpus),
            "frameworks": {n: {"version": f.version, "cuda": f.cuda} for n, f in view.frameworks.items()}}


def _print_verbose(outcome, color):
    from gpudoctor.findings import Status
    from gpudoctor.render.style import Style

    style = Style.for_stream(sys.stdout, color)
    status = {"ok": Status.OK, "problem": Status.FAIL, "unknown": Status.SKIP}
    for r in outcome.results:
        # click.echo strips escape codes off a non-terminal unless told the colour was decided.
        click.echo(f"{style.status(status[r.state.value])} {r.check:<19} {r.message}", color=style.colour)
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
