"""What a packager gets: an sdist whose tests run, a wheel with the contrib files and the licence.

Both are built offline from a copy of this tree, with the setuptools installed here (no build
isolation), exactly as `python -m build --no-isolation` would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

try:
    from importlib.metadata import version as _version

    from packaging.version import Version

    SETUPTOOLS = Version(_version("setuptools"))
except Exception:  # not installed at all
    SETUPTOOLS = None

pytestmark = pytest.mark.skipif(SETUPTOOLS is None or SETUPTOOLS < Version("77"),
                                reason=f"building needs setuptools>=77 (the `test` extra); found {SETUPTOOLS}")

JUNK = shutil.ignore_patterns(".git", ".venv", "venv", "venv-*", ".hypothesis", "build", "dist", "*.egg-info",
                              "__pycache__", "*.pyc", ".pytest_cache", ".mutmut-cache", "mutants")
# What the tests read besides the package: every file below these folders must be in the sdist.
TEST_INPUTS = ("tests", "fixtures", "contrib", "checks", "gpudoctor", "bench", "docs")
# A small part of the suite that touches conftest, the helpers, fixtures, checks, contrib and README,
# and proves that it tested the unpacked copy, not this tree nor an installed one.
SUBSET = ("tests/test_scenarios.py::test_scenario", "tests/test_devices_cli.py", "tests/test_contrib_files.py",
          "tests/test_tree_guard.py::test_this_session_imports_gpudoctor_and_every_builtin_check_from_the_tree")


def _build(kind: str, out: Path) -> Path:
    src = out / "src"
    shutil.copytree(ROOT, src, ignore=JUNK)
    code = f"import sys; from setuptools import build_meta; print(build_meta.build_{kind}(sys.argv[1]))"
    proc = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, cwd=str(src),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    return _build("sdist", tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return _build("wheel", tmp_path_factory.mktemp("wheel"))


def _tree_files(folder: str):
    for path in (ROOT / folder).rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            yield path.relative_to(ROOT).as_posix()


def test_the_sdist_lists_every_file_the_tests_need(sdist):
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    wanted = {"LICENSE", "README.md", "pyproject.toml", "MANIFEST.in", ".ci/run", "tests/conftest.py"}
    for folder in TEST_INPUTS:
        wanted.update(_tree_files(folder))
    assert sorted(wanted - names) == []
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or n.startswith(".venv/")]


def test_a_part_of_the_suite_passes_from_the_unpacked_sdist(sdist, tmp_path):
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    unpacked = tmp_path / sdist.name[:-len(".tar.gz")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUBSET],
                          capture_output=True, text=True, cwd=str(unpacked), env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "error" not in proc.stdout.splitlines()[-1]


def test_the_wheel_carries_the_checks_contrib_and_licence(wheel):
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        meta = whl.read("gpudoctor-0.1.0.dist-info/METADATA").decode()
        entry_points = whl.read("gpudoctor-0.1.0.dist-info/entry_points.txt").decode()
    assert {"gpudoctor/contrib/slurm/gpudoctor-prolog", "gpudoctor/contrib/slurm/gpudoctor-healthcheck",
            "gpudoctor/contrib/npd/gpudoctor-plugin-monitor.json", "gpudoctor/contrib/npd/gpudoctor-npd",
            "gpudoctor/contrib_files.py", "gpudoctor_entry.py",
            "gpudoctor_checks/driver.py", "gpudoctor/knowledge/data/gpus.json",
            "gpudoctor-0.1.0.dist-info/licenses/LICENSE"} <= names
    assert not [n for n in names if n.startswith(("tests/", "fixtures/", "checks/"))]
    assert "License-Expression: Apache-2.0" in meta and "Classifier: Programming Language :: Python :: 3.9" in meta
    assert "Requires-Dist: tomli>=1.1; python_version < \"3.11\"" in meta
    # The console script starts in the guarded entry point outside the package (a broken install: one line).
    assert "builtin = gpudoctor_checks:CHECKS" in entry_points and "gpudoctor = gpudoctor_entry:main" in entry_points


def test_the_installed_wheel_finds_its_contrib_files(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as whl:
        whl.extractall(site)
    proc = subprocess.run([sys.executable, "-c", "from gpudoctor.contrib_files import main; main(['npd/"
                           "gpudoctor-plugin-monitor.json'])"], capture_output=True, text=True, cwd=str(tmp_path),
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{site / 'gpudoctor' / 'contrib' / 'npd' / 'gpudoctor-plugin-monitor.json'}\n"
