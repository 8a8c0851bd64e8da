"""A text as its writer meant it: what terminals, chat tools and Windows builds do to error messages, undone.

Used for a second reading when the first found nothing, and by the vocabulary fallback: ANSI colour
codes (``\\x1b[31m``), typographic quotes and dashes pasted from a forum, non-breaking spaces, a
message wrapped inside a sentence by a terminal or a mail client ("Resource exhausted: Out \\nof
memory"), per-rank prefixes (``[rank0]:``), a log collector's prefixes (syslog and journalctl's
``Aug 12 10:38:34 host unit[pid]:``, ``docker compose logs``' ``service-1  |``), and Windows library names read as their Linux names
(``cudnn64_8.dll`` is ``libcudnn.so.8``, ``cudart64_110.dll`` is ``libcudart.so.11.0``,
``nvcuda.dll`` is ``libcuda.so.1``) so that one pattern covers both.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_TYPOGRAPHY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-",
                             "\u2014": "-", "\u00a0": " ", "\u2026": "..."})
# A line broken inside a sentence: it ends in a word (or a comma) and the next starts in lower case
# at its first column (an indented line is a traceback's or a log's own line, not a wrap).
_WRAP = re.compile(r"(?<=[A-Za-z,])[ \t]*\r?\n(?=[a-z])")
_RANK = re.compile(r"^\[(?:rank|Rank)\s*\d+\]:\s?", re.MULTILINE)
# The prefix a log collector puts on each line of a service's output: syslog and `journalctl`'s short format
# ("Aug 12 10:38:34 host unit[4073658]: "), `docker compose logs`' service column ("ollama-1  | "), the
# timestamp CI logs and the container runtime's log files put first ("2024-05-01T10:00:00.1234567Z ",
# "...Z stderr F "), and a mail or Markdown quote ("> "; not Python's prompt ">>> ").
_LOG_PREFIX = re.compile(r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w.@/-]+(?:\[\d+\])?: ?"
                         r"|[a-z][\w.-]*-\d+ +\| ?"
                         r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z (?:(?:stdout|stderr) [FP] )?"
                         r"|(?!>>> )> ?)+", re.MULTILINE)
# Windows DLL names -> the Linux shared object of the same library (versions kept).
_DLLS = (
    (re.compile(r"\bcudart64_(\d+?)(\d)\.dll\b", re.IGNORECASE), r"libcudart.so.\1.\2"),
    (re.compile(r"\b(cudnn|cublas|cublasLt|cufft|curand|cusparse|cusolver|nvrtc)64_(\d+)\.dll\b", re.IGNORECASE),
     r"lib\1.so.\2"),
    (re.compile(r"\bcudnn_(\w+?)64_(\d+)\.dll\b", re.IGNORECASE), r"libcudnn_\1.so.\2"),
    (re.compile(r"\bnvcuda\.dll\b", re.IGNORECASE), "libcuda.so.1"),
    (re.compile(r"\bnvml\.dll\b", re.IGNORECASE), "libnvidia-ml.so.1"),
)
# CJK scripts (Han, kana, Hangul) touching a Latin letter or digit, either way round.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"


def _cjk_latin(gap: str) -> "re.Pattern[str]":
    """``gap`` (a regex) where CJK text meets a Latin letter or digit, either way round."""
    return re.compile(f"(?<=[{_CJK}]){gap}(?=[A-Za-z0-9])|(?<=[A-Za-z0-9]){gap}(?=[{_CJK}])")


_CJK_LATIN = _cjk_latin("")
# ... and the one space normalize puts there, for quoting a word as it was written.
_CJK_GAP = _cjk_latin(" ")
# Full-width ASCII forms (U+FF01..U+FF5E) and the ideographic space, as typed with a CJK input method.
_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}
_FULLWIDTH[0x3000] = 0x20
# An exception raised as Exception(MESSAGE, a, b) with a %-template: Python prints the tuple.
_ARGS_TUPLE = re.compile(r"\('((?:[^'\\\n]|\\.)*?%[sd](?:[^'\\\n]|\\.)*?)'((?:, '[^'\n]*'){1,4})\)")
_ARG = re.compile(r"'([^'\n]*)'")


def _format_args(m: "re.Match[str]") -> str:
    args = _ARG.findall(m.group(2))
    parts = re.split(r"%[sd]", m.group(1))
    if len(parts) != len(args) + 1:      # not a template of these arguments: leave it as printed
        return m.group(0)
    return "".join(p + a for p, a in zip(parts, args)) + parts[-1]


def normalize(text: str) -> str:
    """``text`` without colour codes, typography, rank and log-collector prefixes and mid-sentence wraps, with DLL names
    as .so names and CJK text spaced from the Latin words it touches."""
    text = _ANSI.sub("", text).translate(_TYPOGRAPHY).translate(_FULLWIDTH)
    text = _CJK_LATIN.sub(" ", text)
    text = _LOG_PREFIX.sub("", text)     # before the wraps: "ollama-1  | ..." is a line, not a wrapped word
    text = _WRAP.sub(" ", text)          # before the rank prefixes go: "[rank1]: ..." is a line of its own
    text = _RANK.sub("", text)
    text = _ARGS_TUPLE.sub(_format_args, text)
    for pattern, repl in _DLLS:
        text = pattern.sub(repl, text)
    return text


def unspace_cjk(words: str) -> str:
    """``words`` read from a normalised text, without the spaces ``normalize`` put between CJK and Latin text."""
    return _CJK_GAP.sub("", words)
