"""Classes of real errors round 4 of issue 10 reads for the class: a CPU-only build of any framework (not
only PyTorch), an extension or library built for another CUDA/TensorRT, the driver too old for FFmpeg's
NVENC or a container, a GPU index the process does not see. REAL texts are real ones from the tuning
sets (named next to each); LIBRARY texts are the libraries' own messages, from their source or docs
(named next to each), for rules no tuning thread holds yet."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text

REAL = [
    # round3-a cpu_build-mxnettoonnx-3: the `mxnet` package, not mxnet-cuXXX
    ("Compile with USE_CUDA=1 to enable GPU usage", "torch_cpu_build",
     "This MXNet is a CPU-only build: it was compiled without CUDA (USE_CUDA=0)"),
    # round3-a cpu_build-mxnet-260
    ("mxnet.base.MXNetError: [16:53:11] src/storage/storage.cc:43: Please compile with CUDA enabled", "torch_cpu_build",
     "This MXNet is a CPU-only build: it was compiled without CUDA (USE_CUDA=0)"),
    # round3-a cpu_build-g2pwcantonese-1: onnxruntime instead of onnxruntime-gpu
    ("UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: "
     "'AzureExecutionProvider, CPUExecutionProvider'", "torch_cpu_build",
     "This ONNX Runtime has no CUDA execution provider: it is the CPU package (onnxruntime), not onnxruntime-gpu"),
    # round3-a cpu_build-xgboost-3030 (before round 4: a torch extension built without CUDA)
    ("XGBoost version not compiled with GPU support", "torch_cpu_build",
     "This XGBoost was built without CUDA, so its GPU training cannot run"),
    # round3-a cpu_build-lightgbm-2222
    ("LightGBMError: GPU Tree Learner was not enabled in this build.", "torch_cpu_build",
     "This LightGBM was built without its GPU tree learner, so it cannot train on the GPU"),
    # round3-a extension_build_mismatch-jax-18027 (before round 4: "JAX could not start its CUDA backend")
    ("CUDA backend failed to initialize: Found cuBLAS version 120205, but JAX was built against version 120304, which "
     "is newer.\n The copy of cuBLAS that is installed must be at least as new as the version against which JAX was "
     "built. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)", "extension_build_mismatch",
     "JAX was built against cuBLAS 120304, and the cuBLAS it found is older (120205)"),
    # round3-a driver_too_old-colabtools-3187
    (" [hevc_nvenc @ 0x55defbb87c00] Loaded Nvenc version 11.0\n [hevc_nvenc @ 0x55defbb87c00] Driver does not support "
     "the required nvenc API version. Required: 11.1 Found: 11.0\n [hevc_nvenc @ 0x55defbb87c00] The minimum required "
     "Nvidia driver for nvenc is 470.57.02 or newer", "driver_too_old",
     "The driver is too old for this FFmpeg's NVENC: it needs NVENC API 11.1, the driver offers 11.0"),
    # round3-a driver_too_old-nvidia-docker-177
    ("nvidia-docker | 2016/08/22 12:54:02 Error: unsupported CUDA version: driver 7.5 < image 8.0", "driver_too_old",
     "The host driver supports CUDA 7.5, older than the CUDA 8.0 this image needs"),
    # round3-a driver_not_loaded-rodan-1161
    ("Error! Your kernel headers for kernel 5.10.0-30-cloud-amd64 cannot be found.", "driver_not_loaded",
     "DKMS cannot build the NVIDIA module: the headers of kernel 5.10.0-30-cloud-amd64 are not installed"),
    # round3-a oom-ollama-1566
    ("Error: llama runner exited, you may not have enough available memory to run this model", "oom",
     "Ollama's model runner stopped: not enough free memory for this model"),
    # round3-a tf_memory_growth-tensorflow-25160: TensorFlow's cuDNN start-up failure, memory settings first
    ("Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, so try looking to see "
     "if a warning log message was printed above.", "tf_memory_growth",
     "TensorFlow could not get a convolution algorithm: cuDNN failed to initialise"),
    # round2 cudnn-detectron-574: Caffe2's cuDNN version check (before round 4: the vocabulary, driver first)
    ("RuntimeError: [enforce fail at common_cudnn.h:108] version_match || backwards_compatible_7 || patch_compatible. "
     "cuDNN compiled (7102) and runtime (7005) versions mismatch", "cudnn_mismatch_or_missing",
     "The cuDNN found at run time is not the one this program was built for"),
    # round3-a extension_build-cupy-714: a CUDA runtime library missing at import
    ("  File \"cupy/cuda/runtime.pxd\", line 5, in init cupy.cuda.device\nImportError: libcudart.so.7.5: cannot open "
     "shared object file: No such file or directory", "extension_build_mismatch",
     "A package needs the CUDA 7 library libcudart.so.7.5, which is not installed"),
]

LIBRARY = [
    # PaddlePaddle's device check (python/paddle/device/__init__.py)
    ("Cannot use GPU because you have installed CPU version PaddlePaddle.\nIf you want to use GPU, please try to "
     "install GPU version PaddlePaddle by: pip install paddlepaddle-gpu", "torch_cpu_build",
     "This PaddlePaddle is the CPU package (paddlepaddle), so it cannot use the GPU"),
    # OpenCV's throw_no_cuda (modules/core/include/opencv2/core/private.cuda.hpp)
    ("OpenCV(4.5.1) /tmp/opencv/modules/core/include/opencv2/core/private.cuda.hpp:112: error: (-216:No CUDA support) "
     "The library is compiled without CUDA support in function 'throw_no_cuda'", "torch_cpu_build",
     "This OpenCV is a CPU-only build: it was compiled without CUDA"),
    # JAX's backend selection (jax/_src/xla_bridge.py)
    ("An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
     "torch_cpu_build", "This jaxlib is a CPU-only build: it was compiled without CUDA"),
    # CTranslate2's Python module (python/cpp/module.cc)
    ("ValueError: This CTranslate2 package was not compiled with CUDA support", "torch_cpu_build",
     "This CTranslate2 is a CPU-only build: it was compiled without CUDA"),
    # PyG's torch_scatter/__init__.py
    ("RuntimeError: Detected that PyTorch and torch_scatter were compiled with different CUDA versions. PyTorch has "
     "CUDA version 11.8 and torch_scatter has CUDA version 11.7. Please reinstall the torch_scatter that matches your "
     "PyTorch install.", "extension_build_mismatch", "PyTorch and torch_scatter were built for different CUDA versions"),
    # the loader's own words for a binary built against another CUDA (ld.so)
    ("./darknet: error while loading shared libraries: libcudart.so.10.1: cannot open shared object file: No such "
     "file or directory", "extension_build_mismatch",
     "A package needs the CUDA 10 library libcudart.so.10.1, which is not installed"),
    # TensorRT's loader error (TensorRT installation guide)
    ("ImportError: libnvinfer.so.8: cannot open shared object file: No such file or directory",
     "extension_build_mismatch", "A program built against TensorRT 8 cannot find libnvinfer.so.8"),
    # TensorRT's engine check (TensorRT developer guide, version compatibility)
    ("[TensorRT] ERROR: INVALID_CONFIG: The engine plan file is generated on an incompatible device, expecting compute "
     "8.6 got compute 7.5, please rebuild.", "extension_build_mismatch",
     "The TensorRT engine was built for another GPU: compute 8.6 expected, this GPU is compute 7.5"),
    # TensorFlow's device placement (guide/gpu, manual device placement)
    ("InvalidArgumentError: Cannot assign a device for operation 'conv1/weights': Could not satisfy explicit device "
     "specification '/device:GPU:1' because no devices matching that specification are registered in this process; "
     "available devices: /job:localhost/replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:GPU:0",
     "cuda_visible_devices", "The program asks for GPU 1, which this process does not see"),
    ("InvalidArgumentError: Cannot assign a device for operation MatMul: Could not satisfy explicit device "
     "specification '/device:GPU:0' because no devices matching that specification are registered in this process; "
     "available devices: /job:localhost/replica:0/task:0/device:CPU:0", "tf_no_gpu_libs",
     "TensorFlow has no GPU at all in this process, so /device:GPU:0 cannot be placed"),
    # NGC containers' start-up check (frameworks support matrix)
    ("ERROR: This container was built for NVIDIA Driver Release 530.30 or later, but\n       version 470.82.01 was "
     "detected and compatibility mode is UNAVAILABLE.", "driver_too_old",
     "This container needs NVIDIA driver 530.30 or later; the host has 470.82.01 and forward compatibility is not "
     "available"),
    # Numba's driver loader (numba/cuda/cudadrv/driver.py)
    ("numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: CUDA driver library cannot be found.",
     "driver_not_loaded",
     "Numba cannot find the CUDA driver library (libcuda): no NVIDIA driver is installed or visible here"),
    # nvidia-container-cli's driver requirement
    ("nvidia-container-cli: requirement error: unsatisfied condition: driver>=525, please update your driver to a "
     "newer version, or use an earlier cuda container: unknown", "driver_too_old",
     "The host driver is too old for this image: it needs driver 525 or newer"),
]


@pytest.mark.parametrize("text,family,title", REAL + LIBRARY, ids=[f"{t[1]}-{i}" for i, t in enumerate(REAL + LIBRARY)])
def test_the_class_is_named_first_with_a_sentence_about_this_text(text, family, title):
    first = explain_text(text).diagnoses[0]
    assert (first.family, first.title) == (family, title)
    assert first.via != "vocabulary"


def test_a_cpu_only_framework_build_gets_that_frameworks_fix():
    onnx = explain_text(REAL[2][0]).diagnoses[0]
    assert onnx.fix.kb_id == "framework_cpu_build"
    assert "python -m pip uninstall -y onnxruntime onnxruntime-gpu && python -m pip install onnxruntime-gpu" in \
        onnx.fix.commands
    assert onnx.fix.summary.startswith("This ONNX Runtime is a CPU-only build.")
    # PyTorch keeps its own recipe: the index URL for the driver's CUDA
    torch = explain_text("AssertionError: Torch not compiled with CUDA enabled").diagnoses[0]
    assert (torch.family, torch.fix.kb_id) == ("torch_cpu_build", "torch_cpu_build")


def test_a_library_built_without_cuda_is_the_framework_and_a_torch_op_the_extension():
    # tune extension_build_mismatch-glip-15: an op of a PyTorch extension compiled without CUDA stays the extension
    assert explain_text("RuntimeError: Not compiled with GPU support").diagnoses[0].family == "extension_build_mismatch"
    assert explain_text(REAL[3][0]).diagnoses[0].family == "torch_cpu_build"


def test_tensorflows_own_tensorrt_warning_stays_a_harmless_note():
    # dev neg-deepvariant / eval TF logs: TF's optional TensorRT libraries are not the TensorRT class
    text = ("W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
            "library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No such file or "
            "directory")
    result = explain_text(text)
    assert result.diagnoses == [] and [n.kind for n in result.notes] == ["harmless"]


def test_the_onnxruntime_warning_that_lists_the_cuda_provider_is_not_a_cpu_build():
    text = ("UserWarning: Specified provider 'TensorrtExecutionProvider' is not in available provider names."
            "Available providers: 'CUDAExecutionProvider, CPUExecutionProvider'")
    assert all(d.id != "onnxruntime_cpu_package" for d in explain_text(text).diagnoses)
