"""Third-party checks load through the same versioned entry-point group as the built-ins."""

from __future__ import annotations

import json
import textwrap

from gpudoctor.engine import Check, InvalidCheck, check, run_one, validate
from gpudoctor.facts import Facts
from gpudoctor.findings import Status, warn
from gpudoctor.snapshot import Snapshot
from tests.conftest import invoke
from tests.scenarios import SCENARIOS

SCENARIO = SCENARIOS / "core-healthy-workstation"


def install_plugin(site, name, module_source, entry_value):
    """Install a plugin the way pip lays it out: a module plus a dist-info with entry_points.txt."""
    (site / f"{name}.py").write_text(textwrap.dedent(module_source))
    dist = site / f"{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[gpudoctor.checks.v1]\n{name} = {entry_value}\n")
    (dist / "RECORD").write_text("")


PLUGIN = """
    from gpudoctor.engine import check
    from gpudoctor.findings import Evidence, warn, ok

    @check("ACME001", "acme-persistence", "ACME: driver branch is the site standard", needs=("driver_version",))
    def site_branch(f):
        v = f["driver_version"].version
        if not v.startswith("550."):
            return warn(f"driver {v} is not on the site's 550 branch",
                        evidence=[Evidence(f["driver_version"].source, v)])
        return ok(f"driver {v} is on the site branch")

    CHECKS = [site_branch]
"""


def test_third_party_check_runs(tmp_path, monkeypatch):
    install_plugin(tmp_path, "acme_gpu_checks", PLUGIN, "acme_gpu_checks:CHECKS")
    monkeypatch.syspath_prepend(str(tmp_path))  # where pip would have put it
    listed = invoke("check", "--list-checks", "--json")
    ids = {c["id"]: c for c in json.loads(listed.stdout)["checks"]}
    assert "ACME001" in ids and "DRV001" in ids
    assert ids["ACME001"]["origin"].startswith("acme_gpu_checks")
    proc = invoke("check", "--snapshot", SCENARIO, "--json")
    found = {f["check_id"]: f for f in json.loads(proc.stdout)["findings"]}
    assert found["ACME001"]["status"] == "warn"
    assert found["ACME001"]["title"] == "driver 535.86.05 is not on the site's 550 branch"
    assert proc.returncode == 0  # a warning is not a failure without --strict
    strict = invoke("check", "--snapshot", SCENARIO, "--strict")
    assert strict.returncode == 1


def test_broken_plugins_are_warnings_not_crashes(tmp_path, monkeypatch):
    install_plugin(tmp_path, "broken_import", "raise RuntimeError('plugin exploded at import')\n",
                   "broken_import:CHECKS")
    install_plugin(tmp_path, "dup_ids", """
        from gpudoctor.engine import check
        @check("DRV001", "dup", "duplicates a built-in id")
        def dup(f):
            return None
        @check("bad-id", "bad", "malformed id")
        def bad(f):
            return None
        @check("DUP002", "needs-unknown", "needs a fact nobody provides", needs=("gpu_horoscope",))
        def unknown(f):
            return None
        CHECKS = [dup, bad, unknown]
    """, "dup_ids:CHECKS")
    monkeypatch.syspath_prepend(str(tmp_path))
    proc = invoke("check", "--snapshot", SCENARIO, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    messages = " | ".join(p["plugin"] + ": " + p["message"] for p in data["plugin_problems"])
    assert "broken_import" in messages and "plugin exploded at import" in messages
    assert "duplicates one from builtin" in messages
    assert "'bad-id'" in messages and "must look like ABC123" in messages
    assert "gpu_horoscope" in messages
    assert {f["check_id"] for f in data["findings"]} >= {"DRV001", "INV001"}
    text = invoke("check", "--snapshot", SCENARIO)
    assert "gpudoctor plugin broken_import" in text.stdout


def test_crashing_check_becomes_error_and_others_run():
    @check("TST001", "crashes", "a check that crashes")
    def crashes(f):
        return {}["missing"]

    findings = run_one(crashes, Facts(Snapshot()))
    assert findings[0].status is Status.ERROR
    assert "KeyError" in findings[0].title and "Traceback" in findings[0].traceback


def test_missing_needs_skip_with_the_reason():
    @check("TST002", "needs-smi", "needs nvidia-smi", needs=("smi",))
    def needs_smi(f):
        raise AssertionError("must not be called")

    findings = run_one(needs_smi, Facts(Snapshot()))
    assert findings[0].status is Status.SKIP
    assert "nvidia-smi was not recorded" in findings[0].title


def test_validation_names_the_offender():
    @check("TST003", "ok-check", "fine")
    def fine(f):
        return warn("x")

    assert validate(fine, {}) is fine
    try:
        validate(fine, {"TST003": fine})
    except InvalidCheck as exc:
        assert "TST003" in str(exc)
    else:
        raise AssertionError("duplicate id accepted")
    try:
        validate("not a check", {})
    except InvalidCheck as exc:
        assert "not a gpudoctor Check" in str(exc)


def test_a_distribution_on_the_path_twice_loads_once_on_every_python(tmp_path, monkeypatch):
    """Python < 3.10's entry_points() lists each copy (an sdist's egg-info beside the installed
    dist-info); gpudoctor keeps the first, as 3.10+ does, so no check is loaded twice."""
    from importlib import metadata

    from gpudoctor import plugins

    first, second = tmp_path / "first", tmp_path / "second"
    for site, value in ((first, "twice_plugin:CHECKS"), (second, "twice_plugin:OLD_CHECKS")):
        site.mkdir()
        install_plugin(site, "twice_plugin", "CHECKS = []\n", value)
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    as_before_3_10 = {plugins.GROUP: [ep for d in metadata.distributions() for ep in d.entry_points
                                      if ep.group == plugins.GROUP]}
    monkeypatch.setattr(plugins.metadata, "entry_points", lambda: as_before_3_10)
    assert [ep.name for ep in as_before_3_10[plugins.GROUP]].count("twice_plugin") == 2
    found = [ep.value for ep in plugins._entry_points() if ep.name == "twice_plugin"]
    assert found == ["twice_plugin:CHECKS"]  # the first copy on sys.path
