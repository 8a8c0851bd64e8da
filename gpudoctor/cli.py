"""gpudoctor's command line. Subcommands are imported only when used, to keep start-up fast."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from typing import Optional

import click

import gpudoctor
from gpudoctor.exitcodes import ExitCode, HookExit
from gpudoctor.output import OutputError, guarded_stdout

COMMANDS = {
    "check": "gpudoctor.commands.check:command",
    "snapshot": "gpudoctor.commands.snapshot:command",
    "devices": "gpudoctor.commands.devices:command",
    "explain": "gpudoctor.commands.explain:command",
    "parse-smi": "gpudoctor.commands.parse_smi:command",
    "bundle": "gpudoctor.commands.bundle:command",
    "hook": "gpudoctor.commands.hook:command",
    "fleet": "gpudoctor.commands.fleet:command",
    "memory": "gpudoctor.commands.memory:command",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return [name for name in COMMANDS if self._available(name)]

    @staticmethod
    def _available(name: str) -> bool:
        module = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(module) is not None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # Output piped into `head`: the reader stopped reading. Not a failure found (click alone
            # would exit 1) and not a crash.
            from gpudoctor.commands.common import quiet_closed_stdout

            quiet_closed_stdout()
            return ExitCode.OK

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None or not self._available(name):
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(gpudoctor.__version__, prog_name="gpudoctor")
def cli():
    """Find why your NVIDIA GPU setup does not work for deep learning, and how to fix it.

    \b
    Exit codes (all commands):
      0  no failures          1  at least one failure (or a warning with --strict)
      2  usage or input error 3  gpudoctor itself failed
    `gpudoctor hook` uses 0 ok, 1 problem, 2 unknown (for Slurm and Kubernetes).
    """


# click >= 8.2 raises this (a UsageError whose message is the whole help) for a bare `gpudoctor`.
_NO_ARGS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


def main(argv=None) -> None:
    """Run gpudoctor and exit with its code (see :func:`run`)."""
    sys.exit(run(argv))


def run(argv=None) -> int:
    """The exit code of one gpudoctor command. Bad input is 2 with one line; an internal bug is 3
    with one line, never a bare traceback. For `hook`, whose 1 drains a Slurm node, anything
    but a verdict (0 healthy, 1 problem) is 2, "unknown": a doctor's failure never drains a node."""
    args = sys.argv[1:] if argv is None else list(argv)
    code = _run(args)
    if _command_name(args) == "hook" and code not in (ExitCode.OK, ExitCode.PROBLEM, 130):
        return int(HookExit.UNKNOWN)
    return code


def _command_name(argv) -> Optional[str]:
    return next((a for a in argv if not a.startswith("-")), None)


def _run(argv) -> int:
    try:
        with guarded_stdout():
            rc = cli.main(args=argv, prog_name="gpudoctor", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("gpudoctor: interrupted", err=True)
        return 130
    except _NO_ARGS_HELP as exc:  # bare `gpudoctor`: the help itself, as click prints it
        exc.show()
        return ExitCode.USAGE
    except click.UsageError as exc:  # click's own "Usage: ... Error: ..." block, as one line
        where = exc.ctx.command_path if exc.ctx else "gpudoctor"
        click.echo(f"gpudoctor: {exc.format_message()} (see `{where} --help`)", err=True)
        return ExitCode.USAGE
    except click.ClickException as exc:
        exc.show()
        return ExitCode.USAGE if exc.exit_code == 2 else exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("gpudoctor: interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    except OutputError as exc:  # stdout is a full disk or /dev/full: where it goes, not a bug
        click.echo(f"gpudoctor: {exc}", err=True)
        return ExitCode.USAGE
    except Exception as exc:  # a bug in gpudoctor: say so in one line, keep the traceback opt-in
        return _internal_error(argv, exc)
    return rc if isinstance(rc, int) else 0


def _internal_error(argv, exc: BaseException) -> int:
    if os.environ.get("GPUDOCTOR_DEBUG"):
        traceback.print_exc()
    what = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    if _command_name(argv) == "hook":  # the hook's own words for "not a verdict"
        click.echo(f"gpudoctor: internal error, not judging this node: {what}", err=True)
        return HookExit.UNKNOWN
    click.echo(f"gpudoctor: internal error: {what} (set GPUDOCTOR_DEBUG=1 for the traceback)", err=True)
    return ExitCode.INTERNAL
