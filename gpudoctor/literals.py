"""A cheap test that a regular expression cannot match a text, from the words it requires.

``explain`` searches a pasted log for a hundred-odd patterns (vocabulary terms, fact and context
signatures). Most are case-insensitive alternations with no literal prefix, which Python's ``re``
tries at every position of the text: about 10 ms per pattern on a 100 KB log. Nearly every one of
them requires one of a few words (``libcuda``, ``nvcc``, ``docker``); ``substring in text`` finds
or rules those out at memory speed. ``Needles`` are those words, read from the compiled pattern
itself (so the data files stay plain regular expressions), and ``fold`` is the text they are looked
up in: lower case, with the three non-ASCII letters that ``re.IGNORECASE`` also takes for ASCII
ones (dotted and dotless i, long s) mapped to them. The test only ever says "cannot match" when the
search would have found nothing; a pattern whose words cannot be read is always searched.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate
from typing import List, Optional, Sequence, Tuple

try:  # Python 3.11 renamed the parser module; both expose the same parse tree
    from re import _constants as _c, _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

MIN_WORD = 2   # one letter is in every text and would rule nothing out
# The non-ASCII letters that IGNORECASE matches to an ASCII letter although str.lower() keeps them apart
# (found by trying every code point against every ASCII letter; tests/test_literals.py does it again).
_IGNORECASE_TWINS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})


def fold(text: str) -> str:
    """The text ``Needles.may_match`` looks in."""
    # Mapped before lowering: "\u0130".lower() is two characters, "i" and a combining dot.
    return text.lower() if text.isascii() else text.translate(_IGNORECASE_TWINS).lower()


class Needles:
    """The words one of which every match of ``pattern`` contains (None: unknown, always search)."""

    __slots__ = ("pattern", "words")

    def __init__(self, pattern: "re.Pattern"):
        self.pattern = pattern
        try:
            self.words = _required(_p.parse(pattern.pattern, pattern.flags))
        except Exception:  # an unreadable parse tree only costs the speed-up
            self.words = None

    def may_match(self, folded: str) -> bool:
        return self.words is None or any(word in folded for word in self.words)

    def search(self, text: str, folded: str) -> Optional["re.Match"]:
        """``pattern.search(text)``, skipped when ``folded`` (``fold(text)``) lacks every word."""
        return self.pattern.search(text) if self.may_match(folded) else None


def lines_to_search(lines: Sequence[str], needle: Needles) -> Sequence[int]:
    """Indices, in order, of the lines that hold one of the pattern's words: the only ones a
    per-line search can match in. Each word is looked for once in the whole text, not line by line."""
    if needle.words is None:
        return range(len(lines))
    folded = fold("\n".join(lines))
    starts = [0, *accumulate(len(line) + 1 for line in lines)]
    found = set()
    for word in needle.words:
        at = folded.find(word)
        while at >= 0:
            index = bisect_right(starts, at) - 1
            found.add(index)
            at = folded.find(word, starts[index + 1])  # the next line: one hit per line is enough
    return sorted(found)


@lru_cache(maxsize=None)
def needles(pattern: "re.Pattern") -> Needles:
    """The Needles of a compiled pattern, read once per process."""
    return Needles(pattern)


def _required(seq) -> Optional[Tuple[str, ...]]:
    """Words (lower case) one of which every match of the sequence ``seq`` contains, or None."""
    best = _longest_run(seq)
    candidates: List[Tuple[str, ...]] = [(best,)] if len(best) >= MIN_WORD else []
    for op, av in seq:
        sub = _item(op, av)
        if sub is not None:
            candidates.append(sub)
    return max(candidates, key=lambda words: min(len(w) for w in words), default=None)


def _item(op, av) -> Optional[Tuple[str, ...]]:
    """What one item of a sequence requires: a group's body, every branch of an alternation, a
    repeat's body when it must occur at least once."""
    if op is _c.SUBPATTERN:
        return _required(av[-1])
    if op is _c.BRANCH:
        branches = [_required(branch) for branch in av[1]]
        if any(words is None for words in branches):
            return None
        return tuple(sorted({word for words in branches for word in words}))
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] >= 1:
        return _required(av[2])
    return None


def _longest_run(seq) -> str:
    """The longest stretch of consecutive ASCII literal characters, lower case."""
    best, run = "", []
    for op, av in seq:
        if op is _c.LITERAL and av < 128:
            run.append(chr(av).lower())
            continue
        best, run = max(best, "".join(run), key=len), []
    return max(best, "".join(run), key=len)
