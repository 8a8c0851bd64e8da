"""Never hang, never crash: hung, garbage, binary or truncated command output becomes a finding."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.conftest import invoke, run_gpudoctor

XML = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi" / "xml" / "rtx-3060_driver-570.124.04_cuda-12.8.xml"


def _env(stub_bin):
    return {"PATH": f"{stub_bin.dir}:{os.environ['PATH']}"}


def _findings(proc):
    data = json.loads(proc.stdout)
    return {f["check_id"]: f for f in data["findings"]}, data


def _seconds(*args, env):
    start = time.monotonic()
    proc = run_gpudoctor(*args, env=env, timeout=60)
    return time.monotonic() - start, proc


def test_hung_nvidia_smi_is_a_finding_within_the_total_timeout(stub_bin):
    # The hang may cost the default total timeout (15 s) and nothing more: the bound is that timeout plus
    # what the same run costs when nvidia-smi answers at once (start-up, the other probes, the report),
    # measured now, so a loaded machine slows both alike. Frameworks are not the point here (a hung
    # framework probe is bounded below), and their imports would be most of what load slows.
    stub_bin("nvidia-smi", f"cat '{XML}'")
    answered, _ = _seconds("check", "--json", "--no-frameworks", env=_env(stub_bin))
    stub_bin("nvidia-smi", "sleep 1000")
    elapsed, proc = _seconds("check", "--json", "--no-frameworks", env=_env(stub_bin))
    assert elapsed < 15 + answered + 1, f"check took {elapsed:.1f}s with a hung nvidia-smi ({answered:.1f}s without)"
    findings, _ = _findings(proc)
    assert findings["DRV001"]["status"] == "fail"
    assert "did not answer within" in findings["DRV001"]["title"]
    assert proc.returncode == 1


def test_hang_respects_a_shorter_timeout(stub_bin):
    stub_bin("nvidia-smi", "sleep 1000")
    start = time.monotonic()
    proc = run_gpudoctor("check", "--json", "--timeout", "3", "--no-frameworks", env=_env(stub_bin))
    assert time.monotonic() - start < 8
    findings, _ = _findings(proc)
    assert re.search(r"did not answer within [23](\.\d)?s$", findings["DRV001"]["title"])


@pytest.mark.parametrize("script", [
    r"printf '\000\001\002\377garbage\376'",                     # binary
    "echo 'Segmentation fault'; exit 0",                          # junk text, exit 0
    f"head -c 700 '{XML}'",                                       # truncated XML
    "printf ''",                                                  # empty output
])
def test_garbage_nvidia_smi_output_is_a_finding(stub_bin, script):
    # Output that is not nvidia-smi's is never a GPU; gpudoctor says it cannot tell (the hook: unknown), and
    # check shows it under "Could not tell" with its fix. An empty or truncated report is a failure of its own.
    stub_bin("nvidia-smi", script)
    proc = invoke("check", "--json", "--no-frameworks", env=_env(stub_bin))  # in-process: no boundary at stake
    assert "Traceback" not in proc.stderr
    findings, data = _findings(proc)
    drv = findings["DRV001"]
    assert (drv["status"], drv["cannot_tell"]) == ("skip", True) or drv["status"] == "fail", drv
    assert not data["machine"]["gpus"]
    assert all(f["status"] != "error" for f in data["findings"]), data["findings"]
    if drv["status"] == "fail":  # (other checks may fail on the host the test runs on: a container, say)
        assert proc.returncode == 1


def test_real_xml_from_a_stub_reads_as_a_working_driver(stub_bin):
    stub_bin("nvidia-smi", f"cat '{XML}'")
    proc = invoke("check", "--json", "--no-frameworks", env=_env(stub_bin))
    findings, data = _findings(proc)
    assert findings["DRV001"]["status"] == "ok"
    assert "570.124.04" in findings["DRV001"]["title"]
    assert data["machine"]["gpus"][0]["name"] == "NVIDIA GeForce RTX 3060"


def test_hung_framework_probe_is_bounded(stub_bin, tmp_path):
    # A "python" whose torch import hangs: the probe is killed at the deadline and reported.
    fake = stub_bin("hangpython", "sleep 1000")
    start = time.monotonic()
    proc = run_gpudoctor("check", "--json", "--python", str(fake), "--timeout", "4")
    assert time.monotonic() - start < 10
    _, data = _findings(proc)
    # A probe that did not answer says nothing about the install: "cannot tell", never "not installed".
    assert data["machine"]["frameworks"]["torch"]["installed"] is None
    assert "did not finish" in data["machine"]["frameworks"]["torch"]["why"]


def test_probe_reports_the_hang_as_a_finding(stub_bin):
    fake = stub_bin("hangpython2", "sleep 1000")
    proc = run_gpudoctor("check", "--json", "--python", str(fake), "--timeout", "3")
    findings = [f for f in json.loads(proc.stdout)["findings"] if f["check_id"] == "PRB001"]
    assert {f["subject"] for f in findings} == {"torch", "tensorflow", "jax"}
    assert all("probe did not answer within" in f["title"] and f["status"] == "warn" for f in findings)
    assert all("--timeout" in " ".join(f["fix"]["commands"]) for f in findings)


def test_a_framework_that_fails_to_import_is_reported_with_its_error(tmp_path):
    # A torch whose import fails the way a CUDA wheel without its cuDNN does.
    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "raise OSError('libcudnn.so.9: cannot open shared object file: No such file or directory')\n")
    # TensorFlow is not the point: a stand-in that fails at once spares the seconds its real import costs.
    (tmp_path / "tensorflow").mkdir()
    (tmp_path / "tensorflow" / "__init__.py").write_text("raise ImportError('not the point of this test')\n")
    proc = run_gpudoctor("check", "--json", "--timeout", "12", env={"PYTHONPATH": str(tmp_path)})
    data = json.loads(proc.stdout)
    prb = next(f for f in data["findings"] if f["check_id"] == "PRB001" and f["subject"] == "torch")
    assert "`import torch` fails" in prb["title"] and "libcudnn.so.9" in prb["title"]
    assert prb["fix"]["kb_id"] == "framework_import_fails"
    assert data["machine"]["frameworks"]["torch"]["import_error"].startswith("libcudnn.so.9")
