"""Classes of real errors round 11 of issue 10 reads for the class (REAL texts of the tunable sets, named next to
each): CUDA's 'named symbol not found' (a kernel missing from the code built for this GPU), read inside NCCL's
warnings too, and error numbers in a failed CHECK printed either way round ('(0 vs. 216)')."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text
from gpudoctor.explain.words import features


@pytest.mark.parametrize("text", [
    # round10-a arch_unsupported-nccl-1372 (before round 11: NCCL's warning): NCCL built only for sm_80, run on H100s
    "gcn75:2336636:2336906 [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'",
    "RuntimeError: CUDA error: named symbol not found",
    "cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND",
])
def test_a_kernel_missing_from_the_code_built_for_this_gpu_is_arch_unsupported(text):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family) == ("cuda_named_symbol_not_found", "arch_unsupported")
    assert d[0].title == "A CUDA kernel the program calls is not in the code loaded for this GPU (named symbol not found)"
    assert "extension_build_mismatch" in [x.family for x in d]


@pytest.mark.parametrize("text, code", [
    # round10-a cuda_init_error_other-tensorflow-526 (before round 11: no answer): TensorFlow's CHECK, GPUs in
    # exclusive-thread compute mode
    ("Check failed: CUDA_SUCCESS == dynload::cuCtxSetCurrent(context) (0 vs. 216)", "contextalreadyinuse"),
    ("Check failed: cudaSuccess == cudaStat (0 vs. 35)", "insufficientdriver"),
    ("Check failed: status == CUDA_SUCCESS (100 vs. 0)", "nodevice"),
])
def test_a_failed_check_names_its_error_number_in_either_order(text, code):
    assert any(f.startswith("code:") and code in f.replace("_", "") for f in features(text)), list(features(text))


def test_context_in_use_reads_as_a_cuda_initialisation_failure():
    d = explain_text("Check failed: CUDA_SUCCESS == dynload::cuCtxSetCurrent(context) (0 vs. 216)").diagnoses
    assert (d[0].id, d[0].family) == ("vocabulary", "cuda_init_error_other")


@pytest.mark.parametrize("text, sig, title", [
    # round9 cuda_visible_devices-faster-rcnn-dota-9 (before round 11: no answer): MXNet's words for an ordinal
    ("mxnet.base.MXNetError: [13:48:30] src/engine/threaded_engine.cc:320: Check failed: exec_ctx.dev_id < "
     "device_count_ (1 vs. 1) Invalid GPU Id: 1, Valid device id should be less than device_count: 1",
     "invalid_device_ordinal", None),
    # round9 cuda_visible_devices-nemo-compatible-16 (before round 11: no answer): lightning_fabric's singular wording
    ("lightning_fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [1]\n But your machine only "
     "has: [0]", "lightning_requested_gpus_missing",
     "PyTorch Lightning was asked for GPU(s) [1], which this process does not see"),
])
def test_other_frameworks_words_for_a_gpu_index_that_does_not_exist(text, sig, title):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family) == (sig, "cuda_visible_devices")
    if title:
        assert d[0].title == title
