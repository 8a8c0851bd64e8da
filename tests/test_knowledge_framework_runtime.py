"""Run-time framework knowledge: CUDA init error causes, TensorFlow's libraries and memory variables."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpudoctor import recipes
from gpudoctor.knowledge import framework_runtime as fr

DATA = Path(fr.__file__).parent / "data"
CASES = Path(__file__).resolve().parent.parent / "fixtures" / "errors-dev" / "cases.jsonl"


def test_every_init_error_row_is_usable():
    rows = json.loads((DATA / "cuda_init_errors.json").read_text())["errors"]
    for row in rows:
        re.compile(row["pattern"])
        assert row["source"].startswith("https://"), row
        recipes.get(row["recipe"])                       # the recipe file exists
        assert row["points_to"] in (None, "TRC001", "TRC002", "CVD001", "DRV001")


@pytest.mark.parametrize("message, recipe_id", [
    ("AssertionError: Torch not compiled with CUDA enabled", "torch_cpu_build"),
    ("The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver",
     "driver_too_old"),
    ("Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() "
     "that might have already set an error? Error 804: forward compatibility was attempted on non supported HW",
     "cuda_compat_unsupported"),
    ("RuntimeError: No CUDA GPUs are available", "cuda_visible_devices"),
    ("CUDA error: invalid device ordinal", "cuda_visible_devices"),
    ("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver",
     "driver_not_loaded"),
])
def test_init_error_causes(message, recipe_id):
    assert fr.init_error_cause(message)["recipe"] == recipe_id


def test_804_is_the_forward_compatibility_recipe_that_explain_gives_too():
    # The compat libcuda on the library path is the cause; the recipe offers dropping it or a native driver.
    row = fr.init_error_cause("Error 804: forward compatibility was attempted on non supported HW")
    assert row["recipe"] == "cuda_compat_unsupported"
    fix = recipes.recipe(row["recipe"])
    assert "grep -v '/compat'" in " ".join(fix.commands) and "natively" in fix.summary


def test_real_torch_errors_from_the_dev_set_map_to_their_family():
    """Every torch/CUDA-init message in errors-dev whose primary family has a recipe here maps to it."""
    if not CASES.exists():
        pytest.skip("errors-dev set not present")
    families = {"torch_cpu_build", "driver_too_old", "cuda_visible_devices"}
    checked = 0
    for line in CASES.read_text().splitlines():
        case = json.loads(line)
        if case["categories"][0] not in families:
            continue
        row = fr.init_error_cause(case["error_text"])
        if row is None:   # e.g. a launcher command line with no CUDA message in it
            continue
        # Cases may carry several true families (videollava-22: driver_too_old and cuda_compat_unsupported).
        assert recipes.get(row["recipe"])["family"] in case["categories"], case["id"]
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("cuda, cudnn, expected", [
    ("12.5.1", "9", [("libcudart.so.12", "nvidia-cuda-runtime-cu12"), ("libcudnn.so.9", "nvidia-cudnn-cu12")]),
    ("11.2", "8", [("libcudart.so.11.0", "nvidia-cuda-runtime-cu11"), ("libcudnn.so.8", "nvidia-cudnn-cu11")]),
    ("10.1", "7", [("libcudart.so.10.1", None), ("libcudnn.so.7", None)]),
    ("64_112", "64_8", []),        # Windows build_info strings are not versions
])
def test_tf_libraries(cuda, cudnn, expected):
    assert fr.tf_libraries(cuda, cudnn) == expected


def test_tf_env_rules_and_tables():
    assert fr.tf_env_rule("TF_FORCE_GPU_ALLOW_GROWTH")["accepted"] == ["true", "false"]
    assert "cuda_malloc_async" in fr.tf_env_rule("TF_GPU_ALLOCATOR")["accepted"]
    assert fr.tf_last_native_windows_gpu() == "2.10"
    assert ("2.18.0", "12.5") in fr.tf_build_versions()
    assert "2.13" in fr.torch_release_versions()
