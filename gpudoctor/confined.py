"""Reading a recorded folder without ever leaving it: a snapshot folder is untrusted input.

A folder from someone else (an unpacked archive, a copied fixture) may hold symbolic
links to host files (``files/etc/os-release -> /etc/shadow``, ``files -> /etc``), FIFOs
that block a reader forever, sparse files of gigabytes, or millions of entries. So the
folder is opened once and every path below it is opened one component at a time
relative to its parent's descriptor, with ``O_NOFOLLOW`` (a link is never followed, not
even one that stays inside), ``O_NONBLOCK`` (a FIFO does not block the open) and a check
that the result is a regular file; reads stop at a cap. What cannot be read is reported
as a reason (``Refused``), for the caller to record as data.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Iterator, List, Optional, Sequence, Tuple

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
LINK = "symbolic link, not followed"
_REASONS = {errno.ELOOP: LINK, errno.ENOENT: "missing", errno.EACCES: "permission denied",
            errno.EPERM: "permission denied", errno.ENOTDIR: "not a directory", errno.EISDIR: "is a directory"}

Parts = Tuple[str, ...]


class Refused(Exception):
    """Why a path below the folder was not read (one short phrase)."""


def _reason(exc: OSError) -> str:
    return _REASONS.get(exc.errno, exc.strerror or str(exc))


def _open_at(dir_fd: int, name: str, flags: int) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        raise Refused(_refined(exc, dir_fd, name)) from None


def _refined(exc: OSError, dir_fd: int, name: str) -> str:
    """The reason for a failed open; O_DIRECTORY | O_NOFOLLOW on a link says ENOTDIR, not ELOOP."""
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        try:
            if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return LINK
        except OSError:
            pass
    return _reason(exc)


def read_fd(fd: int, cap: int, whole: bool = False) -> Tuple[bytes, bool]:
    """The first ``cap`` bytes of the regular file open at ``fd``, and whether there was more.

    ``whole``: a file over ``cap`` bytes is refused unread (its size says so) instead of cut.
    A FIFO or device is refused before anything is read. Shared with ``liveread`` (the live
    machine's files): one capped, non-blocking read for recordings and live files alike.
    """
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused("is a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file")
        if whole and st.st_size > cap:
            raise Refused(f"over {cap} bytes")
        chunks: List[bytes] = []
        left = cap
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        cut = left == 0 and bool(os.read(fd, 1))
    except OSError as exc:
        raise Refused(_reason(exc)) from None
    if whole and cut:
        raise Refused(f"over {cap} bytes")  # it grew while being read (or /proc, whose size is 0)
    return b"".join(chunks), cut


class Folder:
    """A directory opened once; paths below it are tuples of names (never joined strings)."""

    def __init__(self, path: str):
        try:
            self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
        except OSError as exc:
            raise Refused(_reason(exc)) from None

    def __enter__(self) -> "Folder":
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.fd)

    def _open(self, parts: Parts, final_flags: int) -> int:
        """A descriptor for ``parts``, each component opened below its parent without following links."""
        if not parts or any(p in ("", ".", "..") or "/" in p for p in parts):
            raise Refused("not a plain path below the folder")
        cur, opened = self.fd, []
        try:
            for name in parts[:-1]:
                cur = _open_at(cur, name, _DIR_FLAGS)
                opened.append(cur)
            return _open_at(cur, parts[-1], final_flags)
        finally:
            for fd in opened:
                os.close(fd)

    def read(self, parts: Parts, cap: int, whole: bool = False) -> Tuple[bytes, bool]:
        """The first ``cap`` bytes of a regular file, and whether there was more (see :func:`read_fd`)."""
        fd = self._open(parts, _FILE_FLAGS)
        try:
            return read_fd(fd, cap, whole)
        finally:
            os.close(fd)

    def kind(self, parts: Parts) -> Optional[str]:
        """"file", "dir", or None for anything else (missing, a link, a FIFO) at ``parts``."""
        try:
            fd = self._open(parts, _FILE_FLAGS)
        except Refused:
            return None
        try:
            mode = os.fstat(fd).st_mode
        finally:
            os.close(fd)
        return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else None

    def walk(self, top: Parts, max_entries: int, max_depth: int) -> Iterator[Tuple[Parts, Optional[str]]]:
        """(parts below ``top``, None) for each regular file, (parts, reason) for what is refused.

        Directories are visited from a stack (no recursion, one descriptor open at a time);
        over ``max_entries`` entries in all raises Refused for the whole folder.
        """
        stack: List[Parts] = [()]
        seen = 0
        while stack:
            rel = stack.pop()
            try:
                entries = self._list(top + rel)
            except Refused as exc:
                if rel:
                    yield rel, str(exc)
                    continue
                if str(exc) == "missing":
                    return
                yield rel, str(exc)
                return
            seen += len(entries)
            if seen > max_entries:
                raise Refused(f"over {max_entries} entries")
            for name, mode in entries:
                yield from self._entry(rel + (name,), mode, stack, max_depth)

    def _entry(self, parts: Parts, mode: int, stack: List[Parts], max_depth: int):
        if not _utf8(parts[-1]):
            yield parts, "file name is not UTF-8"
        elif stat.S_ISLNK(mode):
            yield parts, LINK
        elif stat.S_ISDIR(mode):
            if len(parts) >= max_depth:
                yield parts, f"folder nested over {max_depth} levels, not read"
            else:
                stack.append(parts)
        elif stat.S_ISREG(mode):
            yield parts, None
        else:
            yield parts, "not a regular file"

    def _list(self, parts: Parts) -> List[Tuple[str, int]]:
        fd = self._open(parts, _DIR_FLAGS) if parts else os.dup(self.fd)
        try:
            with os.scandir(fd) as it:
                return sorted(((e.name, e.stat(follow_symlinks=False).st_mode) for e in it), reverse=True)
        except OSError as exc:
            raise Refused(_reason(exc)) from None
        finally:
            os.close(fd)


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:  # os.scandir gives undecodable bytes as lone surrogates
        return False


def display(parts: Sequence[str]) -> str:
    """``parts`` as a printable relative path (undecodable bytes shown as U+FFFD)."""
    return "/".join(p.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for p in parts)
