"""Classes of real errors round 15 of issue 10 reads for the class. Some come from the tunable half round14-a (named
next to each; no answer or the wrong family before round 15), the others from the tools' own messages: CTranslate2's
compute-type check, kernels compiled for other compute capabilities (NVIDIA HPC SDK, a miner's kernel, xFormers),
bfloat16 refused in other programs' words, xFormers with no operator, PyTorch's JIT extension cache, Horovod's
framework extensions, TensorFlow's CUDA diagnostics finding no kernel driver, the driver's own 'not supported by this
release' line, Lightning's accelerator and fork checks, jax's minimum-jaxlib check."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text
from tests.explain_support import first_diagnosis as _first

CT2 = "Requested {t} compute type, but the target device or backend do not support efficient {t} computation."


@pytest.mark.parametrize("ctype", ["float16", "int8_float16", "bfloat16"])
def test_ctranslate2_refusing_a_compute_type_is_a_gpu_too_old_for_it_named_by_the_type(ctype):
    # round14-a arch_unsupported-audiosplitter-whisper-4, arch_unsupported-whisperlive-195 (before: no answer)
    d = _first("ValueError: " + CT2.format(t=ctype))
    assert (d.id, d.family, d.recipe) == ("ctranslate2_compute_type_unsupported", "arch_unsupported",
                                          "ctranslate2_compute_type")
    assert d.title == (f"CTranslate2 refuses the {ctype} compute type: this GPU (or the CPU backend) has no "
                       f"efficient {ctype}")
    assert "float32 runs on every GPU" in d.fix.summary and "6.1" in d.fix.summary


def test_ctranslate2_refusing_float16_on_a_mac_is_no_nvidia_gpu():
    # round14-a no_nvidia_gpu-whisperx-878 (before: no answer): the Mac is told by --context macos
    d = _first(CT2.format(t="float16"), flags=["macos"])
    assert (d.family, d.id) == ("no_nvidia_gpu", "ctranslate2_compute_type_unsupported")
    assert d.title == ("This is a Mac: there is no NVIDIA GPU, and CTranslate2's CPU backend has no efficient "
                       "float16")


@pytest.mark.parametrize("text, title", [
    # round14-a arch_unsupported-torchfort-8 (before: no answer)
    ("Accelerator Fatal Error: This file was compiled: -acc=gpu -gpu=cc70 -gpu=cc80 -acc=host or -acc=multicore\n"
     "Rebuild this file with -gpu=cc89 to use NVIDIA Tesla GPU 0",
     "The program was compiled for other GPUs: it must be rebuilt with -gpu=cc89 for this one"),
    # round14-a arch_unsupported-gpu-post-15 (before: no answer)
    ("[2020-09-08 11:15:32] GPU #0: FATAL: the 't' kernel requires 5.0 capability!\n"
     "[2020-09-08 11:15:32] Failed to init GPU, disabling device 0.",
     "A kernel needs compute capability 5.0; this GPU is older"),
    # xFormers' reason under 'No operator found': the capability decides over the operator line above it
    ("NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
     "`flshattF` is not supported because:\n    requires device with capability > (8, 0) but your GPU has "
     "capability (7, 5) (too old)",
     "A kernel needs compute capability (8, 0); this GPU has (7, 5) and is too old"),
])
def test_a_kernel_compiled_for_other_compute_capabilities_is_an_unsupported_architecture(text, title):
    d = _first(text)
    assert (d.id, d.family) == ("kernel_requires_capability", "arch_unsupported")
    assert d.title == title


@pytest.mark.parametrize("text", ["Current GPU does not support bfloat16.",
                                  "Device does not support bfloat16. Will change to float16.",
                                  "ValueError: the current CUDA device does not support bfloat16"])
def test_bfloat16_refused_in_other_programs_words_needs_ampere(text):
    d = _first(text)
    assert (d.id, d.family) == ("bf16_needs_ampere", "arch_unsupported")


@pytest.mark.parametrize("text", ["CuPy does not support bfloat16 yet",
                                  "ValueError: NumPyEngine does not support bfloat16 precision.",
                                  "RuntimeError: This CPU device does not support bfloat16",
                                  "MPS device does not support bfloat16"])
def test_a_library_without_bfloat16_is_not_a_gpu_too_old(text):
    assert "bf16_needs_ampere" not in [d.id for d in explain_text(text).diagnoses]


def test_xformers_with_no_operator_alone_is_a_wheel_for_another_torch():
    d = _first("NotImplementedError: No operator found for `memory_efficient_attention_backward` with inputs:")
    assert (d.id, d.family) == ("xformers_no_operator", "extension_build_mismatch")
    assert d.title == ("xFormers has no operator it can run here for memory_efficient_attention_backward: its CUDA "
                       "kernels were not built for this torch, CUDA or GPU")


def test_a_missing_library_in_pytorchs_extension_cache_is_a_failed_jit_build_not_cudnn():
    # before round 15 the vocabulary read '.so: cannot' as a cuDNN library
    d = _first("ImportError: /root/.cache/torch_extensions/py310_cu118/fused_adam/fused_adam.so: cannot open shared "
               "object file: No such file or directory")
    assert (d.id, d.family) == ("torch_extension_not_built", "extension_build_mismatch")
    assert d.title == ("The JIT-built extension fused_adam is missing from PyTorch's extension cache: its build failed "
                       "earlier")


@pytest.mark.parametrize("fw", ["torch", "tensorflow"])
def test_horovod_without_a_frameworks_extension(fw):
    d = _first(f"ImportError: Extension horovod.{fw} has not been built: /usr/lib/python3/dist-packages/horovod/{fw}/"
               "mpi_lib_v2.cpython-38-x86_64-linux-gnu.so not found")
    assert (d.id, d.family) == ("horovod_extension_not_built", "extension_build_mismatch")
    assert d.title == f"Horovod was installed without its {fw} extension"


def test_tensorflows_cuda_diagnostics_finding_no_kernel_driver_is_the_module_not_loaded():
    text = ("I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:176] kernel driver does not appear to be running on "
            "this host (e2e-node): /proc/driver/nvidia/version does not exist")
    d = _first(text)
    assert (d.id, d.family) == ("cuda_diagnostics_kernel_driver_not_running", "driver_not_loaded")
    c = _first(text, flags=["container"])
    assert (c.id, c.family) == ("cuda_diagnostics_kernel_driver_not_running", "no_device_in_container")


@pytest.mark.parametrize("text, title", [
    ("NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2204)\nNVRM: installed in this system is not supported by the\n"
     "NVRM: NVIDIA 390.144 driver release.",
     "The NVIDIA 390.144 driver does not support this GPU: it needs another driver branch"),
    ("[ 2288.712311] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1292)\n[ 2288.712311] NVRM: installed in this "
     "system is not supported by the 304.116\n[ 2288.712311] NVRM: NVIDIA Linux driver release.  Please see 'Appendix",
     "The NVIDIA 304.116 driver does not support this GPU: it needs another driver branch"),
    ("NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2204) installed in this system is not supported by the NVIDIA "
     "390.144 driver release.",
     "The NVIDIA 390.144 driver does not support this GPU (PCI ID 10de:2204): it needs another driver branch"),
    ("NVRM: The 470.xx NVIDIA driver will ignore this GPU.  Continuing probe...",
     "The installed NVIDIA driver does not support this GPU, so it does not initialise it"),
])
def test_the_driver_refusing_a_gpu_in_its_own_words_names_the_release(text, title):
    # before round 15 the multi-line forms were read from words as a hardware fault, and every match without a
    # legacy branch was titled as the open kernel module's refusal
    d = _first(text)
    assert (d.id, d.family) == ("nvrm_gpu_not_supported", "driver_not_loaded")
    assert d.title == title


@pytest.mark.parametrize("text", [
    "lightning_fabric.utilities.exceptions.MisconfigurationException: `CUDAAccelerator` can not run on your system "
    "since the accelerator is not available.",
])
def test_lightnings_accelerator_checks_read_as_cuda_not_available(text):
    assert _first(text).id == "torch_cuda_not_available"


def test_lightnings_fork_check_is_cuda_initialised_before_fork():
    d = _first("RuntimeError: Lightning can't create new processes if CUDA is already initialized. Did you manually "
               "call `torch.cuda.*` functions, have moved the model to the device?")
    assert (d.id, d.family) == ("cuda_fork_reinit", "cuda_init_error_other")


def test_jaxs_minimum_jaxlib_check_names_both_versions():
    d = _first("RuntimeError: jaxlib is version 0.4.7, but this version of jax requires version >= 0.4.14.")
    assert d.id == "jaxlib_jax_version_mismatch"
    assert d.title == "jaxlib 0.4.7 is older than this jax needs (0.4.14): install the pair of one release"


def test_tensorrts_magic_tag_in_its_newer_capitals():
    d = _first("[TRT] [E] 1: [stdArchiveReader.cpp::StdArchiveReader::32] Error Code 1: Serialization (Serialization "
               "assertion magicTagRead == kMAGIC_TAG failed.Magic Tag does not match)")
    assert (d.id, d.family) == ("tensorrt_engine_other_build", "extension_build_mismatch")


@pytest.mark.parametrize("text, words", [
    # round14-a torch_cpu_build-bark-173 and torch_cpu_build-rvc-350 (before round 15: no answer)
    ("No GPU being used. Careful, inference might be very slow!", "No GPU being used"),
    ("(myenv) H:\\RVC-beta>python infer-web.py\nUse Language: en_US\n没有发现支持的N卡, 使用CPU进行推理", "使用CPU进行"),
    ("Using device: cpu", "Using device: cpu"),
])
def test_a_program_saying_it_runs_on_the_cpu_reads_first_as_a_cpu_only_build(text, words):
    # its own word since round 15 ('running on CPU' and 'falling back to CPU' were counted under 'no GPU found'):
    # 11 of its 23 tunable threads were a CPU-only build, 3 no NVIDIA GPU
    from tests.explain_support import assert_read_from_words
    assert_read_from_words(text, "cpu_fallback", "torch_cpu_build", words, "a CPU-only framework build")


def test_a_cpu_device_in_a_torch_load_hint_is_not_the_program_running_on_the_cpu():
    from gpudoctor.explain.words import features
    assert "cpu_fallback" not in features("use torch.load with map_location=torch.device('cpu') to map your storages")


def test_nvcc_refusing_visual_studio_is_the_host_compiler_with_its_range():
    d = _first("host_config.h(153): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio version! Only the "
               "versions between 2017 and 2022 (inclusive) are supported!")
    assert (d.id, d.family, d.recipe) == ("nvcc_unsupported_msvc", "extension_build_mismatch", "cuda_host_compiler")
    assert d.title == ("nvcc refuses this Visual Studio's compiler: this CUDA accepts Visual Studio 2017 to 2022, up to "
                       "the compiler version it was released with")


def test_input_and_weight_types_differing_is_a_program_bug_note_not_a_diagnosis():
    r = explain_text("RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be "
                     "the same")
    assert r.diagnoses == [] and [n.id for n in r.notes] == ["input_weight_type_mismatch"]
    assert r.notes[0].title == ("The model's weights (torch.FloatTensor) and its input (torch.cuda.FloatTensor) are on "
                                "different devices or of different types: a bug in the program")


def test_inductor_without_triton_is_a_missing_package_not_a_driver_too_old():
    # before round 15 the vocabulary read its 'too old' as the driver's
    d = _first("RuntimeError: Cannot find a working triton installation. Either the package is not installed or it is "
               "too old. More information on installing Triton can be found at https://github.com/openai/triton")
    assert (d.id, d.family) == ("triton_not_installed", "extension_build_mismatch")


@pytest.mark.parametrize("text", [
    "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
    "RuntimeError: Cannot find a working triton installation. Either the package is not installed or it is too old.",
])
def test_insufficient_and_too_old_count_for_the_driver_only_near_the_driver_or_cuda(text):
    from gpudoctor.explain.words import features
    assert "driver_too_old_words" not in features(text)


@pytest.mark.parametrize("text", ["CUDA driver version is insufficient for CUDA runtime version",
                                  "the NVIDIA driver on your system is too old",
                                  "your CUDA is too old for this build"])
def test_insufficient_and_too_old_next_to_the_driver_still_count(text):
    from gpudoctor.explain.words import features
    assert "driver_too_old_words" in features(text)


@pytest.mark.parametrize("text, sid, title", [
    ("NVRM: GPU at PCI:0000:3b:00: GPU-5f2b1c3e-0d1a-4f6e-9b7a-2c8d4e6f1a3b has fallen off the bus.",
     "xid_fallen_off_bus", "A GPU has fallen off the bus: it stopped answering the PCIe bus (Xid 79)"),
    ("GPU 0: OK\nGPU 1: FAULTY", "gpu_burn_faulty",
     "gpu-burn found GPU 1 computing wrong results under load: faulty hardware"),
    ("DCGM_FR_VOLATILE_DBE_DETECTED: Detected 1 volatile double-bit ECC error(s) in GPU 0.", "dcgm_hardware_failure",
     "DCGM's diagnostic reports a hardware failure (VOLATILE_DBE_DETECTED)"),
    ("        HW Slowdown                       : Active", "hw_slowdown_active",
     "The GPU's clocks are held down by a hardware slowdown (HW Slowdown): heat or power"),
    ("clocks_event_reasons.hw_thermal_slowdown, Active", "hw_slowdown_active",
     "The GPU's clocks are held down by a hardware slowdown (hw_thermal_slowdown): heat or power"),
    ("nvidia-nvswitch0: SXid (PCI:0000:0c:00.0): 12028, Non-fatal, Link 47 egress non-posted PRIV error",
     "nvswitch_sxid", "An NVSwitch reports a Non-fatal error (SXid 12028)"),
    ("Device removed: DXGI_ERROR_DEVICE_HUNG", "dxgi_device_removed",
     "Windows took the GPU away from the program (DXGI_ERROR_DEVICE_HUNG): a driver reset (TDR), a driver crash or "
     "update, or commands the driver rejected"),
])
def test_hardware_faults_in_the_words_of_the_tools_that_find_them(text, sid, title):
    # xid_or_hardware was 0 of 6 on frozen-test-15 before these, and the tunable sets hold almost none of these tools'
    # lines: each is written from the tool's own output
    d = _first(text)
    assert (d.id, d.family, d.title) == (sid, "xid_or_hardware", title)


@pytest.mark.parametrize("text", ["HW Slowdown : Not Active", "clocks_event_reasons.hw_slowdown, Not Active",
                                  "GPU 0: OK", "DCGM_FR_OK", "DCGM_FR_ECC_DISABLED", "DCGM_FR_POWER_UNREADABLE",
                                  "DCGM_FR_TEMP_UNREADABLE", "no SXid errors reported",
                                  # every link of a PCIe card without its bridge reads inactive: no fault (not read)
                                  "GPU 0: NVIDIA RTX A6000 (UUID: GPU-1)\n\t Link 0: <inactive>\n\t Link 1: <inactive>"])
def test_a_tool_reporting_health_is_no_hardware_fault(text):
    assert [d.family for d in explain_text(text).diagnoses if d.family == "xid_or_hardware"] == []


def test_an_ngc_container_older_than_the_gpu_is_an_unsupported_architecture_named_by_the_gpu():
    d = _first("WARNING: Detected NVIDIA NVIDIA GeForce RTX 3090 GPU, which is not yet supported in this version of the "
               "container")
    assert (d.id, d.family) == ("ngc_container_gpu_not_yet_supported", "arch_unsupported")
    assert d.title == "This container release predates the NVIDIA GeForce RTX 3090: it has no kernels for that GPU yet"


def test_an_ngc_container_finding_no_gpu_was_started_without_one():
    d = _first("ERROR: No supported GPU(s) detected to run this container")
    assert (d.id, d.family) == ("ngc_container_no_gpu", "no_device_in_container")


@pytest.mark.parametrize("text", [
    "AssertionError: Invalid CUDA '--device 0' requested, use '--device cpu' or pass valid CUDA device(s)",
    "ValueError: Invalid CUDA 'device=0' requested. Use 'device=cpu' or pass valid CUDA device(s) if available",
])
def test_a_framework_refusing_a_cuda_device_it_cannot_see_reads_as_cuda_not_available(text):
    assert _first(text).id == "torch_cuda_not_available"


@pytest.mark.parametrize("text", ["RuntimeError: GPU is required to quantize or run quantize model.",
                                  "RuntimeError: No GPU found. A GPU is needed for quantization."])
def test_a_quantizer_requiring_a_gpu_is_the_programs_own_gpu_check(text):
    d = _first(text)
    assert (d.id, d.family) == ("program_needs_cuda_gpu", "no_nvidia_gpu")


@pytest.mark.parametrize("text", [
    # round10 xid_or_hardware-ethminer-620, round12 xid_or_hardware-excavator-160 (before round 15: suspend/resume)
    "CUDA error in func 'dev::eth::cudaminer::search' at line 489 : unspecified launch failure",
    "CUDA error 'unspecified launch failure' in func 'cuda_daggerhashimoto::run'",
])
def test_a_kernel_launch_failing_in_a_miner_is_the_card_under_its_overclock(text):
    d = _first(text)
    assert d.family == "xid_or_hardware"
    assert "overclock" in " ".join(d.explanation)


def test_the_same_launch_failure_outside_a_miner_still_reads_suspend_resume_first():
    assert _first("RuntimeError: CUDA error: unspecified launch failure").family == "suspend_resume_uvm"


@pytest.mark.parametrize("text, mining", [("MinerU: RuntimeError: CUDA error: unspecified launch failure", False),
                                          ("Minerva: unspecified launch failure", False),
                                          ("minerl.env: unspecified launch failure", False),
                                          ("the examiner reports an unspecified launch failure", False),
                                          ("a nonce of 16 bytes: unspecified launch failure", False),
                                          ("ethminer: CUDA error: unspecified launch failure", True),
                                          ("TREX: Can't find nonce with device [ID=4, GPU: #4]", True)])
def test_the_mining_clue_names_miners_not_tools_whose_names_start_alike(text, mining):
    from gpudoctor.explain import catalog
    from gpudoctor.explain.context import Context, read_text
    ctx = Context()
    read_text(ctx, text, catalog.load())
    assert ("mining" in ctx.flags) == mining


def test_a_compiled_module_windows_cannot_load_is_an_extension_built_for_another_stack():
    # round8 extension_build_mismatch-tiny-cuda-nn-314 (before round 15: cuDNN, from the words 'DLL load failed')
    d = _first("ImportError: DLL load failed while importing exllamav2_ext: The specified module could not be found.")
    assert (d.id, d.family) == ("windows_extension_dll_load_failed", "extension_build_mismatch")
    assert d.title == ("Windows could not load the compiled module exllamav2_ext: a DLL it needs is missing or of "
                       "another version")
    # TensorFlow's own module is read as TensorFlow's libraries, from its words
    tf = _first("ImportError: DLL load failed while importing _pywrap_tensorflow_internal: A dynamic link library "
                "(DLL) initialization routine failed.")
    assert tf.family == "tf_no_gpu_libs"


@pytest.mark.parametrize("text, title", [
    ("CUDA binary kernel for this graphics card compute capability (8.6) not found.",
     "The program has no GPU kernels for compute capability 8.6: this GPU is newer or older than the ones its release "
     "supports"),
    ("The minimum required Cuda compute capability is 3.5.",
     "The program needs compute capability 3.5 or newer, and this GPU is older"),
    ("CUDA device supported only with compute capability 3.0 or up, found 2.1.",
     "The program needs compute capability 3.0 or newer; this GPU has 2.1"),
    ("Your GPU is not supported. Minimum compute capability required is 3.5",
     "The program needs compute capability 3.5 or newer, and this GPU is older"),
])
def test_a_programs_own_compute_capability_check_is_named_with_its_numbers(text, title):
    # before round 15 the vocabulary named the family from 'compute capability' alone, with no numbers
    d = _first(text)
    assert (d.id, d.family) == ("program_compute_capability_check", "arch_unsupported")
    assert d.title == title


@pytest.mark.parametrize("text", [
    "nothing provides __cuda needed by pytorch-2.1.0-py3.10_cuda12.1_cudnn8.9.2_0",
    "Could not solve for environment specs\nThe following package could not be installed\n└─ pytorch-cuda 12.1**  is not "
    "installable because it requires\n   └─ __cuda, which is missing on the system.",
])
def test_conda_finding_no_cuda_driver_is_a_machine_without_one_first(text):
    d = _first(text)
    assert (d.id, d.family) == ("conda_virtual_cuda_missing", "no_nvidia_gpu")
    assert "CONDA_OVERRIDE_CUDA" in " ".join(d.explanation)


def test_conda_finding_no_cuda_driver_where_the_text_names_an_nvidia_gpu_is_the_driver():
    d = _first("GPU: NVIDIA GeForce RTX 3090\nnothing provides __cuda needed by pytorch-2.1.0-py3.10_cuda12.1_cudnn8.9.2_0")
    assert (d.id, d.family) == ("conda_virtual_cuda_missing", "driver_not_loaded")


def test_the_driver_said_not_to_appear_loaded_is_the_module_not_loaded():
    # before round 15 the vocabulary read 'driver' alone as a driver too old
    d = _first("The NVIDIA driver does not appear to be loaded")
    assert (d.id, d.family) == ("other_tool_module_not_loaded", "driver_not_loaded")


def test_nvrtc_without_its_builtins_is_a_mixed_or_incomplete_cuda():
    d = _first("RuntimeError: nvrtc: error: failed to open nvrtc-builtins64_118.dll.\n  Make sure that "
               "nvrtc-builtins64_118.dll is installed correctly.")
    assert (d.id, d.family) == ("nvrtc_builtins_missing", "extension_build_mismatch")
    assert "nvrtc-builtins64_118.dll" in d.title


def test_a_process_group_not_initialised_is_no_cuda_initialisation_failure():
    from gpudoctor.explain.words import features
    assert "cuda_init" not in features("AssertionError: Default process group is not initialized")
    assert "cuda_init" in features("CUDA_ERROR_NOT_INITIALIZED: initialization error")
    assert explain_text("AssertionError: Default process group is not initialized").diagnoses == []


@pytest.mark.parametrize("text, word, family", [
    ("paddle.fluid.core.is_compiled_with_cuda() False", "cpu_build", "torch_cpu_build"),
    ("cv2.cuda.getCudaEnabledDeviceCount() returns 0", "cpu_build", "torch_cpu_build"),
    ("Torch CUDA: False", "is_available_false", "torch_cpu_build"),
    ("ValueError: GPU is not accessible. Was the library installed correctly?", "is_available_false",
     "torch_cpu_build"),
    # XGBoost's name is a context word whose threads lean to CUDA libraries: the word is read, the family is not
    # this one's (left as the counts say)
    ("xgboost.core.XGBoostError: Check failed: common::AllVisibleGPUs() >= 1 (0 vs. 1) : No visible GPU is found for "
     "XGBoost.", "no_gpu_found", None),
])
def test_other_libraries_saying_they_have_no_cuda_are_read_as_such(text, word, family):
    from gpudoctor.explain.words import features
    assert word in features(text)
    d = _first(text)
    assert family is None or d.family == family


def test_cupy_not_correctly_installed_is_a_wheel_for_another_cuda():
    d = _first("ImportError: CuPy is not correctly installed. If you are using wheel distribution (cupy-cudaXX), make "
               "sure that the version of CuPy you installed matches with the version of CUDA on your host.")
    assert (d.id, d.family) == ("cupy_not_correctly_installed", "extension_build_mismatch")


def test_the_device_plugin_finding_no_strategy_did_not_get_the_nvidia_runtime():
    text = ("E1115 10:00:00.000000       1 factory.go:112] Incompatible strategy detected auto\n"
            "E1115 10:00:00.000000       1 factory.go:113] If this is a GPU node, did you configure the NVIDIA Container "
            "Toolkit?")
    d = _first(text)
    assert (d.id, d.family) == ("k8s_device_plugin_incompatible_strategy", "no_device_in_container")
    assert _first(text, flags=["wsl"]).family == "wsl_specific"


@pytest.mark.parametrize("text, sid, family", [
    ("nothing provides __cuda >=12 needed by pytorch-2.1.0-py3.10_cuda12.1_cudnn8.9.2_0", "conda_virtual_cuda_too_old",
     "driver_too_old"),
    ("   └─ __cuda >=12, which is missing on the system.", "conda_virtual_cuda_too_old", "driver_too_old"),
])
def test_conda_needing_a_newer_cuda_than_the_drivers_is_a_driver_too_old(text, sid, family):
    d = _first(text)
    assert (d.id, d.family) == (sid, family)


@pytest.mark.parametrize("text", [
    "ImportError: DLL load failed while importing _ssl: The specified module could not be found.",
    "ImportError: DLL load failed while importing QtCore: The specified procedure could not be found.",
    "ImportError: DLL load failed while importing _multiarray_umath: The specified module could not be found.",
])
def test_windows_failing_to_load_a_module_that_is_no_gpu_extension_is_not_read_as_one(text):
    assert "windows_extension_dll_load_failed" not in [d.id for d in explain_text(text).diagnoses]


def test_an_invalid_device_where_cuda_is_available_is_not_read_as_cuda_missing():
    text = ("ValueError: Invalid CUDA 'device=1' requested. Use 'device=cpu' or pass valid CUDA device(s) if available, "
            "i.e. 'device=0' or 'device=0,1,2,3' for Multi-GPU.\n\ntorch.cuda.is_available(): True\n"
            "torch.cuda.device_count(): 1")
    assert "torch_cuda_not_available" not in [d.id for d in explain_text(text).diagnoses]


@pytest.mark.parametrize("text", ["Incompatible platform detected", "E1115 factory.go:112] Incompatible strategy detected tegra"])
def test_the_device_plugins_other_words_for_no_nvml(text):
    assert _first(text).id == "k8s_device_plugin_incompatible_strategy"


def test_a_bias_of_another_type_is_the_same_program_bug_note():
    r = explain_text("RuntimeError: Input type (c10::Half) and bias type (float) should be the same")
    assert r.diagnoses == [] and [n.id for n in r.notes] == ["input_weight_type_mismatch"]


def test_healthy_lines_naming_a_gpu_requirement_or_a_build_setting_are_not_claimed():
    assert explain_text("A GPU is required to train this model efficiently; found GPU 0: NVIDIA A100").diagnoses == []
    assert "program_compute_capability_check" not in [
        d.id for d in explain_text("INFO: minimum compute capability of 5.2 will be used for the build").diagnoses]


def test_xformers_kernel_too_new_for_the_gpu_is_named_as_such():
    d = _first("`fa3F@0.0.0` is not supported because:\n    requires device with capability <= (9, 0) but your GPU has "
               "capability (12, 0) (too new)")
    assert (d.id, d.family) == ("kernel_requires_capability", "arch_unsupported")
    assert d.title == "A kernel supports compute capability up to (9, 0); this GPU has (12, 0) and is too new for it"


def test_xformers_with_its_input_on_the_cpu_is_not_a_wheel_for_another_torch():
    text = ("NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
            "     query       : shape=(1, 4096, 8, 40) (torch.float32)\n"
            "`cutlassF` is not supported because:\n    device=cpu (supported: {'cuda'})")
    assert "xformers_no_operator" not in [d.id for d in explain_text(text).diagnoses]
