"""Standard output that says so when it cannot be written.

`gpudoctor check --json > /dev/full` (or a full disk, a dead NFS mount) makes every write fail
with ENOSPC or EIO. That is a fact about where the output goes, not a bug in gpudoctor: the
CLI reports it in one line (exit 2) instead of crashing with exit 3. The commands write with
`click.echo` in many places, so the one seam is stdout itself: while a command runs, write
and flush failures on it become :class:`OutputError`, which no ``except OSError`` meant for
a file or a command can swallow by mistake. A closed pipe (EPIPE, output piped into `head`)
stays a BrokenPipeError: the CLI already treats that as the reader's choice.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager


class OutputError(Exception):
    """Writing to stdout failed; ``reason`` is the system's words ("No space left on device")."""

    def __init__(self, exc: OSError):
        self.reason = exc.strerror or str(exc)
        super().__init__(f"cannot write the output ({self.reason})")


class GuardedStdout:
    """A stdout stand-in that turns write failures into OutputError; everything else passes."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def flush(self):
        try:
            return self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def guarded_stdout():
    """Run a command with :class:`GuardedStdout` in place of ``sys.stdout``."""
    original = sys.stdout
    if original is not None and not isinstance(original, GuardedStdout):
        sys.stdout = GuardedStdout(original)
    try:
        yield
    finally:
        sys.stdout = original
