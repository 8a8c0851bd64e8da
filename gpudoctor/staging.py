"""Working paths that a killed run can leave behind, named so that the next run can remove them.

A bundle is unpacked into a private folder, written through a ``.part`` file, and a
snapshot folder is staged under a hidden name before it is renamed into place. SIGKILL,
an OOM kill or the hook's watchdog (``os._exit``) skip every ``finally``, so each such
path carries its creator in its name: the pid namespace, the pid and the process start
time (``gpudoctor-bundle-unpack-4026531836-4242-171234567812-k3j9x0qa``). :func:`sweep`
removes only paths that are ours (same owner), in our pid namespace, whose creator is
provably gone: no such pid, or a pid now held by a process that started at another time.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from contextlib import contextmanager
from typing import Iterator, Optional, Set

TEMP_PREFIXES = ("gpudoctor-bundle-unpack-", "gpudoctor-bundle-stage-")
_TEMP = re.compile(r"gpudoctor-bundle-(?:unpack|stage)-(\d+)-(\d+)-(\d+)-[a-z0-9_]{8}")
_PART = re.compile(r"\..+\.(\d+)-(\d+)-(\d+)-[a-z0-9_]{8}\.part")
_own: Set[str] = set()  # paths this process created and has not removed yet


def _namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _started(pid: int) -> Optional[int]:
    """The process's start time in hundredths of a second, or None if there is no such process."""
    try:
        import psutil
        return int(psutil.Process(pid).create_time() * 100)
    except Exception as exc:  # psutil.NoSuchProcess, or psutil missing: see below
        if type(exc).__name__ in ("NoSuchProcess", "ZombieProcess"):
            return None
        return -1  # cannot tell: treated as alive


_tags = {}


def tag() -> str:
    """This process's mark: pid namespace, pid, start time (computed once per process)."""
    pid = os.getpid()
    if pid not in _tags:
        _tags[pid] = f"{_namespace()}-{pid}-{max(_started(pid) or 0, 0)}"
    return _tags[pid]


def _creator_gone(ns: str, pid: str, start: str) -> bool:
    if int(ns) != _namespace() or int(pid) == os.getpid():
        return False
    started = _started(int(pid))
    # A start time of 0 means the creator could not read its own: only a missing pid proves it gone.
    return started is None or (started != -1 and int(start) != 0 and started != int(start))


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back (delivered when the block ends), so that a path is in ``_own``
    before a handler (which calls :func:`remove_own`) can run. Only the main thread's mask can be
    set; a signal another thread takes still runs its handler in the main thread, later."""
    held = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    if held:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def private_dir(kind: str) -> str:
    """A new folder (mode 0700) in the temp directory, removed by :func:`remove` or a later sweep."""
    with _signals_held():
        path = tempfile.mkdtemp(prefix=f"gpudoctor-bundle-{kind}-{tag()}-")
        _own.add(path)
    return path


def temp_dir() -> str:
    """The temp directory. Python's first lookup writes a probe file there and unlinks it; a SIGTERM that
    lands just after the file is made would leave it behind, so signals wait until the lookup is done."""
    with _signals_held():
        return tempfile.gettempdir()


def part_name(target: str) -> str:
    """The prefix for a ``.part`` path beside ``target`` (a file or folder being written)."""
    return f".{os.path.basename(target.rstrip(os.sep))}.{tag()}-"


def remove(path: str) -> None:
    _own.discard(path)
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def remove_own() -> None:
    """Remove every path this process still holds; for exits that skip ``finally`` (a watchdog)."""
    for path in list(_own):
        remove(path)


def sweep(folder: Optional[str] = None) -> int:
    """Remove stale paths of dead gpudoctor runs from ``folder`` (default: the temp directory)."""
    folder = folder or temp_dir()
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        m = _TEMP.fullmatch(name) or _PART.fullmatch(name)
        if m is None or not _creator_gone(*m.groups()):
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid != os.getuid() or stat.S_ISLNK(st.st_mode):
            continue
        remove(path)
        removed += 1
    return removed


class StagedFolder:
    """A hidden ``.part`` folder beside ``target`` that becomes ``target`` only on :meth:`commit`.

    An interrupted run (Ctrl-C, a kill, a full disk) never leaves a partial ``target``
    that blocks the next run; what SIGKILL leaves is a ``.part`` folder the next run sweeps.
    """

    def __init__(self, target: str):
        self.target = os.path.abspath(target)
        parent = os.path.dirname(self.target)
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), parent)
        os.makedirs(parent, exist_ok=True)
        sweep(parent)
        with _signals_held():
            self.path = tempfile.mkdtemp(prefix=part_name(self.target), suffix=".part", dir=parent)
            _own.add(self.path)

    def commit(self) -> None:
        """Rename into place (over an empty folder, as --out allows); files were synced by the writer."""
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.path, 0o777 & ~umask)  # mkdtemp's 0700 is right for work, not for the result
        _fsync_dir(self.path)
        os.rename(self.path, self.target)
        _own.discard(self.path)
        _fsync_dir(os.path.dirname(self.target))

    def discard(self) -> None:
        if self.path in _own:
            remove(self.path)


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
