"""System-side checks on the edges the scenario folders do not cover."""

from __future__ import annotations

import pytest

from gpudoctor.engine import run_one
from gpudoctor.facts import Facts
from gpudoctor.findings import Status
from gpudoctor.runner import CommandResult
from gpudoctor_checks import containers, cuda_toolkit, cudnn, driver, kernel_module, nouveau, wsl
from tests.builders import ran, snap
from tests.scenarios import SCENARIOS

NVRM = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {}  Sat Aug 19 01:15:15 UTC 2023\n"




def one(chk, s):
    (finding,) = run_one(chk, Facts(s))
    return finding


def findings(chk, s):
    return run_one(chk, Facts(s))


LSPCI = ran(["lspci"], "01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102 [GeForce RTX 3090] "
                       "[10de:2204] (rev a1)\n\tKernel modules: nouveau, nvidia\n")


# --- Secure Boot ------------------------------------------------------------------------

def test_secure_boot_with_no_module_built_warns_ahead():
    s = snap(commands={"mokutil_sb_state": ran(["mokutil"], "SecureBoot enabled\n"), "lspci": LSPCI,
                       "modinfo_nvidia": ran(["modinfo"], "", 1, "modinfo: ERROR: Module nvidia not found.\n")},
             files={"/proc/modules": "ext4 1 0 - Live 0x0\n"})
    f = one(kernel_module.secure_boot_module, s)
    assert f.status is Status.WARN and "no nvidia module is built for this kernel" in f.title
    assert f.fix.kb_id == "secure_boot_module_unsigned" and f.fix.needs_reboot


def test_secure_boot_on_an_unsigned_module_fails():
    mod = "filename:       /lib/modules/6.8.0/updates/dkms/nvidia.ko\nversion:        550.120\n"
    s = snap(commands={"mokutil_sb_state": ran(["mokutil"], "SecureBoot enabled\n"), "lspci": LSPCI,
                       "modinfo_nvidia": ran(["modinfo"], mod)}, files={"/proc/modules": "ext4 1 0 - Live 0x0\n"})
    f = one(kernel_module.secure_boot_module, s)
    assert f.status is Status.FAIL and f.title.endswith("it is not signed")


def test_secure_boot_without_nvidia_hardware_is_fine():
    s = snap(commands={"mokutil_sb_state": ran(["mokutil"], "SecureBoot enabled\n"), "lspci": ran(["lspci"], "")},
             files={"/proc/modules": "ext4 1 0 - Live 0x0\n"})
    assert one(kernel_module.secure_boot_module, s).status is Status.OK


# --- kernel module vs libraries ---------------------------------------------------------

@pytest.mark.parametrize("module, smi_line, status", [
    ("550.54.15", "NVML library version: 550.54", Status.OK),      # 535+ prints only major.minor
    ("535.104.05", "NVML library version: 550.54", Status.FAIL),
    ("550.54.15", "NVML library version: 550.54.14", Status.FAIL),
])
def test_module_against_nvml_library_line(module, smi_line, status):
    s = snap(files={"/proc/driver/nvidia/version": NVRM.format(module)},
             commands={"nvidia_smi_xml": ran(["nvidia-smi"], "Failed to initialize NVML: Driver/library version mismatch\n"
                                             + smi_line + "\n", 18)})
    assert one(kernel_module.module_matches, s).status is status


# --- nvidia-smi exit codes --------------------------------------------------------------

@pytest.mark.parametrize("rc, out, title, kb", [
    # The words come first (the one table of nvidia-smi failures), then the exit code's meaning.
    (12, "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.",
     "nvidia-smi cannot find the NVML library (libnvidia-ml.so)", "driver_nvml_missing"),
    (15, "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error",
     "GPU 0000:3B:00.0 has fallen off the bus or stopped answering", "driver_gpu_lost"),
    (17, "Failed to initialize NVML: GPU access blocked by the operating system",
     "Windows blocks this WSL distribution's access to the GPU", "wsl_gpu_blocked"),
    (17, "something the table does not know", "nvidia-smi exited 17: ", None),
    (15, "", "a GPU has fallen off the bus or stopped answering", "driver_gpu_lost"),
    (42, "something new", "nvidia-smi failed", "driver_not_loaded"),
])
def test_driver_answers_reads_exit_codes(rc, out, title, kb):
    s = snap(commands={"nvidia_smi_xml": ran(["nvidia-smi", "-q", "-x"], out + "\n", rc)})
    f = one(driver.driver_answers, s)
    assert f.status is Status.FAIL and f.title.startswith(title)
    assert (f.fix.kb_id if f.fix else None) == kb


def test_couldnt_communicate_in_a_container_without_devices_points_at_the_runtime():
    s = snap(commands={"nvidia_smi_xml": ran(["nvidia-smi"], "NVIDIA-SMI has failed because it couldn't communicate "
                                                             "with the NVIDIA driver.\n", 9)},
             files={"/.dockerenv": ""}, listings={"/dev": []})
    f = one(driver.driver_answers, s)
    assert "no GPU device was passed into this docker" in f.title and f.fix.kb_id == "no_device_in_container"


def test_no_nvidia_smi_in_a_container_with_devices_means_no_utility_capability():
    s = snap(commands={"nvidia_smi_xml": CommandResult(("nvidia-smi",), error="not found")},
             files={"/.dockerenv": ""}, listings={"/dev": ["nvidia0", "nvidiactl"]},
             env={"NVIDIA_DRIVER_CAPABILITIES": "compute"})
    f = one(driver.driver_answers, s)
    assert f.status is Status.WARN and f.fix.kb_id == "container_driver_capabilities"


# --- nouveau ----------------------------------------------------------------------------

def test_nouveau_question_belongs_to_the_host_in_a_container():
    s = snap(files={"/.dockerenv": ""}, listings={"/etc/modprobe.d": []}, commands={"lspci": LSPCI})
    f = one(nouveau.nouveau_blacklisted, s)
    assert f.status is Status.OK and "host's kernel modules decide" in f.title


def test_nouveau_not_blacklisted_without_gpu_is_fine():
    s = snap(listings={"/etc/modprobe.d": []}, commands={"lspci": ran(["lspci"], "")})
    assert one(nouveau.nouveau_blacklisted, s).status is Status.OK


# --- CUDA toolkit vs driver -------------------------------------------------------------

def _toolkit(version, driver_version, name=None):
    name = name or "cuda-" + ".".join(version.split(".")[:2])
    return snap(files={f"/usr/local/{name}/version.json": '{"cuda": {"version": "%s"}}' % version,
                       "/proc/driver/nvidia/version": NVRM.format(driver_version)},
                listings={"/usr/local": [name]})


@pytest.mark.parametrize("toolkit, drv, status", [
    ("13.0.1", "575.57.08", Status.FAIL),   # 13.x needs the 580 branch
    ("13.0.1", "580.65.06", Status.WARN),   # runs; 13.0.1's own driver is 580.82.07
    ("13.0.0", "580.65.06", Status.OK),
    ("12.8.1", "525.60.13", Status.WARN),   # 12.x minor-version compatibility floor
    ("12.8.1", "520.61.05", Status.FAIL),
    ("11.8.0", "470.82.01", Status.WARN),
    ("10.2.89", "418.87.01", Status.FAIL),  # no minor-version compatibility before 11
    ("10.2.89", "440.33.01", Status.OK),
])
def test_toolkit_against_driver(toolkit, drv, status):
    assert one(cuda_toolkit.toolkit_driver_fit, _toolkit(toolkit, drv)).status is status


def test_a_too_new_toolkit_that_nothing_selects_only_warns():
    s = snap(files={"/usr/local/cuda-11.7/version.json": '{"cuda": {"version": "11.7.1"}}',
                    "/usr/local/cuda-12.4/version.json": '{"cuda": {"version": "12.4.1"}}',
                    "/proc/driver/nvidia/version": NVRM.format("515.105.01")},
             env={"CUDA_HOME": "/usr/local/cuda-11.7"}, listings={"/usr/local": ["cuda-11.7", "cuda-12.4"]})
    (f,) = findings(cuda_toolkit.toolkit_driver_fit, s)
    assert f.status is Status.WARN and "not the toolkit PATH, CUDA_HOME or /usr/local/cuda select" in f.detail


def test_cuda_home_that_is_not_a_toolkit_warns():
    s = snap(files={"/usr/local/cuda-12.4/version.json": '{"cuda": {"version": "12.4.1"}}'},
             env={"CUDA_HOME": "/opt/cuda"}, listings={"/usr/local": ["cuda-12.4"]},
             links={"/usr/local/cuda-12.4": {"target": None, "real": "/usr/local/cuda-12.4"}})
    f = one(cuda_toolkit.toolkit_paths, s)
    assert f.status is Status.WARN and f.title == "CUDA_HOME=/opt/cuda is not a CUDA toolkit directory"
    assert "export CUDA_HOME=/usr/local/cuda-12.4" in f.fix.commands


# --- cuDNN ------------------------------------------------------------------------------

HEADER_9 = "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"


def test_cudnn_9_with_cuda_10_fails_and_header_without_matching_library_warns():
    s = snap(files={"/usr/local/cuda-10.2/version.txt": "CUDA Version 10.2.89\n",
                    "/usr/local/cuda-10.2/include/cudnn_version.h": HEADER_9},
             commands={"ldconfig_p": ran(["ldconfig"], "1 libs\n\tlibcudnn.so.8 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.8\n")},
             listings={"/usr/local": ["cuda-10.2"]})
    pair = one(cudnn.cudnn_cuda_pairing, s)
    assert pair.status is Status.FAIL and "cuDNN 9.0 to 9.10 is built for CUDA 11.0 up to 12.x" in pair.detail
    lib = one(cudnn.cudnn_header_library, s)
    assert lib.status is Status.WARN and lib.title.endswith("libcudnn.so.8")


def test_cudnn_known_only_by_soname_is_paired_by_major():
    s = snap(files={"/usr/local/cuda-13.0/version.json": '{"cuda": {"version": "13.0.1"}}'},
             commands={"ldconfig_p": ran(["ldconfig"], "1 libs\n\tlibcudnn.so.8 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.8\n")},
             listings={"/usr/local": ["cuda-13.0"]})
    f = one(cudnn.cudnn_cuda_pairing, s)
    assert f.status is Status.FAIL and f.fix.commands[1].startswith("# download cuDNN 9 'for CUDA 13.x'")
    assert f.detail == "cuDNN 8 is built for CUDA 10.1 up to 12.x; loading it with CUDA 13 fails."


# --- containers -------------------------------------------------------------------------

@pytest.mark.parametrize("env, status", [
    ({}, Status.WARN),                                        # nothing expects a GPU here
    ({"NVIDIA_VISIBLE_DEVICES": "void"}, Status.WARN),
    ({"NVIDIA_VISIBLE_DEVICES": "all"}, Status.FAIL),
    ({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4"}, Status.FAIL),
])
def test_container_without_devices(env, status):
    s = snap(files={"/.dockerenv": ""}, listings={"/dev": []}, env=env)
    assert one(containers.container_gpu_devices, s).status is status


@pytest.mark.parametrize("caps, status, missing", [
    (None, Status.OK, None), ("all", Status.OK, None), ("compute,utility,video", Status.OK, None),
    ("graphics,display", Status.WARN, "compute and utility"), ("compute", Status.WARN, "utility"),
])
def test_container_capabilities(caps, status, missing):
    env = {"NVIDIA_DRIVER_CAPABILITIES": caps} if caps else {}
    f = one(containers.container_capabilities, snap(files={"/.dockerenv": ""}, listings={"/dev": ["nvidia0"]}, env=env))
    assert f.status is status
    if missing:
        assert f"lacks {missing}" in f.title


# --- WSL --------------------------------------------------------------------------------

WSL = {"/proc/version": "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@x) #1 SMP\n"}


def test_wsl_libcuda_not_in_loader_cache_warns():
    s = snap(files=WSL, listings={"/usr/lib/wsl/lib": ["libcuda.so", "libcuda.so.1", "libcuda.so.1.1"]},
             commands={"ldconfig_p": ran(["ldconfig"], "0 libs found\n")})
    f = one(wsl.wsl_libcuda, s)
    assert f.status is Status.WARN and f.fix.kb_id == "wsl_libcuda_not_found"


def test_wsl_without_windows_driver_files_warns():
    s = snap(files=WSL, listings={"/usr/lib/wsl/lib": ["libd3d12.so"]})
    assert one(wsl.wsl_libcuda, s).status is Status.WARN


def test_wsl_linux_driver_seen_only_in_loader_cache_still_fails():
    s = snap(files=WSL, listings={"/usr/lib/wsl/lib": ["libcuda.so.1"]},
             commands={"ldconfig_p": ran(["ldconfig"], "1 libs\n\tlibcuda.so.1 (libc6,x86-64) => /usr/lib64/libcuda.so.1\n")})
    assert one(wsl.wsl_linux_driver, s).status is Status.FAIL


def test_inforom_warning_is_quoted_once_even_though_the_parser_keeps_it_too():
    from gpudoctor.snapshot_folder import load
    from gpudoctor_checks.gpu_health import gpu_inforom

    (finding,) = run_one(gpu_inforom, Facts(load(str(SCENARIOS / "sys-inforom-corrupted"))))
    assert [e.excerpt for e in finding.evidence] == ["WARNING: infoROM is corrupted at gpu 0008:00:00.0"]


def test_mismatch_fix_is_given_once():
    from gpudoctor.snapshot_folder import load

    report = __import__("gpudoctor.report", fromlist=["build_report"]).build_report(
        load(str(SCENARIOS / "sys-driver-library-mismatch")))
    by_id = {f.check_id: f for f in report.findings}
    assert by_id["DRV001"].fix is None and by_id["DRV001"].detail == "DRV002 has both versions and the fix."
    assert by_id["DRV002"].fix.kb_id == "driver_library_mismatch"
    # Without the module's version (a container hides /proc/driver/nvidia), DRV001 keeps the fix itself.
    s = snap(commands={"nvidia_smi_xml": ran(("nvidia-smi", "-q", "-x"),
                                             "Failed to initialize NVML: Driver/library version mismatch\n", rc=18)})
    (finding,) = run_one(driver.driver_answers, Facts(s))
    assert finding.status.value == "fail" and finding.fix.kb_id == "driver_library_mismatch"
