"""VIS001: do nvidia-smi, NVML, torch and TensorFlow see the same GPUs, and which setting explains it when not.

Recordings: fixtures/nvidia-smi/xml (two RTX 2080 Ti on driver 410.73, an RTX 3060 on 570.124.04); the
TensorFlow log lines are TensorFlow's own formats (gpu_device.cc, cuda_driver.cc, dso_loader.cc).
"""

from __future__ import annotations

import pytest

from gpudoctor.findings import Status
from gpudoctor_checks import device_lists
from tests.test_framework_checks import RTX3060, RTX2080TI_X2, SM50_90, run, snap, tf_rec, torch_rec

# The two RTX 2080 Ti of the recording, in nvidia-smi's (PCI) order.
U = ["57567e11-0be2-381b-5132-2ad95c262e58", "ef1d0068-5bfd-f1e4-7e79-ff35d71d44b8"]
IGNORED = ("2024-01-01 I tensorflow/core/common_runtime/gpu/gpu_device.cc:1700] Ignoring visible gpu device "
           "(device: 1, name: GeForce RTX 2080 Ti, pci bus id: 0000:02:00.0, compute capability: 7.5) with core "
           "count: 3. The minimum required count is 8. You can adjust this requirement with the env var "
           "TF_MIN_GPU_MULTIPROCESSOR_COUNT.")
CUINIT = ("E tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:268] failed call to cuInit: "
          "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")
CUDNN = ("W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
         "'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory")


def devices(uuids):
    return [{"index": i, "name": "GeForce RTX 2080 Ti", "uuid": u} for i, u in enumerate(uuids)]


def vis(smi=RTX2080TI_X2, **kw):
    return run(device_lists.device_lists_agree, snap(smi, **kw))


def lines(finding):
    return [(e.source, e.excerpt) for e in finding.evidence]


def test_only_nvidia_smi_is_nothing_to_compare():
    f = vis()
    assert (f.status, f.title, f.evidence) == (
        Status.SKIP, "only nvidia-smi listed GPUs: no NVML reading and no framework to compare with", ())


def test_every_layer_agreeing_names_each_layer_and_the_count():
    f = vis(nvml={"device_count": {"value": 2}, "devices": []},
            frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=devices(U)),
                        "tensorflow": tf_rec("2.15.0", "12.2", "8", gpus=2)})
    assert (f.status, f.title) == (Status.OK, "nvidia-smi, NVML, torch and TensorFlow agree: 2 GPU(s)")
    assert lines(f) == [("command:nvidia_smi_xml", "nvidia-smi: 2 GPU(s)"), ("nvml:device_count", "NVML: 2 GPU(s)"),
                        ("framework:torch", "torch: 2 GPU(s)"), ("framework:tensorflow", "TensorFlow: 2 GPU(s)")]


def test_cuda_visible_devices_is_quoted_with_what_it_leaves():
    f = vis(env={"CUDA_VISIBLE_DEVICES": "1"},
            frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=devices(U[1:]))})
    assert f.status is Status.OK
    assert ("env:CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES='1' leaves 1 visible to CUDA") in lines(f)
    wrong = vis(env={"CUDA_VISIBLE_DEVICES": "1"},
                frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=devices(U[:1]))})
    assert (wrong.status, wrong.title) == (Status.FAIL, "the GPU lists disagree: torch's GPUs are not the ones "
                                                        "CUDA_VISIBLE_DEVICES selects")


@pytest.mark.parametrize("smi, torch, reason", [
    (RTX2080TI_X2, torch_rec("2.4.0+cu124", "12.4", SM50_90, available=False, count=0),
     "the driver is too old for torch's CUDA (TRC002)"),          # driver 410.73 < CUDA 12.4's minimum
    (RTX3060, torch_rec("2.4.0+cu124", "12.4", SM50_90, available=False, count=0),
     "torch cannot initialise CUDA (TRC004)"),                    # driver 570 is new enough: something else
])
def test_torch_seeing_none_is_explained_by_the_check_that_says_why(smi, torch, reason):
    f = vis(smi, frameworks={"torch": torch})
    n = 2 if smi == RTX2080TI_X2 else 1
    assert (f.status, f.title) == (Status.WARN, f"the GPU lists disagree: torch sees 0 GPU(s) where CUDA should "
                                                f"see {n}: {reason}")
    assert f.symptom_of == (reason[-7:-1],)
    assert f.fix.summary.startswith(f"torch sees 0 GPU(s) where CUDA should see {n}: {reason}. ")


@pytest.mark.parametrize("tf, reason, named", [
    (tf_rec("2.15.0"), "TensorFlow is a CPU build (TF001)", ("TF001",)),
    (tf_rec("2.15.0", "12.2", "8", stderr=CUDNN + "\n"), "TensorFlow could not load its CUDA libraries (TF002)",
     ("TF002",)),
    (tf_rec("2.15.0", "12.2", "8", stderr=CUINIT + "\n"),
     "TensorFlow's cuInit failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected", ()),
    (tf_rec("2.15.0", "12.2", "8"), "the driver is too old for TensorFlow's CUDA 12.2 (TF003)", ("TF003",)),
])
def test_tensorflow_seeing_none_names_its_reason(tf, reason, named):
    f = vis(frameworks={"tensorflow": tf})
    assert (f.status, f.title, f.symptom_of) == (
        Status.WARN, f"the GPU lists disagree: TensorFlow sees 0 GPU(s) where CUDA should see 2: {reason}", named)


def test_a_gpu_tensorflow_ignores_is_named_with_the_setting_and_its_log_line():
    f = vis(frameworks={"tensorflow": tf_rec("2.15.0", "12.2", "8", gpus=1, stderr=IGNORED + "\n")})
    assert (f.status, f.title) == (
        Status.WARN, "the GPU lists disagree: TensorFlow sees 1 GPU(s) where CUDA should see 2: TensorFlow ignores "
                     "the GeForce RTX 2080 Ti (core count: 3; the minimum required count is 8, set by "
                     "TF_MIN_GPU_MULTIPROCESSOR_COUNT)")
    assert lines(f)[-1] == ("framework:tensorflow", IGNORED)


def test_ignored_reason_reads_tensorflows_two_wordings():
    capability = ("Ignoring visible gpu device (device: 0, name: Quadro K620, pci bus id: 0000:01:00.0, compute "
                  "capability: 5.0) with Cuda compute capability 5.0. The minimum required Cuda capability is 6.0.")
    assert device_lists._ignored_reason(capability) == (
        "TensorFlow ignores the Quadro K620 (Cuda compute capability 5.0; the minimum required Cuda capability is "
        "6.0)")
    assert device_lists._ignored_reason("2024 I gpu_device.cc:1] Ignoring something else") == (
        "TensorFlow ignored a GPU (Ignoring something else)")


def test_an_unexplained_disagreement_fails_and_the_explained_ones_follow_in_the_detail():
    f = vis(frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=devices(U[:1])),
                        "tensorflow": tf_rec("2.15.0")})
    assert (f.status, f.title) == (Status.FAIL, "the GPU lists disagree: torch sees 1 GPU(s) where CUDA should see 2")
    assert f.detail == "TensorFlow sees 0 GPU(s) where CUDA should see 2: TensorFlow is a CPU build (TF001)"
    assert f.symptom_of == ("TF001",)
    assert f.fix.summary.startswith("torch sees 1 GPU(s) where CUDA should see 2; TensorFlow sees 0 GPU(s) where "
                                    "CUDA should see 2: TensorFlow is a CPU build (TF001). ")


def test_two_explained_disagreements_warn_with_the_second_in_the_detail():
    f = vis(frameworks={"torch": torch_rec("2.4.0+cu124", "12.4", SM50_90, available=False, count=0),
                        "tensorflow": tf_rec("2.15.0")})
    assert f.status is Status.WARN and f.title.endswith("the driver is too old for torch's CUDA (TRC002)")
    assert f.detail == "TensorFlow sees 0 GPU(s) where CUDA should see 2: TensorFlow is a CPU build (TF001)"
    assert f.symptom_of == ("TRC002", "TF001")


def test_nvml_counting_otherwise_fails_even_when_the_frameworks_agree():
    f = vis(nvml={"device_count": {"value": 3}, "devices": []},
            frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=devices(U))})
    assert (f.status, f.title) == (Status.FAIL, "the GPU lists disagree: NVML counts 3 GPU(s), nvidia-smi 2")


def test_identity_is_compared_only_with_every_uuid_known():
    unknown = [{"index": i, "name": "GeForce RTX 2080 Ti", "uuid": None} for i in range(2)]
    f = vis(frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=unknown)})
    assert (f.status, f.title) == (Status.OK, "nvidia-smi and torch agree: 2 GPU(s)")
    swapped = vis(frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=devices(U[::-1]))})
    assert swapped.title == ("the GPU lists disagree: torch numbers the GPUs in another order than nvidia-smi: "
                             "CUDA_DEVICE_ORDER is not PCI_BUS_ID (CVD002)")
    assert swapped.symptom_of == ("CVD002",)
    upper = vis(frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90,
                                                devices=devices(["GPU-" + u.upper() for u in U]))})
    assert upper.status is Status.OK  # "GPU-" and case do not make another GPU


def test_helpers():
    assert device_lists._and(["nvidia-smi"]) == "nvidia-smi"
    assert device_lists._and(["a", "b", "c"]) == "a, b and c"
    assert device_lists._norm_uuid("GPU-AbC") == "abc" and device_lists._norm_uuid(None) == ""


def test_a_gpu_held_in_exclusive_process_mode_is_named_as_the_cause():
    from tests.test_framework_checks import GTX1070X6, xml

    text = xml(GTX1070X6).stdout.replace("<compute_mode>Default</compute_mode>",
                                         "<compute_mode>Exclusive_Process</compute_mode>", 1)  # GPU 0 only
    s = snap(frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, count=5)})
    s.commands["nvidia_smi_xml"] = xml(GTX1070X6).__class__(("nvidia-smi", "-q", "-x"), 0, text)
    f = run(device_lists.device_lists_agree, s)
    assert (f.status, f.title) == (Status.FAIL, "the GPU lists disagree: torch sees 5 GPU(s) where CUDA should see 6: "
                                                "GPU 0 is in Exclusive_Process mode and PID 3093 (./ethminer) holds it")
    default = snap(GTX1070X6, frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, count=5)})
    assert run(device_lists.device_lists_agree, default).title == (
        "the GPU lists disagree: torch sees 5 GPU(s) where CUDA should see 6")  # Default mode: shared, no cause
