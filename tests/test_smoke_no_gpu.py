"""SMK001-SMK003 before any GPU test: no GPU visible to the job (skip), none on the machine (skip), or CUDA
that does not start although nvidia-smi lists GPUs (fail, explained by the checks that can say why).

Payloads are HAND-MADE in the smoke child's format (gpudoctor/probes/smoke_child.py), as in
tests/test_node_health_smoke.py; the nvidia-smi recording is the healthy RTX 4090 one.
"""

from __future__ import annotations

import pytest

from tests import hook_snapshots as hs
from tests.test_node_health_smoke import device, judged

NO_GPUS = {"type": "RuntimeError", "message": "No CUDA GPUs are available"}


@pytest.mark.parametrize("cvd", ["", "-1", "NoDevFiles", " none ", "void"])
def test_a_job_given_no_gpu_is_skipped_saying_how(cvd):
    found = judged({"cuda_visible_devices": cvd, "cuda_error": NO_GPUS, "devices": []}, hs.xml(hs.HEALTHY))
    for check_id in ("SMK001", "SMK002", "SMK003"):
        f = found[check_id]
        assert (f.status.value, f.title) == ("skip", f"smoke test: no GPU is visible to the job "
                                                     f"(CUDA_VISIBLE_DEVICES={cvd!r})")


def test_cuda_failing_where_nvidia_smi_lists_gpus_fails_with_the_error():
    found = judged({"cuda_visible_devices": "0", "cuda_error": NO_GPUS, "devices": []}, hs.xml(hs.HEALTHY))
    f = found["SMK001"]
    assert (f.status.value, f.title) == (
        "fail", "CUDA does not start in /opt/venv/bin/python: RuntimeError: No CUDA GPUs are available")
    assert f.detail == "nvidia-smi lists 1 GPU(s), but torch 2.4.0+cu121 cannot use them."
    assert f.family == "cuda_init_error_other"
    assert f.symptom_of == ("DRV001", "TRC001", "TRC002", "TRC004", "CTR001")
    assert [(e.source, e.excerpt) for e in f.evidence] == [
        ("command:smoke_test", "RuntimeError: No CUDA GPUs are available")]
    assert f.fix.kb_id == "cuda_init_error_other"


def test_a_long_cuda_error_is_cut_in_the_title_and_the_evidence():
    long = {"type": "RuntimeError", "message": "x" * 500}
    f = judged({"cuda_error": long, "devices": []}, hs.xml(hs.HEALTHY))["SMK001"]
    assert f.title == "CUDA does not start in /opt/venv/bin/python: " + ("RuntimeError: " + "x" * 500)[:120]
    assert len(f.evidence[0].excerpt) == 300


@pytest.mark.parametrize("payload, smi, why", [
    ({"cuda_error": NO_GPUS, "devices": []}, None, "RuntimeError: No CUDA GPUs are available"),  # no nvidia-smi
    ({"devices": []}, hs.xml(hs.HEALTHY), "torch sees no CUDA device"),
])
def test_no_gpu_here_is_a_skip_with_the_reason(payload, smi, why):
    f = judged(payload, smi)["SMK001"]
    assert (f.status.value, f.title) == ("skip", f"smoke test: no GPU here ({why})")


def test_a_gpu_that_answers_goes_on_to_the_tests():
    f = judged({"cuda_visible_devices": "0", "devices": [device()]}, hs.xml(hs.HEALTHY))["SMK001"]
    assert f.status.value == "ok"
