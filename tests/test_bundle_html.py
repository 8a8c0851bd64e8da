"""report.html opens straight from an extracted bundle in a real headless Chromium and loads nothing.

Chromium comes from Debian's `chromium` package (CI installs it, see .ci/run); without it these
tests are skipped. Network: Chromium's own net log is read, and every request the *page* made
(not the browser's own update pings) is listed; a control page with an injected image proves
the detector sees page requests.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from html import escape
from pathlib import Path

import pytest

from gpudoctor.bundle.html import CSP
from tests.bundle_support import GPU_UUID, make_root, make_stubs, planted_env, run_cli

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; "
                                                          "CI installs it through .ci/run)")


def _bundle(tmp: Path, smi_script=None) -> Path:
    bindir = make_stubs(tmp / "bin")
    if smi_script:
        (bindir / "nvidia-smi").write_text(smi_script)
    path = tmp / "b.tar.gz"
    res = run_cli("bundle", "--no-frameworks", "--root", str(make_root(tmp / "root")), "-o", str(path),
                  env=planted_env(bindir, tmp))
    assert res.returncode == 0, res.stderr
    out = tmp / "extracted"
    with tarfile.open(path) as tar:
        tar.extractall(out, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(out)
    return next(out.iterdir())


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    return _bundle(tmp_path_factory.mktemp("healthy"))


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    return _bundle(tmp_path_factory.mktemp("broken"), "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't "
                   "communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and "
                   "running.\"\nexit 9\n")


def chromium(tmp: Path, page: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--no-first-run",
                           f"--user-data-dir={tmp / 'profile'}", '--host-resolver-rules=MAP * ~NOTFOUND', *extra,
                           page.as_uri()], capture_output=True, text=True, timeout=120)


def page_requests(tmp: Path, page: Path) -> list:
    """URLs the page itself asked for (Chromium's net log; the browser's own pings have no page origin)."""
    log = tmp / "net.json"
    res = chromium(tmp, page, f"--log-net-log={log}", "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    data = json.loads(log.read_text())
    start = data["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in data["events"]
            if e["type"] == start and "url" in e.get("params", {})
            and e["params"].get("initiator") != "not an origin" and not e["params"]["url"].startswith("file:")]


def test_the_html_is_self_contained(healthy):
    text = (healthy / "report.html").read_text()
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in text
    assert CSP == "default-src 'none'; style-src 'unsafe-inline'"
    for banned in ("<script", "<link", "<img", "<iframe", "<object", "<embed", "src=", "url(", "@import"):
        assert banned not in text.lower(), banned
    hrefs = re.findall(r"href=", text)
    assert len(re.findall(r'<a href="https?://[^"]+" rel="noreferrer">', text)) == len(hrefs)


def test_it_renders_the_findings_gpu_table_and_mapping(healthy, tmp_path):
    res = chromium(tmp_path, healthy / "report.html", "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    report = json.loads((healthy / "report.json").read_text())
    assert report["findings"]
    for f in report["findings"]:
        assert escape(f["title"], quote=False) in dom, f["title"]
        assert f'<span class="id">{f["check_id"]}</span>' in dom
    assert "<th>compute capability</th>" in dom and "<td>NVIDIA A100-SXM4-80GB</td>" in dom
    assert f"<td>{GPU_UUID}</td>" in dom
    # CUDA_VISIBLE_DEVICES=GPU-513536b6 (a prefix) maps CUDA 0 to nvidia-smi GPU 0.
    row = f"<tr><td>0</td><td>{GPU_UUID[:12]}</td><td>0</td><td>NVIDIA A100-SXM4-80GB</td><td>{GPU_UUID}</td></tr>"
    assert row in dom
    assert "<h2>Framework builds</h2>" in dom and "[✓]" in dom


def test_fix_commands_are_readable_pre_blocks(broken, tmp_path):
    res = chromium(tmp_path, broken / "report.html", "--dump-dom")
    dom = res.stdout
    report = json.loads((broken / "report.json").read_text())
    drv = [f for f in report["findings"] if f["check_id"] == "DRV001"][0]
    assert drv["status"] == "fail" and drv["fix"]["commands"]
    assert '<article class="finding fail" style="--c:#cf222e">' in dom and "[✗]" in dom
    # Every fix is one <pre>, one command per line, as typed; find DRV001's by its first command (the
    # planted journal also holds an Xid 79, whose fix comes first).
    # (commands carry no prompt, so a copied block runs as it is)
    lines = [escape(c, quote=False) for c in drv["fix"]["commands"]]
    pres = [p.splitlines() for p in re.findall(r'<div class="fix"><b>Fix:</b>.*?<pre>(.*?)</pre>', dom, re.S)]
    assert len(pres) >= 2
    ours = [p for p in pres if lines[0] in p]
    assert len(ours) == 1 and ours[0] == lines
    assert not any(line.startswith("$ ") for p in pres for line in p)
    assert "couldn't communicate with the NVIDIA driver" in dom
    assert "No GPU was reported" in dom


def test_screenshot_is_not_blank(broken, tmp_path):
    shot = tmp_path / "shot.png"
    res = chromium(tmp_path, broken / "report.html", f"--screenshot={shot}", "--window-size=1200,1600")
    assert res.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000  # a blank page compresses to a few KB


def test_the_page_makes_no_network_request(healthy, tmp_path):
    assert page_requests(tmp_path / "a", healthy / "report.html") == []


def test_the_detector_sees_a_page_request_and_the_csp_blocks_it(healthy, tmp_path):
    html = (healthy / "report.html").read_text()
    canary = '<img src="http://canary.invalid/pixel.png" alt="">'
    without_csp = tmp_path / "without-csp.html"
    without_csp.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
                           .replace("</main>", canary + "</main>"))
    assert sorted(set(page_requests(tmp_path / "b", without_csp))) == ["http://canary.invalid/pixel.png"]
    with_csp = tmp_path / "with-csp.html"
    with_csp.write_text(html.replace("</main>", canary + "</main>"))
    assert page_requests(tmp_path / "c", with_csp) == []
