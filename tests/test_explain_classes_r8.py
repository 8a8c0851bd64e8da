"""Classes of real errors round 8 of issue 10 reads for the class (REAL texts from the tuning sets, named next to
each): other tools' words for a known message, and error codes below 30 on a line that names their API."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text
from tests.explain_support import first_diagnosis as _first
from gpudoctor.explain.words import features


def test_xla_kernel_dso_mismatch_without_tensorflows_file_name_is_a_driver_library_mismatch():
    # round7-a driver_library_mismatch-jax-11477 (before round 8: no answer): XLA's cuda_diagnostics, as JAX prints it
    text = ("I recently upgraded and was hitting this error:\n\n    kernel version 515.48.7 does not match DSO version "
            "510.73.5 -- cannot find working devices in this configuration")
    d = _first(text)
    assert (d.family, d.id) == ("driver_library_mismatch", "tf_kernel_dso_version_mismatch")
    assert d.title == "The kernel module 515.48.7 does not match libcuda 510.73.5"


@pytest.mark.parametrize("flags", [(), ("container",)])
def test_apex_setup_cuda_check_is_an_extension_build_mismatch(flags):
    # round7-a extension_build_mismatch-apex-955 (before round 8: the vocabulary's driver/library mismatch)
    text = ("RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version "
            "used to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 10.2.\n    In some cases, a "
            "minor-version mismatch will not cause later errors:  https://github.com/NVIDIA/apex/pull/323#discussion_"
            "r287021798.  You can try commenting out this check (at your own risk).")
    d = _first(text, flags)
    assert (d.family, d.id) == ("extension_build_mismatch", "apex_cuda_version_mismatch")
    assert d.title == "The CUDA toolkit that builds the extension is not the CUDA 10.2 PyTorch was built with"


SMALL_CODES = [
    # round7-a xid_or_hardware-t-rex-230 (before round 8: the vocabulary's driver/library mismatch): NVML code 15
    ("WARN: NVML: can't get GPU #0, error code 15\n\nI have the same error on a 13x 3070 rig.  Never had it before but "
     "also never had 13x in 1 rig before.  If I reboot it all works again.", "code:nvmlerrorgpuislost",
     "xid_or_hardware"),
    # round7-a cuda_init_error_other-ollama-11593 (before round 8: TensorFlow's GPU libraries, from 'cudart'):
    # the CUDA driver's code 3, CUDA_ERROR_NOT_INITIALIZED
    ('Same thing happens with the 575 driver and CUDA 12.9 btw:\n\n```\ntime=2025-08-02T22:42:20.643Z level=INFO '
     'source=gpu.go:612 msg="Unable to load cudart library /usr/lib/x86_64-linux-gnu/libcuda.so.575.57.08: cuda driver '
     'library init failure: 3"\n```\n\nIs this GPU not supported by ollama?', "code:cudaerrornotinitialized",
     "cuda_init_error_other"),
]


@pytest.mark.parametrize("text,code,family", SMALL_CODES)
def test_a_small_error_number_is_read_on_a_line_naming_its_api(text, code, family):
    assert code in features(text)
    assert _first(text).family == family


@pytest.mark.parametrize("text", [
    "error code 15",                                            # no API named: 'error 15' says nothing
    "NVML: can't get GPU #0\nsomething else failed, error code 15",    # the number is on another line
    "nvidia-smi: libnvidia-ml.so.1 status 15",                 # a library's file name is not the API speaking
    "NVML version 12.535.2, error code 1.5",                   # a version, not a code
])
def test_small_numbers_are_not_read_without_their_api_on_the_line(text):
    assert not any(k.startswith("code:nvml") for k in features(text))


def test_compose_gpu_request_is_a_containers_way_to_get_the_gpu():
    # round7-a no_device_in_container-cresset-216 (before round 8: driver too old, from the word 'driver'):
    # Compose's deploy.resources.reservations.devices asks for the GPU; CUDA not detected in it
    text = ("CUDA runtime detection failure.\n```\ndeploy: # API dependent on compose version.\n  resources:\n"
            "    reservations:\n      devices:\n        - driver: nvidia\n          capabilities: [ gpu ]\n```\n"
            "The code above is not working in some versions of Docker Compose.")
    assert {"container_gpu", "no_gpu_found", "container"} <= set(features(text, flags=["container"]))
    assert _first(text, ["container"]).family == "no_device_in_container"


@pytest.mark.parametrize("text,term", [
    ("It converts OK (creates the image), but upon running it complains that it can't find cuda.", "no_gpu_found"),
    ("No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'", "no_gpu_found"),
    ("incus config device add c1 gpu gpu\nincus config set c1 nvidia.runtime=true", "container_gpu"),
    ("lxc launch ubuntu:22.04 c1", "container"),
])
def test_other_tools_words_for_a_container_and_cuda_not_found(text, term):
    assert term in features(text)


def test_the_nvrm_version_line_is_no_gpu_fault():
    # round7-a no_device_in_container-incus-1322 shows an 'NVRM Version:' field: the driver's version, no Xid
    assert "xid" not in features("NVIDIA information:\n    CUDA Version:\n    NVRM Version:\n    UUID:")
    assert "xid" in features("NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.")
    assert "xid" in features("kernel: NVRM: GPU at PCI:0000:01:00: GPU-1234 has failed to respond")


SUSPEND_WORDS = [
    # round7-a suspend_resume_uvm-ollama-8638 (before round 8: CUDA initialisation, error 999's differential's
    # first): CUDA working after a boot and failing hours later, the way users tell a suspend they do not name
    ('I run **ollama serve** on Ubuntu 22.04.5 LTS. If I do it right after system boot everything works fine but '
     "can't run it on GPU several hours (mins) later after system boot. The error itself seems to be \n\n"
     '`time=2025-01-28T17:02:55.661+03:00 level=WARN source=gpu.go:623 msg="unknown error initializing cuda driver '
     'library /usr/lib/x86_64-linux-gnu/libcuda.so.550.144.03: cuda driver library init failure: 999. see '
     'https://github.com/ollama/ollama/blob/main/docs/troubleshooting.md for more information"\n`'),
    # the same class in other words (lid, the machine going to sleep)
    "After I close the laptop lid and open it again: RuntimeError: CUDA error: unknown error",
    "cuInit failed: CUDA_ERROR_UNKNOWN once the computer went to sleep overnight",
]


@pytest.mark.parametrize("text", SUSPEND_WORDS)
def test_error_999_with_a_suspend_in_other_words_is_read_as_suspend_resume(text):
    d = _first(text)
    assert d.family == "suspend_resume_uvm"


@pytest.mark.parametrize("text", [
    "RuntimeError: CUDA error: unknown error",                                            # nothing said: the prior
    "After a reboot it works again, then: RuntimeError: CUDA error: unknown error",      # no time passing
])
def test_error_999_without_those_words_stays_with_its_prior(text):
    assert _first(text).family == "cuda_init_error_other"


def test_an_available_providers_list_without_cuda_is_onnxruntimes_cpu_package():
    # round7-a torch_cpu_build-microwakeword-trainer-1 (before round 8: no answer): the list printed on its own line
    text = ("\U0001f527 Torch CUDA Available: True\n  \u2022 Device count: 1\n  \u2022 Current device: 0\n  \u2022 Device "
            "name: NVIDIA GeForce RTX 4060 Ti\n\n\U0001f527 ONNX Runtime Providers:\n  \u2022 ['AzureExecutionProvider', "
            "'CPUExecutionProvider']\n\u26a0\ufe0f  CUDAExecutionProvider not available \u2014 ONNX will fall back to CPU.")
    d = _first(text, ["container"])
    assert (d.family, d.id) == ("torch_cpu_build", "onnxruntime_cpu_package")


def test_the_providers_a_session_applied_are_no_list_of_what_is_installed():
    # eval memo-13: onnxruntime-gpu whose CUDA provider failed to load applies the CPU one: not the CPU package
    text = "Applied providers: ['CPUExecutionProvider'], with options: {'CPUExecutionProvider': {}}"
    assert "onnxruntime_cpu_package" not in [d.id for d in explain_text(text).diagnoses]


LOG_PREFIXED = [
    # round6 extension_build_mismatch-unsloth-8580 (before round 8: no answer): a service's log read through
    # journalctl, every line behind 'Mon dd hh:mm:ss host unit[pid]:'
    ("Aug 12 10:38:34 fileserver unsloth[4073658]: [xformers|WARNING]WARNING[XFORMERS]: xFormers can't load C++/CUDA "
     "extensions. xFormers was built for:\nAug 12 10:38:34 fileserver unsloth[4073658]:     PyTorch 2.10.0+cu128 with "
     "CUDA 1208 (you have 2.11.0+cu130)\nAug 12 10:38:34 fileserver unsloth[4073658]:     Python  3.10.19 (you have "
     "3.13.9)\nAug 12 10:38:34 fileserver unsloth[4073658]:   Please reinstall xformers (see https://github.com/"
     "facebookresearch/xformers#installing-xformers)", "xformers_built_for_other_torch"),
    # the same message behind `docker compose logs`' service column
    ("unsloth-1  | WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\nunsloth-1  |"
     "     PyTorch 2.10.0+cu128 with CUDA 1208 (you have 2.11.0+cu130)\nunsloth-1  |     Python  3.10.19 (you have "
     "3.13.9)", "xformers_built_for_other_torch"),
]


@pytest.mark.parametrize("text,sig", LOG_PREFIXED)
def test_a_log_collectors_line_prefixes_do_not_hide_a_message_spread_over_lines(text, sig):
    d = _first(text)
    assert (d.family, d.id) == ("extension_build_mismatch", sig)
    assert d.title == "xFormers was built for PyTorch 2.10.0+cu128 with CUDA 1208, not the PyTorch installed here"


def test_nccls_own_source_file_warning_is_nccls_word():
    # round6 nccl_errors-nccl-210 (before round 8: no answer): NCCL's log line 'include/socket.h:344 WARN'
    text = "include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol"
    assert "nccl" in features(text)
    assert _first(text).family == "nccl_errors"


@pytest.mark.parametrize("text", [
    "ERROR: Looks like GPU1 are stopped. Restart attempt.",       # round5 xid_or_hardware-ewbf-miner-44 (no answer)
    "After a few hours one of the GPUs dropped off and the miner lost a GPU again",
    # the brief's weak class 'hardware faults in plain words': ECC counts, PCIe AER errors, a GPU that keeps crashing
    "nvidia-smi shows 12 ECC errors on GPU 3 and training crashes",
    "kernel: pcieport 0000:00:01.1: AER: Uncorrected (Fatal) error received: 0000:01:00.0",
    "my GPU keeps crashing when under load, the screen goes black and the fans spin up to 100%",
    "GPU temperature reached 93C and the system shut down",
    "Under full load the PC shuts down after a few minutes of training",
    "nvidia-modeset: ERROR: GPU:0: Error while waiting for GPU progress: 0x0000c67d:0 2:0:4048:4040",
])
def test_a_gpu_dropping_out_in_plain_words_is_a_hardware_fault(text):
    assert {"hardware_stress", "xid"} & set(features(text))
    assert _first(text).family == "xid_or_hardware"


def test_ecc_named_without_a_count_of_errors_is_no_fault():
    assert "hardware_stress" not in features("ECC errors reported: 0, everything fine, but my loss is NaN")
    assert "hardware_stress" not in features("ECC Mode: Enabled")


@pytest.mark.parametrize("text", [
    # the message of round6 unsloth-8580 behind other log collectors' prefixes, and quoted in a reply
    ("2024-05-01T10:00:00.1234567Z WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built "
     "for:\n2024-05-01T10:00:00.1234567Z     PyTorch 2.10.0+cu128 with CUDA 1208 (you have 2.11.0+cu130)"),
    ("2024-05-01T10:00:00.123456789Z stderr F WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers "
     "was built for:\n2024-05-01T10:00:00.123456789Z stderr F     PyTorch 2.10.0+cu128 with CUDA 1208 (you have "
     "2.11.0+cu130)"),
    ("> Aug 12 10:38:34 fileserver unsloth[4073658]: WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. "
     "xFormers was built for:\n> Aug 12 10:38:34 fileserver unsloth[4073658]:     PyTorch 2.10.0+cu128 with CUDA 1208 "
     "(you have 2.11.0+cu130)"),
])
def test_ci_runtime_and_quote_prefixes_are_read_through(text):
    assert _first(text).id == "xformers_built_for_other_torch"


def test_pythons_prompt_is_no_quote():
    from gpudoctor.explain.normalize import normalize
    assert normalize(">>> import torch\n>>> torch.cuda.is_available()\nFalse") == (
        ">>> import torch\n>>> torch.cuda.is_available()\nFalse")


@pytest.mark.parametrize("text", [
    # round3 container-k8sdeviceplugin-23 (before round 8: the vocabulary's driver/library mismatch)
    "loading NVML\nFailed to start nvml with error:  could not load NVML library",
    # the current device plugin's lines (cmd/nvidia-device-plugin/main.go) as kubectl logs shows them
    ("2024/01/04 06:08:15 Loading NVML\n2024/01/04 06:08:15 Failed to initialize NVML: could not load NVML library.\n"
     "2024/01/04 06:08:15 If this is a GPU node, did you set the docker default runtime to `nvidia`?"),
])
def test_a_gpu_daemonset_that_cannot_load_nvml_did_not_get_the_nvidia_runtime(text):
    d = _first(text)
    assert (d.family, d.id) == ("no_device_in_container", "k8s_device_plugin_no_nvml")


def test_the_plugins_hint_alone_after_another_nvml_error_is_not_this_reading():
    # NVML 'Not Supported' (the plugin under WSL) is no missing runtime
    text = ("E  Failed to initialize NVML: Not Supported\nE  If this is a GPU node, did you set the docker default "
            "runtime to `nvidia`?")
    assert "k8s_device_plugin_no_nvml" not in [d.id for d in explain_text(text).diagnoses]


@pytest.mark.parametrize("text", [
    # round5 tf_memory_growth-detr_tensorflow-3 (before round 8: out of memory first): TensorFlow's own cuBLAS handle
    ("Put the following code below import tensorflow as tf at demo.py\nconfig = tf.compat.v1.ConfigProto()\n"
     "config.gpu_options.allow_growth = True\nsession = tf.compat.v1.Session(config=config)\n\notherwise you will get "
     "E tensorflow/stream_executor/cuda/cuda_blas.cc:226] failed to create cublas handle: "
     "CUBLAS_STATUS_NOT_INITIALIZED"),
    # TensorFlow's cuDNN handle failing for memory: its own message outranks the generic ALLOC_FAILED reading
    "2021-03-01 E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED",
])
def test_tensorflows_handles_failing_for_memory_are_memory_growth(text):
    assert _first(text).family == "tf_memory_growth"


def test_cublas_handle_failing_outside_tensorflow_stays_out_of_memory():
    text = "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"
    assert _first(text).family == "oom"


@pytest.mark.parametrize("text", [
    "cuInit returned CUDA_ERROR_SYSTEM_DRIVER_MISMATCH after apt upgrade, nvidia-smi works",
    ("I updated my nvidia driver yesterday and now: Error 803: system has unsupported display driver / cuda driver "
     "combination"),
])
def test_error_803_after_a_driver_update_is_the_module_waiting_for_a_reboot(text):
    # round7-a driver_library_mismatch-sceneworks-1966's cause (a staged driver update, reboot pending), told in the
    # text: 803's differential (cuda-compat 5, driver update 3) turns to the update
    d = _first(text)
    assert (d.family, d.id) == ("driver_library_mismatch", "cuda_system_driver_mismatch")


def test_error_803_with_nothing_said_stays_with_its_prior():
    text = "ggml_cuda_init: failed to initialize CUDA: system has unsupported display driver / cuda driver combination"
    assert _first(text).family == "cuda_compat_unsupported"


@pytest.mark.parametrize("text", [
    # the brief's weak class 'a CPU-only build of torch', in the ways users show it: torch.version.cuda is None,
    # conda's CPU build strings, the old pytorch-cpu package
    ">>> import torch\n>>> torch.version.cuda\n>>> print(torch.version.cuda)\nNone",
    "torch.version.cuda: None, torch.backends.cudnn.enabled: True",
    "pytorch                   2.0.1           cpu_py310hab5cca8_0    conda-forge",
    "conda list shows pytorch 2.1.0 py3.10_cpu_0 pytorch",
    "pytorch-cpu 1.1.0 installed via conda; cuda not found",
])
def test_a_cpu_build_of_torch_shown_by_its_version_fields_or_conda_build(text):
    assert "cpu_build" in features(text)
    assert _first(text).family == "torch_cpu_build"


def test_torch_version_cuda_with_a_version_is_no_cpu_build():
    assert "cpu_build" not in features(">>> torch.version.cuda\n'12.1'")
