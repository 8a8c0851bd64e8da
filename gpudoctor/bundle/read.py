"""Read a bundle safely: validate every member ourselves, unpack into a private temp folder.

A bundle comes from someone else's machine, so it is untrusted input. Members with
absolute paths or ``..``, links, devices and FIFOs are refused, as are members or a
total over the size limits and a compression ratio only a tar bomb has. Nothing relies
on ``tarfile``'s extraction filters (they differ across Python 3.9-3.12): members are
read from the stream and written by this module, with ``O_EXCL | O_NOFOLLOW``, below a
``mkdtemp`` folder (mode 0700) that is removed before returning.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Optional

from gpudoctor.snapshot import Snapshot, SnapshotError, load

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Limits:
    member_bytes: int = 64 * 1024 * 1024
    total_bytes: int = 512 * 1024 * 1024
    members: int = 20000
    ratio: float = 200.0            # unpacked / compressed bytes
    ratio_after: int = 8 * 1024 * 1024  # small archives of text compress well; judge the ratio past this


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


def load_bundle(path: str, limits: Limits = Limits()) -> Snapshot:
    """The snapshot inside a bundle written by ``gpudoctor bundle``; SnapshotError says why not."""
    _check_file(path)
    tmp = tempfile.mkdtemp(prefix="gpudoctor-bundle-")  # mode 0700
    try:
        _unpack(path, tmp, limits)
        root = _root(path, tmp)
        _verify(path, root)
        try:
            snap = load(str(root / "snapshot"))
        except SnapshotError as exc:
            raise SnapshotError(str(exc).replace(str(root), path)) from None
        snap.source = path
        return snap
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _check_file(path: str) -> None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not head:
        raise SnapshotError(f"{path}: empty file, not a gpudoctor bundle")
    if head != b"\x1f\x8b":
        raise SnapshotError(f"{path}: not a gzip-compressed bundle (.tar.gz); give a snapshot folder "
                            "or a file written by `gpudoctor bundle`")


def _unpack(path: str, dest: str, limits: Limits) -> None:
    try:
        with open(path, "rb") as raw:
            counting = _Counting(raw)
            with gzip.GzipFile(fileobj=counting, mode="rb") as gz, tarfile.open(fileobj=gz, mode="r|") as tar:
                total, seen = 0, set()
                for n, member in enumerate(tar, 1):
                    try:
                        rel = _validate(member, limits)
                        if n > limits.members:
                            raise Refused(f"more than {limits.members} members")
                        if rel is None or member.isdir():
                            continue
                        if rel in seen:
                            raise Refused("it appears twice")
                        seen.add(rel)
                        total += member.size
                        if total > limits.total_bytes:
                            raise Refused(f"the bundle unpacks to over {limits.total_bytes} bytes")
                        _extract(tar, member, dest, rel)
                        if total > limits.ratio_after and total > limits.ratio * max(counting.count, 1):
                            raise Refused(f"compression ratio over {limits.ratio:.0f}:1 (a tar bomb?)")
                    except Refused as exc:
                        raise SnapshotError(f"{path}: refusing member {member.name!r}: {exc}") from None
    except SnapshotError:
        raise
    except (EOFError, zlib.error) as exc:
        raise SnapshotError(f"{path}: truncated or corrupt bundle ({_why(exc)})") from None
    except gzip.BadGzipFile as exc:
        raise SnapshotError(f"{path}: corrupt gzip data ({_why(exc)})") from None
    except tarfile.TarError as exc:
        raise SnapshotError(f"{path}: not a readable tar archive inside the gzip ({_why(exc)})") from None
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot unpack ({exc.strerror or exc})") from None


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


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: str, rel: str) -> None:
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
    with os.fdopen(fd, "wb") as out:
        left = member.size
        while left > 0:
            chunk = src.read(min(left, 1024 * 1024))
            if not chunk:
                raise EOFError("member data ends early")
            out.write(chunk)
            left -= len(chunk)


def _root(path: str, tmp: str) -> Path:
    """The folder holding snapshot/ (the archive's top folder, or the archive root)."""
    base = Path(tmp)
    if (base / "snapshot" / "snapshot.json").is_file():
        return base
    tops = [p for p in base.iterdir() if p.is_dir()]
    if len(tops) == 1 and (tops[0] / "snapshot" / "snapshot.json").is_file():
        return tops[0]
    raise SnapshotError(f"{path}: no snapshot/snapshot.json inside; not a gpudoctor bundle")


def _verify(path: str, root: Path) -> None:
    """Members listed in manifest.json must match their sha256: a damaged bundle is not replayed."""
    manifest = root / MANIFEST
    if not manifest.is_file():
        return
    try:
        members = json.loads(manifest.read_text(encoding="utf-8")).get("members") or []
    except (ValueError, UnicodeDecodeError, AttributeError):
        raise SnapshotError(f"{path}: manifest.json is not valid JSON") from None
    for m in members:
        name, want = str(m.get("name", "")), m.get("sha256")
        target = root / name
        if not name or ".." in name.split("/") or not target.is_file():
            raise SnapshotError(f"{path}: manifest.json lists {name!r}, which the bundle lacks")
        if hashlib.sha256(target.read_bytes()).hexdigest() != want:
            raise SnapshotError(f"{path}: member {name!r} does not match its sha256 in manifest.json "
                                "(the bundle was changed or damaged)")

