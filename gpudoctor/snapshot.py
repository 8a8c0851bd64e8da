"""A machine snapshot: the raw facts the checks read, and nothing else.

A snapshot is recorded live by the probes, saved as a folder, and loaded back to
replay the same report anywhere. Layout of a snapshot folder::

    snapshot.json           meta, env, nvml, frameworks, command index, file errors
    commands/<key>.out      stdout of each recorded command
    commands/<key>.err      stderr of each recorded command
    files/<path>            each file read, at its path below the recorded root

Command outputs and files live beside the JSON so that fixtures can be built from
real recordings by copying them in unchanged.
"""

from __future__ import annotations

import fnmatch
import json
import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Dict, Iterator, List, Mapping, Optional

from gpudoctor.runner import CommandResult

SCHEMA = "gpudoctor.snapshot/1"
# Files larger than this are not recorded whole: a doctor reads config files, not disks.
MAX_FILE_BYTES = 4 * 1024 * 1024


class SnapshotError(Exception):
    """A snapshot folder or archive that cannot be read; the message is one line for the user."""


@dataclass(frozen=True)
class FileRecord:
    """A file as read from the machine: its text, or why it could not be read."""

    path: str
    content: Optional[str] = None
    error: Optional[str] = None  # "missing", "permission denied", "is a directory", ...

    @property
    def exists(self) -> bool:
        return self.content is not None


@dataclass
class Snapshot:
    """Everything gpudoctor recorded about one machine."""

    meta: Dict = field(default_factory=dict)
    commands: Dict[str, CommandResult] = field(default_factory=dict)
    files: Dict[str, FileRecord] = field(default_factory=dict)
    env: Dict[str, str] = field(default_factory=dict)
    nvml: Dict = field(default_factory=dict)
    frameworks: Dict[str, Dict] = field(default_factory=dict)
    # Directory listings (names only), e.g. {"/dev": ["nvidia0", "nvidiactl"]}: presence facts.
    listings: Dict[str, List[str]] = field(default_factory=dict)
    # Paths the probe resolved: {"/usr/local/cuda": {"target": "/etc/alternatives/cuda" | None,
    # "real": "/usr/local/cuda-12.4"}}; "target" is None when the path is not a symlink.
    links: Dict[str, Dict] = field(default_factory=dict)
    source: Optional[str] = None  # where it was loaded from; None when live

    # --- reading -----------------------------------------------------------------
    def command(self, key: str) -> Optional[CommandResult]:
        """The recorded result of command ``key``, or None if it was not recorded."""
        return self.commands.get(key)

    def file(self, path: str) -> FileRecord:
        rec = self.files.get(_norm(path))
        return rec if rec is not None else FileRecord(_norm(path), error="not recorded")

    def text(self, path: str) -> Optional[str]:
        return self.file(path).content

    def glob(self, pattern: str) -> List[FileRecord]:
        """Recorded files whose path matches ``pattern`` (fnmatch style), sorted by path."""
        pat = _norm(pattern)
        return [r for p, r in sorted(self.files.items()) if r.exists and fnmatch.fnmatchcase(p, pat)]

    def paths(self, pattern: str) -> List[str]:
        """Recorded paths matching ``pattern`` that exist, including directory markers."""
        pat = _norm(pattern)
        return [p for p, r in sorted(self.files.items()) if r.exists and fnmatch.fnmatchcase(p, pat)]

    def listing(self, directory: str) -> Optional[List[str]]:
        """Names recorded in ``directory``, or None if it was not listed."""
        return self.listings.get(_norm(directory))

    def link(self, path: str) -> Optional[Dict]:
        """How the probe resolved ``path`` ({"target", "real"}), or None if it was not recorded."""
        return self.links.get(_norm(path))

    @property
    def platform(self) -> str:
        return self.meta.get("platform", {}).get("system", "Linux")

    # --- saving ------------------------------------------------------------------
    def to_json(self) -> Dict:
        cmd_index = {}
        for key, res in sorted(self.commands.items()):
            d = res.to_dict()
            d.pop("stdout"); d.pop("stderr")
            cmd_index[key] = d
        file_errors = {p: r.error for p, r in sorted(self.files.items()) if not r.exists}
        return {"schema": SCHEMA, "meta": self.meta, "env": self.env, "nvml": self.nvml,
                "frameworks": self.frameworks, "listings": self.listings, "links": self.links,
                "commands": cmd_index, "file_errors": file_errors}

    def save(self, directory: str) -> Path:
        """Write the snapshot folder; existing files inside it are overwritten."""
        root = Path(directory)
        (root / "commands").mkdir(parents=True, exist_ok=True)
        (root / "files").mkdir(parents=True, exist_ok=True)
        for key, res in self.commands.items():
            (root / "commands" / f"{key}.out").write_text(res.stdout, encoding="utf-8")
            (root / "commands" / f"{key}.err").write_text(res.stderr, encoding="utf-8")
        for path, rec in self.files.items():
            if rec.exists:
                target = root / "files" / path.lstrip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(rec.content, encoding="utf-8")
        with open(root / "snapshot.json", "w", encoding="utf-8") as fh:
            json.dump(self.to_json(), fh, indent=2, sort_keys=True)
            fh.write("\n")
        return root


def _norm(path: str) -> str:
    p = str(PurePosixPath("/") / str(path).lstrip("/"))
    return p


def load(directory: str) -> Snapshot:
    """Load a snapshot folder written by :meth:`Snapshot.save` (or built by hand).

    A folder that holds a ``snapshot/`` sub-folder (a scenario fixture, an unpacked
    bundle) is accepted too.
    """
    root = Path(directory)
    if not (root / "snapshot.json").is_file() and (root / "snapshot" / "snapshot.json").is_file():
        root = root / "snapshot"
    meta_file = root / "snapshot.json"
    if not root.is_dir():
        raise SnapshotError(f"{directory}: not a snapshot folder (no such directory)")
    if not meta_file.is_file():
        raise SnapshotError(f"{directory}: not a snapshot folder (no snapshot.json inside)")
    try:
        data = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
        raise SnapshotError(f"{meta_file}: unreadable snapshot.json ({exc})") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("gpudoctor.snapshot/"):
        raise SnapshotError(f"{meta_file}: not a gpudoctor snapshot (missing schema)")
    _check_shape(data, meta_file)
    snap = Snapshot(meta=data.get("meta") or {}, env=data.get("env") or {}, nvml=data.get("nvml") or {},
                    frameworks=data.get("frameworks") or {}, listings=data.get("listings") or {},
                    links=data.get("links") or {},
                    source=str(root))
    for key, entry in (data.get("commands") or {}).items():
        out = _read_text(root / "commands" / f"{key}.out")
        err = _read_text(root / "commands" / f"{key}.err")
        snap.commands[key] = CommandResult.from_dict({**entry, "stdout": out, "stderr": err})
    for path, err in (data.get("file_errors") or {}).items():
        snap.files[_norm(path)] = FileRecord(_norm(path), error=err)
    files_root = root / "files"
    for dirpath, dirnames, filenames in os.walk(files_root):
        for name in filenames:
            full = Path(dirpath) / name
            rel = "/" + full.relative_to(files_root).as_posix()
            # A FIFO or device here would block the read: recorded as unreadable, like on the machine.
            snap.files[rel] = (FileRecord(rel, content=_read_text(full)) if full.is_file()
                               else FileRecord(rel, error="not a regular file"))
    return snap


# What each part of snapshot.json holds: a damaged or hand-edited file is refused here, by name,
# instead of failing later inside a check. {section: type of each value, in words}
_SECTION_VALUES = {"env": (str, "a string"), "frameworks": (dict, "an object"), "links": (dict, "an object"),
                   "listings": (list, "a list of names"), "file_errors": (str, "a string")}
_COMMAND_FIELDS = {"returncode": ((int, type(None)), "a number or null"), "duration_s": ((int, float), "a number"),
                   "timed_out": (bool, "true or false"), "error": ((str, type(None)), "a string or null")}
# Command keys name files below commands/: plain names only, never a path.
_COMMAND_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _check_shape(data: Dict, where: Path) -> None:
    def bad(name: str, want: str):
        raise SnapshotError(f"{where}: damaged snapshot ('{name}' should be {want})")

    for section in ("meta", "env", "nvml", "frameworks", "listings", "links", "commands", "file_errors"):
        if not isinstance(data.get(section) or {}, dict):
            bad(section, "an object")
    if not isinstance((data.get("meta") or {}).get("platform") or {}, dict):
        bad("meta.platform", "an object")
    for section, (kind, want) in _SECTION_VALUES.items():
        for name, value in (data.get(section) or {}).items():
            if not isinstance(value, kind):
                bad(f"{section}.{name}", want)
    for key, entry in (data.get("commands") or {}).items():
        if not _COMMAND_KEY.fullmatch(key):
            raise SnapshotError(f"{where}: damaged snapshot (command key {key!r} is not a plain name)")
        _check_command(key, entry, bad)


def _check_command(key: str, entry, bad) -> None:
    if not isinstance(entry, dict):
        bad(f"commands.{key}", "an object")
    argv = entry.get("argv", [])
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        bad(f"commands.{key}.argv", "a list of strings")
    for name, (kind, want) in _COMMAND_FIELDS.items():
        if name in entry and not isinstance(entry[name], kind):
            bad(f"commands.{key}.{name}", want)


def _read_text(path: Path) -> str:
    if path.exists() and not path.is_file():  # a FIFO would block the read
        raise SnapshotError(f"{path}: not a regular file")
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise SnapshotError(f"{path}: unreadable ({exc.strerror})") from None


def load_any(path: str) -> Snapshot:
    """Load a snapshot folder or a support bundle (.tar.gz); the bundle reader registers here."""
    p = Path(path)
    if p.is_file():
        try:
            from gpudoctor.bundle.read import load_bundle  # provided by the bundle feature
        except ImportError:
            raise SnapshotError(f"{path}: reading bundles is not supported by this install") from None
        return load_bundle(path)
    return load(path)
