"""Every recorded scenario survives load -> save -> load unchanged: same raw facts, same report."""

from __future__ import annotations

import pytest

from gpudoctor.report import build_report
from gpudoctor.snapshot_folder import load
from tests.scenarios import scenario_dirs

DIRS = scenario_dirs()
pytestmark = pytest.mark.usefixtures("smi_parse_memo")  # the recordings are parsed once (conftest)


def _raw(snap):
    return (snap.to_json(), {k: (c.stdout, c.stderr) for k, c in snap.commands.items()},
            {p: (r.content, r.error) for p, r in snap.files.items()})


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_save_and_reload_gives_the_same_report(path, tmp_path):
    first = load(str(path / "snapshot"))
    first.save(str(tmp_path / "copy"))
    second = load(str(tmp_path / "copy"))
    assert _raw(second) == _raw(first)
    a, b = build_report(first), build_report(second)
    assert [f.to_dict() for f in b.findings] == [f.to_dict() for f in a.findings]
    assert b.machine == a.machine
    assert int(b.exit_code()) == int(a.exit_code())
