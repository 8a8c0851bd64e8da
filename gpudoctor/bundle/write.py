"""Write the archive atomically: a temporary file beside the target, renamed at the very end.

An interrupted run (Ctrl-C, SIGTERM, a full disk) leaves nothing at the target path and
no temporary file behind. The temporary file is created before collection starts, so an
unwritable destination is reported at once, not after the probes ran.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import signal
import sys
import tarfile
import tempfile
import threading
import time
from contextlib import contextmanager
from typing import BinaryIO, Callable, Iterator, List, Optional, Sequence, Tuple

from gpudoctor import staging

Member = Tuple[str, bytes]  # (name inside the bundle, content)


class BundleWriteError(Exception):
    """The archive could not be written; the message is one line for the user."""


class AtomicFile:
    """A ``.part`` file in the target's directory that becomes the target only on :meth:`commit`."""

    def __init__(self, target: str):
        self.target = os.path.abspath(target)
        folder = os.path.dirname(self.target)
        staging.sweep(folder)  # .part files of bundle runs that were killed (SIGKILL skips every cleanup)
        try:
            fd, self.temp = tempfile.mkstemp(prefix=staging.part_name(self.target), suffix=".part", dir=folder)
        except OSError as exc:
            raise BundleWriteError(f"{target}: cannot write here ({exc.strerror or exc})") from None
        os.close(fd)  # mode 0600: a bundle describes a private machine

    def open(self) -> BinaryIO:
        return open(self.temp, "wb")

    def commit(self) -> None:
        os.replace(self.temp, self.target)

    def discard(self) -> None:
        try:
            os.unlink(self.temp)
        except FileNotFoundError:
            pass


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_archive(out: AtomicFile, top: str, members: Sequence[Member],
                  wrap: Callable[[BinaryIO], BinaryIO] = lambda f: f) -> int:
    """Write ``members`` under ``top/`` as a .tar.gz into ``out`` and commit it; returns its size.

    ``wrap`` lets tests put a failing writer (a full disk) between the archive and the file.
    On any failure the temporary file is removed and :class:`BundleWriteError` raised.
    """
    now = int(time.time())
    try:
        with out.open() as raw:
            sink = wrap(raw)
            with gzip.GzipFile(filename="", mode="wb", fileobj=sink, mtime=now) as gz:
                with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    for name, data in members:
                        tar.addfile(_info(f"{top}/{name}", len(data), now), io.BytesIO(data))
            raw.flush()
            os.fsync(raw.fileno())
        size = os.path.getsize(out.temp)
        out.commit()
        return size
    except OSError as exc:
        out.discard()
        raise BundleWriteError(f"{out.target}: cannot write the bundle ({exc.strerror or exc})") from None
    except BaseException:
        out.discard()
        raise


def _info(name: str, size: int, mtime: int) -> tarfile.TarInfo:
    # No owner names or ids: they would leak the user name past --anonymize.
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, mtime, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


class Cleanup:
    """Paths to remove, and child processes to kill, when a signal ends the run."""

    def __init__(self):
        self.files: List[str] = []
        self.dirs: List[str] = []

    def run(self) -> None:
        for path in self.files:
            try:
                os.unlink(path)
            except OSError:
                pass
        self.run_dirs()
        kill_children()

    def run_dirs(self) -> None:
        for path in self.dirs:
            staging.remove(path)


def kill_children(rounds: int = 3) -> None:
    """Kill the commands still running for us (each leads its own process group, see runner.run).

    A few rounds: a worker thread may be starting one more command while we kill the others.
    The runner's own list comes first: it also finds what those commands started in new sessions.
    """
    from gpudoctor import runner

    runner.kill_active()
    try:
        import psutil
        me = psutil.Process()
    except Exception:  # psutil missing or /proc unreadable: the runner's timeouts still bound them
        return
    for i in range(rounds):
        try:
            children = me.children(recursive=True)
        except Exception:
            return
        if not children:
            return
        for child in children:
            try:
                if os.getpgid(child.pid) == child.pid:
                    os.killpg(child.pid, signal.SIGKILL)
                else:
                    child.kill()
            except Exception:  # already gone
                pass
        time.sleep(0.02)


@contextmanager
def on_signals(cleanup: Cleanup, message: Callable[[int], str]) -> Iterator[None]:
    """While active, SIGINT and SIGTERM clean up, print one line and exit 128+signal at once.

    Exiting from the handler (``os._exit``) instead of raising means no code path can swallow
    the interrupt, and no worker thread waiting on a hung command delays the exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        cleanup.run()
        try:
            sys.stderr.write(message(signum) + "\n")
            sys.stderr.flush()
        finally:
            os._exit(128 + signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def describe_size(n: Optional[int]) -> str:
    if n is None:
        return "?"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
