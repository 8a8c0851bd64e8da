"""Record the NVIDIA part of the kernel log since boot: /dev/kmsg, journalctl -k -b, dmesg.

A kernel log holds far more than a doctor needs, some of it private, and grows with the
uptime: only its first line (where it starts: "Linux version ..." when it reaches back to the
boot) and the NVIDIA lines (NVRM, Xid, SXid, nvidia*, NVSwitch) are kept, the newest
``MAX_LINES`` of them, each cut to ``MAX_LINE_CHARS``. What could not be read is recorded
as such (``/dev/kmsg``: "permission denied" without CAP_SYSLOG when kernel.dmesg_restrict=1).

``/dev/kmsg`` is read non-blocking: each read returns one record and the reads stop with
EAGAIN when the buffer is drained, so the whole ring buffer takes milliseconds and a busy
kernel that keeps logging cannot hold the reader past ``deadline``.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import time
from typing import Optional

from gpudoctor import runner
from gpudoctor.kernlog import MAX_LINE_CHARS  # lines kept as the parser reads them
from gpudoctor.snapshot import FileRecord

KMSG = "/dev/kmsg"
COMMAND_KEYS = ("kernel_journal", "kernel_dmesg")
# The driver's own messages: NVRM, Xid/SXid, and lines its modules prefix with their name ("nvidia-nvswitch0:",
# "nvidia_uvm:", "nvidia 0000:18:00.0:"); not every line that mentions a path with "nvidia" in it.
NVIDIA_LINE = re.compile(r"NVRM|\bS?Xid\b|\bnvidia(?:[-_][a-z]+\d*)?(?::| [0-9a-f]{4}:)|fallen off the bus",
                         re.IGNORECASE)
KMSG_DICT_LINE = re.compile(r"^ [A-Z_]+=")  # a record's " SUBSYSTEM=pci" dictionary lines
MAX_LINES = 5000
MAX_READ_BYTES = 32 << 20


def keep(text: str) -> str:
    """The first line and the NVIDIA lines of a kernel log, newest ``MAX_LINES`` kept, each cut."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    hits = [ln[:MAX_LINE_CHARS] for ln in lines[1:] if NVIDIA_LINE.search(ln)][-MAX_LINES:]
    return "\n".join([lines[0][:MAX_LINE_CHARS]] + hits) + "\n"


def trimmed(result: runner.CommandResult) -> runner.CommandResult:
    """A journalctl/dmesg result with only the lines :func:`keep` keeps (argv, exit code, stderr as they were)."""
    return dataclasses.replace(result, stdout=keep(result.stdout), stderr=result.stderr[-4000:])


def read_kmsg(root: str = "/", deadline: Optional[float] = None) -> FileRecord:
    """``/dev/kmsg`` below ``root``, read without blocking until ``deadline`` (``time.monotonic()``)."""
    try:
        fd = os.open(os.path.join(root, KMSG.lstrip("/")), os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return FileRecord(KMSG, error="missing")
    except PermissionError:
        return FileRecord(KMSG, error="permission denied")
    except OSError as exc:
        return FileRecord(KMSG, error=exc.strerror or str(exc))
    try:
        data = _drain(fd, deadline)
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    return FileRecord(KMSG, content=keep("\n".join(ln for ln in text.splitlines() if not KMSG_DICT_LINE.match(ln))))


def _drain(fd: int, deadline: Optional[float]) -> bytes:
    chunks, size = [], 0
    while size < MAX_READ_BYTES and (deadline is None or time.monotonic() < deadline):
        try:
            data = os.read(fd, 16384)
        except BlockingIOError:
            break                    # caught up with the ring buffer
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                continue             # records were overwritten while reading: go on with the next one
            break
        if not data:
            break                    # a regular file (a recorded kmsg under a test root) has ended
        chunks.append(data)
        size += len(data)
    return b"".join(chunks)
