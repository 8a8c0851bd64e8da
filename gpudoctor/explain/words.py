"""The words of a text that name parts of the GPU stack: vocabulary terms, error codes, --context flags.

``features`` reads a text (normalised first, see ``normalize``) into feature ids, each with where it
was read: the terms of ``knowledge/data/error_vocabulary.json`` (``libcuda``, ``secure_boot``...),
the error codes of ``error_codes.json`` by name in any spelling (``CUDA_ERROR_NO_DEVICE``,
``cudaErrorNoDevice``, pynvml's ``NVMLError_DriverNotLoaded``) as ``code:<squashed name>``, and by
number only after words that introduce one ("cudaGetDeviceCount returned 30", "error 804",
"code=803(cudaErrorSystemDriverMismatch)", "Check failed: ... (30 vs. 0)", "the 804 error"); a number below 30
only on a line naming its table's API, and from that table ("NVML: can't get GPU #0, error code 15").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable

from gpudoctor.explain.normalize import unspace_cjk
from gpudoctor.knowledge import vocabulary
from gpudoctor.literals import fold, needles

# A number after words that introduce an error code: "error 804", "returned 30", "code=803", "(30 vs. 0)" and
# "(0 vs. 216)" (a failed CHECK prints either order),
# or before "error" ("the 804 error"); a percentage or a decimal ("error: 100%", "error 35.5") is no code.
_INTRO = r"(?:error|err|code|returned|result|status|failed with{failure})\W{{0,4}}(?:code\W{{0,3}}|#)?\(?"
_NOT_A_CODE = r"(?![.,]\d|%)"
_NUMBER = re.compile(_INTRO.format(failure="") + r"(\d{2,4})\b" + _NOT_A_CODE
                     + r"|\((\d{2,4}) vs\. 0\)|\(0 vs\. (\d{2,4})\)|\b(\d{3,4}) error\b", re.IGNORECASE)

# A number below 30 after such words (and "failure: 3"), read only on a line that names its table's API.
_SMALL_NUMBER = re.compile(_INTRO.format(failure="|failure") + r"(\d{1,2})\b" + _NOT_A_CODE, re.IGNORECASE)

# The rows of a pasted nvidia-smi table ("| NVIDIA-SMI 535.161.08   Driver Version: ...", "+----+"): a table
# shows a working driver, so its words (driver, ECC, NVIDIA-SMI) are no complaint about one.
_TABLE_ROW = re.compile(r"^[ \t]*[|+].*$", re.MULTILINE)


@dataclass(frozen=True)
class Mark:
    """Where a feature was read: the words themselves, the input and line, the line's text."""

    word: str
    source: str = ""
    line: int = 0
    excerpt: str = ""


def _mark(text: str, source: str, word: str, start: int) -> Mark:
    line_start = text.rfind("\n", 0, start) + 1
    end = text.find("\n", start)
    line = text[line_start:end if end != -1 else len(text)].strip()
    return Mark(unspace_cjk(" ".join(word.split())), source, text.count("\n", 0, start) + 1, line[:300])


def features(text: str, source: str = "<text>", flags: Iterable[str] = ()) -> Dict[str, Mark]:
    """Feature id -> where it was read: vocabulary terms, error codes by name and by number, --context flags."""
    out: Dict[str, Mark] = {}
    text = vocabulary.success_lines().sub("", _TABLE_ROW.sub("", text))   # rows that show a part working
    folded = fold(text)
    for term in vocabulary.terms():
        m = needles(term.pattern).search(text, folded)
        if m is not None:
            out[term.id] = _mark(text, source, m.group(0), m.start())
    squashed = vocabulary.squash(text)
    for code in vocabulary.codes():
        if ("code:" + code.key) not in out and code.key in squashed:
            out["code:" + code.key] = Mark(code.name, source)
    for m in _NUMBER.finditer(text):
        for code in vocabulary.codes_by_number().get(int(next(g for g in m.groups() if g)), ()):
            out.setdefault("code:" + code.key, _mark(text, source, m.group(0), m.start()))
    for named_by, by_number in vocabulary.small_codes_by_table():
        for line_match in named_by.finditer(text):
            start = text.rfind("\n", 0, line_match.start()) + 1
            end = text.find("\n", line_match.end())
            line = text[start:end if end != -1 else len(text)]
            for m in _SMALL_NUMBER.finditer(line):
                for code in by_number.get(int(m.group(1)), ()):
                    out.setdefault("code:" + code.key, _mark(text, source, m.group(0), start + m.start()))
    known = {t.id for t in vocabulary.terms()}
    for flag in flags:
        if flag in known and flag not in out:
            out[flag] = Mark(flag, source)
    for term in vocabulary.terms():       # "TensorFlow 2.11 or later" says something only next to "Windows"
        if term.with_ and term.id in out and term.with_ not in out:
            del out[term.id]
    tables = {code.table for code in vocabulary.codes() if "code:" + code.key in out}
    for term in vocabulary.terms():       # "cuDNN error: CUDNN_STATUS_EXECUTION_FAILED": the code says which failure
        if term.yields_to in tables and term.id in out:
            del out[term.id]
    return out
