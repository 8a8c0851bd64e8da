"""cuDNN <-> CUDA pairing data and nvidia-smi exit codes, read back through their loaders."""

from __future__ import annotations

import pytest

from gpudoctor.knowledge._load import load
from gpudoctor.knowledge.cudnn import cudnn_major_cuda_text, cudnn_major_supports, cudnn_pairing
from gpudoctor.knowledge.smi_codes import smi_exit_code


@pytest.mark.parametrize("cudnn, cuda, fits", [
    ("7.6.5", "10.0", True), ("7.6.5", "11.0", False),
    ("8.0.5", "10.1", True), ("8.7.0", "10.2", True), ("8.7.0", "12.0", False),
    ("8.9.7", "11.8", True), ("8.9.7", "12.2.2", True), ("8.9.7", "13.0", False),
    ("9.1.0", "11.8", True), ("9.10.2", "12.9", True), ("9.10.2", "13.0", False),
    ("9.11.0", "11.8", False), ("9.11.0", "12.8", True),
    ("9.12.0", "13.0", True), ("9.20.0", "13.2.1", True), ("9.20.0", "11.8", False),
])
def test_cudnn_release_lines(cudnn, cuda, fits):
    assert cudnn_pairing(cudnn).supports(cuda) is fits


def test_unknown_cudnn_and_major_only_answers():
    assert cudnn_pairing("6.0.21") is None and cudnn_pairing("10.0") is None
    assert cudnn_major_supports(8, "13.0") is False and cudnn_major_supports(9, "13.0") is True
    assert cudnn_major_supports(6, "9.0") is None
    assert cudnn_major_cuda_text(8) == "CUDA 10.1 up to 12.x"
    assert cudnn_pairing("8.9.7").cuda_text() == "CUDA 11.0 up to 12.x"


def test_cudnn_rows_do_not_overlap():
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    rows = load("cudnn_cuda")["rows"]
    for probe in ("7.0", "7.6.5", "8.0.5", "8.1", "8.7.99", "8.8", "8.9.7", "9.0", "9.10.2", "9.11.1", "9.12", "9.30"):
        assert sum(Version(probe) in SpecifierSet(r["cudnn_spec"]) for r in rows) == 1, probe


@pytest.mark.parametrize("code, nvml, status, recipe", [
    (9, "NVML_ERROR_DRIVER_NOT_LOADED", "fail", "driver_not_loaded"),
    (12, "NVML_ERROR_LIBRARY_NOT_FOUND", "fail", "driver_nvml_missing"),
    (14, "NVML_ERROR_CORRUPTED_INFOROM", "warn", "driver_inforom_corrupted"),
    (15, "NVML_ERROR_GPU_IS_LOST", "fail", "driver_gpu_lost"),
    (18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "fail", "driver_library_mismatch"),
])
def test_exit_codes(code, nvml, status, recipe):
    row = smi_exit_code(code)
    assert (row.nvml, row.status, row.recipe) == (nvml, status, recipe)


def test_success_and_unknown_codes_have_no_row():
    assert smi_exit_code(0) is None and smi_exit_code(None) is None and smi_exit_code(99) is None


def test_every_exit_code_recipe_exists():
    from gpudoctor.recipes import all_recipes

    for row in load("nvidia_smi_exit_codes")["codes"]:
        assert row["recipe"] is None or row["recipe"] in all_recipes(), row["code"]
