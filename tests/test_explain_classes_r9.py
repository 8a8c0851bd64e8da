"""Classes of real errors round 9 of issue 10 reads for the class (REAL texts from the tuning sets, named next to
each, and the library's own message where no tuning case holds one): framework and library messages said in
other words, by other tools or in other languages."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text
from tests.explain_support import first_diagnosis as _first


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
    # ONNX Runtime's own message (provider_bridge_ort.cc), through Python
    ("onnxruntime.capi.onnxruntime_pybind11_state.Fail: CUDA execution provider is not enabled in this build.",
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


# Library messages no tuning case holds yet, each the library's own words (source file named), for families whose
# unseen texts were missed most: a CPU-only build, an extension that was not built, TensorFlow's cuDNN start-up.

@pytest.mark.parametrize("text,sig_id,title", [
    # stable-diffusion-webui's start-up check (modules/launch_utils.py): torch.cuda.is_available() was False
    ("RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS variable to disable "
     "this check", "torch_cuda_not_available", "PyTorch cannot use CUDA here: torch.cuda.is_available() is False"),
    # torch._C of a CPU-only build has none of the _cuda_* bindings torch/cuda/__init__.py calls
    ("AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'", "torch_not_compiled_with_cuda",
     "This PyTorch is a CPU-only build (torch._C has no _cuda_setDevice)"),
    ("  File \"torch/cuda/__init__.py\", line 52, in is_available\n    return torch._C._cuda_getDeviceCount() > 0\n"
     "AttributeError: module 'torch._C' has no attribute '_cuda_getDeviceCount'", "torch_not_compiled_with_cuda",
     "This PyTorch is a CPU-only build (torch._C has no _cuda_getDeviceCount)"),
])
def test_pytorch_without_cuda_said_by_an_application_or_by_its_missing_bindings(text, sig_id, title):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("torch_cpu_build", sig_id, title)


@pytest.mark.parametrize("text,sig_id,title", [
    # torch.utils.cpp_extension's load() (DeepSpeed's JIT ops, custom kernels)
    ("RuntimeError: Error building extension 'fused_adam'", "extension_build_failed_words",
     "Building the C++/CUDA extension fused_adam failed"),
    # pip's summary line, old and new wording
    ("ERROR: Could not build wheels for flash-attn, which is required to install pyproject.toml-based projects",
     "extension_build_failed_words", "Building flash-attn's C++/CUDA extension failed"),
    ("ERROR: Failed to build installable wheels for some pyproject.toml based projects (flash-attn)",
     "extension_build_failed_words", "Building flash-attn's C++/CUDA extension failed"),
    # AutoGPTQ's warning when its kernels were not compiled (auto_gptq/nn_modules/qlinear/qlinear_cuda.py)
    ("WARNING - CUDA extension not installed.", "extension_compiled_module_missing",
     "The compiled part of a package is missing: it was installed without its C++/CUDA extensions"),
])
def test_an_extension_that_was_not_built_said_by_torch_pip_or_the_package(text, sig_id, title):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("extension_build_mismatch", sig_id, title)


def test_a_wheel_that_failed_to_build_without_cuda_code_is_no_extension_problem():
    assert explain_text("ERROR: Failed to build installable wheels for some pyproject.toml based projects (numpy)"
                        ).diagnoses == []


def test_tensorflow_1_failing_to_list_convolution_algorithms_is_cudnn_start_up_memory():
    # TensorFlow 1.x's conv_ops.cc check: the same cuDNN handle failure, printed as a fatal check
    text = ("F tensorflow/core/kernels/conv_ops.cc:659] Check failed: stream->parent()->GetConvolveAlgorithms( "
            "conv_parameters.ShouldIncludeWinogradNonfusedAlgo<T>(), &algorithms)")
    d = _first(text)
    assert (d.family, d.id, d.title) == ("tf_memory_growth", "tf_conv_algorithm_cudnn_init",
                                         "TensorFlow could not get a convolution algorithm: cuDNN failed to initialise")


def test_onnx_runtime_failing_to_create_its_cuda_provider_is_its_cuda_libraries():
    # onnxruntime_pybind_state.cc's warning, without the loader line that names the missing library
    text = ("[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] Failed to create "
            "CUDAExecutionProvider. Please reference https://onnxruntime.ai/docs/execution-providers/CUDA-Execution"
            "Provider.html#requirements to ensure all dependencies are met.")
    d = _first(text)
    assert (d.family, d.id, d.title) == ("cudnn_mismatch_or_missing", "onnxruntime_cuda_provider_load_failed",
                                         "ONNX Runtime cannot load its CUDA execution provider")


@pytest.mark.parametrize("text,sig_id,title", [
    # aten's stub CUDA hooks (CUDAHooksInterface.h) in a build without its CUDA library
    ("RuntimeError: Cannot initialize CUDA without ATen_cuda library. PyTorch splits its backend into two shared "
     "libraries: a CPU library and a CUDA library; this error has occurred because you are trying to use some CUDA "
     "functionality, but the CUDA library has not been loaded by the dynamic linker for some reason.",
     "torch_not_compiled_with_cuda", "This PyTorch is a CPU-only build (it has no ATen_cuda library)"),
    # the dispatcher (OperatorEntry.cpp): an aten operator whose backends list holds no CUDA at all
    ("NotImplementedError: Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend. This could be "
     "because the operator doesn't exist for this backend, or was omitted during the selective/custom build process "
     "(if using custom build).\n'aten::empty_strided' is only available for these backends: [CPU, Meta, QuantizedCPU, "
     "BackendSelect, Python, Named, AutogradOther, AutogradCPU, AutogradCUDA, Tracer, AutocastCPU, AutocastCUDA].",
     "torch_op_without_cuda_backend",
     "This PyTorch is a CPU-only build: no CUDA backend is registered for aten::empty_strided"),
])
def test_pytorch_built_without_cuda_said_by_aten(text, sig_id, title):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("torch_cpu_build", sig_id, title)


def test_an_aten_operator_missing_on_cuda_where_cuda_is_a_backend_is_not_a_cpu_build():
    text = ("NotImplementedError: Could not run 'aten::_some_op' with arguments from the 'CUDA' backend. "
            "'aten::_some_op' is only available for these backends: [CPU, CUDA, Meta, AutogradCUDA].")
    assert "torch_cpu_build" not in [d.family for d in explain_text(text).diagnoses]


@pytest.mark.parametrize("text", ["We keep running out of VRAM on the 3060 at 1024px",
                                  "the GPU memory is full after two epochs",
                                  "VRAM memory gets maxed out and the process dies"])
def test_gpu_memory_running_out_in_a_users_words_is_oom(text):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("oom", "gpu_memory_words", "The GPU ran out of memory")


@pytest.mark.parametrize("text,sig_id,title", [
    # vLLM's quantization check, capabilities written as integers (89 = 8.9)
    ("ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. Current "
     "capability: 86.", "gpu_capability_words",
     "This build needs a GPU of compute capability 8.9 or newer; this one has 8.6"),
    ("RuntimeError: Quantization scheme is not supported for the current GPU. Min capability: 100. Current "
     "capability: 90.", "gpu_capability_words",
     "This build needs a GPU of compute capability 10.0 or newer; this one has 9.0"),
    # flash-attn's flash_api.cpp: the largest head dimensions only on the data-centre GPUs
    ("RuntimeError: FlashAttention backward for head dim > 192 requires A100/A800 or H100/H800",
     "flash_attention_needs_ampere",
     "FlashAttention needs an A100/A800 or H100/H800 GPU for this head dimension, not this one"),
])
def test_a_library_refusing_this_gpus_architecture_in_its_own_words(text, sig_id, title):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("arch_unsupported", sig_id, title)


def test_a_cpu_version_of_torch_said_in_chinese_is_the_cpu_build_word():
    from gpudoctor.explain.words import features

    # round7 torch_cpu_build-manga-image-translator-210: 'torch installs the CPU version by default'
    real = ("requirements里torch install时默认是cpu版本，所以cuda.is_available()只会返回false，导致--use-cuda不能使用\n"
            "官网的gpu版本才能用。。。")
    assert "cpu_build" in features(real)
    d = _first("我装的是cpu版本的torch，跑不了cuda")          # 'I installed the CPU version of torch'
    assert (d.family, d.id) == ("torch_cpu_build", "vocabulary")
    # round 14: 'torch' touching Chinese text is read as a word too (normalize spaces CJK from Latin words)
    assert d.title == "No known message matched; its words (是cpu版, torch) point first to a CPU-only framework build"
    assert "cpu_build" not in features("cpu版本能跑，gpu不行")     # 'the CPU version runs': no install named


ALLOC_TITLE = ("TensorFlow's cuDNN or cuBLAS could not allocate GPU memory ({}): TensorFlow had already taken it")


@pytest.mark.parametrize("text,status", [
    # TensorFlow's stream executor logging a cuDNN status alone (cuda_dnn.cc)
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:82] CUDNN_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED"),
    ("Training with keras on the GPU stops with CUBLAS_STATUS_ALLOC_FAILED", "CUBLAS_STATUS_ALLOC_FAILED"),
])
def test_cudnn_or_cublas_failing_to_allocate_in_tensorflow_is_memory_growth(text, status):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("tf_memory_growth", "tf_library_alloc_failed", ALLOC_TITLE.format(status))


def test_the_handle_messages_keep_their_own_reading_and_without_tensorflow_nothing_changes():
    d = _first("Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED\nkeras 2.3")
    assert d.id == "tf_could_not_create_cudnn_handle"
    # round1 tf_memory_growth-tf2-yolov3-107: the status alone, no TensorFlow word: the generic GPU-memory reading
    assert _first("CUDNN_STATUS_ALLOC_FAILED").id == "cuda_out_of_memory_generic"


@pytest.mark.parametrize("text", [
    "AllReduce hangs",                                # round6 nccl_errors-nccl-257 (before round 9: no answer)
    "all_gather gets stuck after a few hundred steps on 8 GPUs",
    "torch.distributed.reduce_scatter never returns on the second node",
])
def test_a_collective_operation_named_alone_is_nccls_word(text):
    d = _first(text)
    assert (d.family, d.id) == ("nccl_errors", "vocabulary")
    assert d.title.endswith("point first to NCCL communication failure")


@pytest.mark.parametrize("text,header", [
    # eval's SMOKE-73, Pointnet2-181 and DCNv2-21 name cuda_runtime(_api).h; the toolkit's other headers fail alike
    ("torch/include/ATen/cuda/CUDAContext.h:6:10: fatal error: cublas_v2.h: No such file or directory", "cublas_v2.h"),
    ("csrc/sparse_ops.cu:3:10: fatal error: cusparse.h: No such file or directory", "cusparse.h"),
    ("C:\\src\\ext.cpp(5): fatal error C1083: Cannot open include file: 'cuda_fp16.h': No such file or directory",
     "cuda_fp16.h"),
])
def test_any_cuda_toolkit_header_missing_in_a_build_is_a_missing_toolkit(text, header):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("extension_build_mismatch", "cuda_headers_missing",
                                         f"Building CUDA code: the CUDA toolkit header {header} is not found")


def test_a_missing_header_of_another_sdk_is_not_the_cuda_toolkit():
    assert explain_text("fatal error: Python.h: No such file or directory").diagnoses == []


@pytest.mark.parametrize("text", ["my GTX 770 is too old for this version of pytorch",
                                  "Is my GPU too old for CUDA 12? Nothing runs on it",
                                  "GeForce 940MX too old for the new release"])
def test_the_gpu_itself_called_too_old_is_its_architecture_not_the_driver(text):
    # the vocabulary's gpu_too_old: counted on the tuning sets' 10 arch_unsupported threads that say it (eval's
    # ml-cross-entropy-41, tune's pytorch-16712, ...: 'Found ... which is too old to be supported')
    d = _first(text)
    assert (d.family, d.id) == ("arch_unsupported", "vocabulary")
    assert _first("the NVIDIA driver is too old for this pytorch").family == "driver_too_old"


def test_tensorrt_unable_to_allocate_gpu_memory_is_oom():
    # TensorRT's builder/runtime message (its troubleshooting guide)
    d = _first("[TRT] [E] 2: Requested amount of GPU memory (1073741824 bytes) could not be allocated. There may not "
               "be enough free memory for allocation to succeed.")
    assert (d.family, d.id, d.title) == ("oom", "gpu_memory_words", "The GPU ran out of memory")


@pytest.mark.parametrize("text,library", [
    ("OSError: libc10_cuda.so: cannot open shared object file: No such file or directory", "libc10_cuda.so"),
    ("ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory",
     "libtorch_cuda_cu.so"),
])
def test_an_extension_missing_a_cuda_library_of_torch_itself_was_built_for_another_torch(text, library):
    # the dynamic loader's words when an extension built against a CUDA torch meets another torch build
    d = explain_text(text).diagnoses
    assert (d[0].family, d[0].id, d[0].title) == (
        "extension_build_mismatch", "extension_needs_torch_cuda_library",
        f"A compiled extension needs {library}, which this PyTorch does not have: it was built for another torch build")
    assert (d[1].family, d[1].title) == ("torch_cpu_build", f"This PyTorch may be the CPU-only build: it has no {library}")
