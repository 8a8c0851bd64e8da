"""Shared fixtures: a stub-command directory to put in front of PATH, and the CLI in-process or as a child.

Before any test module imports gpudoctor, the tree's ``checks/`` is bound to the name
``gpudoctor_checks`` (see tests/tree.py), and the session stops with one message if gpudoctor,
its checks or their entry point still come from somewhere else than this tree.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import tree

ROOT = tree.ROOT
# torch is a test dependency of the frameworks extra only: .ci/run's runs on the oldest and newest
# Python go without it, and the tests that need a real torch say so instead of failing.
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install -e '.[test,frameworks]')")
tree.bind_checks()


def pytest_configure(config):
    found = tree.problems()
    if found:
        raise pytest.UsageError(tree.message(found))


def pytest_xdist_auto_num_workers(config):
    """Workers for ``-n auto``: twice the cores this process may use. A good part of the suite waits
    rather than computes (hung stubs killed at their timeout, a Slurm health check every interval,
    children blocked on a pipe), so a worker per core would leave the cores idle during those waits."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 * cores


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


# A child `python -m gpudoctor` that, like this session, takes gpudoctor_checks from the tree.
_CHILD = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); from tests import tree; tree.bind_checks(); "
          "runpy.run_module('gpudoctor', run_name='__main__', alter_sys=True)")


def gpudoctor_argv(*args) -> list:
    return [sys.executable, "-c", _CHILD, str(ROOT), *map(str, args)]


def run_gpudoctor(*args, env=None, timeout=60, input=None):
    """Run the CLI as a user would, in a child process (for what only a process shows: exit by
    signal, a watchdog's os._exit, a closed pipe, real file descriptors, timing)."""
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    if env:
        full_env.update(env)
    return subprocess.run(gpudoctor_argv(*args), capture_output=True, text=True, env=full_env, timeout=timeout,
                          input=input, cwd=str(ROOT))


@dataclass
class Ran:
    """What `invoke` saw, shaped like subprocess.CompletedProcess."""
    returncode: int
    stdout: str
    stderr: str


class _Main:
    """Lets CliRunner call gpudoctor.cli.main, so its one-line errors and exit codes are what is tested."""
    name = "gpudoctor"

    @staticmethod
    def main(args, prog_name=None, **extra):
        from gpudoctor.cli import main

        main(list(args))


def _runner():
    from click.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)  # click < 8.2 mixes stderr into stdout unless told not to
    except TypeError:
        return CliRunner()


def invoke(*args, env=None, input=None) -> Ran:
    """Run `gpudoctor ARGS` in this process (fast): stdin, stdout and stderr are not terminals,
    NO_COLOR is unset unless ``env`` sets it, and ``env`` overrides os.environ meanwhile."""
    result = _runner().invoke(_Main(), [str(a) for a in args], input=input,
                              env={"NO_COLOR": None, **(env or {})}, catch_exceptions=False)
    return Ran(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def gpudoctor_cli():
    return run_gpudoctor


_SMI_PARSED: dict = {}


@pytest.fixture
def smi_parse_memo(monkeypatch):
    """gpudoctor.smi.parse remembered per (text, expect) for this worker, for modules that judge the same
    recorded machines many times over (the scenarios through every command): what they test is the
    judging and rendering, and the parse of a recording is the same each time (a pure function whose
    SmiReport is frozen, of tuples), computed for real the first time. A parse that raises is not
    remembered. The parsers' own tests do not use it."""
    from gpudoctor import smi

    real = smi.parse

    def parse(text, expect=None):
        key = (text, expect)
        if key not in _SMI_PARSED:
            _SMI_PARSED[key] = real(text, expect=expect)
        return _SMI_PARSED[key]

    monkeypatch.setattr(smi, "parse", parse)
