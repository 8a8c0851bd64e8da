"""nvidia-smi's own failure messages and warnings, found in any output.

When the driver is broken nvidia-smi prints one of a handful of sentences instead of data,
sometimes before a partial table (a GPU that fell off the bus is reported, the others are
still listed). Those sentences are the diagnosis, so they are kept verbatim.
"""

import re
from typing import Dict, List, Tuple

from gpudoctor.knowledge.smi_failures import any_failure
from gpudoctor.literals import lines_to_search, needles

# The failure sentences themselves live in one table shared with DRV001 and explain
# (knowledge/data/nvidia_smi_failures.json).


class SmiParseError(ValueError):
    """The text is not nvidia-smi output that can be read; the message says why in one line."""


def find_errors(lines: List[str]) -> Tuple[str, ...]:
    """Lines that are nvidia-smi failure messages, stripped, in order, without repeats."""
    pattern = any_failure()
    found: Dict[str, None] = {}  # an ordered set: a list's `in` made 20,000 distinct lines cost 15 s
    for index in lines_to_search(lines, needles(pattern)):  # most lines hold none of its words
        text = lines[index].strip().strip("|").strip()
        if text and len(text) <= 400 and text not in found and pattern.search(text):
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
