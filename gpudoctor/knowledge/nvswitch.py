"""Which machines are NVSwitch systems (``data/nvswitch.json``): switch PCI ids and GPU baseboards."""
from __future__ import annotations

import re
from typing import Optional

from ._load import load


def switch_device(device_id: str) -> Optional[str]:
    """The NVSwitch a PCI vendor:device id ("10de:22a3") is, or None when it is not one gpudoctor knows."""
    want = device_id.strip().lower()
    row = next((r for r in load("nvswitch")["switch_devices"] if r["device_id"] == want), None)
    return row["name"] if row else None


def baseboard(gpu_name: str, count: int) -> Optional[str]:
    """The NVSwitch baseboard ``count`` GPUs named ``gpu_name`` sit on, or None."""
    for row in load("nvswitch")["baseboards"]:
        if re.search(row["pattern"], gpu_name or "") and count >= row["min_gpus"]:
            return row["name"]
    return None


def is_baseboard_gpu(gpu_name: str) -> bool:
    """Whether a GPU of this name is made for an NVSwitch baseboard (its NVLinks are meant to be all up)."""
    rows = load("nvswitch")["baseboards"] + load("nvswitch")["wired_nvlink"]
    return any(re.search(row["pattern"], gpu_name or "") for row in rows)
