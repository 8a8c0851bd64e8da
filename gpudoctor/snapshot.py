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
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Dict, List, Optional

from gpudoctor.runner import CommandResult

SCHEMA = "gpudoctor.snapshot/2"
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

    def save(self, directory: str, sync: bool = False) -> Path:
        """Write the snapshot folder; existing files inside it are overwritten.

        ``sync`` flushes each file to disk (before a staged folder is renamed into place).
        """
        root = Path(directory)
        (root / "commands").mkdir(parents=True, exist_ok=True)
        (root / "files").mkdir(parents=True, exist_ok=True)
        for key, res in self.commands.items():
            if not _COMMAND_KEY.fullmatch(key):
                raise ValueError(f"command key {key!r} is not a plain name")
            _write(root / "commands" / f"{key}.out", res.stdout, sync)
            _write(root / "commands" / f"{key}.err", res.stderr, sync)
        for path, rec in self.files.items():
            if rec.exists:
                parts = PurePosixPath(norm(path)).parts[1:]
                if not parts or ".." in parts:
                    raise ValueError(f"file path {path!r} does not stay below files/")
                target = root.joinpath("files", *parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                _write(target, rec.content, sync)
        text = json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n"
        _write(root / "snapshot.json", text, sync)
        return root


def _write(path: Path, text: str, sync: bool) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
        if sync:
            fh.flush()
            os.fsync(fh.fileno())


def norm(path: str) -> str:
    return str(PurePosixPath("/") / str(path).lstrip("/"))


_norm = norm


# What each part of snapshot.json holds: a damaged or hand-edited file is refused here, by name,
# instead of failing later inside a check. {section: type of each value, in words}
_SECTION_VALUES = {"env": (str, "a string"), "frameworks": (dict, "an object"), "links": (dict, "an object"),
                   "listings": (list, "a list of names"), "file_errors": (str, "a string")}
_COMMAND_FIELDS = {"returncode": ((int, type(None)), "a number or null"), "duration_s": ((int, float), "a number"),
                   "timed_out": (bool, "true or false"), "error": ((str, type(None)), "a string or null")}
# Command keys name files below commands/: plain names only, never a path.
_COMMAND_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


MAX_NESTING = 64  # snapshot.json gpudoctor writes is under 10 levels deep


def tidy(obj, where: str, depth: int = 0):
    """``obj`` with lone surrogates (JSON "\\udc80" escapes) made U+FFFD; SnapshotError past MAX_NESTING.

    Such strings cannot be printed or written as UTF-8, so a replay would crash on them later.
    """
    if depth > MAX_NESTING:
        raise SnapshotError(f"{where}: damaged snapshot (nested over {MAX_NESTING} levels)")
    if isinstance(obj, str):
        return obj.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if not obj.isascii() else obj
    if isinstance(obj, dict):
        return {tidy(k, where, depth + 1): tidy(v, where, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [tidy(v, where, depth + 1) for v in obj]
    return obj


def check_shape(data: Dict, where: str) -> None:
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


