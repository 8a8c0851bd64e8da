"""Diagnosis families (``data/families.json``): ids, their order of importance, a short title."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

from ._load import load


@dataclass(frozen=True)
class Family:
    id: str
    rank: int      # lower is named first among problems of the same severity
    title: str


def families() -> Dict[str, Family]:
    return {row["id"]: Family(row["id"], row["rank"], row["title"]) for row in load("families")["families"]}


def family(family_id: str) -> Family:
    """The family ``family_id``; an id the table does not know ranks last, titled by its id."""
    return families().get(family_id) or Family(family_id, 98, family_id.replace("_", " "))
