"""Parse the table ``torch.cuda.memory_summary()`` prints.

The real output (torch 1.x to 2.x) is a 75-column table::

    |                  PyTorch CUDA memory summary, device ID 0                 |
    |            CUDA OOMs: 0            |        cudaMalloc retries: 0         |
    |        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
    | Allocated memory      | 184648 KiB | 192833 KiB | 258378 KiB |  73729 KiB |
    |       from large pool | 184576 KiB | 192768 KiB | 254208 KiB |  69632 KiB |

Sizes are printed in B, KiB, MiB, GiB (torch 1.x: KB, MB, GB, meaning the same binary
units), rounded down. "Requested memory" exists from torch 2.0; "GPU reserved memory" is
what ``memory_reserved()`` returns; "Non-releasable memory" is inactive split blocks.
Only the totals ("all" rows) are read, not the per-pool rows.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

MARK = "PyTorch CUDA memory summary"
_UNITS = {"B": 1, "KIB": 2 ** 10, "KB": 2 ** 10, "MIB": 2 ** 20, "MB": 2 ** 20, "GIB": 2 ** 30, "GB": 2 ** 30,
          "TIB": 2 ** 40, "TB": 2 ** 40, "PIB": 2 ** 50, "PB": 2 ** 50}
_ROWS = {"Allocated memory": "allocated", "Active memory": "active", "Requested memory": "requested",
         "GPU reserved memory": "reserved", "Non-releasable memory": "non_releasable"}
_SIZE = r"\s*(\d+)\s*([KMGTP]?i?B)\s*"
_ROW = re.compile(r"^\|\s*(?P<name>[A-Za-z -]+?)\s*\|" + r"\|".join([_SIZE] * 4) + r"\|", re.MULTILINE)
_COUNTER = re.compile(r"(CUDA OOMs|cudaMalloc retries):\s*(\d+)")
_DEVICE = re.compile(r"memory summary, device ID (\d+)")


def parse(text: str) -> Optional[Dict]:
    """{"device", "ooms", "alloc_retries", "rows": {"allocated": {"current", "peak", "total_allocated",
    "total_freed"} in bytes, ...}}, or None when the text holds no summary table."""
    if MARK not in text:
        return None
    rows: Dict[str, Dict[str, int]] = {}
    for m in _ROW.finditer(text):
        key = _ROWS.get(m.group("name"))
        if key is None or key in rows:
            continue
        values = [int(m.group(i)) * _UNITS[m.group(i + 1).upper()] for i in (2, 4, 6, 8)]
        rows[key] = dict(zip(("current", "peak", "total_allocated", "total_freed"), values))
    counters = {name: int(n) for name, n in _COUNTER.findall(text)}
    device = _DEVICE.search(text)
    return {"device": int(device.group(1)) if device else None, "ooms": counters.get("CUDA OOMs"),
            "alloc_retries": counters.get("cudaMalloc retries"), "rows": rows}
