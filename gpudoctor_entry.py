"""The first code the `gpudoctor` command runs: a guard around everything else.

A Slurm Prolog drains a node when `gpudoctor hook` exits 1, so no failure of gpudoctor's
own install may ever look like a verdict: a `click.py` that raises on PYTHONPATH, an empty
one, a stray `gpudoctor/` folder that shadows the package, a dependency that calls
`sys.exit(1)` while it is imported. This module lives outside the `gpudoctor` package (a
stray `gpudoctor/` cannot hide it) and imports nothing but the standard library before its
guard; click and gpudoctor itself are imported inside it. Anything that escapes becomes one
line, `gpudoctor: ...`, and exit 2 ("unknown") for `hook`, exit 3 for the other commands.
"""

import os
import sys

HOOK_UNKNOWN = 2   # gpudoctor.exitcodes.HookExit.UNKNOWN (not imported: it may be the broken part)
UNWRITABLE = 2     # ExitCode.USAGE: the output could not be written (a full disk, /dev/full)
INTERNAL = 3       # gpudoctor.exitcodes.ExitCode.INTERNAL
INTERRUPTED = 130
TERMINATED = 143   # 128 + SIGTERM: gpudoctor's own SIGTERM handlers clean up, then exit with it


def command_name(argv):
    """The subcommand in ``argv`` (the first word that is not an option), or None.
    The group's own options (--version, --help) take no value, so nothing is skipped wrongly."""
    return next((a for a in argv if not a.startswith("-")), None)


def _say(message):
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # stderr is gone too; the exit code still tells


def _failed(hook, what):
    """One line for a failure of gpudoctor itself, and the exit code that says so."""
    what = " ".join(str(what).split())[:300]
    if hook:
        _say(f"gpudoctor: internal error, not judging this node: {what}")
        return HOOK_UNKNOWN
    _say(f"gpudoctor: internal error: {what} (set GPUDOCTOR_DEBUG=1 for the traceback)")
    return INTERNAL


def _run(argv, hook):
    try:
        from gpudoctor.cli import run  # imports click and the rest of gpudoctor
        return run(argv)
    except KeyboardInterrupt:
        _say("gpudoctor: interrupted")
        return INTERRUPTED
    except SystemExit as exc:  # run() returns its code; an exit from inside is not a verdict ...
        if exc.code in (INTERRUPTED, TERMINATED):  # ... except a signal handler's, after its clean-up
            return exc.code
        return _failed(hook, f"exited with {exc.code!r} before it finished")
    except BaseException as exc:
        if os.environ.get("GPUDOCTOR_DEBUG"):
            import traceback

            traceback.print_exc()
        return _failed(hook, f"cannot run ({type(exc).__name__}: {exc}); is the install broken?")


def _flush(code, hook):
    """Write out what is still buffered now, while a failure can still be told (at interpreter
    exit it would be a traceback-like message and exit 120)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    except (OSError, ValueError) as exc:
        _say(f"gpudoctor: cannot write the output ({getattr(exc, 'strerror', None) or exc})")
        _discard_stdout()
        # A problem found stays a problem (its reason is on stderr); anything else is unknown.
        return code if hook and code == 1 else UNWRITABLE
    return code


def _discard_stdout():
    """What is left in stdout's buffer goes nowhere, quietly, when the interpreter exits."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    sys.stdout = open(os.devnull, "w")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    hook = command_name(argv) == "hook"
    code = _run(argv, hook)
    if not isinstance(code, int) or isinstance(code, bool):
        code = _failed(hook, f"gave the exit status {code!r}")
    if hook and code not in (0, 1, 2, INTERRUPTED):
        code = HOOK_UNKNOWN
    sys.exit(_flush(code, hook))


if __name__ == "__main__":
    main()
