"""Shared plumbing for the knowledge loaders: cached JSON reads and strict version parsing.

The facts themselves live in ``data/*.json``; nothing in this package encodes a
compatibility fact in code.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Dict, Tuple

from packaging.version import InvalidVersion, Version

OSES = {"linux": "linux", "windows": "windows", "wsl": "windows"}


@lru_cache(maxsize=None)
def load(name: str) -> Dict[str, Any]:
    """Parsed ``data/<name>.json``, read once per process."""
    text = resources.files(__package__).joinpath("data").joinpath(f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=4096)
def as_version(text: str) -> Version:
    """``Version(text)``, remembered: a report compares the tables' versions thousands of times, and
    parsing one is most of what a comparison costs (an invalid one raises each time; nothing is kept)."""
    return Version(text)


def parse_version(text: str, what: str) -> Version:
    """``Version(text)``, with a one-line ValueError naming what was expected."""
    try:
        return as_version(str(text).strip())
    except InvalidVersion:
        raise ValueError(f"not a valid {what}: {text!r}") from None


def major_minor(version: Version) -> Tuple[int, int]:
    """(major, minor) of a version; a bare major counts as minor 0."""
    release = version.release + (0,)
    return release[0], release[1]


def os_column(os: str) -> str:
    """'linux' or 'windows'; WSL runs on the Windows driver, so it reads the Windows column."""
    try:
        return OSES[os.lower()]
    except KeyError:
        raise ValueError(f"not a known OS: {os!r} (expected linux, windows or wsl)") from None
