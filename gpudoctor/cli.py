"""gpudoctor's command line. Subcommands are imported only when used, to keep start-up fast."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback

import click

import gpudoctor
from gpudoctor.exitcodes import ExitCode

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
    """Entry point: bad input exits 2 with one line; an internal bug exits 3, never a bare traceback."""
    try:
        rc = cli.main(args=argv, prog_name="gpudoctor", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("gpudoctor: interrupted", err=True)
        sys.exit(130)
    except _NO_ARGS_HELP as exc:  # bare `gpudoctor`: the help itself, as click prints it
        exc.show()
        sys.exit(ExitCode.USAGE)
    except click.UsageError as exc:  # click's own "Usage: ... Error: ..." block, as one line
        where = exc.ctx.command_path if exc.ctx else "gpudoctor"
        click.echo(f"gpudoctor: {exc.format_message()} (see `{where} --help`)", err=True)
        sys.exit(ExitCode.USAGE)
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitCode.USAGE if exc.exit_code == 2 else exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("gpudoctor: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # a bug in gpudoctor: say so in one line, keep the traceback opt-in
        if os.environ.get("GPUDOCTOR_DEBUG"):
            traceback.print_exc()
        click.echo(f"gpudoctor: internal error: {type(exc).__name__}: {exc} "
                   "(set GPUDOCTOR_DEBUG=1 for the traceback)", err=True)
        sys.exit(ExitCode.INTERNAL)
    sys.exit(rc if isinstance(rc, int) else 0)
