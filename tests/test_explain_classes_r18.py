"""Round 18's classes: from round17-a's misses (the tunable half of frozen-test-17) and from the cases of round16-b
(round 17's held-out half) that a blind reader of the text alone got right and explain did not.

Each test names the real case (set and id) it stands for and checks the family, the signature and that the title
is a sentence with the text's own words; near misses check that a pattern does not claim what it should not.
"""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text
from gpudoctor.explain.words import features
from tests.explain_support import first_diagnosis as _first


def _families(text, flags=()):
    return [d.family for d in explain_text(text, flags=set(flags)).diagnoses]


# --- the cuDNN word yields to a cuDNN status code -------------------------------------------------------------

def test_a_cudnn_status_code_says_more_than_the_word_cudnn():
    # round17-a arch_unsupported-secondpytorch-43, arch_unsupported-darknet-2836, arch_unsupported-tensorrt-51
    # (before round 18: cuDNN missing, from the word 'cuDNN' that every such line holds)
    text = "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"
    assert set(features(text)) == {"code:cudnnstatusexecutionfailed"}
    d = _first(text)
    assert (d.id, d.family) == ("vocabulary", "arch_unsupported")
    # the word still counts where no code is named, and a setting's name is no word about cuDNN failing
    assert "cudnn" in features("cuDNN error: the library could not be loaded")
    assert "cudnn" not in features("torch.version.cuda: None, torch.backends.cudnn.enabled: True")


def test_a_cpu_torch_shown_by_its_fields_is_not_read_as_cudnn():
    # round 8's class (tests/test_explain_classes_r8.py) kept after the cuDNN word's counts changed
    assert _first("torch.version.cuda: None, torch.backends.cudnn.enabled: True").family == "torch_cpu_build"


# --- a words-only message and an error code -----------------------------------------------------------------------

def test_an_error_code_beside_a_message_in_words_is_read_first():
    # round16 driver_too_old-insightface-rest-24 (before round 18: 'CUDA could not be initialised', no cause)
    text = ("ERROR: CUDA initialization failure with error 222. Please check your CUDA installation:  "
            "http://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html")
    d = explain_text(text).diagnoses
    assert [x.family for x in d] == ["driver_too_old", "cuda_init_error_other"]
    assert (d[0].id, d[1].id) == ("vocabulary", "cuda_init_failed_words")
    assert d[0].title.startswith("Its message names no cause; its words (error 222")
    assert d[0].explanation[0].startswith("The message itself names no cause, so this is read from its error code "
                                          "and words: 'error 222' (cudaError_t cudaErrorUnsupportedPtxVersion")
    # without a code the words-only message stands alone
    assert [x.id for x in explain_text("ERROR: CUDA initialization failure. Please check your CUDA installation")
            .diagnoses] == ["cuda_init_failed_words"]
    # a code that agrees with the message adds nothing
    agreeing = "ERROR: CUDA initialization failure with error 30"      # cudaErrorUnknown in CUDA 10's numbering
    assert "code:cudaerrorunknown" in features(agreeing)
    assert [x.id for x in explain_text(agreeing).diagnoses] == ["cuda_init_failed_words"]


@pytest.mark.parametrize("text", [
    "ERROR: CUDA initialization failure\nloading weights\nDownloading model: HTTP status 503\nretry error 500",
    "Failed building wheel for mmcv\nRunning setup.py clean for mmcv\nsome other output\nnpm ERR! code 500",
])
def test_an_error_code_far_from_the_words_only_message_is_not_its_cause(text):
    assert "vocabulary" not in [d.id for d in explain_text(text).diagnoses]


# --- builds: CMake, the MSVC linker, the cuDNN library ---------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "-- Looking for a CUDA compiler - NOTFOUND",                  # round17-a extension_build_mismatch-darknet-4927
    'Install cutorch fail , " Specify CUDA_TOOLKIT_ROOT_DIR "',   # round16 extension_build_mismatch-cutorch-425
    "CMake Error: Could NOT find CUDA (missing: CUDA_TOOLKIT_ROOT_DIR CUDA_NVCC_EXECUTABLE)",
])
def test_cmake_finding_no_cuda_toolkit_is_nvcc_not_found(text):
    d = _first(text)
    assert (d.id, d.family) == ("nvcc_not_found", "extension_build_mismatch")


@pytest.mark.parametrize("text,library", [
    # round17-a extension_build_mismatch-cudpp-72 (before round 18: TensorFlow's libraries, from 'cudart')
    ("LINK : fatal error LNK1181: cannot open input file 'cudart.lib'", "cudart"),
    # round17-a extension_build_mismatch-mistralrs-653 (before round 18: no answer)
    ("  = note: LINK : fatal error LNK1181: cannot open input file 'mistralcuda.lib'", "mistralcuda"),
])
def test_msvc_cannot_open_a_cuda_library(text, library):
    d = _first(text)
    assert (d.id, d.family) == ("linker_cannot_find_cuda_library", "extension_build_mismatch")
    assert d.title == (f"The linker cannot find {library}, a library the CUDA build links: its directory is not on "
                       "the link path, or it is not installed (or was not built)")
    assert any("LIB or as /LIBPATH" in line for line in d.explanation)


def test_msvc_missing_a_library_of_no_cuda_is_not_claimed():
    assert _families("LINK : fatal error LNK1181: cannot open input file 'zlib.lib'") == []


@pytest.mark.parametrize("text", [
    "/usr/bin/ld: cannot find -lcudnn\ncollect2: error: ld returned 1 exit status",   # round17-a ...-theano-4294
    "ld: library not found for -lcudnn",                                             # macOS's ld
    "/usr/bin/ld: unable to find library -lcudnn",
    "LINK : fatal error LNK1181: cannot open input file 'cudnn.lib'",                 # MSVC
])
def test_the_linker_missing_cudnn_is_cudnn_missing_in_every_spelling(text):
    # (before round 18: the extension build)
    d = _first(text)
    assert (d.id, d.family) == ("linker_cannot_find_cuda_library", "cudnn_mismatch_or_missing")
    assert d.title == "The linker cannot find the cuDNN library: cuDNN is not installed where the build looks for it"


# --- an architecture nvcc does not know, for the GPU itself -------------------------------------------------------

PYCUDA = ("CompileError: nvcc compilation of /tmp/tmpwtsurb7b/kernel.cu failed\n"
          "[command: nvcc --cubin -arch sm_30 -I/home/vlad/.local/lib/python3.8/site-packages/pycuda/cuda kernel.cu]\n"
          "[stderr:\nnvcc fatal   : Value 'sm_30' is not defined for option 'gpu-architecture'\n]")


def test_pycuda_compiles_for_the_gpu_it_runs_on_so_an_unknown_arch_is_the_gpu():
    # round17-a arch_unsupported-pycuda-272 (before round 18: the extension build)
    d = explain_text(PYCUDA).diagnoses
    assert [(x.id, x.family) for x in d][:2] == [("nvcc_unsupported_gpu_arch", "arch_unsupported"),
                                                  ("nvcc_unsupported_gpu_arch", "extension_build_mismatch")]
    assert d[0].title == ("This GPU is sm_30, and the CUDA toolkit's nvcc cannot compile for it: the GPU and the "
                          "toolkit are too far apart")
    # a build that asks for an architecture itself stays the build, with or without PyCUDA installed nearby
    for text in ["nvcc fatal   : Value 'sm_30' is not defined for option 'gpu-architecture'",
                 "make: nvcc --cubin -arch=sm_20 -o kernels.cubin kernels.cu\nnvcc fatal : Value 'sm_20' is not "
                 "defined for option 'gpu-architecture'",
                 "Requirement already satisfied: pycuda in ./venv/lib/python3.8/site-packages\nbuilding 'ext' with "
                 "TORCH_CUDA_ARCH_LIST=3.5\nnvcc fatal : Value 'sm_35' is not defined for option 'gpu-architecture'"]:
        assert _families(text) == ["extension_build_mismatch"], text


# --- half precision on the CPU ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,op", [
    # round17-a torch_cpu_build-huatuo-llama-med-chinese-43, torch_cpu_build-blended-diffusion-14 (before: no answer)
    ("fire.Fire(main)这一步报错\n\"addmm_impl_cpu_\" not implemented for 'Half'", "addmm_impl_cpu_"),
    ("RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'", "slow_conv2d_cpu"),
])
def test_a_half_precision_kernel_missing_on_the_cpu_is_a_model_on_the_cpu(text, op):
    d = _first(text)
    assert (d.id, d.family) == ("half_precision_on_cpu", "torch_cpu_build")
    assert d.title == (f"PyTorch ran {op} on the CPU in Half: a half-precision model is on the CPU, most often "
                       "because this torch cannot use CUDA")


def test_a_cuda_kernel_missing_a_dtype_is_not_a_model_on_the_cpu():
    assert "half_precision_on_cpu" not in [d.id for d in explain_text(
        "RuntimeError: \"baddbmm_cuda\" not implemented for 'BFloat16'").diagnoses]


# --- compiled packages missing ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,title", [
    # round17-a extension_build_mismatch-hunyuanvideowrapper-108 (before round 18: no answer)
    ("HyVideoModelLoader Can't import SageAttention: No module named 'sageattention'",
     "sageattention is not installed: its CUDA build failed or was skipped"),
    # round16 extension_build_mismatch-opencood-61 (before round 18: no answer)
    ("cannot import name 'iou3d_nms_cuda' from 'opencood.pcdet_utils.iou3d_nms' (unknown location)",
     "The compiled part of the package (iou3d_nms_cuda) is missing: it was installed without its C++/CUDA "
     "extensions"),
])
def test_a_compiled_cuda_package_that_is_not_there(text, title):
    d = _first(text)
    assert (d.id, d.family, d.title) == ("extension_compiled_module_missing", "extension_build_mismatch", title)


@pytest.mark.parametrize("module", ["flash_attn", "mamba_ssm", "causal_conv1d"])
def test_other_compiled_cuda_packages_missing(module):
    d = _first(f"ModuleNotFoundError: No module named '{module}'")
    assert (d.id, d.title) == ("extension_compiled_module_missing",
                               f"{module} is not installed: its CUDA build failed or was skipped")


@pytest.mark.parametrize("text", [
    "ModuleNotFoundError: No module named 'sagemaker'",
    "ImportError: cannot import name 'load_dataset' from 'datasets'",
    "ImportError: cannot import name 'build_ext' from 'Cython.Distutils'",
    "ImportError: cannot import name 'is_cuda' from 'utils' (unknown location)",     # a helper, no compiled module
    "ImportError: cannot import name 'iou3d_nms_cuda' from 'pcdet.ops' (/src/pcdet/ops/__init__.py)",  # a real file
])
def test_a_plain_package_missing_or_a_name_missing_is_not_claimed(text):
    assert "extension_compiled_module_missing" not in [d.id for d in explain_text(text).diagnoses]


# --- containers --------------------------------------------------------------------------------------------------

def test_crun_failing_nvidia_ctks_cdi_hook():
    # round17-a no_device_in_container-webkit-container-sdk-72 (before round 18: no answer)
    d = _first('Error: OCI runtime error: unable to start container "346dbfb347b3": crun: {"msg":"error executing '
               'hook `/usr/bin/nvidia-ctk` (exit code: 1)","level":"error"}')
    assert (d.id, d.family, d.recipe) == ("cdi_hook_failed", "no_device_in_container", "container_cdi_spec")
    assert d.title == "The container could not start: the NVIDIA CDI hook (/usr/bin/nvidia-ctk) failed"
    assert "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml && sudo chmod 644 /etc/cdi/nvidia.yaml" in \
        d.fix.commands


def test_a_hook_of_another_tool_failing_is_not_claimed():
    assert _families('crun: {"msg":"error executing hook `/usr/libexec/oci/hooks.d/oci-systemd-hook` '
                     '(exit code: 1)"}') == []


# --- words -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,family,word", [
    # round17-a torch_cpu_build-invokeai-1202 (before round 18: no answer)
    (">> ESRGAN Initialized\n>> Using device_type cpu", "torch_cpu_build", "Using device_type cpu"),
    # round15 torch_cpu_build-gfpgan-229, round16 torch_cpu_build-gfpgan-445 (before: no answer)
    ("UserWarning: The unoptimized RealESRGAN is slow on CPU. We do not use it.", "torch_cpu_build", "slow on CPU"),
    # round16 no_nvidia_gpu-instructlab-1262 (before: a CUDA initialisation failure)
    ("Failed to initialize metal backend", "no_nvidia_gpu", "metal backend"),
    # round16 no_nvidia_gpu-colmap-840 (before: no answer)
    ("F0409 01:01:45.582237 509953472 extraction.cc:132] Check failed: num_cuda_devices > 0 (0 vs. 0)",
     "no_nvidia_gpu", "num_cuda_devices > 0 (0 vs. 0)"),
])
def test_words_of_a_cpu_run_or_no_nvidia_gpu(text, family, word):
    d = _first(text)
    assert (d.id, d.family) == ("vocabulary", family)
    assert word in d.values["words"]


@pytest.mark.parametrize("text", [
    "Found 0 errors in 3 files",                      # a count of something else
    "Metal detector reading: 0.3",                    # the word metal alone
    "The GPU is slow on large batches",               # slow, but not on the CPU
    "Note: inference is slow on CPU, consider a GPU",  # advice, not a run on the CPU
    "adb: Found 0 devices attached",                  # devices of another kind
    "Scanning bluetooth... found 0 devices",
])
def test_near_misses_of_the_new_words(text):
    assert _families(text) == []


# --- Flatpak's GL runtime, TensorFlow's 'DNN library not found' ---------------------------------------------------

@pytest.mark.parametrize("text,driver", [
    # round15 driver_library_mismatch-flatpak-1663, round17-a driver_library_mismatch-flatpak-1702 (before round 18:
    # a driver too old, from the words 'graphics driver')
    ("Graphics driver 'nvidia-390-48' for Flatpak has not been found on your system. Please consult the "
     "documentation on graphics drivers to get help with installation.", "nvidia-390-48"),
    ("Runner: [WARNING Nuvola] StartupWindow.vala:205: opengl-driver-message: Graphics driver 'nvidia-390-59' for "
     "Flatpak has not been found on your system.", "nvidia-390-59"),
])
def test_flatpak_without_the_gl_runtime_of_the_hosts_driver(text, driver):
    d = _first(text)
    assert (d.id, d.family, d.recipe) == ("flatpak_gl_nvidia_missing", "driver_library_mismatch", "flatpak_gl_runtime")
    assert d.title == f"Flatpak has no GL runtime for the host's NVIDIA driver {driver}: install the matching extension"
    assert "flatpak update" in d.fix.commands


def test_dnn_library_not_found_without_is():
    # round14 cudnn_mismatch_or_missing-colabtools-3058 (before round 18: TensorFlow's libraries, from the words)
    d = _first("simple_audio.ipynb is broken. Says DNN library not found.")
    assert (d.id, d.family) == ("tf_dnn_library_not_found", "cudnn_mismatch_or_missing")


# --- old TensorFlow's one exact CUDA: from tf_builds.json's legacy rows, not from four copies of one alternative --------

@pytest.mark.parametrize("cuda,releases", [
    ("7.5", ("0.7", "0.10")), ("8.0", ("0.11", "1.4")), ("9.0", ("1.5", "1.12")),
    ("10.0", ("1.13", "2.0")),          # 2.0 is a row of the builds table with the same CUDA
    ("10.1", None), ("11.0", None), ("12", None),
])
def test_the_tensorflow_releases_built_for_one_exact_cuda(cuda, releases):
    from gpudoctor.knowledge.tensorflow import releases_for_exact_cuda
    assert releases_for_exact_cuda(cuda) == releases


@pytest.mark.parametrize("library,title", [
    ("libcublas.so.9.0", "libcublas.so.9.0 is missing: most often TensorFlow 1.5 to 1.12, built for exactly CUDA 9.0, "
                         "which is not installed"),
    ("libcudart.so.10.0", "libcudart.so.10.0 is missing: most often TensorFlow 1.13 to 2.0, built for exactly CUDA "
                          "10.0, which is not installed"),
])
def test_a_missing_library_of_an_old_tensorflows_cuda_names_those_releases(library, title):
    d = _first(f"ImportError: {library}: cannot open shared object file: No such file or directory")
    assert (d.family, d.recipe, d.title) == ("tf_no_gpu_libs", "tf1_cuda_missing", title)


def test_a_cuda_no_old_tensorflow_linked_exactly_stays_the_build():
    d = _first("ImportError: libcudart.so.10.1: cannot open shared object file: No such file or directory")
    assert (d.id, d.family) == ("import_cuda_runtime_missing", "extension_build_mismatch")
    # and an old CUDA outside an import (a loader's message) is not read as TensorFlow's
    d = _first("./app: error while loading shared libraries: libcudart.so.9.0: cannot open shared object file")
    assert d.family == "extension_build_mismatch"
    # cuDNN's own version is no CUDA release
    d = _first("ImportError: libcudnn.so.7.5: cannot open shared object file: No such file or directory")
    assert d.family == "cudnn_mismatch_or_missing" and "TensorFlow 0" not in d.title
