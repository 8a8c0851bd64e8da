"""CI runs what the README tells developers to run, on the Pythons the metadata claims."""

from __future__ import annotations

import re

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def _readme_test_command() -> str:
    block = README.split("## Development", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    line = next(line for line in block.splitlines() if "# the test command" in line)
    return line.split("#", 1)[0].strip()


def test_ci_runs_the_readme_test_command_on_every_python():
    command = _readme_test_command()
    assert command == "python -m pytest -q -n auto --dist worksteal"
    assert f"\n{command}\n" in CI                        # the main run, frameworks installed
    assert f'&& {command})' in CI                         # each other Python's venv


def test_the_oldest_python_claimed_is_the_one_required():
    claimed = sorted((int(m) for m in re.findall(r'"Programming Language :: Python :: 3\.(\d+)"', PYPROJECT)))
    assert claimed == list(range(claimed[0], claimed[-1] + 1))   # no gap: every minor in between is claimed
    assert f'requires-python = ">=3.{claimed[0]}"' in PYPROJECT
