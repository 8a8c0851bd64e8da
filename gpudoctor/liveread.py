"""Reading a file of the live machine: never blocks, never holds more than a cap.

A FIFO put where a config file should be (``$CUDA_HOME/version.json``) blocks ``open()``
until a writer comes; a character device (``/dev/zero``) never ends. Both are refused as
"not a regular file" before anything is read (``open`` with ``O_NONBLOCK`` in case the
path is swapped after the check), and a regular file larger than the cap is refused as
"over N bytes" instead of being loaded. ``/proc`` and ``/sys`` files are regular files
(size 0): they are read until end of file, up to the cap. A read that blocks inside the
kernel (a hung network filesystem) cannot be interrupted from Python; callers run these
reads in a thread under their deadline (``probes.collect``, ``hook.live``).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Optional, Tuple

from gpudoctor import confined


class Refused(OSError):
    """The path is not something gpudoctor reads; ``str()`` is the reason for the record."""

    def __str__(self) -> str:
        return self.strerror or "refused"


def read_bytes(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``; raises OSError (Refused included)."""
    _mode(os.stat(path).st_mode, path)  # a FIFO or device is refused before it is opened
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        return confined.read_fd(fd, limit, whole=True)[0]  # the same capped read as a recording's
    except confined.Refused as exc:
        raise Refused(errno.EINVAL, str(exc)) from None
    finally:
        os.close(fd)


def _mode(mode: int, path: str) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    if not stat.S_ISREG(mode):
        raise Refused(errno.EINVAL, "not a regular file")


def reason(exc: OSError) -> str:
    """The few words a FileRecord keeps for why a file could not be read."""
    if isinstance(exc, Refused):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return "missing"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    return exc.strerror or str(exc)


def read_text(path: str, limit: int) -> Tuple[Optional[str], Optional[str]]:
    """(text, None) or (None, reason); undecodable bytes become U+FFFD."""
    try:
        return read_bytes(path, limit).decode("utf-8", errors="replace"), None
    except OSError as exc:
        return None, reason(exc)
