"""DCGM diagnostics knowledge (``data/dcgm_errors.json``): failure codes (DCGM_FR_*) with DCGM's
severity and category, what each severity means to gpudoctor, run levels and their timeouts,
dcgmi's exit statuses."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ._load import load


@dataclass(frozen=True)
class DcgmCode:
    code: int                     # 29
    name: str                     # "DCGM_FR_PERSISTENCE_MODE"
    severity: str                 # DCGM's: "CONFIG", "ISOLATE", "RESET", ...
    category: str                 # "SOFTWARE_OTHER", "HARDWARE_MEMORY", ...
    explained_by: Tuple[str, ...]  # gpudoctor checks that judge the same thing from nvidia-smi
    recipe: Optional[str]         # gpudoctor's fix for this code ("persistence_mode_off"), if it has one


def code(number: Optional[int]) -> Optional[DcgmCode]:
    row = next((r for r in load("dcgm_errors")["codes"] if r["code"] == number), None)
    if row is None:
        return None
    return DcgmCode(row["code"], row["name"], row["severity"], row["category"], tuple(row.get("explained_by", ())),
                    row.get("recipe"))


def severity_name(value: Optional[int]) -> Optional[str]:
    """DCGM's severity number (``error_severity`` in the JSON) as its name: 2 -> "ISOLATE"."""
    row = next((r for r in load("dcgm_errors")["severities"] if r["value"] == value), None)
    return row["id"] if row else None


def status_for(severity: Optional[str]) -> str:
    """gpudoctor's status for a failed result of this DCGM severity; an unknown one fails."""
    row = next((r for r in load("dcgm_errors")["severities"] if r["id"] == severity), None)
    return row["status"] if row else "fail"


def severity_meaning(severity: Optional[str]) -> str:
    row = next((r for r in load("dcgm_errors")["severities"] if r["id"] == severity), None)
    return row["meaning"] if row else "DCGM gave no severity"


def level_timeout_s(level: int) -> float:
    """Seconds gpudoctor allows ``dcgmi diag -r LEVEL``."""
    row = next((r for r in load("dcgm_errors")["levels"] if r["level"] == level), None)
    return float(row["timeout_s"]) if row else 600.0


def levels() -> Tuple[int, ...]:
    return tuple(r["level"] for r in load("dcgm_errors")["levels"])


def exit_meaning(status: Optional[int]) -> Optional[str]:
    row = next((r for r in load("dcgm_errors")["exit_codes"] if r["exit"] == status), None)
    return row["meaning"] if row else None


def no_hostengine(text: str) -> bool:
    """Does dcgmi's output say nv-hostengine could not be reached?"""
    return any(line.lower() in text.lower() for line in load("dcgm_errors")["no_hostengine"]["lines"])
