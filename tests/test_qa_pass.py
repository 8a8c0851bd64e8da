"""Defects found by a QA pass over the CLI: bad input, odd input, and reports that contradict themselves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.recipes import recipe
from gpudoctor.snapshot import SnapshotError, load
from tests.conftest import ROOT, run_gpudoctor
from tests.scenarios import SCENARIOS, report_for

HEALTHY = "fixtures/scenarios/core-healthy-workstation"
SERVER = "fixtures/scenarios/core-8gpu-server"
SMI_TABLE = ROOT / "fixtures" / "nvidia-smi" / "text" / "h100-80gb-hbm3-x8_driver-550.90.07_cuda-12.4.txt"


def one_line_error(proc, code=2):
    """The process failed with exactly one stderr line `gpudoctor: ...` and the given exit code."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpudoctor: "), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    return lines[0]


# --- click's own usage errors are one line too --------------------------------------------

@pytest.mark.parametrize("args,needles", [
    (["check", "--snapshot", HEALTHY, "--timeout", "-1"], ["--timeout", "-1", "gpudoctor check --help"]),
    (["check", "--bogus-flag"], ["No such option", "--bogus-flag"]),
    (["nosuchcommand"], ["No such command", "nosuchcommand"]),
    (["parse-smi"], ["Missing argument", "FILE", "gpudoctor parse-smi --help"]),
    (["devices", "--snapshot", SERVER, "--order", "bogus"], ["--order", "bogus"]),
    (["check", "--snapshot"], ["--snapshot", "requires an argument"]),
    (["hook", "--snapshot", SERVER, "--gpus", "x"], ["--gpus", "'x'"]),
])
def test_usage_errors_are_one_gpudoctor_line(args, needles):
    line = one_line_error(run_gpudoctor(*args))
    for needle in needles:
        assert needle in line
