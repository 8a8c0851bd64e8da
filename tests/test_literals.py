"""The words a pattern requires (gpudoctor/literals.py) rule a text out only when the search
would find nothing: checked on every vocabulary term and fact/context signature of explain
against every real error text in the repository, and on generated texts full of near misses."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudoctor.explain.catalog import load
from gpudoctor.knowledge import vocabulary
from gpudoctor.literals import Needles, fold, needles

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = [t.pattern for t in vocabulary.terms()] + [p for sig in load().signatures for p in sig.patterns]
CASE_FILES = [ROOT / "fixtures" / "errors-dev" / "cases.jsonl", *sorted((ROOT / "fixtures" / "errors-real").glob("*.jsonl"))]
TEXTS = [json.loads(line)["error_text"] for path in CASE_FILES for line in path.read_text().splitlines() if line.strip()]
SAMPLE = TEXTS[::6]  # every sixth: each text costs a search per pattern, about 4 ms


@pytest.mark.parametrize("pattern, flags, words", [
    (r"libcuda|nvcuda", re.I, ("libcuda", "nvcuda")),
    (r"\bCUDA_ERROR_NO_DEVICE\b", 0, ("cuda_error_no_device",)),
    (r"no (?:gpu|device)s? found", re.I, (" found",)),                # the longest run of the sequence
    (r"x(?:abcdef|ghijkl)", re.I, ("abcdef", "ghijkl")),              # a group's words beat a shorter run
    (r"abc(?:defghij)?", 0, ("abc",)),                                # an optional group is not required
    (r"ab(?:cdefgh)*", 0, ("ab",)),                                   # nor a repeat that may occur 0 times
    (r"q(?:cdefgh)+", 0, ("cdefgh",)),                                # one that must occur is
    (r"(?=needle)x\d+", 0, None),                                     # a lookahead's words are not the match's
    (r"a|bcd", 0, None),                                              # one branch requires no word of 2 letters
    (r"[lL]ibcuda", 0, ("ibcuda",)),                                  # a class ends a run
    (r"lib\u00e9cuda", 0, ("cuda",)),                                # so does a non-ASCII letter
])
def test_the_required_words_of_a_pattern(pattern, flags, words):
    assert Needles(re.compile(pattern, flags)).words == words


def test_a_pattern_whose_words_cannot_be_read_is_always_searched():
    needle = Needles(re.compile(r"\d+"))
    assert needle.words is None
    assert needle.search("x 42", fold("x 42")).group(0) == "42"


def test_a_text_without_any_word_is_not_searched():
    class Counting:
        pattern, flags, calls = "libcuda", re.I, 0

        def search(self, text):
            Counting.calls += 1
            return None

    needle = Needles(Counting())
    assert needle.words == ("libcuda",)
    assert needle.search("nothing here", fold("nothing here")) is None and Counting.calls == 0
    needle.search("LIBCUDA.so", fold("LIBCUDA.so"))
    assert Counting.calls == 1


def test_the_twins_are_every_non_ascii_letter_ignorecase_takes_for_an_ascii_one():
    everything = "".join(map(chr, range(128, sys.maxunicode + 1))).replace("\n", "")  # one scan in C, not 1.1M calls
    found = {}
    for m in re.finditer("[a-z]", everything, re.I):
        c = m.group(0)
        if c.lower() not in "abcdefghijklmnopqrstuvwxyz":
            found[c] = next(a for a in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(a, c, re.I))
    assert found == {"\u0130": "i", "\u0131": "i", "\u017f": "s"}
    assert fold("L\u0130BCUDA \u017fo") == "libcuda so"


def test_every_explain_pattern_gives_the_same_match_on_every_real_text():
    assert len(PATTERNS) > 300 and len(SAMPLE) > 150
    ruled_out = 0
    for text in SAMPLE:
        folded = fold(text)
        for pattern in PATTERNS:
            needle = needles(pattern)
            expected = pattern.search(text)
            got = needle.search(text, folded)
            assert (got and got.span()) == (expected and expected.span()), (pattern.pattern, text[:200])
            ruled_out += not needle.may_match(folded)
    assert ruled_out > len(SAMPLE) * len(PATTERNS) // 2  # the point of it: most searches never run


@st.composite
def _near_misses(draw):
    """A pattern and a text made of its own words, cased and spelt oddly, with noise between."""
    pattern = draw(st.sampled_from(PATTERNS))
    words = needles(pattern).words or ("gpu",)
    pieces = st.one_of(st.sampled_from(words), st.sampled_from(words).map(str.upper),
                       st.sampled_from(words).map(lambda w: w.replace("i", "\u0130").replace("s", "\u017f")),
                       st.text(max_size=6), st.sampled_from([" ", "_", ".so", "\n", "12", "0"]))
    return pattern, "".join(draw(st.lists(pieces, max_size=12)))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(_near_misses())
def test_generated_texts_give_the_same_match(case):
    pattern, text = case
    expected = pattern.search(text)
    got = needles(pattern).search(text, fold(text))
    assert (got and got.span()) == (expected and expected.span())


SMI_FILES = sorted(p for p in (ROOT / "fixtures" / "nvidia-smi").rglob("*") if p.is_file() and p.name != "SOURCES.md")
FAILURES = json.loads((ROOT / "gpudoctor" / "knowledge" / "data" / "nvidia_smi_failures.json").read_text())["failures"]
EXAMPLES = [example for row in FAILURES for example in row["examples"]]


def _every_line(lines):
    """find_errors as it was: the failure pattern searched on every line."""
    from gpudoctor.knowledge.smi_failures import any_failure
    found = {}
    for line in lines:
        text = line.strip().strip("|").strip()
        if text and len(text) <= 400 and text not in found and any_failure().search(text):
            found[text] = None
    return tuple(found)


def test_nvidia_smi_failure_lines_are_the_same_as_searching_every_line():
    from gpudoctor.smi.errors import find_errors
    texts = [p.read_bytes().decode("utf-8", "replace") for p in SMI_FILES[::4]]  # searching every line is slow
    # each failure sentence planted between a recording's lines, in odd case, after a table bar
    texts += ["\n".join(["|  " + example.upper() + " |", texts[i % len(texts)][:3000], example, "\u0130" + example])
              for i, example in enumerate(EXAMPLES)]
    hits = 0
    for text in texts:
        lines = text.splitlines()
        assert find_errors(lines) == _every_line(lines)
        hits += bool(_every_line(lines))
    assert hits >= len(EXAMPLES)
