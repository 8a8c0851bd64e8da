"""nvidia-smi's failure messages (``data/nvidia_smi_failures.json``): one table, read by the parsers,
DRV001 (and so the hook) and explain, so a message means the same thing wherever it is seen."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Iterable, Optional, Tuple

from ._load import load


@dataclass(frozen=True)
class SmiFailure:
    id: str
    pattern: "re.Pattern[str]"
    exit_codes: Tuple[int, ...]
    family: str
    recipe: str
    title: str
    source: str
    title_with: Optional[str] = None  # a template over the pattern's named groups


@dataclass(frozen=True)
class Said:
    """One failure as nvidia-smi printed it: the table row, the line and the values in it."""

    failure: SmiFailure
    line: str
    values: Dict[str, str]

    @property
    def title(self) -> str:
        tmpl = self.failure.title_with
        if tmpl and all(self.values.get(k) for k in re.findall(r"{(\w+)}", tmpl)):
            return tmpl.format(**self.values)
        return self.failure.title

    def __getattr__(self, name):  # id, family, recipe... of the row
        return getattr(self.failure, name)


@lru_cache(maxsize=None)
def failures() -> Tuple[SmiFailure, ...]:
    return tuple(SmiFailure(r["id"], re.compile(r["pattern"], re.IGNORECASE), tuple(r["exit_codes"]), r["family"],
                            r["recipe"], r["title"], r["source"], r.get("title_with"))
                 for r in load("nvidia_smi_failures")["failures"])


@lru_cache(maxsize=None)
def any_failure() -> "re.Pattern[str]":
    """One regex matching a line that is any of the failures (for scanning outputs quickly)."""
    return re.compile("|".join(f"(?:{f.pattern.pattern})" for f in failures()), re.IGNORECASE)


def failure_in(lines: Iterable[str]) -> Optional[Said]:
    """The first table row (in table order, most specific first) that one of ``lines`` matches."""
    text = [ln.strip().strip("|").strip() for ln in lines]
    text = [ln for ln in text if ln and len(ln) <= 400]
    for f in failures():
        for ln in text:
            m = f.pattern.search(ln)
            if m:
                return Said(f, ln, {k: v.strip() for k, v in m.groupdict().items() if v})
    return None


def classify(stdout: str, stderr: str, returncode: Optional[int]) -> Optional[Said]:
    """What a failed nvidia-smi run says went wrong: its words first, then its exit code."""
    found = failure_in(f"{stdout}\n{stderr}".splitlines())
    if found is not None:
        return found
    row = next((f for f in failures() if returncode is not None and returncode in f.exit_codes), None)
    return Said(row, "", {}) if row is not None else None


def by_id(failure_id: str) -> SmiFailure:
    return next(f for f in failures() if f.id == failure_id)
