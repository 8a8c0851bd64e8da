"""Turning nvidia-smi's cell texts into values, shared by every format.

nvidia-smi never leaves a value empty: it prints a placeholder instead, and the placeholder
changed over the years (`N/A`, `[N/A]` in CSV, `[Not Supported]`, `Not Found` for the CUDA
version without libcuda, `ERR!` in tables, "Requested functionality has been deprecated" on
590+). All of them mean "no value" here.

Numbers are bounded: nvidia-smi never prints more than a handful of digits, so a number of
more than MAX_DIGITS digits (a damaged or hostile file: 400 nines, 5,000 nines) is no value,
never an overflow or Python's 4,300-digit int-conversion error.
"""

import re
from typing import Optional

_PLACEHOLDERS = {
    "", "n/a", "na", "not found", "not supported", "not available", "unknown error",
    "err!", "requested functionality has been deprecated", "insufficient permissions",
    "gpu requires reset", "unknown", "none", "-",
}
MAX_DIGITS = 18
_NUMBER = re.compile(r"^[+-]?\d+(?:\.\d+)?")
_VERSION = re.compile(r"\d+(?:\.\d+)+|\d+")
_UNIT_MIB = {"kib": 1 / 1024, "mib": 1, "gib": 1024, "tib": 1024 * 1024}


def clean(text: Optional[str]) -> Optional[str]:
    """The text without surrounding blanks and brackets, or None for a placeholder."""
    if text is None:
        return None
    value = text.strip()
    bare = value.strip("[]").strip()
    if bare.lower() in _PLACEHOLDERS:
        return None
    return value


def _bounded(number: str) -> bool:
    return len(number.lstrip("+-").split(".")[0]) <= MAX_DIGITS


def to_int(text: Optional[str]) -> Optional[int]:
    """The leading integer of `"23028 MiB"`, `"37 C"`, `"38 %"` (`"38.6"` reads 38); None for
    placeholders and for numbers longer than MAX_DIGITS digits."""
    value = clean(text)
    match = _NUMBER.match(value) if value else None
    if not match or not _bounded(match.group()):
        return None
    return int(match.group().split(".")[0])


def to_float(text: Optional[str]) -> Optional[float]:
    """The leading number of `"43.89 W"`; None for placeholders and overlong numbers."""
    value = clean(text)
    match = _NUMBER.match(value) if value else None
    return float(match.group()) if match and _bounded(match.group()) else None


def to_mib(text: Optional[str]) -> Optional[int]:
    """Memory in MiB from `"81559 MiB"`, `"81559MiB"` or a bare `"81559"` (CSV nounits)."""
    value = clean(text)
    match = re.match(r"^(\d+(?:\.\d+)?)\s*([KMGT]iB)?$", value or "", re.IGNORECASE)
    if not match or not _bounded(match.group(1)):
        return None
    factor = _UNIT_MIB[(match.group(2) or "MiB").lower()]
    return int(float(match.group(1)) * factor)


def to_bool(text: Optional[str]) -> Optional[bool]:
    """`Yes`/`No` (pending retirement, pending row remap) as a bool; None otherwise."""
    value = (clean(text) or "").lower()
    return {"yes": True, "no": False}.get(value)


def to_mode(text: Optional[str]) -> Optional[str]:
    """`Enabled`/`Disabled`; tables print persistence as `On`/`Off`, so map those too."""
    value = clean(text)
    if value is None:
        return None
    return {"on": "Enabled", "off": "Disabled"}.get(value.lower(), value)


def to_version(text: Optional[str]) -> Optional[str]:
    """The version number only: the 610 driver prints
    `610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]`."""
    value = clean(text)
    match = _VERSION.match(value) if value else None
    return match.group() if match else None


def bus_key(bus_id: Optional[str]) -> Optional[str]:
    """A bus id comparable across formats: `0000:00:03.0` (346 era) == `00000000:00:03.0`."""
    if not bus_id:
        return None
    parts = bus_id.strip().upper().split(":")
    if len(parts) != 3:
        return bus_id.strip().upper()
    return "%s:%s:%s" % (parts[0].lstrip("0") or "0", parts[1], parts[2])
