"""Shared fixtures: a stub-command directory to put in front of PATH, and a CLI runner."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def stub_bin(tmp_path):
    """Returns make(name, script) that writes an executable shell stub into a bin dir."""
    bindir = tmp_path / "stub-bin"
    bindir.mkdir()

    def make(name: str, script: str) -> Path:
        path = bindir / name
        path.write_text("#!/bin/sh\n" + script + "\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
        return path

    make.dir = bindir
    return make


def run_gpudoctor(*args, env=None, timeout=60, input=None):
    """Run the installed CLI as a user would, in a child process."""
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, input=input, cwd=str(ROOT))


@pytest.fixture
def gpudoctor_cli():
    return run_gpudoctor
