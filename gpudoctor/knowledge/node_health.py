"""Node-health knowledge: clock event reasons, PCIe lane rates, server boards, the smoke test's
sizes and tolerances (``data/clock_event_reasons.json``, ``pcie_links.json``,
``server_boards.json``, ``smoke_test.json``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ._load import load


@dataclass(frozen=True)
class ClockReason:
    id: str            # "hw_thermal_slowdown", as in the XML tag and --query-gpu field
    label: str         # "HW Thermal Slowdown", as nvidia-smi -q prints it
    trouble: bool      # cooling or power is failing; False for idle, power cap, app clocks ...
    meaning: str
    remedy: Optional[str]  # "cooling", "power" or "cooling_or_power" for trouble reasons
    source: str


def clock_reason(reason_id: str) -> Optional[ClockReason]:
    row = next((r for r in load("clock_event_reasons")["reasons"] if r["id"] == reason_id), None)
    if row is None:
        return None
    return ClockReason(row["id"], row["label"], row["trouble"], row["meaning"], row.get("remedy"), row["source"])


def lane_gb_per_s(gen: int) -> Optional[float]:
    """GB/s one lane of PCIe generation ``gen`` carries per direction (Gen4: 1.969); None if unknown."""
    row = next((r for r in load("pcie_links")["generations"] if r["gen"] == gen), None)
    return row["lane_gb_per_s"] if row else None


def busy_utilization_pct() -> int:
    """GPU utilisation from which the current PCIe generation is judged (an idle GPU lowers it)."""
    return load("pcie_links")["busy"]["utilization_pct"]


def non_server_min_width() -> int:
    """Lanes down to which a narrower-than-maximum link on a non-server board is the slot's wiring."""
    return load("pcie_links")["non_server_min_width"]["lanes"]


def copy_min_fraction() -> float:
    """The share of a link's rate below which a pinned host<->device copy is too slow."""
    return load("pcie_links")["copy"]["min_fraction"]


def is_server_brand(brand: Optional[str]) -> bool:
    """Does nvidia-smi's "Product Brand" name a data-center board ("NVIDIA", "Tesla")?"""
    rows = load("server_boards")["brands"]
    return bool(brand) and any(r["brand"].lower() == brand.strip().lower() and r["server"] for r in rows)


def persistence_advice() -> dict:
    return load("server_boards")["persistence"]


@dataclass(frozen=True)
class SmokeDtype:
    dtype: str        # torch dtype name: "bfloat16"
    label: str        # "bf16"
    min_cc: str       # "8.0"
    tolerance: float  # largest acceptable max|gpu - cpu| / max|cpu|


def smoke_dtypes() -> Tuple[SmokeDtype, ...]:
    return tuple(SmokeDtype(r["dtype"], r["label"], r["min_cc"], r["tolerance"])
                 for r in load("smoke_test")["dtypes"])


def smoke_settings() -> dict:
    """Sizes and timeouts of the smoke test (``smoke_test.json``: sizes, timeouts)."""
    data = load("smoke_test")
    return {**data["sizes"], **{f"timeout_{k}": v for k, v in data["timeouts"].items() if k.endswith("_s")}}
