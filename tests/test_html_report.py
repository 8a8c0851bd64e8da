"""report.html's content and order, read from the markup (no browser needed; test_bundle_html.py
renders it in Chromium): problems first, one fix each, copyable alternatives, the mapping from the report."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from gpudoctor.bundle.html import fix_blocks, render
from gpudoctor.report import build_report
from gpudoctor.snapshot_folder import load

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"


def page(name: str) -> str:
    return render(build_report(load(str(SCENARIOS / name / "snapshot"))).to_dict())


def test_problems_come_before_every_passing_check():
    html = page("fw-torch-recent-on-p100")
    first_problem = html.index('<article class="finding fail"')
    first_pass = html.index('<article class="finding ok"')
    assert first_problem < first_pass
    assert re.search(r"<details><summary>\d+ check\(s\) passed</summary>", html)


def test_one_cause_is_one_problem_with_one_fix():
    html = page("sys-nouveau-loaded")
    problems = re.findall(r'<article class="finding (?:fail|warn)"', html)
    assert len(problems) == 1
    assert html.count("<b>Fix:</b>") == 1  # the same recipe reached by three checks is printed once
    for check in ("NOU001", "NOU002"):
        assert f'<span class="id">{check}</span>' in html.split("This also explains:")[1].split("</ul>")[0]


def test_commands_copy_without_a_prompt_and_each_way_is_its_own_block():
    html = page("fw-torch-cu121-old-driver-515")
    fix = html.split("<b>Fix:</b>")[1].split("</article>")[0]
    blocks = [unescape(b) for b in re.findall(r"<pre>(.*?)</pre>", fix, re.S)]
    assert len(blocks) >= 2 and not any(line.startswith("$ ") for b in blocks for line in b.splitlines())
    captions = re.findall(r'<div class="note"><b>(way \d+[^<]*)</b></div>', fix)
    assert [c.split(":")[0] for c in captions] == ["way 1", "way 2"]
    assert any("pip install" in b for b in blocks)


def test_fix_blocks_split_alternatives_only():
    cmds = ["nvidia-smi", "# way 1: upgrade", "sudo apt install x", "# reboot after", "sudo reboot",
            "# or keep it: install an older build", "pip install y"]
    assert fix_blocks(cmds) == [("", ["nvidia-smi"]),
                                ("way 1: upgrade", ["sudo apt install x", "# reboot after", "sudo reboot"]),
                                ("or keep it: install an older build", ["pip install y"])]


def test_the_mapping_and_its_certainty_come_from_the_report():
    report = build_report(load(str(SCENARIOS / "fw-cvd-mixed-gpus-no-order" / "snapshot"))).to_dict()
    assert report["devices"]["order_source"] == "compute_capability"
    html = render(report)
    assert "gpudoctor ranked them by compute capability" in html
    report["devices"]["order_source"] = "unknown"  # the renderer shows what the report says, nothing else
    assert "cannot be told from what was recorded" in render(report)
    report["devices"]["visible"][0]["name"] = "A NAME ONLY THE REPORT HAS"
    assert "A NAME ONLY THE REPORT HAS" in render(report)
