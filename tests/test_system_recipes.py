"""The system-side fixes are tailored: no recipe placeholder is left unfilled on a sys-* machine."""

from __future__ import annotations

import re

import pytest

from tests.scenarios import report_for, scenario_dirs

SYSTEM_IDS = re.compile(r"^(DRV|SEC|NOU|CUDA|CDN|CTR|WSL)\d{3}$")
# Placeholders the user fills in by design: their image name, their own key, their CPU architecture.
LEFT_TO_USER = {"<image>", "<your-signing-key>", "<arch>"}
SYS = [p for p in scenario_dirs() if p.name.startswith("sys-")]


def test_there_are_system_scenarios():
    assert len(SYS) >= 10


@pytest.mark.parametrize("path", SYS, ids=[p.name for p in SYS])
def test_fixes_are_filled_with_machine_values(path):
    for f in report_for(path).findings:
        if not SYSTEM_IDS.match(f.check_id) or f.fix is None:
            continue
        text = "\n".join((f.fix.summary,) + f.fix.commands)
        unfilled = set(re.findall(r"<[a-z_]+>", text)) - LEFT_TO_USER
        assert not unfilled, f"{f.check_id} on {path.name}: {sorted(unfilled)} in\n{text}"
