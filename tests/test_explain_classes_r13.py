"""Classes of real errors round 13 of issue 10 reads for the class (REAL texts of the tunable sets, named next to
each): a program's own check for a CUDA-capable GPU (AliceVision/Meshroom, C++ tools), which most often fails on a
machine with no NVIDIA GPU and otherwise on a driver too old for the program's CUDA; the machine decides."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text
from tests.test_explain_differential import facts

MESHROOM = "[18:38:10.598817][error] This program needs a CUDA-Enabled GPU (with at least compute capablility 2.0)."


@pytest.mark.parametrize("text", [
    # round12-a no_nvidia_gpu-meshroom-370 (before round 13: no answer): the whole text
    "[11:54:41.413540][error] This program needs a CUDA-Enabled GPU (with at least compute capablility 2.0).",
    # round12-a no_nvidia_gpu-meshroom-2140 (before: no answer), an AMD RX 6700 XT
    "[10:18:51.765156][warning] Could not determine number of CUDA cards in this system\n"
    "[10:18:51.765156][warning] No CUDA-Enabled GPU.\nCUDA build version: 11.6\n"
    "[10:18:51.765156][error] This program needs a CUDA-Enabled GPU (with at least compute capability 2.0).",
    # round12-a no_nvidia_gpu-meshroom-218 (before: a driver too old, from the insufficient-driver line): on Windows
    # with no NVIDIA driver at all, the CUDA runtime reports the driver as insufficient
    "[11:15:01.772700][error] cudaGetDeviceCount failed: CUDA driver version is insufficient for CUDA runtime version\n"
    "[11:15:01.772700][error] This program needs a CUDA-Enabled GPU (with at least compute capability 2.0).",
    # round11 no_nvidia_gpu-sunone-aimbot-10 (before: no answer): a C++/TensorRT build on an AMD GPU
    "No GPU devices with CUDA support available.",
    "[info] Can't find CUDA-Enabled GPU.",
])
def test_a_programs_own_cuda_gpu_check_ranks_a_machine_without_an_nvidia_gpu_first(text):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family) == ("program_needs_cuda_gpu", "no_nvidia_gpu")
    assert d[0].title == "The program found no CUDA-capable NVIDIA GPU to run on"
    cands = d[0].differential.candidates
    assert [c.family for c in cands] == ["no_nvidia_gpu", "driver_too_old", "no_device_in_container"]
    assert cands[0].prior > cands[1].prior > 0          # counted from real threads (6 and 3 at round 13's count)
    assert cands[2].unplaced                            # nothing says this is a container
    assert cands[0].tell_apart.command == "lspci -nn | grep -i nvidia" and cands[1].tell_apart.command == "nvidia-smi"
    # the insufficient-driver line, when there is one, stays a diagnosis of its own, after the program's check
    assert [x.family for x in d][1:] == (["driver_too_old"] if "insufficient" in text else [])


@pytest.mark.parametrize("scenario,family,check,other", [
    ("core-gpu-less", "no_nvidia_gpu", "DRV001", "driver_too_old"),
    ("fw-torch-cu121-old-driver-515", "driver_too_old", "TRC002", "no_nvidia_gpu"),
])
def test_the_machine_decides_which(scenario, family, check, other):
    d = explain_text(MESHROOM, facts=facts(scenario)).diagnoses[0]
    assert d.family == family and d.machine["check"] == check
    verdicts = {c.family: c.verdict for c in d.differential.candidates}
    assert verdicts[family].kind == "decided"
    if family == "driver_too_old":                      # a T4 is there: not a machine without an NVIDIA GPU
        assert verdicts[other].kind == "ruled_out" and verdicts[other].check == "INV001"


def test_in_a_container_a_programs_gpu_check_reads_as_the_container_started_without_the_gpu():
    d = explain_text(MESHROOM, flags=["container"]).diagnoses
    assert (d[0].id, d[0].family) == ("program_needs_cuda_gpu", "no_device_in_container")
    cands = {c.family: c for c in d[0].differential.candidates}
    assert cands["no_device_in_container"].clue == "container: --context"
    assert cands["no_device_in_container"].tell_apart.command.startswith("ls -l /dev/nvidia")
    # without a container, its check says so instead of ranking it
    alone = explain_text(MESHROOM).diagnoses[0].differential.candidates
    assert [c.family for c in alone][-1] == "no_device_in_container" and alone[-1].unplaced


def test_a_healthy_machine_rules_both_readings_out():
    cands = explain_text(MESHROOM, facts=facts("core-healthy-workstation")).diagnoses[0].differential.candidates
    assert {c.family: c.verdict.kind for c in cands} == {"no_nvidia_gpu": "ruled_out", "driver_too_old": "ruled_out",
                                                         "no_device_in_container": "ruled_out"}


@pytest.mark.parametrize("text", [
    "This program can use a CUDA-Enabled GPU when one is present.",
    "Found 2 CUDA-Enabled GPUs",
    "CUDA-Enabled GPU: NVIDIA GeForce RTX 3090",
])
def test_naming_a_cuda_gpu_is_no_such_finding(text):
    assert "program_needs_cuda_gpu" not in [x.id for x in explain_text(text).diagnoses]


@pytest.mark.parametrize("text", [
    # round5 torch_cpu_build-facefusion-278 (before round 13: no answer)
    "facefusion EXECUTION PROVIDERS NOT cuda options?",
    # round8 torch_cpu_build-facefusion-269 (before: no answer): onnxruntime and onnxruntime-gpu both installed
    "Cuda and tensort keep disappearing as EXECUTION PROVIDERS despite the fact that they are both installed correctly "
    "and are in the PATH leaving only Azure and CPU as the EXECUTION PROVIDERS both of which are slow as hell",
    # round11 torch_cpu_build-facefusion-156 (before: no answer)
    "1.3.1   EXECUTION PROVIDERS only azure  and cpu,not have cuda and tensorrt",
])
def test_facefusions_execution_providers_without_cuda_are_the_cpu_onnxruntime(text):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family) == ("onnxruntime_cpu_package", "torch_cpu_build")
    assert "pip uninstall -y onnxruntime onnxruntime-gpu" in "\n".join(d[0].fix.commands)


@pytest.mark.parametrize("text", [
    "EXECUTION PROVIDERS: cuda, cpu",
    "EXECUTION PROVIDERS cuda tensorrt cpu",
    "execution providers: only cpu is fine for me",          # FaceFusion's label is in capitals; prose in lower case
])
def test_execution_providers_listing_cuda_is_no_such_finding(text):
    assert "onnxruntime_cpu_package" not in [x.id for x in explain_text(text).diagnoses]


@pytest.mark.parametrize("text", [
    # round10 not_env_problem-depth-semantic-fully-conv-3 (before round 13: a cuDNN installation problem claimed)
    "RuntimeError: cuDNN requires contiguous input tensor",
    "RuntimeError: cuDNN requires contiguous weight tensor",
])
def test_a_non_contiguous_tensor_handed_to_cudnn_is_the_programs_bug(text):
    r = explain_text(text)
    assert r.diagnoses == [] and r.exit_code == 1
    assert [(n.id, n.kind) for n in r.notes] == [("cudnn_noncontiguous_tensor", "program_bug")]
    assert ".contiguous()" in " ".join(r.notes[0].explanation)


def test_a_cudnn_library_missing_next_to_it_is_still_said():
    text = ("RuntimeError: cuDNN requires contiguous input tensor\n"
            "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared "
            "object file: No such file or directory")
    assert "cudnn_mismatch_or_missing" in [d.family for d in explain_text(text).diagnoses]


@pytest.mark.parametrize("text,device", [
    # round12-a cuda_visible_devices-enroot-207 (before round 13: the container started without GPUs): Slurm's
    # host-wide indices of a partial allocation handed to a job that sees its GPUs from 0
    ("nvidia-container-cli: device error: 4: unknown device", "4"),
    ("stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: device error: "
     "GPU-3a1b2c3d-0000-1111-2222-333344445555: unknown device: unknown.", "GPU-3a1b2c3d-0000-1111-2222-333344445555"),
    ("nvidia-container-cli: device error: 0000:3b:00.0: unknown device", "0000:3b:00.0"),
    ("nvidia-container-cli: device error: 1:0: unknown device", "1:0"),                  # a MIG index
])
def test_the_container_runtime_asked_for_a_gpu_the_host_does_not_have(text, device):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family) == ("container_unknown_device", "cuda_visible_devices")
    assert d[0].title == f"The container asks for GPU {device}, which this host does not have"


def test_a_device_count_cut_short_is_still_more_gpus_than_visible():
    # round12-a cuda_visible_devices-autovc-42 (before round 13: no answer): the thread's title, cut off
    d = explain_text("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count").diagnoses
    assert (d[0].id, d[0].family) == ("more_gpus_than_visible", "cuda_visible_devices")


@pytest.mark.parametrize("text,title", [
    # round11 extension_build_mismatch-waifu2x-converter-cpp-203 (before round 13: no answer): nvcc's check quoted
    # without its "unsupported GNU version!" prefix
    ("gcc versions later than 8 are not supported", "This nvcc accepts gcc up to version 8, and the host compiler is newer"),
    ("#error -- unsupported GNU version! gcc versions later than 12 are not supported!",
     "This nvcc accepts gcc up to version 12, and the host compiler is newer"),
    ("crt/host_config.h:143:2: error: #error -- unsupported GNU version! gcc 13 and up are not supported",
     "This nvcc accepts gcc older than 13, and the host compiler is not"),
])
def test_nvccs_host_compiler_check_in_any_quoting(text, title):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family, d[0].title) == ("nvcc_unsupported_gcc", "extension_build_mismatch", title)


@pytest.mark.parametrize("text", [
    # round10 arch_unsupported-lmflow-88 and arch_unsupported-x-flux-comfyui-24 (before round 13: no answer)
    "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0",
    "bf16 is only supported on A100+ GPUs",
    "BF16 is only supported on Ampere GPUs",
])
def test_bf16_refused_for_the_gpu_is_the_gpus_architecture(text):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family) == ("bf16_needs_ampere", "arch_unsupported")


@pytest.mark.parametrize("text", ["use bf16 if your GPU supports bf16", "bf16: true"])
def test_bf16_named_alone_is_no_such_finding(text):
    assert "bf16_needs_ampere" not in [x.id for x in explain_text(text).diagnoses]


@pytest.mark.parametrize("text,module", [
    # round11 no_nvidia_gpu-openmm-1006 (before round 13: the module not loaded): a cluster head node, no GPU
    ("FATAL: Error inserting nvidia (/lib/modules/2.6.32-358.18.1.el6.x86_64/extra/nvidia.ko): No such device", "nvidia"),
    # round3 no_gpu-ec2hashcat-3: a CPU instance
    ("Generating bitmap tables with 16 bits...modprobe: ERROR: could not insert 'nvidia': No such device", "nvidia"),
    # round5 cuda_init_error_other-Bumblebee-623: the Optimus GPU powered off
    ("> modprobe: ERROR: could not insert 'nvidia_331_updates_uvm': No such device", "nvidia_331_updates_uvm"),
])
def test_the_module_finding_no_gpu_ranks_no_nvidia_gpu_first(text, module):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family) == ("module_insert_no_such_device", "no_nvidia_gpu")
    assert d[0].title == f"The kernel would not load {module}: the module found no NVIDIA GPU to drive"
    cands = d[0].differential.candidates
    assert [c.family for c in cands] == ["no_nvidia_gpu", "cuda_init_error_other", "nouveau_conflict"]
    assert [c.prior for c in cands] == [4, 1, 0]               # round 16's count of the real threads
    assert cands[2].tell_apart.check == "NOU001"


def test_nouveau_on_the_machine_decides_the_module_finding_no_gpu():
    d = explain_text("modprobe: ERROR: could not insert 'nvidia': No such device",
                     facts=facts("sys-nouveau-loaded")).diagnoses[0]
    assert d.family == "nouveau_conflict" and d.machine["family"] == "nouveau_conflict"
    verdicts = {c.family: c.verdict for c in d.differential.candidates}
    assert verdicts["nouveau_conflict"].kind == "decided"
    assert verdicts["cuda_init_error_other"] is None                 # no check reads bbswitch: its command is said


@pytest.mark.parametrize("text,title", [
    # round10 driver_not_loaded-negativo17-nvidia-driver-97 (before round 13: no answer)
    ("nvidia: version magic '5.4.18-100.fc30.x86_64 SMP mod_unload ' should be '5.4.18-200.fc31.x86_64 SMP mod_unload '",
     "The NVIDIA module was built for kernel 5.4.18-100.fc30.x86_64, but kernel 5.4.18-200.fc31.x86_64 is running"),
    ("modprobe: ERROR: could not insert 'nvidia': Exec format error",
     "The NVIDIA module on disk was built for another kernel than the one running"),
    ("insmod: ERROR: could not insert 'nvidia_uvm': Invalid module format",
     "The NVIDIA module on disk was built for another kernel than the one running"),
])
def test_a_module_built_for_another_kernel(text, title):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family, d[0].title) == ("module_built_for_other_kernel", "driver_not_loaded", title)


@pytest.mark.parametrize("text,arch", [
    # round9 extension_build_mismatch-apex-1527 (before round 13: no answer): an H100 under an older PyTorch
    ("ValueError: Unknown CUDA arch (9.0) or GPU not supported", "9.0"),
    ("    raise ValueError(f\"Unknown CUDA arch ({arch}) or GPU not supported\")\n"
     "ValueError: Unknown CUDA arch (12.0) or GPU not supported", "12.0"),
])
def test_torch_not_knowing_the_arch_to_build_for(text, arch):
    d = explain_text(text).diagnoses
    assert (d[0].id, d[0].family) == ("torch_extension_unknown_arch", "extension_build_mismatch")
    assert d[0].title == f"This PyTorch cannot build extensions for CUDA arch {arch}: it does not know that GPU architecture"


def test_the_driver_apis_invalid_source_reads_like_an_invalid_image_with_its_own_number():
    # round10 arch_unsupported-cupy-8045 (before round 13: no answer; now the architecture is the ranked second)
    d = explain_text("CUDA_ERROR_INVALID_SOURCE: device kernel image is invalid").diagnoses
    assert (d[0].id, d[0].family) == ("invalid_kernel_image", "driver_too_old")
    assert "(CUDA_ERROR_INVALID_SOURCE, error 300)" in d[0].title
    assert [x.family for x in d][:2] == ["driver_too_old", "arch_unsupported"]
    plain = explain_text("RuntimeError: CUDA error: device kernel image is invalid").diagnoses[0]
    assert "(device kernel image is invalid, error 200)" in plain.title


def _clue_lifted_alternatives():
    from gpudoctor.explain import catalog
    # those that can be shown first: a clue lifts them, or they outrank the message's own reading
    return [(s, a) for s in catalog.load().signatures for a in s.alternatives if a.specificity is not None
            and (a.replaces or a.specificity >= s.specificity or (a.requires and a.title))]


@pytest.mark.parametrize("sig,alt", _clue_lifted_alternatives(), ids=lambda x: getattr(x, "id", None) or x.family)
def test_a_reading_with_its_own_title_says_its_own_why(sig, alt):
    """A clue (container, WSL, nouveau, Secure Boot...) that puts an alternative first shows that alternative's title;
    the "why" under it must be written for the same reading, not the message's other cause ("Almost always
    CUDA_VISIBLE_DEVICES hides them" under "the container was started without it")."""
    assert alt.title and alt.explanation, f"{sig.id} -> {alt.family}: shown first with a title or why not its own"
    assert list(alt.explanation) != list(sig.explanation)


@pytest.mark.parametrize("text,flags,family,words", [
    ("RuntimeError: No CUDA GPUs are available", ["container"], "no_device_in_container", "started without the GPU"),
    ("RuntimeError: No CUDA GPUs are available", ["colab"], "no_nvidia_gpu", "Change runtime type"),
    (">>> torch.cuda.is_available()\nFalse", ["wsl"], "wsl_specific", "/usr/lib/wsl/lib"),
])
def test_the_why_under_a_clued_reading_is_that_readings(text, flags, family, words):
    d = explain_text(text, flags=flags).diagnoses[0]
    assert d.family == family
    why = " ".join(d.explanation)
    assert words in why and "Almost always CUDA_VISIBLE_DEVICES" not in why


@pytest.mark.parametrize("text,family,sig_id", [
    ("docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime "
     "create failed: runc create failed: unable to start container process: error during container init: error running "
     "hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
     "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown",
     "driver_library_mismatch", "container_cli_initialization_error"),
    ("RuntimeError: Unable to load cuDNN. Is it installed?", "cudnn_mismatch_or_missing", "jax_cuda_library_missing"),
])
def test_a_value_that_names_the_cause_is_the_lines_one_judgment(text, family, sig_id):
    """NVML's reason is the version mismatch: not also 'the container runtime could not reach the driver' with the
    opposite fix (install or load the driver)."""
    d = explain_text(text).diagnoses
    assert [x.family for x in d] == [family]
    assert sig_id in [d[0].id, *d[0].also_matched]


def test_without_the_naming_value_the_message_keeps_its_own_reading():
    d = explain_text("nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open "
                     "shared object file: no such file or directory: unknown").diagnoses
    assert d[0].family == "no_device_in_container"
    assert "driver_library_mismatch" not in [x.family for x in d]


def test_a_family_title_keeps_a_names_own_capitals():
    from gpudoctor.explain.diagnose import Diagnoser
    title = Diagnoser._title
    class P:                                    # a proposal without titles of its own: the family's title is used
        titles = ()
    assert title(None, "cudnn_mismatch_or_missing", P, {}) == "cuDNN missing or the wrong version"
    assert title(None, "wsl_specific", P, {}) == "A WSL GPU set-up problem"
    assert title(None, "nouveau_conflict", P, {}) == "Nouveau holds the GPU"


@pytest.mark.parametrize("text", [
    "I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library libcudart.so.11.0",
    "I tensorflow/stream_executor/dso_loader.cc:135] successfully opened CUDA library libcublas.so.8.0 locally",
    "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1510] Created device /job:localhost/replica:0/task:0/device:"
    "GPU:0 with 10417 MB memory:  -> device: 0, name: NVIDIA GeForce RTX 3080 Ti, pci bus id: 0000:01:00.0, compute "
    "capability: 8.6",
    "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1406] Created TensorFlow device (/job:localhost/replica:0/"
    "task:0/device:GPU:0 with 7011 MB memory) -> physical GPU (device: 0, name: GeForce GTX 1080, pci bus id: "
    "0000:01:00.0, compute capability: 6.1)",
    "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1618] Found device 0 with properties: \nname: GeForce RTX 2080 "
    "Ti major: 7 minor: 5 memoryClockRate(GHz): 1.545",
    "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1746] Adding visible gpu devices: 0",
    "I tensorflow/stream_executor/cuda/cuda_gpu_executor.cc:941] successful NUMA node read from SysFS had negative "
    "value (-1), but there must be at least one NUMA node, so returning NUMA node zero",
    "GPU available: True (cuda), used: True",
    "node1:2345:2390 [0] NCCL INFO comm 0x55d5e0 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
])
def test_a_line_reporting_a_working_part_is_no_complaint(text):
    """TensorFlow's info lines name libcudart, compute capability, the GPU: words of a working stack, not a failure
    (the vocabulary fallback read them as missing libraries or an unsupported architecture)."""
    assert explain_text(text).diagnoses == []


def test_the_failure_beside_a_working_line_is_still_read():
    text = ("I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully opened dynamic library "
            "libcudart.so.11.0\nW tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
            "library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory")
    assert explain_text(text).diagnoses[0].family in ("cudnn_mismatch_or_missing", "tf_no_gpu_libs")
