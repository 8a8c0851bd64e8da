"""nvidia-smi's own failure messages and warnings, found in any output.

When the driver is broken nvidia-smi prints one of a handful of sentences instead of data,
sometimes before a partial table (a GPU that fell off the bus is reported, the others are
still listed). Those sentences are the diagnosis, so they are kept verbatim.
"""

import re
from typing import Dict, List, Tuple

# Each pattern matches one line nvidia-smi (or the driver it talks to) prints.
_ERROR = re.compile("|".join("(?:%s)" % p for p in (
    r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
    r"Failed to initialize NVML",
    r"^No devices were found",
    r"Unable to determine the device handle for (GPU|gpu)",
    r"GPU has fallen off the bus",
    r"GPU is lost\.",
    r"NVIDIA-SMI couldn't find libnvidia-ml\.so",
    r"NVML library version:",
    r"^Unable to determine the number of devices",
)), re.IGNORECASE)
# The distinctive words of the messages above (lower case), to skip the line-by-line scan
# quickly: substring tests on the lowered text, 100x faster than a case-blind regex.
_KEYWORDS = ("nvidia-smi has failed", "nvml", "no devices were found", "device handle", "fallen off the bus",
             "gpu is lost", "libnvidia-ml", "number of devices")


class SmiParseError(ValueError):
    """The text is not nvidia-smi output that can be read; the message says why in one line."""


def find_errors(lines: List[str]) -> Tuple[str, ...]:
    """Lines that are nvidia-smi failure messages, stripped, in order, without repeats."""
    found: Dict[str, None] = {}  # an ordered set: a list's `in` made 20,000 distinct lines cost 15 s
    text = "\n".join(lines).lower()
    if not any(word in text for word in _KEYWORDS):
        return ()
    for line in lines:
        text = line.strip().strip("|").strip()
        if len(text) <= 400 and text not in found and _ERROR.search(text):
            found[text] = None
    return tuple(found)


def find_warnings(lines: List[str]) -> Tuple[str, ...]:
    """`WARNING: infoROM is corrupted at gpu 0000:...` lines, without the `WARNING:` prefix.

    nvidia-smi prints these before or after the table depending on the driver."""
    found: Dict[str, None] = {}
    for line in lines:
        text = line.strip()
        if text.startswith("WARNING:") and text[8:].strip():
            found.setdefault(text[8:].strip(), None)
    return tuple(found)
