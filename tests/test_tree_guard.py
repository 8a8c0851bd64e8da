"""The suite tests this tree: an installed copy of gpudoctor or its checks cannot stand in for it."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import gpudoctor
import gpudoctor_checks
from gpudoctor.plugins import load_checks
from tests import tree
from tests.conftest import ROOT


def test_this_session_imports_gpudoctor_and_every_builtin_check_from_the_tree():
    assert Path(gpudoctor.__file__).resolve() == ROOT / "gpudoctor" / "__init__.py"
    assert Path(gpudoctor_checks.__file__).resolve() == ROOT / "checks" / "__init__.py"
    checks, problems = load_checks()
    builtin = [c for c in checks if c.origin == "builtin"]
    assert builtin and problems == []
    for chk in builtin:
        assert Path(inspect.getfile(chk.run)).resolve().parent == ROOT / "checks", chk.id


def test_problems_name_where_each_name_comes_from_and_where_it_should(tmp_path):
    (tmp_path / "gpudoctor").mkdir()
    (tmp_path / "checks").mkdir()
    found = tree.problems(tmp_path)
    assert found[0] == (f"gpudoctor is imported from {ROOT / 'gpudoctor'}, "
                        f"not from the tree under test {tmp_path / 'gpudoctor'}")
    assert found[1] == (f"gpudoctor_checks is imported from {ROOT / 'checks'}, "
                        f"not from the tree under test {tmp_path / 'checks'}")
    assert found[2].startswith("entry point gpudoctor.checks.v1 'builtin' = gpudoctor_checks:CHECKS resolves to "
                               f"{ROOT / 'checks' / '__init__.py'}, outside {tmp_path}")
    assert tree.problems() == []


def _fake_installed_checks(tmp_path) -> Path:
    site = tmp_path / "site-packages"
    (site / "gpudoctor_checks").mkdir(parents=True)
    (site / "gpudoctor_checks" / "__init__.py").write_text("CHECKS = ()  # an old installed copy\n")
    return site


def _pytest(tmp_path, site, *extra):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra,
                           str(ROOT / "tests" / "test_recipes.py"), "-k", "fill_and_unfilled"],
                          capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=300)


def test_an_installed_copy_of_the_checks_on_the_path_does_not_shadow_the_tree(tmp_path):
    proc = _pytest(tmp_path, _fake_installed_checks(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_a_copy_imported_before_the_tree_could_bind_stops_the_session_naming_both(tmp_path):
    site = _fake_installed_checks(tmp_path)
    proc = _pytest(tmp_path, site, "-p", "gpudoctor_checks")  # imported as a plugin, before conftest
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out  # pytest's usage error: nothing ran
    assert "the tests would not test this tree (an installed copy shadows it):" in out
    assert (f"gpudoctor_checks is imported from {site / 'gpudoctor_checks'}, "
            f"not from the tree under test {ROOT / 'checks'}") in out
    assert "passed" not in out
