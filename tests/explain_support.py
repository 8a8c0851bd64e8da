"""Helpers shared by the explain class tests (tests/test_explain_classes_r*.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from gpudoctor.explain.pipeline import explain_text

ROOT = Path(__file__).resolve().parent.parent


def bench_module(name: str):
    """``bench/<name>.py`` loaded as a module (bench/ is not a package): the measuring scripts the tests check."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def first_diagnosis(text, flags=()):
    """The diagnosis explain names first for ``text`` read with the --context ``flags``; there must be one."""
    d = explain_text(text, flags=list(flags)).diagnoses
    assert d, "no diagnosis"
    return d[0]


def assert_read_from_words(text, term, family, words, meaning):
    """No known message in ``text``: the vocabulary reads it, its ``term`` among the features, and names ``family``
    first, titled with the ``words`` it read and what they point to (``meaning``, the family's words)."""
    from gpudoctor.explain.words import features

    assert term in features(text)
    d = first_diagnosis(text)
    assert (d.family, d.id) == (family, "vocabulary")
    assert d.title == f"No known message matched; its words ({words}) point first to {meaning}"
