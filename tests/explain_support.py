"""Helpers shared by the explain class tests (tests/test_explain_classes_r*.py)."""

from __future__ import annotations

from gpudoctor.explain.pipeline import explain_text


def first_diagnosis(text, flags=()):
    """The diagnosis explain names first for ``text`` read with the --context ``flags``; there must be one."""
    d = explain_text(text, flags=list(flags)).diagnoses
    assert d, "no diagnosis"
    return d[0]
