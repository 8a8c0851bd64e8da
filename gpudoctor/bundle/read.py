"""Read a bundle safely: unpack it into a private temp folder, check it, load its snapshot.

A bundle comes from someone else's machine, so it is untrusted input: ``unpack``
validates every member, the manifest is checked against the hashes taken while
unpacking (its names are never opened as paths), and the snapshot inside is loaded as
the untrusted folder it is. The unpack folder (mode 0700, named after this process,
see :mod:`gpudoctor.staging`) is removed before returning, on SIGTERM too; one left by
a killed replay is removed by the next.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

from gpudoctor import staging
from gpudoctor.bundle.unpack import Limits, unpack  # noqa: F401  (Limits: part of this module's interface)
from gpudoctor.snapshot import Snapshot, SnapshotError
from gpudoctor.snapshot_folder import load

MANIFEST = "manifest.json"


def load_bundle(path: str, limits: Limits = Limits()) -> Snapshot:
    """The snapshot inside a bundle written by ``gpudoctor bundle``; SnapshotError says why not."""
    _check_file(path)
    staging.sweep()  # unpack folders of replays that were killed (SIGKILL, the hook's watchdog)
    with _removed_on_sigterm():
        tmp = staging.private_dir("unpack")  # mode 0700; a SIGTERM from here on removes it (remove_own)
        try:
            hashes = unpack(path, tmp, limits)
            root = _root(path, tmp)
            _verify(path, root, tmp, hashes)
            try:
                snap = load(str(root / "snapshot"))
            except SnapshotError as exc:
                raise SnapshotError(str(exc).replace(str(root), path)) from None
        finally:
            staging.remove(tmp)
    snap.source = path
    return snap


@contextmanager
def _removed_on_sigterm() -> Iterator[None]:
    """SIGTERM (a scheduler, `timeout`) ends the replay through the ``finally`` that removes the unpack folder."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        staging.remove_own()  # also a folder made a moment ago, before the ``finally`` that removes it began
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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


def _root(path: str, tmp: str) -> Path:
    """The folder holding snapshot/ (the archive's top folder, or the archive root)."""
    base = Path(tmp)
    if (base / "snapshot" / "snapshot.json").is_file():
        return base
    tops = [p for p in base.iterdir() if p.is_dir()]
    if len(tops) == 1 and (tops[0] / "snapshot" / "snapshot.json").is_file():
        return tops[0]
    raise SnapshotError(f"{path}: no snapshot/snapshot.json inside; not a gpudoctor bundle")


def _verify(path: str, root: Path, tmp: str, hashes: Dict[str, str]) -> None:
    """Members listed in manifest.json must match their sha256: a damaged bundle is not replayed.

    A listed name is looked up among the members just extracted, by their hash taken while
    extracting: never joined to a path and opened ("/etc/passwd" or "/proc/kmsg" in a
    manifest would otherwise be read from this machine).
    """
    top = os.path.relpath(root, tmp)
    prefix = "" if top == "." else top + "/"
    if prefix + MANIFEST not in hashes:
        return
    for name, want in _manifest_rows(path, root / MANIFEST):
        got = hashes.get(prefix + name) if _plain_name(name) else None
        if got is None:
            raise SnapshotError(f"{path}: manifest.json lists {name!r}, which the bundle lacks")
        if got != want:
            raise SnapshotError(f"{path}: member {name!r} does not match its sha256 in manifest.json "
                                "(the bundle was changed or damaged)")


def _plain_name(name: str) -> bool:
    parts = name.split("/")
    return bool(name) and "\x00" not in name and not name.startswith("/") and \
        all(p not in ("", ".", "..") for p in parts)


def _manifest_rows(path: str, manifest: Path) -> List[Tuple[str, object]]:
    """(name, sha256) of each member manifest.json lists; SnapshotError for a damaged manifest."""
    bad = SnapshotError(f"{path}: manifest.json is not valid JSON")
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError, OSError):
        raise bad from None
    members = data.get("members") if isinstance(data, dict) else None
    if members is None:
        return []
    if not isinstance(members, list) or not all(isinstance(m, dict) for m in members):
        raise SnapshotError(f"{path}: manifest.json is damaged ('members' should be a list of objects)")
    return [(m.get("name") if isinstance(m.get("name"), str) else repr(m.get("name")), m.get("sha256"))
            for m in members]
