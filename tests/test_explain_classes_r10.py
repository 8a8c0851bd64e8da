"""Classes of real errors round 10 of issue 10 reads for the class (REAL texts of round9-a, the tunable half of
frozen-test-9, named next to each): a Mac said by the user or the snapshot, FlashAttention's older architecture
check, PyTorch Lightning asked for GPU indices that do not exist, a malformed torch device string (the program's)
and PaddlePaddle's words for CUDA finding no device."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from gpudoctor.explain.context import Context, read_machine
from gpudoctor.explain.pipeline import explain_text
from tests.explain_support import first_diagnosis as _first

NOT_COMPILED = "AssertionError: Torch not compiled with CUDA enabled"


def test_a_mac_said_by_the_user_reads_torch_without_cuda_as_no_nvidia_gpu():
    # round9-a no_nvidia_gpu-bert4eth-4, -glm-tts-31, -comfyui-liveportraitkj-31, -stable-diffusion-videos-79: the bare
    # message on Apple-silicon Macs; without a word of the Mac in the text it reads as a CPU-only build first
    assert [d.family for d in explain_text(NOT_COMPILED).diagnoses][:2] == ["torch_cpu_build", "no_nvidia_gpu"]
    assert _first(NOT_COMPILED, ["macos"]).family == "no_nvidia_gpu"


def test_explain_takes_macos_as_a_context_on_the_command_line(gpudoctor_cli):
    out = gpudoctor_cli("explain", "--json", "--context", "macos", NOT_COMPILED)
    assert out.returncode == 0, out
    assert json.loads(out.stdout)["diagnoses"][0]["family"] == "no_nvidia_gpu"
    assert gpudoctor_cli("explain", "--context", "mac", NOT_COMPILED).returncode == 2


class _Facts:
    def __init__(self, **values):
        self.values = values

    def get(self, name):
        return self.values.get(name)


@pytest.mark.parametrize("system, flag", [("darwin", "macos"), ("windows", "windows"), ("linux", None)])
def test_a_snapshot_of_a_mac_sets_the_macos_flag(system, flag):
    ctx = Context()
    read_machine(ctx, _Facts(target_os=system, container=SimpleNamespace(inside=False)))
    assert ctx.flags & {"macos", "windows"} == ({flag} if flag else set())


def test_flash_attention_s_older_architecture_check_is_arch_unsupported():
    # round9-a arch_unsupported-fastchat-498 (before round 10: no answer): V100s (sm_70) and flash-attn 1.x
    text = ("RuntimeError: Expected is_sm90 || is_sm8x || is_sm75 to be true, but got false.  (Could this error "
            "message be improved?  If so, please report an enhancement request to PyTorch.)")
    d = _first(text)
    assert (d.family, d.id) == ("arch_unsupported", "flash_attention_needs_ampere")
    assert d.title == ("FlashAttention's kernels were built only for some GPU architectures "
                       "(is_sm90 || is_sm8x || is_sm75), and this GPU is not one of them")
    assert explain_text("Expected is_sm80 to be true, but got false").diagnoses[0].id == "flash_attention_needs_ampere"
    assert explain_text("Expected x_is_contiguous to be true, but got false").diagnoses == []


@pytest.mark.parametrize("text, title", [
    # round9-a cuda_visible_devices-nemo-1564 (before round 10: no answer): gpus=[1] on a one-GPU machine
    ("MisconfigurationException: \n                You requested GPUs: [1]\n                But your machine only has: [0]",
     "PyTorch Lightning was asked for GPU(s) [1], which this process does not see"),
    ("You requested GPUs: [0, 1] But your machine only has: [0]",
     "PyTorch Lightning was asked for GPU(s) [0, 1], but this process sees only [0]"),
])
def test_lightning_asked_for_gpu_indices_that_are_not_there_is_cuda_visible_devices(text, title):
    d = _first(text)
    assert (d.family, d.id, d.title) == ("cuda_visible_devices", "lightning_requested_gpus_missing", title)


def test_a_malformed_device_string_is_the_program_s_not_the_environment_s():
    # round9-a not_env_problem-conplex-34 (before round 10: the vocabulary's CUDA_VISIBLE_DEVICES, a false claim)
    result = explain_text("    device = torch.device(f\"cuda:{device_no}\" if use_cuda else \"cpu\")\n"
                          "RuntimeError: Invalid device string: 'cuda:cuda:0'")
    assert result.diagnoses == [] and result.exit_code == 1
    assert [n.title for n in result.notes] == ["The program builds a malformed device string: a bug in the program "
                                               "or its arguments"]


# round 17: Paddle's own message reads as a driver older than the wheel's CUDA (four of its five tunable threads,
# round9's paddleclas-965, paddle-21638, paddle-22749 and paddle-18602), or a container started without the GPU
@pytest.mark.parametrize("flags, sig, family", [((), "paddle_with_gpu_no_gpu", "driver_too_old"),
                                               (("container",), "paddle_with_gpu_no_gpu", "no_device_in_container")])
def test_paddle_s_no_gpu_found_in_runtime_is_cuda_finding_no_device(flags, sig, family):
    # round9-a no_device_in_container-paddle-models-4486, arch_unsupported-paddle-22749 (before round 10: no answer):
    # PaddlePaddle's words for cudaGetDeviceCount finding none; its maintainers name the driver first, then the GPU
    # not passed into the container
    d = _first("W0224 20:13:37.593991 12824 init.cc:128] Compiled with WITH_GPU, but no GPU found in runtime.", flags)
    assert (d.id, d.family) == (sig, family)
    assert all(x.id != "cuinit_no_device" for x in explain_text(
        "W0224 20:13:37.593991 12824 init.cc:128] Compiled with WITH_GPU, but no GPU found in runtime.",
        flags=set(flags)).diagnoses)


@pytest.mark.parametrize("flags", [(), ("wsl",)])
def test_an_extension_without_modules_for_this_gpu_s_capability_is_an_extension_build_mismatch(flags):
    # round9-a extension_build_mismatch-tiny-cuda-nn-230 (before round 10: WSL, from the environment's WSL)
    d = _first("OSError: Could not find compatible tinycudann extension for compute capability 75.", flags)
    assert (d.family, d.id) == ("extension_build_mismatch", "extension_not_built_for_this_capability")
    assert d.title == ("The installed tinycudann extension was built for other GPU architectures, not compute "
                       "capability 75")


@pytest.mark.parametrize("text", [
    # round8 torch_cpu_build-deep-packet-4 (before round 10: no answer): a `cpuonly` conda environment
    "pytorch_lightning.utilities.exceptions.MisconfigurationException: GPUs requested but none are available.",
    # Lightning 2.x's words for the same check
    "MisconfigurationException: GPUAccelerator can not run on your system since the accelerator is not available.",
])
def test_lightning_s_words_for_cuda_not_available_read_like_torch_s(text):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family) == ("torch_cuda_not_available", "torch_cpu_build")
    assert d[0].title == "PyTorch cannot use CUDA here: torch.cuda.is_available() is False"
    assert _first(text, ["container"]).family == "no_device_in_container"


CUDNN_NEEDS_LIBCUDA = ("Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object "
                       "file: No such file or directory")


def test_cudnn_missing_libcuda_is_wsl_only_when_wsl_is_said():
    # round7 cudnn_mismatch_or_missing-3dino-2 and -openvoice-63 (plain Linux; before round 10: WSL first); the three
    # tunable threads labelled WSL (dev nougat-115, round7 yolov10-395, tune seamless-communication-167) say WSL
    d = explain_text(CUDNN_NEEDS_LIBCUDA).diagnoses
    assert (d[0].id, d[0].family) == ("cudnn_needs_libcuda", "cudnn_mismatch_or_missing")
    assert d[0].title == "cuDNN (libcudnn_cnn_infer.so.8) cannot load the driver's libcuda.so"
    assert "wsl_specific" in [x.family for x in d]
    w = _first(CUDNN_NEEDS_LIBCUDA, ["wsl"])
    assert (w.id, w.family, w.title) == ("cudnn_needs_libcuda", "wsl_specific",
                                         "cuDNN cannot load libcuda.so under WSL (libcudnn_cnn_infer.so.8)")


@pytest.mark.parametrize("text", ["cuda error: 100% of kernels failed", "nvml status 15% busy, gpu error 35.5 ms"])
def test_the_vocabulary_reads_no_error_code_from_a_percentage_or_a_decimal(text):
    from gpudoctor.explain.words import features

    assert not [f for f in features(text) if f.startswith("code:")]


def test_the_vocabulary_speaks_when_its_best_family_holds_a_tenth_of_a_word():
    # round8 no_device_in_container-deepo-30 (before round 10: no answer at the old threshold of a third): a
    # Singularity container and "can't find cuda" point first to a container without the GPU, with 0.27 of a word
    from gpudoctor.explain import fallback

    assert fallback.MIN_SHARE == 0.1                    # round 10: 0.2; round 14: 0.1
    d = _first("upon running it complains that it can't find cuda. sudo singularity build py27-gpu.img "
               "docker://ufoym/deepo:all-py27")
    assert (d.id, d.family) == ("vocabulary", "no_device_in_container")


def test_autocast_s_warning_that_cuda_is_not_available_reads_like_is_available_false():
    # round7 no_device_in_container-tibava-2 (before round 10: the vocabulary's CUDA_VISIBLE_DEVICES): a CPU-only
    # compose file; in a container the container comes first
    text = ("/usr/local/lib/python3.10/site-packages/torch/amp/autocast_mode.py:250: UserWarning: User provided "
            "device_type of 'cuda', but CUDA is not available. Disabling")
    assert (_first(text).id, _first(text).family) == ("torch_cuda_not_available", "torch_cpu_build")
    assert _first(text, ["container"]).family == "no_device_in_container"


DOCKER_NO_NVIDIA = 'Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]]'


def test_on_a_mac_no_nvidia_gpu_outranks_the_readings_a_message_proposes():
    # round2 no_nvidia_gpu-translation-layoutrecovery-7 (docker compose on an M2) and round1 txt2mask-18: on a Mac no
    # container, driver or build fix gives the machine CUDA
    assert _first(DOCKER_NO_NVIDIA, ["container"]).family == "no_device_in_container"
    d = explain_text(DOCKER_NO_NVIDIA, flags=["container", "macos"]).diagnoses
    assert [x.family for x in d][:2] == ["no_nvidia_gpu", "no_device_in_container"]
    assert d[0].id == "docker_could_not_select_device_driver"
    # an NVIDIA GPU named in the text (an old Mac with a GeForce) keeps the message's own reading
    assert _first(DOCKER_NO_NVIDIA + "\nGPU: NVIDIA GeForce GT 750M", ["container", "macos"]).family == \
        "no_device_in_container"


def test_on_a_mac_an_extension_that_does_not_import_stays_the_extension_s_problem():
    # tune extension_build_mismatch-semv2-8 (mmcv-full without its ops on an M1)
    assert _first("ModuleNotFoundError: No module named 'mmcv._ext'", ["macos"]).family == "extension_build_mismatch"


@pytest.mark.parametrize("environment, mac", [
    ({"os": "macOS on Apple M1", "framework": "mmcv-full"}, True),
    ({"summary": "macOS on Apple M3 Pro (no NVIDIA GPU), ComfyUI"}, True),
    ({"platform": "Mac M1 (no CUDA)"}, True),
    ({"os": "macOS 10.13.6", "cuda": "9.2", "driver": "396.148"}, False),      # the last macOS with NVIDIA drivers
    ({"os": "macOS 12", "gpu": "NVIDIA GeForce GTX 1080 (eGPU)"}, False),
    ({"summary": "Linux, RTX 4090"}, False),
])
def test_the_accuracy_bench_reads_a_mac_without_an_nvidia_gpu_from_the_environment(environment, mac):
    from tests.test_explain_cases import context_flags

    assert ("macos" in context_flags(environment)) is mac
