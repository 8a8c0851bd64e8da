"""Reading a child's stdout and stderr with a cap, under a deadline, without ever blocking.

``subprocess.communicate`` buffers everything a command prints before anything can be cut,
and waits for end-of-file on the pipes, which a process the command left behind may hold
forever. Here both streams are read as the command runs (at most a cap of each is
kept), and the wait ends at the deadline, or shortly after the command's own exit.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from typing import Dict, Optional, Tuple

# Output beyond this is cut; a doctor needs the start of a command's output, not gigabytes.
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
# A command that keeps printing is read (and its excess thrown away) up to this many times
# its cap, then stopped: a long but finite output still ends with its own exit code, and
# `cat /dev/zero` does not run on until the deadline.
DISCARD_FACTOR = 8
# After the command exits, how long a process it left behind may keep the pipes open.
HELD_GRACE_S = 0.5
POLL_S = 0.1
CHUNK = 1 << 16


def _exited(proc: subprocess.Popen) -> bool:
    """Whether the child has exited, without reaping it: its pid (and process group) stay
    reserved until ``proctree.kill_tree`` has looked for what it left behind. (Where there is
    no waitid, macOS, it is reaped: proctree finds nothing there anyway, having no /proc.)"""
    if not hasattr(os, "waitid"):
        return proc.poll() is not None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def wait_exit(proc: subprocess.Popen, deadline: float) -> bool:
    delay = 0.001
    while not _exited(proc):
        if time.monotonic() >= deadline:
            return False
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)
    return True


def pump(proc: subprocess.Popen, deadline: float, stdin_data: Optional[bytes],
         limit: int = MAX_OUTPUT_BYTES) -> Tuple[Dict, Optional[str]]:
    """Read stdout and stderr while the process runs, keeping at most ``limit`` bytes of each.

    Returns the kept bytes per stream and why reading stopped early: ``"timeout"`` at the
    deadline, ``"flood"`` after DISCARD_FACTOR * limit were thrown away (``cat /dev/zero``),
    ``"held"`` when the command exited but something it started keeps the pipes open.
    """
    kept = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    dropped, exited_at, pending = 0, None, memoryview(stdin_data or b"")
    with selectors.DefaultSelector() as sel:
        for stream in kept:
            os.set_blocking(stream.fileno(), False)
            sel.register(stream, selectors.EVENT_READ)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE)
        while sel.get_map():
            now = time.monotonic()
            if exited_at is None and _exited(proc):
                exited_at = now
            end = deadline if exited_at is None else min(deadline, exited_at + HELD_GRACE_S)
            if now >= end:
                return kept, "timeout" if exited_at is None else "held"
            for key, _ in sel.select(min(end - now, POLL_S)):
                if key.fileobj is proc.stdin:
                    pending = _feed(sel, proc.stdin, pending)
                    continue
                chunk = _read(sel, key.fileobj)
                room = limit - len(kept[key.fileobj])
                kept[key.fileobj] += chunk[:room]
                dropped += max(0, len(chunk) - room)
            if dropped > DISCARD_FACTOR * limit:
                return kept, "flood"
    return kept, None


def _read(sel: selectors.BaseSelector, stream) -> bytes:
    try:
        chunk = os.read(stream.fileno(), CHUNK)
    except BlockingIOError:
        return b""
    except OSError:
        chunk = b""
    if not chunk:
        sel.unregister(stream)
        stream.close()
    return chunk


def _feed(sel: selectors.BaseSelector, stream, pending: memoryview) -> memoryview:
    try:
        pending = pending[os.write(stream.fileno(), pending[:CHUNK]):]
    except BlockingIOError:
        return pending
    except OSError:
        pending = pending[:0]
    if not pending:
        sel.unregister(stream)
        stream.close()
    return pending
