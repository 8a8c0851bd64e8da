"""Classes of real errors round 6 of issue 10 reads for the class. REAL texts are real ones from the tuning
sets (named next to each); LIBRARY texts are the libraries' or tools' own messages, from their source or docs
(named next to each), for rules no tuning thread holds yet."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text

SINGULARITY = (
    ">>> torch.cuda.is_available()\n/opt/conda/lib/python3.8/site-packages/torch/cuda/__init__.py:52: UserWarning: CUDA "
    "initialization: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env "
    "variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero. (Triggered "
    "internally at  /opt/conda/conda-bld/pytorch_1607370172916/work/c10/cuda/CUDAFunctions.cpp:100.)\n  return "
    "torch._C._cuda_getDeviceCount() > 0\nFalse")


def test_cuda_unknown_error_in_a_container_is_its_driver_setup_first_and_suspend_second():
    # round5-a cuda_init_error_other-singularity-5966 (run with --context container; before round 6: suspend first)
    d = explain_text(SINGULARITY, flags=["container"]).diagnoses
    assert (d[0].id, d[0].family, d[0].recipe) == ("torch_cuda_unknown_error", "cuda_init_error_other",
                                                   "cuda_init_error_other")
    assert d[0].title.startswith("CUDA could not initialise in a container: 'CUDA unknown error'")
    cands = d[0].differential.candidates
    assert (cands[0].family, cands[0].tell_apart.command) == ("cuda_init_error_other", "ls -l /dev/nvidia-uvm /dev/nvidiactl")
    assert cands[0].clue is not None and cands[1].family == "suspend_resume_uvm"


def test_cuda_unknown_error_outside_a_container_stays_a_suspend_resume_first():
    # the same text with no clue: a desktop's suspend/resume first (dev suspend-pytorch-49081-uvm's class)
    d = explain_text(SINGULARITY).diagnoses
    assert (d[0].family, d[0].recipe) == ("suspend_resume_uvm", "suspend_resume_uvm")
    cands = [c.family for c in d[0].differential.candidates]
    assert cands[-1] == "cuda_init_error_other"      # needs a container, nothing says this is one


FFMPEG_REAL = [
    # round5-a no_device_in_container-VSGAN-tensorrt-docker-42 (before round 6: the vocabulary, driver too old)
    ("[hevc_nvenc @ 0x55ca461fa380] Cannot load libnvidia-encode.so.1  \n[hevc_nvenc @ 0x55ca461fa380] The minimum "
     "required Nvidia driver for nvenc is (unknown) or newer", "libnvidia-encode.so.1"),
    # round5-a no_device_in_container-jellyfin-7036 (before round 6: the vocabulary, WSL)
    ("Cannot load libcuda.so.1\n[AVHWDeviceContext @ 0x562894e1d340] Could not dynamically load CUDA\nDevice creation "
     "failed: -1313558101.\nFailed to set value 'cuda=cu:0' for option 'init_hw_device': Unknown error occurred\nError "
     "parsing global options: Unknown error occurred", "libcuda.so.1"),
]


@pytest.mark.parametrize("text,library", FFMPEG_REAL)
def test_ffmpeg_not_loading_a_driver_library_in_a_container_is_the_container_without_the_gpu(text, library):
    d = explain_text(text, flags=["container"]).diagnoses
    assert [(x.id, x.family, x.recipe) for x in d] == [
        ("ffmpeg_driver_library_not_loaded", "no_device_in_container", "no_device_in_container"),
        ("ffmpeg_driver_library_not_loaded", "driver_not_loaded", "driver_not_loaded")]
    assert d[0].title == (f"FFmpeg in this container cannot load the NVIDIA driver's library {library}: the container "
                          "was started without the GPU or without the video capability")
    assert any("--gpus all" in c for c in d[0].fix.commands)


@pytest.mark.parametrize("text,library", [
    # nv-codec-headers' dynlink_loader.h ("Cannot load %s") and libavutil/hwcontext_cuda.c
    ("[h264_nvenc @ 000001] Cannot load nvEncodeAPI64.dll", "nvEncodeAPI64.dll"),
    ("[h264_cuvid @ 0x5581] Cannot load libnvcuvid.so.1", "libnvcuvid.so.1"),
    ("[AVHWDeviceContext @ 0x55f0] Could not dynamically load CUDA", None),
])
def test_ffmpeg_not_loading_a_driver_library_on_a_host_is_no_driver_not_an_old_one(text, library):
    d = explain_text(text).diagnoses
    assert [(x.id, x.family, x.recipe) for x in d] == [
        ("ffmpeg_driver_library_not_loaded", "driver_not_loaded", "driver_not_loaded")]
    named = f"library {library}" if library else "CUDA library"
    assert d[0].title == f"FFmpeg cannot load the NVIDIA driver's {named}: no NVIDIA driver is installed or visible here"


def test_an_nvenc_api_too_new_for_the_driver_stays_a_driver_too_old():
    d = explain_text("[h264_nvenc @ 0x1] Driver does not support the required nvenc API version. Required: 12.1 Found: "
                     "12.0\n[h264_nvenc @ 0x1] The minimum required Nvidia driver for nvenc is 530.41.03 or newer").diagnoses
    assert (d[0].id, d[0].family) == ("nvenc_driver_too_old", "driver_too_old")


@pytest.mark.parametrize("text,sig,family,recipe,title", [
    # round5-a extension_build_mismatch-Deep-Live-Cam-1063: cuDNN's own loader missing cuBLAS (before round 6: the
    # vocabulary, TensorFlow's libraries)
    ("Whenever I try to process anything (Live/video or photos) using CUDA (GPU) I get this error \"Could not locate "
     "cublas64_10.dll. Please make sure it is in your library path!\"", "import_cuda_runtime_missing",
     "extension_build_mismatch", "extension_build_mismatch",
     "A package needs the CUDA 10 library cublas64_10.dll, which is not installed"),
    # round5-a tf_memory_growth-tensorflow-7072 (before round 6: no answer)
    ("[Windows] failed to create cublas handle: CUBLAS_STATUS_ALLOC_FAILED", "tf_could_not_create_cublas_handle",
     "tf_memory_growth", "tf_memory_growth",
     "TensorFlow could not create a cuBLAS handle (CUBLAS_STATUS_ALLOC_FAILED): the GPU memory was already taken"),
])
def test_a_library_missing_or_memory_taken_in_other_words(text, sig, family, recipe, title):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family, d[0].recipe, d[0].title) == (sig, family, recipe, title)


def test_cudnn_locating_its_own_sub_library_stays_a_cudnn_problem():
    d = explain_text("Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!").diagnoses
    assert (d[0].id, d[0].family) == ("cudnn_library_missing", "cudnn_mismatch_or_missing")


def test_cublas_not_initialized_stays_the_memory_signature_it_was():
    d = explain_text("failed to create cublas handle: CUBLAS_STATUS_NOT_INITIALIZED").diagnoses
    assert (d[0].id, d[0].family) == ("cublas_not_initialized", "oom")


def test_the_vocabulary_lifts_the_family_of_the_framework_the_text_names():
    from gpudoctor.explain.fallback import rank
    alone = dict(rank(["cuda_math_libs"]))
    named = dict(rank(["cuda_math_libs", "tensorflow"]))
    named_torch = dict(rank(["cuda_math_libs", "torch"]))
    # alone, the counts are close (round 16: 34 TensorFlow, 23 another package); a framework's name decides
    assert abs(alone["extension_build_mismatch"] - alone["tf_no_gpu_libs"]) < 0.2
    assert named["tf_no_gpu_libs"] > named["extension_build_mismatch"] + 0.2
    assert named_torch["extension_build_mismatch"] > named_torch["tf_no_gpu_libs"]
    d = explain_text("tensorflow: cublas64_12.dll missing").diagnoses
    assert (d[0].id, d[0].family) == ("vocabulary", "tf_no_gpu_libs")


@pytest.mark.parametrize("text", [
    # round5-a torch_cpu_build-facefusion-48: facefusion/roop offer only the providers ONNX Runtime has (before
    # round 6: cuDNN, from the words after it)
    ("command with _python run.py --execution-providers cuda_\nreturns\nrun.py: error: argument --execution-providers: "
     "invalid choice: 'cuda' (choose from 'cpu')\ninstalled cuda toolkit 12.2 and cuDNN for cuda 12.x, don't know if "
     "it's compatible"),
    # onnxruntime.get_available_providers() of the CPU package (onnxruntime's Python API summary)
    "onnxruntime.get_available_providers() returns ['AzureExecutionProvider', 'CPUExecutionProvider']",
])
def test_onnxruntime_offering_only_the_cpu_provider_is_its_cpu_package(text):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family, d[0].recipe) == ("onnxruntime_cpu_package", "torch_cpu_build", "framework_cpu_build")
    assert any("pip install onnxruntime-gpu" in c for c in d[0].fix.commands)


@pytest.mark.parametrize("text", [
    "['CUDAExecutionProvider', 'CPUExecutionProvider']",
    "error: argument --execution-provider: invalid choice: 'cuda' (choose from 'cpu', 'cuda', 'tensorrt')",
])
def test_a_provider_list_with_cuda_is_no_cpu_package_claim(text):
    assert "onnxruntime_cpu_package" not in [d.id for d in explain_text(text).diagnoses]


def test_the_providers_onnxruntime_fell_back_to_are_no_cpu_package_claim():
    # eval memoavatar/memo#13: insightface's 'Applied providers' after cuDNN 9 failed to load
    text = ("[E:onnxruntime:Default, provider_bridge_ort.cc:1862 TryGetProviderInfo_CUDA] FAIL : Failed to load library "
            "libonnxruntime_providers_cuda.so with error: libcudnn_adv.so.9: cannot open shared object file: No such "
            "file or directory\n\nApplied providers: ['CPUExecutionProvider'], with options: {'CPUExecutionProvider': {}}")
    d = explain_text(text).diagnoses
    assert d[0].family == "cudnn_mismatch_or_missing"
    assert "onnxruntime_cpu_package" not in [x.id for x in d]


@pytest.mark.parametrize("text,option", [
    # round5-a no_device_in_container-sygil-webui-490: docker-compose 1.17's schema (before round 6: no answer)
    ("The Compose file './docker-compose.yaml' is invalid because:\nservices.stable-diffusion.deploy.resources."
     "reservations value Additional properties are not allowed ('devices' was unexpected)", "'devices'"),
    # the Docker CLI before 19.03 (Docker's 19.03 release notes add --gpus)
    ("unknown flag: --gpus\nSee 'docker run --help'.", "--gpus"),
    # docker-compose with a 3.x file holding the 2.3 format's runtime key
    ("ERROR: The Compose file './docker-compose.yml' is invalid because:\nUnsupported config option for "
     "services.app: 'runtime'", "'runtime'"),
])
def test_a_docker_too_old_for_gpus_is_named_with_its_update(text, option):
    d = explain_text(text).diagnoses
    assert [(x.id, x.family, x.recipe) for x in d] == [
        ("docker_too_old_for_gpus", "no_device_in_container", "docker_gpu_support_too_old")]
    assert d[0].title == ("This Docker or Docker Compose is too old to give a container GPUs: it does not know the "
                          f"GPU option ({option})")
    assert d[0].fix.commands[1].startswith("docker compose version")


@pytest.mark.parametrize("text", [
    # round5-a extension_build_mismatch-colmap-1941: ninja's line for a CUDA object (before round 6: no answer)
    ("ninja [2/191] Building CUDA object lib/SiftGPU/CMakeFiles/sift_gpu.dir/ProgramCU.cu.o FAILED: lib/SiftGPU/"
     "CMakeFiles/sift_gpu.dir/ProgramCU.cu.o"),
    # make's and CMake FindCUDA's words for the same failure
    "make[2]: *** [src/CMakeFiles/kern.dir/kern.cu.o] Error 1",
    "CMake Error at Propagation_generated_Propagation.cu.o.cmake:220 (message):",
])
def test_a_cuda_object_failing_to_build_is_the_extension_build(text):
    d = explain_text(text).diagnoses
    assert [(x.id, x.family, x.recipe, x.title) for x in d] == [
        ("extension_build_failed_words", "extension_build_mismatch", "extension_build_mismatch",
         "Building the package's C++/CUDA extension failed")]


def test_a_failed_object_that_is_not_cuda_is_no_claim():
    assert explain_text("FAILED: src/CMakeFiles/app.dir/main.cpp.o\nninja: build stopped: subcommand failed.").diagnoses == []


WSL1 = ("modprobe: ERROR: ../libkmod/libkmod.c:556 kmod_search_moddep() could not open moddep file "
        "'/lib/modules/3.4.0+/modules.dep.bin'\nmodprobe: ERROR: ../libkmod/libkmod-module.c:809 "
        "kmod_module_insert_module() could not find module by name='nvidia_367'\nmodprobe: ERROR: could not insert "
        "'nvidia_367': Function not implemented\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
        "driver. Make sure that the latest NVIDIA driver is installed and running.")


@pytest.mark.parametrize("flags", [[], ["wsl"]])
def test_modprobe_under_wsl_is_wsl_not_a_missing_linux_module(flags):
    # round2 wsl_specific-neural-style-335: WSL 1's kernel (3.4.0+) names itself (before round 6: module first)
    d = explain_text(WSL1, flags=flags).diagnoses
    assert [(x.id, x.family) for x in d[:2]] == [("modprobe_module_not_found", "wsl_specific"),
                                                 ("modprobe_module_not_found", "driver_not_loaded")]
    assert d[0].recipe == "wsl_specific"
    assert d[0].title == "modprobe finds no NVIDIA kernel module under WSL: WSL has no Linux NVIDIA driver to load"


def test_modprobe_on_a_plain_linux_stays_the_missing_module():
    d = explain_text("modprobe: FATAL: Module nvidia not found in directory /lib/modules/5.15.0-91-generic").diagnoses
    assert [(x.id, x.family) for x in d] == [("modprobe_module_not_found", "driver_not_loaded")]
    assert explain_text("I run Ubuntu under Windows Subsystem for Linux\n" + WSL1.splitlines()[1]).diagnoses[0].family \
        == "wsl_specific"
