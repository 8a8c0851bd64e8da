"""One judgment: the hook and `check` reach the same verdict, for the same reasons, on every scenario.

The hook is the check engine with a selection, so on any recorded machine and any requirements:
every check the hook ran has the same status and title in `check`'s report; the hook drains
(exit 1) exactly when one of those checks fails there; each part of its reason is the title of a
failing finding `check` reports; and it answers "unknown" only for a check `check` also could
not judge.
"""

from __future__ import annotations

import json

import pytest

from gpudoctor.cli import main
from gpudoctor.hook.config import merge
from gpudoctor.report import build_report
from gpudoctor.snapshot_folder import load
from tests.scenarios import scenario_dirs

pytestmark = pytest.mark.usefixtures("smi_parse_memo")  # the recordings are parsed once (conftest)

DIRS = scenario_dirs()
# Requirement sets: none; the framework checks (--cuda); every node threshold at once; the kernel log and NVLink.
REQUIREMENTS = {
    "default": {},
    "cuda": {"cuda": "11.8", "gpus": 1},
    "thresholds": {"gpus": 2, "min_driver": "530", "max_temp": 60, "persistence": True,
                   "min_free_mem": "8GiB", "no_foreign_processes": True},
    # The kernel log with application Xids draining too, and NVLink; the fabric manager is on by default.
    "node": {"drain_xid_actions": "RESET_GPU,RESTART_BM,CONTACT_SUPPORT,RESTART_APP", "nvlink": True},
    # Node health: full PCIe width, no clock slowdown, and the active tests as far as a snapshot recorded them.
    "node_health": {"pcie_width": True, "no_slowdown": True, "dcgm": 1, "smoke": True},
}


def hook_json(capsys, path, flags):
    args = ["hook", "--snapshot", str(path), "--json"]
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    with pytest.raises(SystemExit) as exc:
        main(args)
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("req", sorted(REQUIREMENTS))
@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_hook_and_check_agree(capsys, path, req):
    flags = REQUIREMENTS[req]
    code, hook = hook_json(capsys, path / "snapshot", flags)
    report = build_report(load(str(path / "snapshot")), requirements=merge(flags, {}).requirements)
    by_check = {}
    for f in report.findings:
        by_check.setdefault(f.check_id, []).append(f)
    failing_titles = set()
    for ran in hook["checks"]:
        same = by_check.get(ran["check"])
        assert same, f"the hook ran {ran['check']}, which `check` did not report"
        assert (ran["status"], ran["title"]) in {(f.status.value, f.title) for f in same}
        if ran["state"] == "problem":
            failing_titles.add(ran["title"])
    assert (code == 1) == bool(failing_titles), f"hook exit {code}, failing checks: {failing_titles}"
    if code == 1:
        reported = {f.title for f in report.findings if f.status.value == "fail"}
        parts = [d["title"] for d in hook["diagnoses"] if d["status"] == "fail"]
        assert parts and set(parts) <= reported
        assert hook["reason"].startswith("gpudoctor: ")
    if code == 2:
        unknown = [c for c in hook["checks"] if c["state"] == "unknown"]
        assert unknown and all(any(f.cannot_tell or f.status.value == "error" for f in by_check[c["check"]])
                               for c in unknown)


def test_every_scenario_is_judged():
    assert len(DIRS) >= 39
