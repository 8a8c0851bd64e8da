"""Colour and glyphs: colour only on a terminal, never when NO_COLOR is set to a value."""

from __future__ import annotations

import os
import sys
from typing import Optional, TextIO

from gpudoctor.findings import Status

GLYPHS = {Status.OK: "✓", Status.WARN: "!", Status.FAIL: "✗", Status.SKIP: "-", Status.ERROR: "☠"}
ASCII_GLYPHS = {Status.OK: "+", Status.WARN: "!", Status.FAIL: "x", Status.SKIP: "-", Status.ERROR: "E"}
COLOURS = {Status.OK: "32", Status.WARN: "33", Status.FAIL: "31", Status.SKIP: "2", Status.ERROR: "35"}


def want_colour(stream: TextIO, forced: Optional[bool] = None) -> bool:
    """``--color/--no-color`` wins; otherwise colour on a TTY unless NO_COLOR is set to a non-empty
    value (no-color.org: an empty NO_COLOR, e.g. from ``NO_COLOR= cmd``, does not disable colour)."""
    if forced is not None:
        return forced
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def can_encode(stream: TextIO, text: str) -> bool:
    enc = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(enc)
        return True
    except (UnicodeEncodeError, LookupError):
        return False


class Style:
    def __init__(self, colour: bool, unicode: bool = True):
        self.colour = colour
        self.glyphs = GLYPHS if unicode else ASCII_GLYPHS

    def paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text

    def status(self, status: Status) -> str:
        return self.paint(f"[{self.glyphs[status]}]", COLOURS[status])

    def bold(self, text: str) -> str:
        return self.paint(text, "1")

    def dim(self, text: str) -> str:
        return self.paint(text, "2")

    @classmethod
    def for_stream(cls, stream: TextIO, forced: Optional[bool] = None) -> "Style":
        return cls(want_colour(stream, forced), can_encode(stream, "".join(GLYPHS.values())))
