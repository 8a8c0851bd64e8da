"""Counts and sizes as people write them, and bytes as people read them.

``--params 7B``, ``7e9``, ``138M``, ``1.5T`` or ``124439808``; ``--gpu-memory 24GiB``
or ``80GB`` (GB read as GiB, the way GPU datasheets mean it). Output uses binary units
(26.08 GiB), as nvidia-smi (MiB) and PyTorch's messages (GiB) do.
"""

from __future__ import annotations

import re

_COUNT = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
_COUNT_SCALE = {"": 1, "k": 10 ** 3, "m": 10 ** 6, "b": 10 ** 9, "t": 10 ** 12}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_SIZE_SCALE = {"": 1, "k": 2 ** 10, "m": 2 ** 20, "g": 2 ** 30, "t": 2 ** 40}
GIB = 2 ** 30
MIB = 2 ** 20


def parse_count(text: str) -> int:
    """"7B" -> 7_000_000_000, "138M" -> 138_000_000, "7e9" -> 7_000_000_000; ValueError otherwise."""
    m = _COUNT.match(str(text))
    if not m:
        raise ValueError(f"not a parameter count: {text!r} (write 7B, 138M, 7e9 or 124439808)")
    value = round(float(m.group(1)) * _COUNT_SCALE[m.group(2).lower()])
    if value <= 0:
        raise ValueError(f"not a parameter count: {text!r} (it must be positive)")
    return value


def parse_size(text: str) -> int:
    """"24GiB", "24GB", "24G", "1536MiB" or "1.5 GiB" -> bytes (binary multiples); ValueError otherwise."""
    m = _SIZE.match(str(text))
    if not m or not m.group(2) and not str(text).strip().isdigit():
        raise ValueError(f"not a memory size: {text!r} (write 24GiB, 80GB, 1536MiB or bytes)")
    return round(float(m.group(1)) * _SIZE_SCALE[m.group(2).lower()])


def fmt_bytes(n: float) -> str:
    """26.08 GiB, 528.0 MiB, 12.0 KiB, 0 B: three significant decimals where they matter."""
    if n < 0:
        return "-" + fmt_bytes(-n)
    for unit, scale in (("TiB", 2 ** 40), ("GiB", GIB), ("MiB", MIB), ("KiB", 2 ** 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


def pytorch_size(mib: float) -> str:
    """MiB as PyTorch's messages print sizes: "7.65 GiB", "24.85 MiB", "0.50 KiB" - never TiB ("130674.91 GiB")."""
    if mib >= 1024:
        return f"{mib / 1024:.2f} GiB"
    if mib >= 1:
        return f"{mib:.2f} MiB"
    return f"{mib * 1024:.2f} KiB"


def fmt_count(n: int) -> str:
    """6738415616 -> "6.74B", 124439808 -> "124.44M", 4096 -> "4,096"."""
    for unit, scale in (("T", 10 ** 12), ("B", 10 ** 9), ("M", 10 ** 6)):
        if n >= scale:
            return f"{n / scale:.2f}{unit}"
    return f"{n:,}"
