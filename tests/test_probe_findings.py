"""PRB001: a framework probe that hung, could not start, died or could not import its framework is a
finding with its own words; one that answered is not. Records are in the probe's format
(gpudoctor/probes/frameworks.py), HAND-MADE with real error texts.
"""

from __future__ import annotations

import pytest

from gpudoctor.engine import run_one
from gpudoctor.facts import Facts
from gpudoctor.snapshot import Snapshot
from gpudoctor_checks import probes

PY = "/opt/venv/bin/python"


def judged(**frameworks):
    return run_one(probes.probes_finished, Facts(Snapshot(frameworks=frameworks)))


def rec(rc=0, stderr="", timed_out=False, duration=2.0, error=None, **answer):
    return {"probe": {"python": PY, "returncode": rc, "timed_out": timed_out, "duration_s": duration,
                      "stderr": stderr, "error": error}, **answer}


def test_probes_that_answered_are_ok_and_named():
    [f] = judged(torch=rec(installed=True, version="2.4.0"), tensorflow=rec(installed=False))
    assert (f.status.value, f.title) == ("ok", "framework probes finished (torch, tensorflow)")


@pytest.mark.parametrize("record, title", [
    (rec(rc=None, error="not found"), f"{PY} could not be started (not found)"),
    (rec(rc=0), f"the torch probe printed no result: is {PY} a Python interpreter?"),
    (rec(rc=-11, stderr="Fatal Python error: Segmentation fault\n"),
     f"the torch probe in {PY} was killed by signal 11 without an answer"),
    (rec(rc=1, stderr="ImportError: libc10.so"), f"the torch probe in {PY} exited 1 without an answer"),
    (rec(installed=True, import_error={"type": "OSError", "message": "libcudnn.so.9: cannot open shared object "
                                                                    "file: No such file or directory"},
         traceback="Traceback (most recent call last):\n  File \"<string>\", line 1\nOSError: libcudnn.so.9"),
     f"`import torch` fails in {PY}: OSError: libcudnn.so.9: cannot open shared object file: No such file or "
     "directory"),
])
def test_a_probe_that_did_not_answer_says_how(record, title):
    [f] = judged(torch=record)
    assert (f.status.value, f.title, f.subject) == ("warn", title, "torch")
    assert f.detail == "Your jobs import the same package the same way, so they will fail or hang the same way."
    assert f.fix.kb_id == "framework_import_fails"


def test_the_evidence_is_the_last_lines_of_stderr_else_the_traceback_else_the_problem():
    stderr = "\n".join(f"line {i}" for i in range(10)) + "\n\n"
    [f] = judged(torch=rec(rc=1, stderr=stderr))
    assert [(e.source, e.excerpt) for e in f.evidence] == [("framework:torch", "line 6\nline 7\nline 8\nline 9")]
    [g] = judged(torch=rec(installed=True, import_error={"type": "ImportError", "message": "x"},
                           traceback="Traceback\n  a\n  b\n  c\nImportError: x"))
    assert g.evidence[0].excerpt == "  a\n  b\n  c\nImportError: x"
    [h] = judged(torch=rec(rc=2))
    assert h.evidence[0].excerpt == h.title


def test_a_probe_that_timed_out_never_advises_a_reinstall():
    [f] = judged(tensorflow=rec(rc=None, timed_out=True, duration=60.4, stderr="I tensorflow: loading\n"))
    assert (f.status.value, f.title, f.family) == (
        "warn", "the tensorflow probe did not answer within 60s: gpudoctor cannot tell how tensorflow is built",
        "gpudoctor")
    assert f.detail.startswith(f"Importing tensorflow in {PY} took longer than the time gpudoctor allows")
    assert f.evidence[0].excerpt == "I tensorflow: loading" and f.fix.kb_id == "probe_timeout"
    [g] = judged(tensorflow=rec(rc=None, timed_out=True, duration=None))
    assert g.title.startswith("the tensorflow probe did not answer within ?s")
    assert g.evidence[0].excerpt == "no answer after ?s"


def test_each_failed_probe_is_its_own_finding():
    found = judged(torch=rec(rc=1), tensorflow=rec(rc=None, timed_out=True, duration=5.0))
    assert [(f.subject, f.status.value) for f in found] == [("torch", "warn"), ("tensorflow", "warn")]
