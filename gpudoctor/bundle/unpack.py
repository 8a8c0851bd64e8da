"""Unpacking a bundle's tar stream: every member validated and written by this module, every byte counted.

Nothing relies on ``tarfile``'s extraction filters (they differ across Python 3.9-3.12):
members are read from the stream and written with ``O_EXCL | O_NOFOLLOW`` below a
private folder. Members with absolute paths or ``..``, links, devices and FIFOs are
refused, as are members or a total over the size limits, a compression ratio only a tar
bomb has, and headers no bundle has (a 1 GiB long name). The sha256 of each member is
taken while it is written, for the manifest check.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import tarfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Dict, List, Optional

from gpudoctor.snapshot import SnapshotError


@dataclass(frozen=True)
class Limits:
    member_bytes: int = 64 * 1024 * 1024
    total_bytes: int = 512 * 1024 * 1024
    members: int = 20000
    ratio: float = 200.0            # unpacked / compressed bytes
    ratio_after: int = 8 * 1024 * 1024  # small archives of text compress well; judge the ratio past this
    header_bytes: int = 1024 * 1024  # one member's headers (pax or GNU long name records included)


class Refused(Exception):
    pass


class _Counting:
    """A read-only file wrapper that counts the compressed bytes read (for the ratio guard)."""

    def __init__(self, raw: BinaryIO):
        self.raw, self.count = raw, 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.count += len(data)
        return data


class _Guard:
    """The decompressed tar stream, bounded as a whole: every byte counts, not only extracted ones.

    Members skipped unread (a "." entry, a directory) and headers (a 1 GiB pax or GNU long
    name, which tarfile reads into memory whole) pass through here, so the total, the
    compression ratio and the header size are judged on what is really decompressed.
    ``allowed`` is moved past each member's data by the reader; more than
    ``limits.header_bytes`` beyond it is a header no bundle has.
    """

    def __init__(self, gz: BinaryIO, raw: _Counting, limits: Limits):
        self.gz, self.raw, self.limits, self.count = gz, raw, limits, 0
        self.cap = limits.total_bytes + limits.members * 3 * tarfile.BLOCKSIZE
        self.allowed = limits.header_bytes + tarfile.RECORDSIZE

    def read(self, n: int = -1) -> bytes:
        data = self.gz.read(n)
        self.count += len(data)
        lim = self.limits
        if self.count > self.allowed:
            raise Refused(f"a tar header over {lim.header_bytes} bytes (a long-name bomb?)")
        if self.count > self.cap:
            raise Refused(f"the bundle unpacks to over {lim.total_bytes} bytes")
        if self.count > lim.ratio_after and self.count > lim.ratio * max(self.raw.count, 1):
            raise Refused(f"compression ratio over {lim.ratio:.0f}:1 (a tar bomb?)")
        return data

    def past(self, member: tarfile.TarInfo) -> None:
        end = member.offset_data + (-(-member.size // tarfile.BLOCKSIZE)) * tarfile.BLOCKSIZE
        self.allowed = end + self.limits.header_bytes + tarfile.RECORDSIZE


def unpack(path: str, dest: str, limits: Limits) -> Dict[str, str]:
    """Extract the regular members below ``dest``; their sha256 by relative path."""
    name = None
    try:
        with open(path, "rb") as raw:
            counting = _Counting(raw)
            with gzip.GzipFile(fileobj=counting, mode="rb") as gz:
                guard = _Guard(gz, counting, limits)
                with tarfile.open(fileobj=guard, mode="r|") as tar:
                    total, hashes = [0], {}
                    for n, member in enumerate(tar, 1):
                        name = member.name
                        guard.past(member)
                        _take(tar, member, n, dest, limits, total, hashes)
                        name = None  # what fails between members is the bundle's, not this member's
                    return hashes
    except Refused as exc:
        where = f"member {name!r}" if name is not None else "the bundle"
        raise SnapshotError(f"{path}: refusing {where}: {exc}") from None
    except (EOFError, zlib.error) as exc:
        raise SnapshotError(f"{path}: truncated or corrupt bundle ({_why(exc)})") from None
    except gzip.BadGzipFile as exc:
        raise SnapshotError(f"{path}: corrupt gzip data ({_why(exc)})") from None
    except tarfile.TarError as exc:
        raise SnapshotError(f"{path}: not a readable tar archive inside the gzip ({_why(exc)})") from None
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot unpack ({exc.strerror or exc})") from None


def _take(tar, member: tarfile.TarInfo, n: int, dest: str, limits: Limits, total: List[int],
          hashes: Dict[str, str]) -> None:
    total[0] += member.size  # skipped members ("." or a directory) count too
    rel = _validate(member, limits)
    if n > limits.members:
        raise Refused(f"more than {limits.members} members")
    if total[0] > limits.total_bytes:
        raise Refused(f"the bundle unpacks to over {limits.total_bytes} bytes")
    if rel is None or member.isdir():
        return
    if rel in hashes:
        raise Refused("it appears twice")
    hashes[rel] = _extract(tar, member, dest, rel)


def _why(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[0].lower() + text[1:]


def _validate(member: tarfile.TarInfo, limits: Limits) -> Optional[str]:
    """The member's safe relative path (None for the root entry "."), or Refused with the reason."""
    name = member.name
    if "\x00" in name or "\\" in name:
        raise Refused("unsafe characters in its path")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise Refused("absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Refused("path escapes the bundle")
    kinds = ((member.issym(), "it is a symbolic link"), (member.islnk(), "it is a hard link"),
             (member.ischr() or member.isblk(), "it is a device"), (member.isfifo(), "it is a FIFO"),
             (member.issparse(), "it is a sparse file"))
    for hit, why in kinds:
        if hit:
            raise Refused(why)
    if not (member.isreg() or member.isdir()):
        raise Refused("it is not a regular file")
    if member.size > limits.member_bytes:
        raise Refused(f"{member.size} bytes, over the {limits.member_bytes}-byte limit per member")
    return "/".join(parts) or None


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: str, rel: str) -> str:
    """Write the member below ``dest`` (never through a link); its sha256."""
    target = os.path.join(dest, *rel.split("/"))
    if os.path.commonpath([os.path.realpath(os.path.dirname(target)), os.path.realpath(dest)]) != \
            os.path.realpath(dest):
        raise Refused("path escapes the bundle")
    src = tar.extractfile(member)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        fd = os.open(target, flags, 0o600)
    except (FileExistsError, IsADirectoryError, NotADirectoryError):
        raise Refused("it clashes with another member's path") from None
    digest = hashlib.sha256()
    with os.fdopen(fd, "wb") as out:
        left = member.size
        while left > 0:
            chunk = src.read(min(left, 1024 * 1024))
            if not chunk:
                raise EOFError("member data ends early")
            out.write(chunk)
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


