"""The knowledge layer's readers at their edges: what each one says about input that is not a version, and which
row's fields it hands back (the tables' contents are pinned by the other test_knowledge_* files)."""

from __future__ import annotations

import pytest

from gpudoctor.knowledge import archs, cuda, cudnn
from gpudoctor.knowledge._load import load
from gpudoctor.knowledge.archs import Arch


@pytest.mark.parametrize("call, message", [
    (lambda: cuda.max_cuda_for_driver("abc"), "not a valid driver version: 'abc'"),
    (lambda: archs.toolkit_supports_cc("abc", "8.0"), "not a valid CUDA version: 'abc'"),
    (lambda: cudnn.cudnn_pairing("abc"), "not a valid cuDNN version: 'abc'"),
    (lambda: archs.parse_arch("foo"), "not a GPU arch: 'foo' (expected e.g. 'sm_80', 'compute_90', '8.6')"),
    (lambda: archs.parse_arch("sm_1"), "not a GPU arch: 'sm_1'"),
    (lambda: archs.parse_compute_cap("x"), "not a compute capability: 'x' (expected e.g. '8.6')"),
    (lambda: archs.parse_compute_cap(("8", "6")), "not a compute capability: ('8', '6') (expected e.g. '8.6')"),
    (lambda: archs.parse_compute_cap((8, 6, 1)), "not a compute capability: (8, 6, 1) (expected e.g. '8.6')"),
])
def test_values_that_are_not_versions_are_named_in_the_error(call, message):
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value) == message


@pytest.mark.parametrize("text, objects", [
    ("sm_80", [Arch("sass", (8, 0), "")]),
    ("compute_90", [Arch("ptx", (9, 0), "")]),
    ("sm_90a", [Arch("sass", (9, 0), "a")]),
    (" SM_75 ", [Arch("sass", (7, 5), "")]),
    ("8.6", [Arch("sass", (8, 6), "")]),
    ("8.6+PTX", [Arch("sass", (8, 6), ""), Arch("ptx", (8, 6), "")]),
])
def test_arch_strings_as_nvcc_and_torch_write_them(text, objects):
    assert archs.parse_arch(text) == objects


def test_compute_capabilities_from_text_or_pairs():
    assert archs.parse_compute_cap((8, 6)) == (8, 6)
    assert archs.parse_compute_cap([9, 0]) == (9, 0)
    assert archs.parse_compute_cap(" 12.0 ") == (12, 0)


def test_a_driver_older_than_every_cuda_supports_none():
    assert cuda.max_cuda_for_driver("300.1") is None
    assert cuda.max_cuda_for_driver("396.26") == "9.2"
    assert cuda.max_cuda_for_driver("470.82.01") == "11.4"


def test_cudnn_pairing_hands_back_its_rows_fields():
    row = next(r for r in load("cudnn_cuda")["rows"] if r["label"] == "cuDNN 8.8 and 8.9")
    assert cudnn.cudnn_pairing("8.9.7") == cudnn.CudnnPairing("8.9.7", row["label"], row["cuda_spec"], row["note"],
                                                              row["source"], row["verified"])
    assert cudnn.cudnn_pairing("1.0") is None


@pytest.mark.parametrize("cuda_version, cc, supported", [
    ("12.8", "3.7", False), ("11.8", "3.7", True), ("12.0", "9.0", True), ("11.7", "9.0", False),
])
def test_toolkits_compile_for_a_window_of_architectures(cuda_version, cc, supported):
    assert archs.toolkit_supports_cc(cuda_version, cc) is supported


def test_tables_read_row_by_row_into_their_records():
    from gpudoctor.knowledge import memory, node_health, smi_failures, xid

    rows = load("smoke_test")["dtypes"]
    assert node_health.smoke_dtypes() == tuple(node_health.SmokeDtype(r["dtype"], r["label"], r["min_cc"],
                                                                      r["tolerance"]) for r in rows)
    assert [d.label for d in node_health.smoke_dtypes()] == ["fp32", "fp16", "bf16"]
    assert node_health.copy_min_fraction() == load("pcie_links")["copy"]["min_fraction"] == 0.6
    assert xid.catalog_url() == "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
    assert smi_failures.by_id("version_mismatch").exit_codes == (18,)


def test_fsdp_strategies_are_zero_stages():
    from gpudoctor.knowledge import memory

    assert memory.fsdp_strategies() == ["no-shard", "grad-op", "full"]
    assert [memory.fsdp_zero_stage(s) for s in ("no-shard", "grad-op", "full")] == [0, 2, 3]
    with pytest.raises(ValueError) as e:
        memory.fsdp_zero_stage("hybrid")
    assert str(e.value) == "unknown FSDP strategy 'hybrid'"


def _gpu_row(name):
    from gpudoctor.knowledge import memory as kb

    row = next(r for r in load("gpu_memory")["gpus"] if r["name"] == name)
    return kb.GpuMemory(row["name"], row["memory_mib"], row["verified"], row["source"])


@pytest.mark.parametrize("asked, name", [
    ("GeForce RTX 3090", "GeForce RTX 3090"),                 # the row's own name
    ("nvidia h100 80gb hbm3", "NVIDIA H100 80GB HBM3"),       # any case
    ("H100 SXM", "NVIDIA H100 80GB HBM3"),                    # an alias
    ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),          # nvidia-smi's spelling holds the row's name
    ("L40", "NVIDIA L40"),                                    # a shorter name that only one size fits
])
def test_gpu_memory_by_any_name_people_use(asked, name):
    from gpudoctor.knowledge import memory as kb

    assert kb.gpu_memory(asked) == _gpu_row(name)


@pytest.mark.parametrize("asked, message", [
    ("  ", "an empty GPU name"),
    ("A100", "GPU name 'A100' is ambiguous: NVIDIA A100-SXM4-80GB (81920 MiB), NVIDIA A100-SXM4-40GB (40960 MiB)"),
    ("Voodoo 5", "unknown GPU 'Voodoo 5': not in gpudoctor's table of GPU memory sizes (give its memory instead, "
                 "e.g. --gpu-memory 24GiB)"),
])
def test_gpu_memory_says_why_it_cannot_answer(asked, message):
    from gpudoctor.knowledge import memory as kb

    with pytest.raises(ValueError) as e:
        kb.gpu_memory(asked)
    assert str(e.value) == message


def test_cuda_context_defaults_say_which_loading_mode_they_stand_for():
    from gpudoctor.knowledge import memory as kb

    default = load("cuda_context")["default"]
    assert kb.cuda_context(None, True) == kb.ContextEstimate(
        default["lazy"]["context_mib"], "the published figure with CUDA 11.7+", default["lazy"]["source"])
    assert kb.cuda_context(None, False) == kb.ContextEstimate(
        default["eager"]["context_mib"], "the published figure before CUDA 11.7", default["eager"]["source"])


@pytest.mark.parametrize("call, message", [
    (lambda kb: kb.dtype("fp64"), "unknown dtype 'fp64' (known: fp32, tf32, bf16, fp16, fp8, int8, int4)"),
    (lambda kb: kb.optimizer("lion"), "unknown optimizer 'lion' (known: sgd, momentum, adam, adamw, adamw-8bit, "
                                      "adafactor)"),
    (lambda kb: kb.model_family("mamba"), "config.json model_type 'mamba' is not one gpudoctor can count (known: "
                                          "llama, mistral, qwen2, gemma, phi3, gpt2, bert, roberta, t5, mt5); give "
                                          "--params N instead"),
])
def test_memory_table_lookups_list_what_they_know(call, message):
    from gpudoctor.knowledge import memory as kb

    with pytest.raises(ValueError) as e:
        call(kb)
    assert str(e.value) == message


def test_dtype_and_optimizer_rows_in_full():
    from gpudoctor.knowledge import memory as kb

    bf16 = next(r for r in load("memory")["dtypes"] if r["name"] == "bf16")
    assert kb.dtype(" BF16 ") == kb.Dtype("bf16", 2, "8.0", bf16["note"], bf16["source"])
    row = next(r for r in load("memory")["optimizers"] if r["name"] == "adamw")
    assert kb.optimizer(" AdamW ") == kb.Optimizer("adamw", 2, 0.0, False, row["note"], row["source"])
    assert kb.optimizer("adafactor").factored is True and kb.optimizer("sgd").state_copies == 0
    assert (kb.compare_cc("8.0", "8"), kb.compare_cc("7.5", "8"), kb.compare_cc("8.6", "8.6")) == (True, False, True)


def test_a_truncated_name_keeps_what_nvidia_smi_printed_and_says_it_was_cut():
    from gpudoctor.knowledge.gpus import gpu_info

    info = gpu_info("  Tesla V100-SXM2...")
    assert (info.name, info.compute_cap, info.architecture) == ("Tesla V100-SXM2...", "7.0", "Volta")
    assert info.note == "truncated name; every product it can be has CC 7.0"


def test_cuda_driver_api_integers():
    assert cuda.cuda_from_driver_api_int(1000) == "1.0"
    assert cuda.cuda_from_driver_api_int(12040) == "12.4"
    for bad in (999, True, "11040"):
        with pytest.raises(ValueError) as e:
            cuda.cuda_from_driver_api_int(bad)
        assert str(e.value) == f"not a CUDA driver API version: {bad!r}"


def test_cudnn_cuda_ranges_in_words():
    assert cudnn.CudnnPairing("9", "l", ">=11.0,<13.0", "", "", True).cuda_text() == "CUDA 11.0 up to 12.x"
    assert cudnn.CudnnPairing("9", "l", ">=12.0", "", "", True).cuda_text() == "CUDA >=12.0"
    assert cudnn.CudnnPairing("9", "l", "<13.0", "", "", True).cuda_text() == "CUDA <13.0"
    with pytest.raises(ValueError) as e:
        cudnn.cudnn_major_supports(9, "twelve")
    assert str(e.value) == "not a valid CUDA version: 'twelve'"


def test_framework_runtime_tables():
    from gpudoctor.knowledge import framework_runtime as fr

    assert fr.init_error_cause("CUDA UNKNOWN ERROR - this may be due to an incorrectly set up environment")[
        "pattern"] == r"unknown error|Error 999\b"
    assert fr.tf_libraries("12.5.1", "9.3.0") == [("libcudart.so.12", "nvidia-cuda-runtime-cu12"),
                                                  ("libcudnn.so.9", "nvidia-cudnn-cu12")]
    assert fr.tf_libraries("11.8", "8.6.0") == [("libcudart.so.11.0", "nvidia-cuda-runtime-cu11"),
                                                ("libcudnn.so.8", "nvidia-cudnn-cu11")]


def _fields_match(record, row):
    """Every field of ``record`` that the table row has under the same name carries the row's value (lists as
    tuples, mappings as read-only views); returns those names. Torch's variants are records of their own."""
    from collections.abc import Mapping
    from dataclasses import fields

    def plain(v):
        return tuple(v) if isinstance(v, (list, tuple)) else dict(v) if isinstance(v, Mapping) else v

    shared = [f.name for f in fields(record) if f.name in row and f.name != "variants"]
    for name in shared:
        assert plain(getattr(record, name)) == plain(row[name]), (record, name)
    return shared


def test_every_reader_carries_every_field_of_its_row():
    from gpudoctor.knowledge import dcgm, smi_codes, tensorflow, torch

    for row in load("dcgm_errors")["codes"]:
        assert _fields_match(dcgm.code(row["code"]), row)
        assert dcgm.code(row["code"]).explained_by == tuple(row.get("explained_by", ()))
        assert dcgm.code(row["code"]).recipe == row.get("recipe")
    for row in load("nvidia_smi_exit_codes")["codes"]:
        assert len(_fields_match(smi_codes.smi_exit_code(row["code"]), row)) == 7
    for row in load("tf_builds")["builds"]:
        assert len(_fields_match(tensorflow.tf_build(row["version"]), row)) == 10
    for row in load("torch_releases")["releases"]:
        assert len(_fields_match(torch.torch_release(row["version"]), row)) >= 8


def test_what_dcgm_did_not_say():
    from gpudoctor.knowledge import dcgm

    assert dcgm.code(10 ** 6) is None
    assert dcgm.severity_meaning(None) == "DCGM gave no severity"
    assert dcgm.level_timeout_s(99) == 600.0
    assert dcgm.exit_meaning(12345) is None
    with pytest.raises(ValueError) as e:
        __import__("gpudoctor.knowledge.tensorflow", fromlist=["tf_build"]).tf_build("two")
    assert str(e.value) == "not a valid TensorFlow version: 'two'"


def test_nvidia_smi_failures_are_read_from_table_borders_and_exit_codes():
    from gpudoctor.knowledge import smi_failures

    said = smi_failures.failure_in(["+-----+", "|  Failed to initialize NVML: Driver/library version mismatch  |"])
    assert (said.id, said.line) == ("version_mismatch", "Failed to initialize NVML: Driver/library version mismatch")
    assert said.values == {}
    assert smi_failures.failure_in(["x" * 380 + " Driver/library version mismatch"]) is None    # over 400: not a line
    by_code = smi_failures.classify("", "", 18)
    assert (by_code.id, by_code.line, by_code.values) == ("version_mismatch", "", {})
    assert smi_failures.classify("", "", None) is None
