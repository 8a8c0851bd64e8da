"""Loading a snapshot folder: untrusted input, read through :mod:`gpudoctor.confined`.

Nothing outside the folder is read (links are never followed), every read is capped
as the live probes cap theirs, and what was refused is recorded as data: a link or FIFO
under ``files/`` becomes a :class:`FileRecord` with the reason, an output cut at the
cap is a command result marked ``truncated``. Only what makes the whole folder
unusable (no readable snapshot.json, a command output that is not a regular file,
more entries than any recording has) is a :class:`SnapshotError`, one line for the user.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Tuple

from gpudoctor import confined
from gpudoctor.runner import MAX_OUTPUT_BYTES, CommandResult
from gpudoctor.snapshot import MAX_FILE_BYTES, FileRecord, Snapshot, SnapshotError, check_shape, norm, tidy

MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_ENTRIES = 20000   # a live snapshot holds a few dozen files; the bundle reader's member limit
MAX_DEPTH = 64        # folders below files/: deeper than any real path
MAX_TOTAL_BYTES = 512 * 1024 * 1024  # the bundle reader's total limit


def load_folder(directory: str, max_entries: int = MAX_ENTRIES, max_depth: int = MAX_DEPTH) -> Snapshot:
    try:
        folder = confined.Folder(directory)
    except confined.Refused as exc:
        why = "no such directory" if str(exc) == "missing" else str(exc)
        raise SnapshotError(f"{directory}: not a snapshot folder ({why})") from None
    with folder:
        base: Tuple[str, ...] = ()
        if folder.kind(("snapshot.json",)) is None and folder.kind(("snapshot", "snapshot.json")) == "file":
            base = ("snapshot",)
        shown = str(Path(directory, *base))
        data = _meta(folder, base, shown, directory)
        snap = Snapshot(meta=data.get("meta") or {}, env=data.get("env") or {}, nvml=data.get("nvml") or {},
                        frameworks=data.get("frameworks") or {}, listings=data.get("listings") or {},
                        links=data.get("links") or {}, source=shown)
        budget = [MAX_TOTAL_BYTES]
        for key, entry in (data.get("commands") or {}).items():
            out, cut_out = _output(folder, base + ("commands", f"{key}.out"), shown, budget)
            err, cut_err = _output(folder, base + ("commands", f"{key}.err"), shown, budget)
            snap.commands[key] = CommandResult.from_dict({**entry, "stdout": out, "stderr": err,
                                                          "truncated": bool(entry.get("truncated")) or cut_out or cut_err})
        for path, err in (data.get("file_errors") or {}).items():
            snap.files[norm(path)] = FileRecord(norm(path), error=err)
        snap.files.update(_files(folder, base + ("files",), shown, budget, (max_entries, max_depth)))
    return snap


def _meta(folder: confined.Folder, base, shown: str, directory: str) -> Dict:
    where = f"{shown}/snapshot.json"
    try:
        raw, _ = folder.read(base + ("snapshot.json",), MAX_JSON_BYTES, whole=True)
    except confined.Refused as exc:
        if str(exc) == "missing":
            raise SnapshotError(f"{directory}: not a snapshot folder (no snapshot.json inside)") from None
        if str(exc).startswith("over "):
            raise SnapshotError(f"{where}: over {MAX_JSON_BYTES} bytes; not a snapshot.json gpudoctor wrote") from None
        raise SnapshotError(f"{where}: unreadable snapshot.json ({exc})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SnapshotError(f"{where}: unreadable snapshot.json ({exc})") from None
    except RecursionError:
        raise SnapshotError(f"{where}: unreadable snapshot.json (nested too deeply)") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("gpudoctor.snapshot/"):
        raise SnapshotError(f"{where}: not a gpudoctor snapshot (missing schema)")
    data = tidy(data, where)
    check_shape(data, where)
    return data


def _output(folder: confined.Folder, parts, shown: str, budget) -> Tuple[str, bool]:
    """A recorded stdout/stderr (empty when the file is absent), cut where the live runner cuts."""
    try:
        raw, cut = folder.read(parts, min(MAX_OUTPUT_BYTES, budget[0]))
    except confined.Refused as exc:
        if str(exc) == "missing":
            return "", False
        # Refused, not recorded: a replay that silently lacks nvidia-smi's output would judge another machine.
        raise SnapshotError(f"{shown}/{confined.display(parts[-2:])}: {_plain(str(exc))}") from None
    budget[0] -= len(raw)
    return raw.decode("utf-8", errors="replace"), cut


def _plain(reason: str) -> str:
    return "not a regular file" if reason in (confined.LINK, "is a directory") else reason


def _files(folder: confined.Folder, top, shown: str, budget, limits) -> Dict[str, FileRecord]:
    records: Dict[str, FileRecord] = {}
    try:
        for parts, why in folder.walk(top, *limits):
            path = "/" + confined.display(parts)
            records[path] = FileRecord(path, error=why) if why else _file(folder, top + parts, path, budget)
    except confined.Refused as exc:
        raise SnapshotError(f"{shown}/files: refusing the snapshot folder ({exc})") from None
    return records


def _file(folder: confined.Folder, parts, path: str, budget) -> FileRecord:
    if budget[0] <= 0:
        return FileRecord(path, error=f"not read: the snapshot folder holds over {MAX_TOTAL_BYTES} bytes")
    try:
        raw, _ = folder.read(parts, min(MAX_FILE_BYTES, budget[0]))  # cut as the live probe cuts
    except confined.Refused as exc:
        return FileRecord(path, error=str(exc))
    budget[0] -= len(raw)
    return FileRecord(path, content=raw.decode("utf-8", errors="replace"))


def load(directory: str) -> Snapshot:
    """Load a snapshot folder written by :meth:`Snapshot.save` (or built by hand). A folder that holds a
    ``snapshot/`` sub-folder (a scenario fixture, an unpacked bundle) is accepted too."""
    return load_folder(directory)
