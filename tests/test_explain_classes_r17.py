"""Round 17's classes: tools' own messages from round16-a's misses and from the cases of round15-b (round 16's
held-out half) that a blind reader of the text alone got right and explain did not.

Each test names the real case (set and id) it stands for and checks the family, the signature and that the title
is a sentence with the text's own words; near misses check that a pattern does not claim what it should not.
"""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text
from tests.explain_support import first_diagnosis as _first


def _ids(text, flags=()):
    return [d.id for d in explain_text(text, flags=set(flags)).diagnoses]


@pytest.mark.parametrize("text,library", [
    # round16-a extension_build_mismatch-ultrasinger-140 (before round 17: TensorFlow's libraries, from the words)
    ('Error: "cublas64_12.dll is not found or cannot be loaded"', "cublas64_12.dll"),
    # round16-a extension_build_mismatch-jan-6960: Windows' own loader dialog
    ("The code execution cannot proceed because cudart64_12.dll was not found. Reinstalling the program may fix "
     "this problem.", "cudart64_12.dll"),
])
def test_a_cuda_runtime_dll_missing_for_a_program_is_its_build(text, library):
    d = _first(text)
    assert (d.id, d.family) == ("import_cuda_runtime_missing", "extension_build_mismatch")
    assert d.title == f"A package needs the CUDA 12 library {library}, which is not installed"


@pytest.mark.parametrize("text,first,second", [
    # round14 tf_no_gpu_libs-tensorflow-15604, round15 tf_no_gpu_libs-tensorflow-17629 (before round 17: the
    # rebuild first): CUDA 9.x and 10.0 at a Python import are most often TensorFlow 1.x's one exact CUDA
    ("ImportError: libcublas.so.9.0: cannot open shared object file: No such file or directory",
     "tf_no_gpu_libs", "extension_build_mismatch"),
    ("ImportError: libcudart.so.10.0: cannot open shared object file: No such file or directory",
     "tf_no_gpu_libs", "extension_build_mismatch"),
    # near misses: not at an import, or a CUDA no TensorFlow 1.x was built for
    ("OSError: libcublas.so.9.0: cannot open shared object file: No such file or directory",
     "extension_build_mismatch", None),
    ("ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",
     "extension_build_mismatch", None),
])
def test_an_old_cuda_runtime_missing_at_import_reads_first_as_tensorflow_1(text, first, second):
    d = explain_text(text).diagnoses
    assert d[0].family == first and d[0].id == "import_cuda_runtime_missing"
    if second:
        assert d[1].family == second
        assert d[0].title.startswith(text.split(": ")[1] + " is missing: most often TensorFlow 1.")
        assert d[0].recipe == "tf1_cuda_missing" and not any("and-cuda" in c for c in d[0].fix.commands)
    else:
        assert "tf_no_gpu_libs" not in [x.family for x in d]


@pytest.mark.parametrize("text,title", [
    # round16-a driver_too_old-nvidia-docker-895 (before round 17: the container's hook failing)
    (r"exec command: [/usr/bin/nvidia-container-cli --load-kmods configure --ldconfig=@/sbin/ldconfig --device=all "
     r"--compute --utility --require=cuda>=10.0 brand=tesla,driver>=384,driver<385 --pid=6244 /var/lib/docker/aufs/"
     r"mnt/f4dec507]\\\\nnvidia-container-cli: requirement error: unsatisfied condition: brand = tesla\\\\n",
     "The host driver is too old for this image: it needs CUDA 10.0 or newer"),
    # round12 driver_too_old-opendatacam-209: a space inside ">="
    ("stderr: nvidia-container-cli: requirement error: unsatisfied condition: cuda> = 10.2, please update your "
     "driver to a newer version, or use an earlier cuda container",
     "The host driver is too old for this image: it needs CUDA 10.2 or newer"),
])
def test_nvidia_container_cli_requirement_errors_in_other_forms(text, title):
    d = _first(text)
    assert (d.id, d.family, d.title) == ("container_cli_requires_cuda", "driver_too_old", title)


def test_a_miner_failing_to_allocate_its_dag_is_memory():
    # round16-a oom-lolminer-429 (before round 17: no answer)
    d = _first("GPU 0: error when allocating memory for the DAG. Disabling card.")
    assert (d.id, d.family) == ("miner_dag_memory", "oom")
    assert _ids("error when allocating memory for the buffer") == []


def test_jetson_containers_truncated_cuda_libraries_are_placeholders():
    # round16-a no_device_in_container-jetson-inference-1733 and -1290 (before round 17: TensorFlow's libraries)
    d = _first("./imagenet: error while loading shared libraries: /usr/lib/aarch64-linux-gnu/libnvinfer.so.7.1.3 "
               "file too short")
    assert (d.id, d.family) == ("jetson_container_without_runtime", "no_device_in_container")
    assert d.title.startswith("libnvinfer.so.7.1.3 in the container is an empty file: on a Jetson the container needs "
                              "--runtime nvidia")
    d = _first("/usr/lib/aarch64-linux-gnu/libcublas.so  file not recognized: File truncated")
    assert d.id == "jetson_container_without_runtime" and d.title.startswith("libcublas.so in the container")
    # near miss: the linker reading a short file on a host is no container
    assert "jetson_container_without_runtime" not in _ids(
        "/usr/bin/ld: /usr/lib/aarch64-linux-gnu/libcudnn.so: file too short")


@pytest.mark.parametrize("text,sig,family", [
    # round16-a no_nvidia_gpu-pytorch-cpu-feedstock-364 (before round 17: no answer)
    ("__cuda =* *, which is missing on the system;", "conda_virtual_cuda_missing", "no_nvidia_gpu"),
    # round16-a torch_cpu_build-multinerf-46: JAX's warning cut short
    ("No GPU/TPU found", "jax_no_gpu_found", "torch_cpu_build"),
    # round16-a arch_unsupported-ethminer-422 (before round 17: CUDA_VISIBLE_DEVICES, from the words)
    ("Cuda error in func 'set_constants' at line 168 : invalid device symbol.", "cuda_invalid_device_symbol",
     "arch_unsupported"),
    # round16-a arch_unsupported-nunchaku-273, -paddle-33740, -instant-ngp-1219 (before round 17: no answer)
    ("2080ti 运行报错 This kernel is not supported on your GPU", "kernel_not_supported_on_this_gpu", "arch_unsupported"),
    ("I0623 15:40:04.192951 25583 engine.cc:80] You specify FP16 mode, but the hardware do not support FP16 speed "
     "up, use FP32 instead.", "kernel_not_supported_on_this_gpu", "arch_unsupported"),
    ("The hardware does not support FP16 speed up, use FP32 instead", "kernel_not_supported_on_this_gpu",
     "arch_unsupported"),
    # round16-a driver_too_old-trex-118 (before round 17: WSL, from the words)
    ("The procedure entry point cuDevicePrimaryCtxReset_v2 could not be located in the dynamic link library "
     "nvcuda.dll", "nvcuda_entry_point_missing", "driver_too_old"),
    # round6 driver_too_old-ollama-6604: Ollama's words for the same
    (r'msg="unable to load cuda driver library" library=C:\WINDOWS\system32\nvcuda.dll error="symbol lookup for '
     r'cuCtxCreate_v3 failed', "nvcuda_entry_point_missing", "driver_too_old"),
    # round16-a cudnn_mismatch_or_missing-n2d2-1 and -yolo-face-7 (before round 17: no answer, the words)
    ("error: too few arguments to function ‘cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t,"
     " int, int)’", "cudnn_api_changed_compile_error", "cudnn_mismatch_or_missing"),
    # round16-a extension_build_mismatch-nvdiffmodeling-32 (before round 17: cuDNN, from the words)
    ("ImportError: DLL load failed while importing renderutils_plugin", "windows_extension_dll_load_failed",
     "extension_build_mismatch"),
    # round16-a extension_build_mismatch-index-tts-283 (before round 17: no answer)
    ("CUDA Setup: The detected CUDA version (12.9) mismatches ...", "detected_cuda_version_mismatch",
     "extension_build_mismatch"),
    # round16-a extension_build_mismatch-tch-rs-907 (before round 17: cuDNN, from the words)
    ('called `Result::unwrap()` on an `Err` value: Torch("Cannot query cuDNN version without ATen_cuda library. '
     'PyTorch splits', "libtorch_cuda_not_linked", "extension_build_mismatch"),
    # round15 arch_unsupported-tei-34, -kokkos-6092, -gpu-burn-7 (before round 17: no answer)
    ("Could not start backend: Runtime compute cap 75 is not compatible with compile time compute cap 80",
     "runtime_vs_compile_compute_cap", "arch_unsupported"),
    ("Kokkos::Cuda::initialize ERROR: likely mismatch of architecture", "kokkos_arch_mismatch", "arch_unsupported"),
    ('Coudn\'t init a GPU test: Error in "load module"', "gpu_burn_load_module", "arch_unsupported"),
    # round15 driver_too_old-fooocus-95, -nvisii-40 (before round 17: no answer)
    ("RuntimeError: CUDA error: API call is not supported in the installed CUDA driver", "call_requires_newer_driver",
     "driver_too_old"),
    ("Optix call (optixInit()) failed with code 7801 (line 150)", "optix_unsupported_abi", "driver_too_old"),
    # round15 arch_unsupported-open-gpu-kernel-modules-230 (before round 17: the GPU failing to initialise)
    ("NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.\nNVRM: GPU 0000:07:00.0: RmInitAdapter failed! "
     "(0x22:0x56:762)", "open_module_unsupported_gpu", "driver_not_loaded"),
    # round15 nccl_errors-qwen-vl-447, extension_build_mismatch-unsloth-489, -buildlibrealsense2tx-13,
    # torch_cpu_build-sdnext-4357 (before round 17: no answer)
    ("Using RTX 4000 series doesn't support faster communication broadband via P2P or IB.",
     "accelerate_rtx4000_no_p2p_ib", "nccl_errors"),
    ("error: Failed to find C compiler", "host_compiler_missing", "extension_build_mismatch"),
    ("No CMAKE_CUDA_COMPILER could be found", "nvcc_not_found", "extension_build_mismatch"),
    ("AssertionError: Torch not compiled with XPU enabled", "torch_not_compiled_with_xpu", "torch_cpu_build"),
    # round14 nccl_errors-rccl-328, torch_cpu_build-llama-cpp-python-787 (before round 17: no answer)
    ("Rccl error, unhandled system error", "nccl_unhandled_system_error", "nccl_errors"),
    ("BLAS=0", "llama_cpp_cpu_build", "torch_cpu_build"),
    # round14 extension_build_mismatch-mmrotate-395: the device name broken over two lines
    ("RuntimeError: nms_impl: implementation for device cu\nda:0 not found.", "mmcv_op_no_cuda_implementation",
     "extension_build_mismatch"),
])
def test_tools_own_messages_from_round_17(text, sig, family):
    d = _first(text)
    assert (d.id, d.family) == (sig, family)


@pytest.mark.parametrize("text,title", [
    ("Warning: FullyFusedMLP is not supported for the selected architecture 60. Falling back to CutlassMLP.",
     "tiny-cuda-nn was built for GPU architecture 60, older than its fast kernels need"),
    ("The procedure entry point cuDevicePrimaryCtxReset_v2 could not be located in the dynamic link library "
     "nvcuda.dll", "The NVIDIA driver's nvcuda.dll has no cuDevicePrimaryCtxReset_v2: the driver is older than the "
                   "CUDA this program was built with"),
    ("error: too few arguments to function ‘cudnnSetConvolution2dDescriptor’",
     "This code calls cudnnSetConvolution2dDescriptor with another cuDNN version's arguments: it does not compile "
     "against the installed cuDNN"),
    ("src/conv.cpp:12:5: error: ‘cudnnGetConvolutionForwardAlgorithm’ was not declared in this scope",
     "cudnnGetConvolutionForwardAlgorithm is not in the installed cuDNN: this code was written for another cuDNN "
     "version"),
    ("Could not start backend: Runtime compute cap 75 is not compatible with compile time compute cap 80",
     "This build was compiled for compute capability 80, and this GPU has 75: it needs the build made for this GPU"),
    ("Optix call (optixInit()) failed with code 7801 (line 150)",
     "The NVIDIA driver is too old for the OptiX SDK this program was built with (OptiX error 7801, unsupported ABI "
     "version)"),
    ("AssertionError: Torch not compiled with XPU enabled",
     "This PyTorch has no XPU support (Torch not compiled with XPU enabled): the Intel GPU needs PyTorch's XPU build"),
    ("RuntimeError: nms_impl: implementation for device cu\nda:0 not found.",
     "mmcv's nms has no CUDA implementation in this build: mmcv was built without its CUDA ops, or for another torch"),
])
def test_titles_carry_the_words_of_these_messages(text, title):
    assert _first(text).title == title


def test_the_open_module_message_replaces_the_generic_init_failure():
    ids = _ids("NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.\n"
               "NVRM: GPU 0000:07:00.0: RmInitAdapter failed! (0x22:0x56:762)")
    assert ids[0] == "open_module_unsupported_gpu" and "rm_init_adapter_failed" not in ids
    fix = _first("NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.").fix
    assert fix.needs_reboot and any("NVreg_OpenRmEnableUnsupportedGpus=1" in c for c in fix.commands)


def test_a_miners_illegal_memory_access_is_the_hardware_and_anyone_elses_is_not_claimed():
    # round15 xid_or_hardware-ethminer-72 (before round 17: no answer); the same words outside a miner stay a
    # program bug, as in the 32 tunable texts where it was one
    d = _first("  ✘  01:14:46|cudaminer1  Error CUDA mining: an illegal memory access was encountered")
    assert (d.id, d.family) == ("miner_illegal_memory_access", "xid_or_hardware")
    assert _ids("RuntimeError: CUDA error: an illegal memory access was encountered") == []


_NEW_READINGS = {"kernel_not_supported_on_this_gpu", "nvcuda_entry_point_missing", "cudnn_api_changed_compile_error",
                 "libtorch_cuda_not_linked", "llama_cpp_cpu_build"}
_BUILD_READINGS = {"extension_compiled_module_missing", "cuda_intrinsic_needs_newer_arch", "extension_build_failed_words"}


@pytest.mark.parametrize("text,forbidden", [
    ("UserWarning: FP16 is not supported on CPU; using FP32 instead", _NEW_READINGS),   # Whisper on the CPU
    ("The hardware does not support FP16 textures in this browser", _NEW_READINGS),    # no TensorRT engine words
    ("I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library nvcuda.dll",
     _NEW_READINGS),
    ("error: too few arguments to function ‘foo’", _NEW_READINGS),
    ("RuntimeError: Cannot initialize CUDA without ATen_cuda library.", _NEW_READINGS),    # PyTorch's own: CPU-only
    ("system_info: n_threads = 8 | AVX = 1 | CUBLAS = 0 | SSE3 = 1 |", _NEW_READINGS),
    ("ModuleNotFoundError: No module named 'gaussian_renderer'", _BUILD_READINGS),  # the project's own module
    ('error: identifier "my_helper" is undefined', _BUILD_READINGS),                 # the program's own identifier
    ("Failed to build numpy", _BUILD_READINGS),                                      # a package without CUDA
    ("FAILED: src/CMakeFiles/app.dir/main.cpp.o\nninja: build stopped: subcommand failed.", _BUILD_READINGS),
    # from the review of round 17
    ("/usr/lib/aarch64-linux-gnu/libcurl.so.4: file too short", {"jetson_container_without_runtime"}),
    ('File "/home/u/graph-mining/train.py", line 3\nRuntimeError: CUDA error: an illegal memory access was encountered',
     {"miner_illegal_memory_access"}),
    ("export OPENBLAS=0 BLAS=0", {"llama_cpp_cpu_build"}),
    ("nvidia-smi works but nvcc: command not found", {"nvidia_smi_not_found"}),
    ("after nvidia-smi, nvidia-container-cli: command not found", {"nvidia_smi_not_found"}),
    ('error: identifier "__shfl_down" is undefined', {"cuda_intrinsic_needs_newer_arch"}),
    ('error: no instance of overloaded function "atomicAdd" matches the argument list\n'
     "            argument types are: (int64_t *, int64_t)", {"cuda_intrinsic_needs_newer_arch"}),
])
def test_near_misses_of_round_17(text, forbidden):
    assert not forbidden & set(_ids(text))


@pytest.mark.parametrize("text,word,family", [
    # round16-a arch_unsupported-diffusers-11241, -unsloth-501; round15 no_nvidia_gpu-genesis-world-156 (before
    # round 17: no answer): the vocabulary's new words, each kept by 5-fold cross-validation by thread
    ("Train Flux ControlNet Error: `Floating point exception (core dumped)`", "Floating point exception",
     "arch_unsupported"),
    ("RuntimeError: Internal Triton PTX codegen error:", "Triton", "arch_unsupported"),
    ("[ERROR] Cuda device not available", "Cuda device not available", "torch_cpu_build"),
])
def test_the_vocabulary_reads_round_17s_words(text, word, family):
    d = _first(text)
    assert (d.id, d.family) == ("vocabulary", family)
    assert f"({word})" in d.title


@pytest.mark.parametrize("text,title", [
    # round12 tf_no_gpu_libs-tensorflow-5343 (before round 17: the rebuild first): TensorFlow 1.0-1.4's CUDA 8.0
    ("ImportError: libcudart.so.8.0: cannot open shared object file: No such file or directory",
     "libcudart.so.8.0 is missing: most often TensorFlow 0.11 to 1.4, built for exactly CUDA 8.0, which is not installed"),
    # round12 tf_no_gpu_libs-tensorflow-4664: TensorFlow 0.x's CUDA 7.5
    ("ImportError: libcudart.so.7.5: cannot open shared object file: No such file or directory",
     "libcudart.so.7.5 is missing: most often TensorFlow 0.7 to 0.10, built for exactly CUDA 7.5, which is not installed"),
])
def test_older_cuda_runtimes_missing_at_import_name_the_tensorflow_built_for_them(text, title):
    d = explain_text(text).diagnoses
    assert (d[0].family, d[0].title) == ("tf_no_gpu_libs", title) and d[1].family == "extension_build_mismatch"


def test_caffes_cudnn_bad_param_is_a_cudnn_version_mismatch_and_theanos_worksize_is_not_claimed():
    # round3 cudnn-liteflownet3-6, round14 cudnn_mismatch_or_missing-caffertpose-9 (before round 17: no answer);
    # round3 not_env-theano-3825 keeps no answer
    d = _first("F0101 Check failed: status == CUDNN_STATUS_SUCCESS (3 vs. 0)  CUDNN_STATUS_BAD_PARAM")
    assert (d.id, d.family) == ("caffe_cudnn_bad_param", "cudnn_mismatch_or_missing")
    assert _ids("error getting worksize: CUDNN_STATUS_BAD_PARAM") == []


def test_another_framework_named_beside_an_old_cuda_runtime_keeps_the_rebuild_first():
    # round3 extension_build-cupy-714: CuPy's own import of CUDA 7.5, not TensorFlow 0.x's
    text = ("  File \"cupy/cuda/runtime.pxd\", line 5, in init cupy.cuda.device\nImportError: libcudart.so.7.5: cannot "
            "open shared object file: No such file or directory")
    assert [d.family for d in explain_text(text).diagnoses] == ["extension_build_mismatch"]


@pytest.mark.parametrize("flags,family", [((), "arch_unsupported"), (("wsl",), "wsl_specific")])
def test_named_symbol_not_found_under_wsl_is_the_wsl_driver_libraries(flags, family):
    # round8 wsl_specific-nvidia-container-toolkit-520, round14 wsl_specific-tensorflow-68711, round15
    # wsl_specific-comfyui-docker-74 (before round 17: a compiled extension first): under WSL the driver's
    # libraries the container or environment sees; elsewhere missing kernels
    d = _first('CUDA error 500 "named symbol not found" when running CUDA apps inside container', flags)
    assert (d.id, d.family) == ("cuda_named_symbol_not_found", family)
    assert _first("NVIDIA Driver 555.85 with WSL2 returns error 500 \"named symbol not found\"").family == "wsl_specific"


@pytest.mark.parametrize("text,sig,title", [
    # round14 extension_build_mismatch-gaussian-splatting-237 (before round 17: no answer): uv's and pip's words
    # for CUDA extensions that did not build, and the module they leave missing
    ("Failed to build diff-gaussian-rasterization simple-knn", "extension_build_failed_words",
     "Building diff-gaussian-rasterization's C++/CUDA extension failed"),
    ("ModuleNotFoundError: No module named 'diff_gaussian_rasterization'", "extension_compiled_module_missing",
     "diff_gaussian_rasterization is not installed: its CUDA build failed or was skipped"),
    ("NameError: name 'amp_C' is not defined", "extension_compiled_module_missing",
     "The compiled part of the package (amp_C) is missing: it was installed without its C++/CUDA extensions"),
    # nvcc compiling for too old an -arch (pytorch/FBGEMM#3434, gunrock/gunrock#460): half math from sm_53,
    # double atomicAdd from sm_60
    ('kernels/gptq/q_gemm.cu(115): error: identifier "__hfma2" is undefined', "cuda_intrinsic_needs_newer_arch",
     "The CUDA code uses __hfma2, which the GPU architecture it is compiled for does not have: the build targets too "
     "old an -arch"),
    ('error: no instance of overloaded function "atomicAdd" matches the argument list\n'
     "            argument types are: (double *, double)", "cuda_intrinsic_needs_newer_arch",
     "The CUDA code uses atomicAdd on double, which the GPU architecture it is compiled for does not have: the build "
     "targets too old an -arch"),
    # torch.utils.cpp_extension on Windows without MSVC
    ("UserWarning: Error checking compiler version for cl: [WinError 2] The system cannot find the file specified",
     "host_compiler_missing", "No MSVC compiler (cl.exe) to build the extension with: Visual Studio's C++ build "
                              "tools are not installed or not on PATH"),
])
def test_cuda_extension_builds_in_more_words(text, sig, title):
    d = _first(text)
    assert (d.id, d.family, d.title) == (sig, "extension_build_mismatch", title)


def test_the_cuda_requirement_without_the_tools_name_is_still_the_image_needing_a_newer_driver():
    # round5 driver_too_old-nvidia-docker-753 (before round 17: the vocabulary): the condition alone
    d = _first("requirement error: unsatisfied condition: cuda >= 9.2")
    assert (d.id, d.title) == ("container_cli_requires_cuda",
                               "The host driver is too old for this image: it needs CUDA 9.2 or newer")


@pytest.mark.parametrize("text", [
    "Triton Inference Server failed to load the model repository",
    "ERROR: Could not find a version that satisfies the requirement triton (from versions: none)",
    "CUDA Toolkit is not installed",
])
def test_the_vocabularys_new_words_leave_these_alone(text):
    assert all(d.family not in ("arch_unsupported", "torch_cpu_build") for d in explain_text(text).diagnoses)


def test_uvs_backticked_package_names_are_read():
    d = _first("  × Failed to build `flash-attn==2.6.3`")
    assert (d.id, d.title) == ("extension_build_failed_words", "Building flash-attn's C++/CUDA extension failed")


def test_the_wsl_reading_is_for_named_symbols_only():
    d = explain_text("Cuda error in func 'set_constants' at line 168 : invalid device symbol.", flags={"wsl"}).diagnoses
    assert "wsl_specific" not in [x.family for x in d]


def test_fixes_fit_the_tool_that_failed():
    xpu = _first("AssertionError: Torch not compiled with XPU enabled").fix
    assert any("download.pytorch.org/whl/xpu" in c for c in xpu.commands)
    assert not any("cu1" in c for c in xpu.commands)
    acc = _first("Using RTX 4000 series doesn't support faster communication broadband via P2P or IB.").fix
    assert acc.commands[0] == "export NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1"
    rs = _first('called `Result::unwrap()` on an `Err` value: Torch("Cannot query cuDNN version without ATen_cuda '
                'library.').fix
    assert any("${TORCH_LIBRARIES}" in c for c in rs.commands)
    win = _first("The procedure entry point cuDevicePrimaryCtxReset_v2 could not be located in the dynamic link "
                 "library nvcuda.dll").fix
    assert any("nvidia.com/Download" in c for c in win.commands) and not any("torch" in c for c in win.commands)
    miner = _first("  ✘  01:14:46|cudaminer1  Error CUDA mining: an illegal memory access was encountered").fix
    assert any("nvidia-smi -rgc" in c for c in miner.commands)


def test_each_symbol_error_explains_itself():
    inv = _first("Cuda error in func 'set_constants' at line 168 : invalid device symbol.")
    assert "cudaErrorInvalidSymbol (13)" in " ".join(inv.explanation) and "500" not in " ".join(inv.explanation)
    named = _first("gcn75:2336636:2336906 [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'")
    assert named.id == "cuda_named_symbol_not_found" and "cudaErrorInvalidSymbol" not in " ".join(named.explanation)
    jet = _first("./imagenet: error while loading shared libraries: /usr/lib/aarch64-linux-gnu/libnvinfer.so.7.1.3 "
                 "file too short")
    assert "default-runtime" in " ".join(jet.explanation)
