"""The framework checks (TRC, TF, CVD, VIS, TFM) on machines the scenarios do not cover.

Each test builds a snapshot from a real nvidia-smi recording plus a framework probe record
of the shape the probe prints, and asserts the status, the numbers in the title and the fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.engine import run_one
from gpudoctor.facts import Facts
from gpudoctor.findings import Status
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import Snapshot
from gpudoctor_checks import device_lists, tensorflow_build, tf_memory, torch_build, visible_devices

SMI = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
PY = "/home/u/venv/bin/python"
SM50_90 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]


def xml(name: str) -> CommandResult:
    return CommandResult(("nvidia-smi", "-q", "-x"), 0, (SMI / "xml" / name).read_text(encoding="utf-8"))


RTX3060 = "rtx-3060_driver-570.124.04_cuda-12.8.xml"          # 8.6, driver 570.124.04
RTX4090 = "rtx-4090_driver-535.86.05_cuda-12.2.xml"           # 8.9, driver 535.86.05
K80X4 = "tesla-k80-x4_driver-430.26_cuda-not-found_processes.xml"
GTX1070X6 = "gtx-1070-x6_driver-384.66_dtd-v9_processes.xml"
RTX2080TI_X2 = "rtx-2080-ti-x2_driver-410.73_cuda-10.0_ecc-na.xml"


def torch_rec(version, cuda, arch_list=(), available=True, devices=None, init_error=None, hip=None, count=None):
    rec = {"name": "torch", "installed": True, "version": version, "cuda": cuda, "hip": hip,
           "cuda_built": cuda is not None, "arch_list": list(arch_list), "available": available,
           "device_count": count if count is not None else len(devices or []), "warnings": [],
           "probe": {"python": PY, "returncode": 0, "timed_out": False, "stderr": ""}}
    if devices is not None:
        rec["devices"] = devices
    if init_error:
        rec["init_error"] = {"type": "RuntimeError", "message": init_error}
    return rec


def tf_rec(version, cuda=None, cudnn=None, gpus=0, dists=None, stderr="", wheels=None):
    info = {"is_cuda_build": cuda is not None, "is_rocm_build": False, "is_tensorrt_build": False}
    if cuda:
        info.update(cuda_version=cuda, cudnn_version=cudnn)
    return {"name": "tensorflow", "installed": True, "version": version, "build_info": info,
            "cuda_built": cuda is not None, "gpus": [f"/physical_device:GPU:{i}" for i in range(gpus)],
            "gpu_details": [], "distributions": dists or {"tensorflow": version}, "nvidia_wheels": wheels or {},
            "probe": {"python": PY, "returncode": 0, "timed_out": False, "stderr": stderr}}


def snap(smi=None, env=None, frameworks=None, system="Linux", nvml=None, files=None, listings=None):
    commands = {"nvidia_smi_xml": xml(smi)} if smi else {}
    s = Snapshot(meta={"python": PY, "platform": {"system": system}}, commands=commands, env=env or {},
                 frameworks=frameworks or {}, nvml=nvml or {}, listings=listings or {})
    for path, content in (files or {}).items():
        from gpudoctor.snapshot import FileRecord
        s.files[path] = FileRecord(path, content=content)
    return s


def run(check, snapshot):
    findings = run_one(check, Facts(snapshot))
    assert len(findings) == 1, findings
    return findings[0]


def text(finding) -> str:
    fix = finding.fix
    parts = [finding.title, finding.detail or ""] + [e.excerpt for e in finding.evidence]
    if fix:
        parts += [fix.summary, *fix.commands]
    return "\n".join(parts)


# --- TRC: torch ---------------------------------------------------------------------------

def nvml_gpu(name, cc, driver, uuid, bus="00000000:01:00.0", total=32607):
    """An NVML reading as probes/nvml_child.py records it (each value or its error)."""
    return {"init": {"value": "ok"}, "driver_version": {"value": driver}, "device_count": {"value": 1},
            "devices": [{"index": 0, "name": {"value": name}, "uuid": {"value": uuid},
                         "pci_bus_id": {"value": bus}, "compute_cap": {"value": cc}, "mig_mode": {"value": 0},
                         "memory": {"value": {"total_mib": total, "used_mib": 3, "free_mib": total - 3}}}]}


def test_rtx_5090_on_a_cu124_wheel_gets_a_cu128_build():
    """sm_120 is in no 2.5 build: the fix names the newest release with a Blackwell build this driver runs
    (2.11 is the last with cu128; later ones are cu13x, which needs driver 580)."""
    s = snap(nvml=nvml_gpu("NVIDIA GeForce RTX 5090", "12.0", "570.124.06", "GPU-5d2cbd31-0c0b-4f4e-9d7a-2f1e0e6b1a77"),
             frameworks={"torch": torch_rec("2.5.1+cu124", "12.4", SM50_90)})
    f = run(torch_build.torch_arch, s)
    assert f.status is Status.FAIL
    assert f.title == "NVIDIA GeForce RTX 5090 (sm_120): no kernels in torch 2.5.1+cu124, built for " + " ".join(SM50_90)
    assert f.fix.summary == ("NVIDIA GeForce RTX 5090 has compute capability 12.0 (sm_120); torch 2.11.*+cu128 "
                             "(CUDA 12.8) has kernels for it and runs on this driver.")
    assert f.fix.commands == (f"{PY} -m pip install --force-reinstall 'torch==2.11.*' "
                              "--index-url https://download.pytorch.org/whl/cu128", ARCH_TRY)
    assert f.evidence[0].source == "nvml:devices"


def test_k80_on_a_recent_wheel_and_an_old_driver_needs_both_fixed():
    s = snap(K80X4, frameworks={"torch": torch_rec("2.4.0+cu121", "12.1", SM50_90, available=False,
                                                   init_error="The NVIDIA driver on your system is too old "
                                                              "(found version 10010).")})
    arch = run(torch_build.torch_arch, s)
    assert arch.status is Status.FAIL and arch.title.startswith("Tesla K80 (sm_37): no kernels in torch 2.4.0+cu121")
    # the same release still had a cu118 build with Kepler kernels
    assert arch.fix.summary == ("Tesla K80 has compute capability 3.7 (sm_37); torch 2.4.0+cu118 has kernels for it "
                                "but needs driver >= 450.80.02, so upgrade the driver too.")
    assert arch.fix.commands == (f"{PY} -m pip install --force-reinstall 'torch==2.4.0' "
                                 "--index-url https://download.pytorch.org/whl/cu118", ARCH_TRY)
    drv = run(torch_build.torch_driver, s)
    assert drv.status is Status.FAIL
    assert drv.title == "driver 430.26 supports CUDA up to 10.1; torch 2.4.0+cu121 needs at least 525.60.13"


ARCH_TRY = f"{PY} -c 'import torch; print(torch.cuda.get_arch_list()); print(torch.ones(1).cuda() + 1)'"


@pytest.mark.parametrize("python, release", [(None, "2.7.*"), ("3.13.1", "2.7.*"), ("3.8.10", "2.4.*")])
def test_kepler_on_a_release_without_kepler_builds_gets_the_newest_one_for_its_python(python, release):
    """2.8 has no cu118 build (the last with sm_37); 2.5 dropped Python 3.8, so 3.8 gets 2.4."""
    rec = torch_rec("2.8.0+cu128", "12.8", SM50_90, available=False)
    rec["python"] = python
    f = run(torch_build.torch_arch, snap(K80X4, frameworks={"torch": rec}))
    assert f.fix.summary == (f"Tesla K80 has compute capability 3.7 (sm_37); torch {release}+cu118 has kernels for it "
                             "but needs driver >= 450.80.02, so upgrade the driver too.")
    assert f.fix.commands[0] == (f"{PY} -m pip install --force-reinstall 'torch=={release}' "
                                 "--index-url https://download.pytorch.org/whl/cu118")


def test_a_gpu_no_published_build_supports_is_told_to_build_from_source():
    s = snap(nvml=nvml_gpu("NVIDIA GeForce GTX 680", "3.0", "470.223.02", "GPU-5d2cbd31-0c0b-4f4e-9d7a-2f1e0e6b1a77"),
             frameworks={"torch": torch_rec("2.4.0+cu121", "12.1", SM50_90)})
    f = run(torch_build.torch_arch, s)
    assert f.title == "NVIDIA GeForce GTX 680 (sm_30): no kernels in torch 2.4.0+cu121, built for " + " ".join(SM50_90)
    assert f.fix.kb_id == "arch_unsupported"
    assert f.fix.summary == ("NVIDIA GeForce GTX 680 has compute capability 3.0 (sm_30); no published torch build in "
                             "gpudoctor's table has kernels for it and runs on a driver this GPU supports; build torch "
                             "from source with TORCH_CUDA_ARCH_LIST=3.0.")
    assert f.fix.commands == ("# see https://github.com/pytorch/pytorch#from-source", ARCH_TRY)


def test_the_fixes_name_plain_python_when_the_interpreter_is_not_known():
    from gpudoctor_checks import torch_fixes

    assert torch_fixes.python(_Override(_scenario_facts("fw-torch-recent-on-p100"), python_path=None)) == "python"
    assert torch_fixes.python(_scenario_facts("fw-torch-recent-on-p100")) == "/usr/bin/python3"


def test_cpu_wheel_without_gpu_is_fine():
    f = run(torch_build.torch_cuda_build, snap(frameworks={"torch": torch_rec("2.13.0+cpu", None, available=False)},
                                              listings={"/dev": []}))
    assert f.status is Status.OK and f.title == "torch 2.13.0+cpu, CPU-only build; fine, there is no GPU"


def test_rocm_build_on_an_nvidia_machine_fails():
    f = run(torch_build.torch_cuda_build, snap(RTX4090, frameworks={
        "torch": torch_rec("2.5.1+rocm6.2", None, hip="6.2.41133", available=False)}))
    assert f.status is Status.FAIL
    assert f.title == "torch 2.5.1+rocm6.2 is a ROCm (AMD) build, but this machine has 1 NVIDIA GPU(s)"
    assert f.fix.kb_id == "torch_cpu_build"


def test_wsl_compares_with_the_windows_driver_minimum():
    wsl_files = {"/proc/version": "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1)"}
    nvml = {"driver_version": {"value": "516.94"}}   # the Windows driver, as NVML reports it inside WSL
    s = Snapshot(meta={"python": PY, "platform": {"system": "Linux"}}, nvml=nvml,
                 frameworks={"torch": torch_rec("2.3.1+cu121", "12.1", SM50_90)})
    from gpudoctor.snapshot import FileRecord
    for p, c in wsl_files.items():
        s.files[p] = FileRecord(p, content=c)
    f = run(torch_build.torch_driver, s)
    assert f.status is Status.FAIL and "needs at least 527.41" in f.title   # Windows column, not 525.60.13
    assert any("WSL uses the Windows driver" in c for c in f.fix.commands)


@pytest.mark.parametrize("message, cause, fix_id", [
    ("CUDA driver initialization failed, you might not have a CUDA gpu.", "matches no cause", "torch_cuda_unavailable"),
    ("Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() "
     "that might have already set an error? Error 802: system not yet initialized", "nvidia-fabricmanager",
     "torch_cuda_unavailable"),
    ("CUDA unknown error - this may be due to an incorrectly set up environment", "nvidia_uvm",
     "torch_cuda_unavailable"),
])
def test_torch_init_errors_name_their_cause(message, cause, fix_id):
    s = snap(RTX4090, frameworks={"torch": torch_rec("2.1.0+cu121", "12.1", SM50_90, available=False, count=1,
                                                     init_error=message)})
    f = run(torch_build.torch_cuda_available, s)
    assert f.status is Status.FAIL and cause in f.detail and f.fix.kb_id == fix_id


def test_no_cuda_gpus_under_an_empty_cuda_visible_devices_points_to_cvd001():
    s = snap(RTX4090, env={"CUDA_VISIBLE_DEVICES": ""},
             frameworks={"torch": torch_rec("2.1.0+cu121", "12.1", SM50_90, available=False, count=0,
                                            init_error="No CUDA GPUs are available")})
    f = run(torch_build.torch_cuda_available, s)
    assert f.status is Status.FAIL and f.fix is None and "CVD001 has the details and the fix" in f.detail
    cvd = run(visible_devices.cuda_visible_devices, s)
    assert cvd.status is Status.WARN and cvd.title == "CUDA_VISIBLE_DEVICES='' hides all 1 GPU(s): CUDA programs see none"


# --- TF: TensorFlow -------------------------------------------------------------------------

def test_tf_log_names_the_library_it_could_not_load():
    err = ("2022-07-10 15:08:09.276131: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not "
           "load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such "
           "file or directory; LD_LIBRARY_PATH: /usr/local/cuda-11.2/lib64\n")
    s = snap(RTX4090, frameworks={"tensorflow": tf_rec("2.11.0", "11.2", "8", stderr=err)})
    f = run(tensorflow_build.tf_cuda_libs, s)
    assert f.status is Status.FAIL and f.title == "TensorFlow 2.11.0 cannot load libcudnn.so.8: it runs on the CPU only"
    assert "could not load libcudnn.so.8: libcudnn.so.8: cannot open shared object file" in text(f)
    # Before 2.14 there is no [and-cuda] extra: the tested CUDA/cuDNN pair from conda.
    assert f.fix.commands[0].startswith("conda install -c conda-forge cudatoolkit=11.2 cudnn=8.1")


def test_tf_and_tensorflow_cpu_installed_together():
    s = snap(RTX4090, frameworks={"tensorflow": tf_rec("2.15.0", dists={"tensorflow": "2.15.0",
                                                                         "tensorflow-cpu": "2.15.0"})})
    f = run(tensorflow_build.tf_gpu_build, s)
    assert f.status is Status.FAIL and f.title.startswith("tensorflow-cpu 2.15.0 is a CPU build")
    assert "Both tensorflow and tensorflow-cpu are installed" in f.detail
    assert f.fix.commands[:2] == (f"{PY} -m pip uninstall -y tensorflow-cpu",
                                  f"{PY} -m pip install 'tensorflow[and-cuda]==2.15.0'")


@pytest.mark.parametrize("wheels, expected", [
    ({"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-cuda-runtime-cu12": "12.4.127"},
     "cuDNN 9.1.0.70 is installed, TensorFlow 2.18.0 was built with 9.3"),
    ({"nvidia-cudnn-cu11": "8.7.0.84", "nvidia-cuda-runtime-cu11": "11.8.89"},
     "pip wheel nvidia-cudnn-cu11 8.7.0.84 is for CUDA 11, not 12"),
])
def test_tf_cudnn_and_cuda_wheels_must_match_the_build(wheels, expected):
    s = snap(RTX4090, frameworks={"tensorflow": tf_rec("2.18.0", "12.5.1", "9", gpus=1, wheels=wheels)})
    f = run(tensorflow_build.tf_cuda_versions, s)
    assert f.status is Status.FAIL and expected in f.title and f.fix.kb_id == "tf_cuda_mismatch"


def test_tf_matching_wheels_pass():
    wheels = {"nvidia-cudnn-cu12": "9.3.0.75", "nvidia-cuda-runtime-cu12": "12.5.82"}
    s = snap(RTX4090, frameworks={"tensorflow": tf_rec("2.18.0", "12.5.1", "9", gpus=1, wheels=wheels)})
    f = run(tensorflow_build.tf_cuda_versions, s)
    assert f.status is Status.OK and f.title == "driver 535.86.05 runs TensorFlow 2.18.0 (CUDA 12.5.1 needs >= 525.60.13)"


def test_windows_tf_210_still_had_gpu_support():
    s = snap("rtx-2080_driver-516.59_cuda-11.7_windows-wddm_processes.xml", system="Windows",
             frameworks={"tensorflow": tf_rec("2.10.1", "64_112", "64_8", gpus=1)})
    assert run(tensorflow_build.tf_gpu_build, s).status is Status.OK


# --- CVD: device selection ---------------------------------------------------------------------

@pytest.mark.parametrize("value, status, needle", [
    ("-1", Status.WARN, "hides all 6 GPU(s)"),
    ("7", Status.FAIL, "GPU 7 does not exist: this machine shows 6 GPU(s), numbered 0 to 5"),
    ("0,1,0", Status.FAIL, "GPU 0 is listed twice"),
    ("4,5,6,7", Status.FAIL, "CUDA sees 2 of 6 GPU(s) (cuda:0 = GPU 4, cuda:1 = GPU 5)"),
    ("GPU-e342d672, GPU-93b6a00f", Status.FAIL, "' GPU-93b6a00f' starts with a space"),
    ("1gpu,2", Status.WARN, "'1gpu' is read as 1"),
    ("GPU-93b6,GPU-e511", Status.OK, "CUDA sees 2 of 6 GPU(s) (cuda:0 = GPU 3, cuda:1 = GPU 0)"),
])
def test_cuda_visible_devices_values(value, status, needle):
    f = run(visible_devices.cuda_visible_devices, snap(GTX1070X6, env={"CUDA_VISIBLE_DEVICES": value}))
    assert f.status is status, text(f)
    assert needle in text(f)


def test_container_note_explains_renumbering():
    s = snap(RTX2080TI_X2, env={"CUDA_VISIBLE_DEVICES": "3", "NVIDIA_VISIBLE_DEVICES": "2,3"},
             files={"/.dockerenv": ""})
    f = run(visible_devices.cuda_visible_devices, s)
    assert f.status is Status.FAIL
    assert "NVIDIA_VISIBLE_DEVICES=2,3" in f.detail and "numbered from 0" in f.detail


def test_device_order_typo_is_reported():
    f = run(visible_devices.cuda_device_order, snap(GTX1070X6, env={"CUDA_DEVICE_ORDER": "PCI_BUS"}))
    assert f.status is Status.WARN and "CUDA_DEVICE_ORDER='PCI_BUS' is not a value CUDA knows" in f.title


# --- VIS: the lists agree? ------------------------------------------------------------------------

def test_torch_numbering_other_gpus_than_expected_is_reported():
    uuids = ["57567e11-0be2-381b-5132-2ad95c262e58", "ef1d0068-5bfd-f1e4-7e79-ff35d71d44b8"]
    devices = [{"index": i, "name": "GeForce RTX 2080 Ti", "capability": "7.5", "uuid": u}
               for i, u in enumerate(reversed(uuids))]
    s = snap(RTX2080TI_X2, frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=devices)})
    f = run(device_lists.device_lists_agree, s)
    assert f.status is Status.WARN and "torch numbers the GPUs in another order than nvidia-smi" in f.title


def test_nvml_and_nvidia_smi_counts_differ():
    nvml = {"device_count": {"value": 1}, "devices": []}
    s = snap(RTX2080TI_X2, nvml=nvml, frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=[
        {"index": 0, "name": "GeForce RTX 2080 Ti", "uuid": None}, {"index": 1, "name": "GeForce RTX 2080 Ti",
                                                                       "uuid": None}])})
    f = run(device_lists.device_lists_agree, s)
    assert f.status is Status.FAIL and f.title == "the GPU lists disagree: NVML counts 1 GPU(s), nvidia-smi 2"


def test_cuda_visible_devices_sets_the_expected_count():
    s = snap(RTX2080TI_X2, env={"CUDA_VISIBLE_DEVICES": "1"},
             frameworks={"torch": torch_rec("1.13.1+cu117", "11.7", SM50_90, devices=[
                 {"index": 0, "name": "GeForce RTX 2080 Ti", "uuid": "ef1d0068-5bfd-f1e4-7e79-ff35d71d44b8"}])})
    f = run(device_lists.device_lists_agree, s)
    assert f.status is Status.OK and f.title == "nvidia-smi and torch agree: 2 GPU(s), 1 visible to CUDA"


# --- TFM: TensorFlow memory ----------------------------------------------------------------------

@pytest.mark.parametrize("value, status", [("true", Status.OK), ("false", Status.OK), ("True", Status.WARN),
                                           ("1", Status.WARN), ("yes", Status.WARN), ("true ", Status.WARN)])
def test_allow_growth_accepts_exactly_true_and_false(value, status):
    f = run(tf_memory.tf_allow_growth_value, snap(env={"TF_FORCE_GPU_ALLOW_GROWTH": value}))
    assert f.status is status


def test_allow_growth_typo_says_what_was_meant():
    f = run(tf_memory.tf_allow_growth_value, snap(env={"TF_FORCE_GPU_ALLOW_GROWTH": "0"}))
    assert "write TF_FORCE_GPU_ALLOW_GROWTH=false" in f.detail


@pytest.mark.parametrize("value, status", [("cuda_malloc_async", Status.OK), ("cuda_malloc", Status.WARN),
                                           ("memory_guard", Status.WARN), ("async", Status.WARN)])
def test_gpu_allocator_values(value, status):
    assert run(tf_memory.tf_gpu_allocator, snap(env={"TF_GPU_ALLOCATOR": value})).status is status


def test_shared_gpu_is_fine_with_growth_on():
    s = snap("tesla-t4_driver-515.105.01_cuda-11.7_processes.xml", env={"TF_FORCE_GPU_ALLOW_GROWTH": "true"},
             frameworks={"tensorflow": tf_rec("2.14.0", "11.8", "8", gpus=1)})
    f = run(tf_memory.tf_shared_gpu_memory, s)
    assert f.status is Status.OK
    assert f.title == "1 other process(es) use the GPU(s), and TF_FORCE_GPU_ALLOW_GROWTH=true lets TensorFlow share them"


def test_shared_gpu_hidden_by_cuda_visible_devices_does_not_count():
    s = snap(K80X4, env={"CUDA_VISIBLE_DEVICES": "2,3"}, frameworks={"tensorflow": tf_rec("2.4.0", "11.0", "8", gpus=2)})
    f = run(tf_memory.tf_shared_gpu_memory, s)   # the python processes sit on GPUs 0 and 1
    assert f.status is Status.OK


def test_gpu_less_machine_with_a_cuda_tensorflow_and_cpu_only_visible_devices():
    err = "W0000 00:00:1732190001.000001   77 gpu_device.cc:2344] Cannot dlopen some GPU libraries.\n"
    s = snap(env={"CUDA_VISIBLE_DEVICES": "-1"}, listings={"/dev": []},
             frameworks={"tensorflow": tf_rec("2.18.0", "12.5.1", "9", stderr=err)})
    lib = run(tensorflow_build.tf_cuda_libs, s)
    assert lib.status is Status.OK and "no NVIDIA GPU" in lib.title
    cvd = run(visible_devices.cuda_visible_devices, s)
    assert cvd.status is Status.OK and cvd.title == "CUDA_VISIBLE_DEVICES='-1' is set, but there is no NVIDIA GPU to select"


def test_unparsable_driver_version_is_a_skip_not_a_crash():
    nvml = {"driver_version": {"value": "N/A"}}
    s = Snapshot(meta={"python": PY, "platform": {"system": "Linux"}}, nvml=nvml,
                 frameworks={"torch": torch_rec("2.3.1+cu121", "12.1", SM50_90)})
    f = run(torch_build.torch_driver, s)
    assert f.status is Status.SKIP and "'N/A'" in f.title


# --- the fixes behind TRC004 and TF003, chosen against the recorded machine ----------------------

def _scenario_facts(name):
    from gpudoctor.facts import Facts
    from gpudoctor.snapshot_folder import load
    from tests.scenarios import SCENARIOS

    return Facts(load(str(SCENARIOS / name / "snapshot")))


def test_torch_unavailable_because_the_driver_is_old_offers_the_driver_or_a_build_that_runs():
    f = _scenario_facts("fw-torch-cu121-old-driver-515")
    fix = torch_build._unavailable_fix(f, f["torch_build"], {"recipe": "driver_too_old"}, "unused")
    assert fix.kb_id == "driver_too_old"
    assert fix.summary == ("Driver 515.105.01 supports CUDA up to 11.7; torch 2.3.1+cu121 needs at least 525.60.13. "
                           "Either upgrade the driver to 525.60.13 or newer, or install torch 2.3.1+cu118 (CUDA 11.8).")
    assert fix.commands[-1] == ("/opt/conda/envs/train/bin/python -m pip install --force-reinstall 'torch==2.3.1' "
                                "--index-url https://download.pytorch.org/whl/cu118")


def test_torch_unavailable_for_another_cause_prints_that_causes_recipe():
    f = _scenario_facts("fw-torch-cu121-old-driver-515")
    fix = torch_build._unavailable_fix(f, f["torch_build"], None, "the UVM module is stuck")
    assert fix.kb_id == "torch_cuda_unavailable" and fix.summary.startswith("Likely cause: the UVM module is stuck.")
    assert fix.commands[0] == "/opt/conda/envs/train/bin/python -c 'import torch; torch.cuda.init()'"
    other = torch_build._unavailable_fix(f, f["torch_build"], {"recipe": "nouveau_conflict"}, "x")
    assert other.kb_id == "nouveau_conflict"


UPGRADE_UBUNTU = ("# way 1: upgrade the driver (Ubuntu; on Debian: sudo apt install nvidia-driver from a newer release)",
                  "sudo ubuntu-drivers list", "sudo ubuntu-drivers install", "sudo reboot",
                  "# way 2: keep the driver, install a build that runs on it")


def test_torch_unavailable_with_no_build_that_fits_says_so():
    from dataclasses import replace

    f = _scenario_facts("fw-torch-recent-on-p100")
    py314 = _Override(f, torch=replace(f["torch"], python_version="3.14.0"))
    fix = torch_build._unavailable_fix(py314, f["torch_build"], {"recipe": "driver_too_old"}, "unused")
    assert fix.summary == ("Driver 510.47.03 supports CUDA up to 11.6; torch 2.11.0+cu130 needs at least 580. Either "
                           "upgrade the driver to 580 or newer, or install a torch build for an older CUDA (none in "
                           "gpudoctor's table fits this machine).")
    assert fix.commands == UPGRADE_UBUNTU + ("# none known: see https://pytorch.org/get-started/previous-versions/",)


def test_torch_unavailable_on_windows_compares_with_the_windows_driver_minimum():
    """CUDA 12.1 needs 525.60.13 on Linux but 527.41 on Windows: a 526 driver is too old only there."""
    from dataclasses import replace

    f = _scenario_facts("fw-torch-cu121-old-driver-515")
    tb = f["torch_build"]
    driver_526 = replace(f["driver_version"], version="526.47")
    windows = _Override(f, target_os="windows", driver_version=driver_526)
    fix = torch_build._unavailable_fix(windows, tb, {"recipe": "driver_too_old"}, "unused")
    assert fix.summary == ("Driver 526.47 supports CUDA up to 11.7; torch 2.3.1+cu121 needs at least 527.41. Either "
                           "upgrade the driver to 527.41 or newer, or install torch 2.3.1+cu118 (CUDA 11.8).")
    assert torch_build._fails_there(windows, tb, "TRC002") is True
    assert torch_build._fails_there(_Override(f, driver_version=driver_526), tb, "TRC002") is False
    assert torch_build._fails_there(_Override(f, driver_version=None), tb, "TRC002") is False


@pytest.mark.parametrize("message, first", [
    ("", ""),
    ("The NVIDIA driver on your system is too old (found version 11070). Please update your GPU driver.",
     "The NVIDIA driver on your system is too old (found version 11070)."),
    ("Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions? Error 804: forward compatibility "
     "was attempted on non supported HW", "Error 804: forward compatibility was attempted on non supported HW"),
    ("  first line\nsecond line", "first line"),
    ("x" * 160, "x" * 160),
    ("x" * 161, "x" * 157 + "..."),
])
def test_torch_messages_are_cut_to_their_first_sentence(message, first):
    assert torch_build.first_sentence(message) == first


def test_tensorflow_too_new_for_the_driver_offers_an_older_release_or_says_none_runs():
    f = _scenario_facts("fw-tf-2.16-old-driver-515")
    tf = f["tf_info"]
    older = tensorflow_build._tf_driver_fix(f, tf, "525.60.13", "450.51.05", "linux")
    assert older.kb_id == "driver_too_old"
    assert older.summary.endswith("Either upgrade the driver to 525.60.13 or newer, or install TensorFlow 2.4.0 "
                                  "(CUDA 11.0), which runs on it.")
    assert "TensorFlow 2.16.1 needs at least 525.60.13" in older.summary
    assert older.commands[-1].startswith("conda install -c conda-forge cudatoolkit=11.0 cudnn=8.0")
    none = tensorflow_build._tf_driver_fix(f, tf, "525.60.13", "390.157", "linux")
    assert none.summary.endswith("or (no TensorFlow release in gpudoctor's table runs on this driver).")
    assert none.commands[-1] == "# none known: upgrade the driver"
    assert tensorflow_build._newest_tf_for_driver("390.157", "linux") is None
    assert tensorflow_build._newest_tf_for_driver("450.51.05", "linux").version == "2.4.0"
    # Linux's minor-version compatibility starts at 450.80.02, Windows' at 452.39
    assert tensorflow_build._newest_tf_for_driver("451.48", "linux").version == "2.14.0"
    assert tensorflow_build._newest_tf_for_driver("451.48", "windows").version == "2.4.0"


class _Override:
    """A recorded machine's facts with some replaced (a what-if on one fact)."""

    def __init__(self, f, **over):
        self._f, self._over = f, over

    def get(self, k, d=None):
        return self._over[k] if k in self._over else self._f.get(k, d)

    def __getitem__(self, k):
        return self._over[k] if k in self._over else self._f[k]

    def __getattr__(self, name):
        return getattr(self._f, name)


def test_trc002_fix_when_no_driver_helps_offers_another_build():
    from gpudoctor_checks import torch_fixes

    f = _scenario_facts("fw-torch-recent-on-p100")
    fix = torch_fixes.driver_fix(f, f["torch_build"], "580.65.06")
    assert fix.kb_id == "framework_build_for_driver"
    assert fix.summary == ("torch 2.11.0+cu130 needs driver 580.65.06 or newer, which is no way out here: torch "
                           "2.11.0+cu130 has no kernels for Tesla P100-PCIE-16GB (sm_60), whatever the driver. "
                           "Install torch 2.7.*+cu118 (CUDA 11.8) instead.")
    assert fix.commands == ("/usr/bin/python3 -m pip install --force-reinstall 'torch==2.7.*' "
                            "--index-url https://download.pytorch.org/whl/cu118",
                            "/usr/bin/python3 -c 'import torch; print(torch.__version__, torch.cuda.is_available())'")


def test_trc002_fix_says_when_no_build_fits_this_python():
    from dataclasses import replace

    from gpudoctor_checks import torch_fixes

    f = _scenario_facts("fw-torch-recent-on-p100")
    py314 = _Override(f, torch=replace(f["torch"], python_version="3.14.0"))
    blocked = torch_fixes.driver_fix(py314, f["torch_build"], "580.65.06")
    assert blocked.kb_id == "framework_build_for_driver"
    assert blocked.commands == ("# none known: see https://pytorch.org/get-started/previous-versions/",
                                "/usr/bin/python3 -c 'import torch; print(torch.__version__, torch.cuda.is_available())'")
    assert blocked.summary.endswith("Install a torch build for an older CUDA (none in gpudoctor's table fits this "
                                    "driver, these GPUs and this Python) instead.")
    turing = _Override(f, torch=py314["torch"], gpus=[replace(g, compute_cap="7.5") for g in f["gpus"]])
    old = torch_fixes.driver_fix(turing, f["torch_build"], "580.65.06")
    assert old.kb_id == "driver_too_old"
    assert old.summary.endswith("Either upgrade the driver to 580.65.06 or newer, or install a torch build for an "
                                "older CUDA (none in gpudoctor's table fits this driver, these GPUs and this Python).")
    assert old.commands == UPGRADE_UBUNTU + ("# none known: see https://pytorch.org/get-started/previous-versions/",)


def test_cvd002_says_which_card_cuda_0_is_as_surely_as_the_facts_allow():
    from dataclasses import replace

    from gpudoctor import visible_devices as vd
    from gpudoctor_checks import visible_devices as cvd

    f = _scenario_facts("fw-cvd-mixed-gpus-no-order")   # RTX 2070 (7.5) at 01:00.0, GTX 750 Ti (5.0) at 04:00.0
    lead = "1 x GeForce RTX 2070 and 1 x GeForce GTX 750 Ti, and CUDA_DEVICE_ORDER is not PCI_BUS_ID: "
    assert cvd.cuda_device_order.run(f).title == lead + ("CUDA's device 0 is most likely nvidia-smi's GPU 0 "
                                                         "(GeForce RTX 2070) too, by luck of the slots")
    gpus = f["gpus"]
    same = [replace(g, compute_cap="7.5") for g in gpus]   # two models, one capability: no guess
    got = cvd.cuda_device_order.run(_Override(f, gpus=same, visible_devices=vd.resolve(vd.parse(None), same)))
    assert got.title == lead + "cuda:0 may not be nvidia-smi's GPU 0"
    assert got.detail.endswith("which comes first cannot be told from what was recorded; set "
                               "CUDA_DEVICE_ORDER=PCI_BUS_ID.")
    seen = [replace(gpus[0], uuid="GPU-aaaa"), replace(gpus[1], uuid="GPU-bbbb")]   # torch enumerated them
    m = vd.resolve(vd.parse(None), seen, None, ["GPU-bbbb", "GPU-aaaa"])
    got = cvd.cuda_device_order.run(_Override(f, gpus=seen, visible_devices=m))
    assert got.title == lead + "CUDA's device 0 is nvidia-smi's GPU 1 (GeForce GTX 750 Ti), not GPU 0 (GeForce RTX 2070)"
    assert got.detail.endswith("CUDA's order as torch saw it: fastest first, not nvidia-smi's.")
    m = vd.resolve(vd.parse(None), seen, None, ["GPU-aaaa", "GPU-bbbb"])
    assert cvd.cuda_device_order.run(_Override(f, gpus=seen, visible_devices=m)).title == \
        lead + "CUDA's device 0 is nvidia-smi's GPU 0 (GeForce RTX 2070) too, by luck of the slots"


def test_trc004_leaves_the_fix_to_the_check_that_reports_its_cause():
    ok_machine = _scenario_facts("fw-healthy-torch-gpu")
    old_driver = _scenario_facts("fw-torch-cu121-old-driver-515")
    no_driver = _scenario_facts("core-driver-not-loaded")
    tb = old_driver["torch_build"]
    assert torch_build._fails_there(old_driver, tb, "TRC002") is True     # driver 515 < 525.60.13 for CUDA 12.1
    assert torch_build._fails_there(ok_machine, ok_machine["torch_build"], "TRC002") is False
    assert torch_build._fails_there(no_driver, tb, "DRV001") is True       # nvidia-smi gives no report
    assert torch_build._fails_there(ok_machine, tb, "DRV001") is False
    assert torch_build._fails_there(ok_machine, tb, "CVD001") is False     # CUDA_VISIBLE_DEVICES not set
    assert torch_build._fails_there(_scenario_facts("fw-cvd-invalid-truncates"), tb, "CVD001") is True
    assert torch_build._fails_there(old_driver, tb, "NOU001") is False
