"""Values pulled out of error messages, typed: sizes, versions, compute capabilities.

Each catalog signature names the type of every named group; ``convert`` turns the raw
text into a value that can be compared and shown ("1.24 GiB" -> 1269.76 MiB; driver API
integer 11040 -> CUDA "11.4"; "sm_86" -> compute capability "8.6"). A value that does not
parse is kept as its text: an odd message never stops the diagnosis. Numbers are bounded
(MAX_DIGITS): `sm_` followed by 5,000 nines is text, not an int-conversion error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from packaging.version import InvalidVersion, Version

_UNITS = {"b": 1 / 2 ** 20, "bytes": 1 / 2 ** 20, "kib": 1 / 1024, "kb": 1 / 1024, "mib": 1.0, "mb": 1.0,
          "gib": 1024.0, "gb": 1024.0, "tib": 1024.0 ** 2, "tb": 1024.0 ** 2}
MAX_DIGITS = 18
_SIZE = re.compile(r"^\s*(\d{1,%d}(?:\.\d+)?)\s*([KMGT]?i?B|bytes)\s*$" % MAX_DIGITS, re.IGNORECASE)


@dataclass(frozen=True)
class Size:
    """A memory size as printed ("2.93 GiB") and in MiB, for arithmetic."""

    text: str
    mib: float

    def __str__(self) -> str:
        return self.text


def size(text: str) -> Optional[Size]:
    m = _SIZE.match(text)
    if not m:
        return None
    return Size(text.strip(), float(m.group(1)) * _UNITS[m.group(2).lower()])


def sm_to_cc(text: str) -> Optional[str]:
    """"sm_86" -> "8.6", "sm_120" -> "12.0", "sm_90a" -> "9.0"."""
    m = re.match(r"^(?:sm|compute)_(\d{1,4})(\d)a?$", text.strip())
    return f"{int(m.group(1))}.{m.group(2)}" if m else None


def cudnn_version(text: str) -> Optional[str]:
    """"7.4.1" stays; cuDNN's integer form "7201" -> "7.2.1", "8902" -> "8.9.2"; "8, 7, 0" -> "8.7.0"."""
    text = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)+", text):
        return text
    if re.fullmatch(r"\d+, \d+, \d+", text):
        return text.replace(", ", ".")
    if re.fullmatch(r"\d{4,5}", text):
        n = int(text)
        return f"{n // 1000}.{n % 1000 // 100}.{n % 100}"
    return None


def _version(text: str) -> Optional[str]:
    """The version as printed ("570.148.06" stays), if ``packaging`` can read it."""
    try:
        Version(text.strip())
    except InvalidVersion:
        return None
    return text.strip()


def _driver_api(text: str) -> Optional[str]:
    """torch's "found version 11040": kept as printed; ``derive`` adds the CUDA version (11.4)."""
    from gpudoctor.knowledge import cuda_from_driver_api_int

    number = _int(text)
    try:
        cuda_from_driver_api_int(number)
    except ValueError:
        return None
    return text.strip()


def _int(text: str) -> Optional[int]:
    text = text.strip()
    if len(text.lstrip("+-")) > MAX_DIGITS:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _arch_list(text: str) -> Optional[list]:
    items = text.split()
    return items or None


CONVERTERS = {
    "str": lambda t: t.strip() or None,
    "int": _int,
    "version": _version,
    "size": size,
    "sm": lambda t: t.strip() if sm_to_cc(t) else None,
    "arch_list": _arch_list,
    "driver_api_int": _driver_api,
    "cudnn_version": cudnn_version,
}


def convert(vtype: str, text: str) -> Any:
    """The typed value, or the stripped text when it does not parse as ``vtype``."""
    try:
        value = CONVERTERS[vtype](text)
    except (KeyError, ValueError, TypeError):
        value = None
    return value if value is not None else (text.strip() or None)


def display(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


def jsonable(value: Any) -> Any:
    if isinstance(value, Size):
        return {"text": value.text, "mib": round(value.mib, 2)}
    return value
