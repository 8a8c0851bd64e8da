"""Shared helpers for scenario tests: discover fixtures/scenarios/*, build their reports."""

from __future__ import annotations

import json
from pathlib import Path

from gpudoctor.render.style import Style
from gpudoctor.render.text import render_finding
from gpudoctor.report import build_report
from gpudoctor.snapshot_folder import load

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "fixtures" / "scenarios"


def scenario_dirs():
    return sorted(p for p in SCENARIOS.iterdir() if (p / "expected.json").is_file()) if SCENARIOS.is_dir() else []


def expected(path: Path) -> dict:
    return json.loads((path / "expected.json").read_text(encoding="utf-8"))


def requirements_for(path: Path):
    """The requirements a scenario is judged under: its expected.json "requirements" (hook config keys, e.g.
    {"smoke": true} for a recorded smoke test), or None for a plain `gpudoctor check`."""
    from gpudoctor.hook.config import merge

    asked = expected(path).get("requirements")
    return merge(asked, {}).requirements if asked else None


def report_for(path: Path):
    return build_report(load(str(path / "snapshot")), requirements=requirements_for(path))


def text_report(path: Path) -> str:
    """What a person reads for this scenario (no colour), with the replay path relative to the repository,
    so the golden is the same from any working directory."""
    from gpudoctor.render.text import render

    report = report_for(path)
    report.source = str((path / "snapshot").relative_to(ROOT))
    return render(report, Style(colour=False))


def finding_text(report, check_id: str) -> str:
    style = Style(colour=False)
    lines = []
    for f in report.findings:
        if f.check_id == check_id:
            lines.extend(render_finding(f, style, verbose=True))
    return "\n".join(lines)
