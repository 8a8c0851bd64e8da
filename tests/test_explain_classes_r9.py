"""Classes of real errors round 9 of issue 10 reads for the class (REAL texts from the tuning sets, named next to
each, and the library's own message where no tuning case holds one): framework and library messages said in
other words, by other tools or in other languages."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text


def _first(text, flags=()):
    d = explain_text(text, flags=list(flags)).diagnoses
    assert d, "no diagnosis"
    return d[0]


CUDNN_HANDLE = "TensorFlow could not create a cuDNN handle: usually the GPU memory was already taken"


@pytest.mark.parametrize("text,title", [
    # round8-a tf_memory_growth-tensorflow-44885 (before round 9: the vocabulary's cuDNN reading): the message named
    # without its CUDNN_STATUS_ code, as an issue title says it
    ("Could not create cudnn handle TF2 GPU", CUDNN_HANDLE),
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] could not create cudnn handle", CUDNN_HANDLE),
    # with the code, as before
    ("Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
     "TensorFlow could not create a cuDNN handle (CUDNN_STATUS_INTERNAL_ERROR): usually the GPU memory was already "
     "taken"),
])
def test_a_cudnn_handle_tensorflow_could_not_create_is_memory_growth_with_or_without_its_status(text, title):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("tf_memory_growth", "tf_could_not_create_cudnn_handle", title)


CPU_LIBRARY = "This library is a CPU-only build: it was compiled without CUDA"
ORT_CPU = "This ONNX Runtime has no CUDA execution provider: it is the CPU package (onnxruntime), not onnxruntime-gpu"


@pytest.mark.parametrize("text,sig_id,title", [
    # round8-a torch_cpu_build-dgl-979 (before round 9: no answer): DGL's CPU package, in the older device name
    ("Error: device API GPU is not enabled\nI have modified the file 'translation_train.py' as below",
     "library_built_without_cuda", CPU_LIBRARY),
    # round7 torch_cpu_build-kokorosharp-18 (before round 9: no answer): ONNX Runtime's C API through .NET
    ("I want to run KokoroSharp on my GPU and Installed the `Microsoft.ML.OnnxRuntime.Gpu` version `1.20.1` but I got "
     "this error\n```\nUnhandled exception. Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:Fail] CUDA "
     "execution provider is not enabled in this build.\n   at Microsoft.ML.OnnxRuntime.OrtCUDAProviderOptions..ctor()",
     "onnxruntime_cpu_package", ORT_CPU),
    # ONNX Runtime's own message for TensorRT (provider_bridge_ort.cc), through Python
    ("onnxruntime.capi.onnxruntime_pybind11_state.Fail: TensorRT execution provider is not enabled in this build.",
     "onnxruntime_cpu_package", ORT_CPU),
])
def test_a_gpu_backend_not_enabled_in_this_build_is_a_cpu_only_build(text, sig_id, title):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("torch_cpu_build", sig_id, title)


@pytest.mark.parametrize("text,title", [
    # round8-a extension_build_mismatch-desc-1534 (before round 9: 'CUDA could not be initialised'): the plugin's
    # PJRT structures of another size
    ("> RuntimeError: Unable to initialize backend 'cuda': INVALID_ARGUMENT: Unexpected PJRT_Client_Create_Args size: "
     "expected 88, got 72. The plugin is likely built with a later version than the framework. This plugin is built "
     "with PJRT API version 0.64.", "JAX's CUDA plugin was built for another jaxlib release than the one installed"),
    # round3 extension_build_mismatch-jax-22416 (its first line): the two PJRT API versions named
    ("RuntimeError: Unable to initialize backend 'cuda': INVALID_ARGUMENT: Mismatched PJRT plugin PJRT API version "
     "(0.54) and framework PJRT API version 0.51).",
     "JAX's CUDA plugin (PJRT API 0.54) was built for another jaxlib (PJRT API 0.51)"),
    # JAX's own warning (jax/_src/xla_bridge.py) when it refuses the plugin
    ("UserWarning: JAX plugin jax_cuda12_plugin version 0.4.30 is installed, but it is not compatible with the "
     "installed jaxlib version 0.4.26, so it will not be used.",
     "JAX's CUDA plugin was built for another jaxlib release than the one installed"),
])
def test_a_jax_cuda_plugin_from_another_release_is_an_extension_build_mismatch(text, title):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("extension_build_mismatch", "jax_pjrt_plugin_version_mismatch", title)
    assert d.fix is not None and "jax[cuda12]" in " ".join(d.fix.commands)


@pytest.mark.parametrize("text", [
    # round8-a cuda_visible_devices-langchain-chatchat-3468 (before round 9: no answer; oom is its second category)
    "在部署的机器上有4张卡，0和1使用中。\n\n启动后，一直显示 `GPU 0`和`GPU 1`显存不足，并没有使用`GPU 2`和`GPU 3`",
    "模型一加载就爆显存了",                                    # 'the video memory blew up'
    "GPUメモリが足りないというエラーが出ます",                   # Japanese: 'not enough GPU memory'
    "VRAM不足で落ちます",
    "GPU 메모리 부족 오류가 납니다",                             # Korean: 'GPU memory shortage'
])
def test_gpu_memory_running_out_said_in_chinese_japanese_or_korean_is_oom(text):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("oom", "gpu_memory_words", "The GPU ran out of memory")


@pytest.mark.parametrize("text", [
    "显存占用 2.1GB，一切正常",             # memory use reported, nothing ran out
    "内存不足",                              # 'out of (host) memory': no GPU named
])
def test_memory_words_without_gpu_memory_running_out_say_nothing(text):
    assert [d.family for d in explain_text(text).diagnoses] != ["oom"]


def test_cublas_refusing_a_bfloat16_gemm_is_a_gpu_too_old_for_bf16():
    # round6 arch_unsupported-mineru-1508 (before round 9: no answer): a Maxwell GPU asked for a bf16 GEMM
    text = ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, opa, "
            "opb, (int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, "
            "strideb, (void*)&fbeta, c, CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, compute_type, "
            "CUBLAS_GEMM_DEFAULT_TENSOR_OP)`")
    d = _first(text)
    assert (d.family, d.id) == ("arch_unsupported", "gpu_feature_needs_newer_arch")
    assert d.title == ("cuBLAS does not support CUDA_R_16BF matrix multiplies on this GPU: its architecture is too old "
                       "for that data type")
    # the same status on a float32 GEMM names no data type the GPU lacks: not read as the architecture
    plain = explain_text("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasSgemm( handle, "
                         "opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`").diagnoses
    assert "arch_unsupported" not in [x.family for x in plain]


def test_torch_autocast_refusing_bfloat16_is_a_gpu_older_than_ampere():
    # PyTorch's own message (torch/amp/autocast_mode.py)
    d = _first("RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to float16.")
    assert (d.family, d.id, d.title) == ("arch_unsupported", "bf16_needs_ampere",
                                         "bfloat16 needs a GPU of compute capability 8.0 (Ampere) or newer")
