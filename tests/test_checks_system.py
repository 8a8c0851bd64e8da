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


# --- a hung nvidia-smi names its deadline readably ------------------------------------------------

@pytest.mark.parametrize("s, text", [(10, "10s"), (10.4, "10s"), (30.0, "30s"), (2, "2s"), (2.0, "2s"),
                                     (9.5, "9.5s"), (0.25, "0.2s"), (1.75, "1.8s")])
def test_seconds_are_whole_from_ten_and_for_whole_values(s, text):
    assert driver.seconds(s) == text


def test_a_hung_nvidia_smi_fails_with_its_deadline():
    hung = CommandResult(("nvidia-smi", "-q", "-x"), None, "", "", 2.5, timed_out=True)
    f = one(driver.driver_answers, snap(commands={"nvidia_smi_xml": hung, "lspci": LSPCI}))
    assert f.status is Status.FAIL and f.title == "nvidia-smi did not answer within 2.5s"
    assert f.fix.kb_id == "driver_hung"
    assert [e.source for e in f.evidence] == ["command:nvidia_smi_xml", "command:lspci"]


def test_nvidia_smi_printing_what_no_parser_reads_is_unknown_not_a_gpu():
    garbage = ran(["nvidia-smi", "-q", "-x"], "Segmentation fault handler installed\nhello\n")
    f = one(driver.driver_answers, snap(commands={"nvidia_smi_xml": garbage}))
    assert (f.status, f.cannot_tell) == (Status.SKIP, True)
    assert f.title == "nvidia-smi printed something gpudoctor cannot read"
    assert f.fix.kb_id == "smi_unreadable"
    assert f.evidence[0].source == "command:nvidia_smi_xml"
    assert f.evidence[0].excerpt == "Segmentation fault handler installed"


NO_SMI = CommandResult(("nvidia-smi",), error="not found")


def test_a_gpu_without_nvidia_smi_on_a_host_means_the_driver_is_not_installed():
    f = one(driver.driver_answers, snap(commands={"nvidia_smi_xml": NO_SMI, "lspci": LSPCI}))
    assert (f.status, f.title) == (Status.FAIL, "an NVIDIA GPU is present but the NVIDIA driver is not installed")
    assert [(e.source, e.excerpt) for e in f.evidence] == [
        ("command:nvidia_smi_xml", "`nvidia-smi`: not found"),
        ("command:lspci", "01:00.0 NVIDIA Corporation GA102 [GeForce RTX 3090] [10de:2204] (rev a1)")]
    assert f.fix.kb_id == "driver_not_installed" and f.fix.commands[-1] == "sudo reboot"


def test_a_container_given_neither_gpu_nor_nvidia_smi_names_its_kind():
    s = snap(commands={"nvidia_smi_xml": NO_SMI}, files={"/.dockerenv": ""}, listings={"/dev": ["nvidiactl"]})
    f = one(driver.driver_answers, s)
    assert f.status is Status.FAIL
    assert f.title == "the host has an NVIDIA driver, but no GPU and no nvidia-smi were passed into this docker container"
    assert [(e.source, e.excerpt) for e in f.evidence][1] == ("listing:/dev", "/dev/nvidiactl")
    assert f.fix.kb_id == "no_device_in_container"
    assert f.fix.commands[1].startswith("docker run --rm --gpus all <image> nvidia-smi")


def test_a_container_given_the_gpu_but_not_nvidia_smi_lacks_the_utility_capability():
    s = snap(commands={"nvidia_smi_xml": NO_SMI}, files={"/.dockerenv": ""}, listings={"/dev": ["nvidia0", "nvidiactl"]})
    f = one(driver.driver_answers, s)
    assert (f.status, f.title) == (Status.WARN, "the GPU was passed into this docker container but nvidia-smi was not: "
                                                "the 'utility' driver capability is missing")
    assert f.fix.summary == "Start the container with NVIDIA_DRIVER_CAPABILITIES=compute,utility (or all)."
    assert f.evidence[1].excerpt == "/dev/nvidia0 /dev/nvidiactl"


def test_nou002_names_at_most_two_gpus_from_lspci_else_from_nvidia_smi():
    from pathlib import Path

    three = ran(["lspci"], "".join(f"0{i}:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102 "
                                   "[GeForce RTX 3090] [10de:2204] (rev a1)\n" for i in (1, 2, 3)))
    f = one(nouveau.nouveau_blacklisted, snap(listings={"/etc/modprobe.d": []}, commands={"lspci": three}))
    assert f.status is Status.WARN
    assert (f.evidence[0].source, f.evidence[0].excerpt) == (
        "command:lspci", "01:00.0 NVIDIA Corporation GA102 [GeForce RTX 3090] [10de:2204] (rev a1); "
                         "02:00.0 NVIDIA Corporation GA102 [GeForce RTX 3090] [10de:2204] (rev a1)")
    xml = (Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi" / "xml" /
           "tesla-k80-x4_driver-430.26_cuda-not-found_processes.xml").read_text()
    s = snap(listings={"/etc/modprobe.d": []}, commands={"nvidia_smi_xml": ran(["nvidia-smi", "-q", "-x"], xml)})
    f = one(nouveau.nouveau_blacklisted, s)
    assert f.status is Status.WARN and f.evidence[0].source == "command:nvidia_smi_xml"
    assert f.evidence[0].excerpt == "GPU 0 (Tesla K80), GPU 1 (Tesla K80)"


def test_lookups_that_disagree_with_no_chosen_toolkit_settle_on_the_newest():
    s = snap(files={"/usr/local/cuda-11.8/version.json": '{"cuda": {"version": "11.8.0"}}',
                    "/usr/local/cuda-12.4/version.json": '{"cuda": {"version": "12.4.1"}}',
                    "/usr/local/cuda-12.1/version.json": '{"cuda": {"version": "12.1.1"}}',
                    "/proc/driver/nvidia/version": NVRM.format("550.54.15")},
             env={"LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64:/opt/x/lib:/usr/local/cuda-12.1/lib64/",
                  "PATH": "/usr/local/cuda-12.1/bin/:/usr/bin"},
             listings={"/usr/local": ["cuda-11.8", "cuda-12.4", "cuda-12.1"]})
    f = one(cuda_toolkit.toolkit_paths, s)
    assert (f.status, f.title) == (Status.WARN, "CUDA lookups disagree: LD_LIBRARY_PATH -> 11.8, LD_LIBRARY_PATH -> 12.1")
    # every toolkit directory leaves PATH and LD_LIBRARY_PATH (a trailing slash too), the newest goes first
    assert f.fix.commands[:4] == ("export CUDA_HOME=/usr/local/cuda-12.4", "export PATH=/usr/local/cuda-12.4/bin:/usr/bin",
                                  "export LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64:/opt/x/lib",
                                  "nvcc --version    # now: release 12.4")
    assert f.fix.commands[4].endswith("instead of the ones naming /usr/local/cuda-11.8, /usr/local/cuda-12.1")


# --- CVD001: what the value hides, and what to set instead -----------------------------------------

def _k80_cvd(env, files=None):
    from pathlib import Path

    from gpudoctor_checks import visible_devices as cvd

    xml = (Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi" / "xml" /
           "tesla-k80-x4_driver-430.26_cuda-not-found_processes.xml").read_text()
    return one(cvd.cuda_visible_devices, snap(commands={"nvidia_smi_xml": ran(["nvidia-smi", "-q", "-x"], xml)},
                                              env=env, files=files or {}))


def test_cvd001_in_a_container_reminds_that_its_gpus_are_numbered_from_zero():
    f = _k80_cvd({"CUDA_VISIBLE_DEVICES": "5", "NVIDIA_VISIBLE_DEVICES": "2,3"}, {"/.dockerenv": ""})
    assert (f.status, f.title) == (Status.FAIL, "CUDA_VISIBLE_DEVICES='5' hides all 4 GPU(s): CUDA programs see none")
    assert f.detail == ("GPU 5 does not exist: this machine shows 4 GPU(s), numbered 0 to 3. Inside this container "
                        "(NVIDIA_VISIBLE_DEVICES=2,3) the GPUs it was given are numbered from 0: use 0, 1, ... here, "
                        "not the host's numbers.")
    assert f.fix.commands[1] == "export CUDA_VISIBLE_DEVICES=0"   # it names no GPU: the first
    for nvd in ("all", "void", "none"):
        assert _k80_cvd({"CUDA_VISIBLE_DEVICES": "5", "NVIDIA_VISIBLE_DEVICES": nvd}, {"/.dockerenv": ""}).detail == \
            "GPU 5 does not exist: this machine shows 4 GPU(s), numbered 0 to 3."
    assert "Inside this container" not in _k80_cvd({"CUDA_VISIBLE_DEVICES": "5", "NVIDIA_VISIBLE_DEVICES": "2"}).detail


def test_cvd001_suggests_each_gpu_the_value_names_once_by_uuid():
    f = _k80_cvd({"CUDA_VISIBLE_DEVICES": "1,x,3,1"})
    assert f.title == "CUDA_VISIBLE_DEVICES='1,x,3,1': CUDA sees 1 of 4 GPU(s) (cuda:0 = GPU 1); x, 3, 1 silently dropped"
    assert f.fix.commands[1] == ("export CUDA_VISIBLE_DEVICES=GPU-b01b80eb-0f18-1df0-cf88-0725bd90f1e1,"
                                 "GPU-3341aba2-f01d-2c1f-7dd4-e389779faec2")
    f = _k80_cvd({"CUDA_VISIBLE_DEVICES": "1,,2"})
    assert f.detail == ("An empty entry (two commas in a row, or a trailing comma): CUDA stops reading the list there "
                        "(2 after it is ignored too).")
    assert f.fix.commands[1] == ("export CUDA_VISIBLE_DEVICES=GPU-b01b80eb-0f18-1df0-cf88-0725bd90f1e1,"
                                 "GPU-30bc2701-3bc2-5f35-0ebd-9867a077e138")


def test_cuda001_failure_names_the_rule_the_driver_and_the_way_out():
    f = one(cuda_toolkit.toolkit_driver_fit, _toolkit("13.0.1", "575.57.08"))
    assert f.title == "CUDA 13.0.1 at /usr/local/cuda-13.0 needs driver >= 580; this machine has 575.57.08"
    assert f.detail == ("CUDA 13.0.1 needs driver >= 580 (CUDA minor-version compatibility) and 580.82.07 for all its "
                        "features. Nothing built with this toolkit can start on this driver ('CUDA driver version is "
                        "insufficient for CUDA runtime version').")
    assert [(e.source, e.excerpt) for e in f.evidence] == [
        ("file:/usr/local/cuda-13.0/version.json", "CUDA 13.0.1 at /usr/local/cuda-13.0"),
        ("file:/proc/driver/nvidia/version", "driver 575.57.08 (supports CUDA up to 12.9)")]
    assert f.fix.kb_id == "cuda_toolkit_too_new"
    assert f.fix.summary == ("Upgrade the driver to 580.82.07 or newer (branch 580), or build with a toolkit this "
                             "driver supports (CUDA 12.9 or older).")
    old = one(cuda_toolkit.toolkit_driver_fit, _toolkit("10.2.89", "418.87.01"))
    assert old.detail.startswith("CUDA 10.2.89 needs driver >= 440.33 (the driver it shipped with). Nothing built")
    assert old.fix.commands[0] == ("# install NVIDIA driver 440.33 or newer (branch 440) from your distribution or "
                                   "NVIDIA's CUDA repository")


def test_cuda001_minor_version_compatibility_warns_about_ptx():
    f = one(cuda_toolkit.toolkit_driver_fit, _toolkit("12.8.1", "525.60.13"))
    assert f.title == ("CUDA 12.8.1 at /usr/local/cuda-12.8 runs on driver 525.60.13 only through minor-version "
                       "compatibility; its PTX and newest features need driver 570.124.06")
    assert f.detail == ("CUDA 12.8.1 needs driver >= 525.60.13 (CUDA minor-version compatibility) and 570.124.06 for "
                        "all its features. Programs built with it start, but PTX it generates cannot be JIT-compiled "
                        "by this driver (cudaErrorUnsupportedPtxVersion) and some new APIs are missing.")
    assert f.evidence[1].excerpt == "driver 525.60.13 (supports CUDA up to 12.0)"
    assert f.fix.commands[-1] == "# or keep the driver and use a toolkit it supports: CUDA 12.0 or older"


_COULDNT = ran(["nvidia-smi", "-q", "-x"], "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                           "driver. Make sure that the latest NVIDIA driver is installed and running.\n", 9)


@pytest.mark.parametrize("extra, title, kb", [
    (dict(files={"/proc/version": "Linux version 5.15.153.1-microsoft-standard-WSL2 (gcc)\n"}),
     "nvidia-smi cannot talk to the NVIDIA driver: under WSL the driver comes from Windows (/usr/lib/wsl/lib)",
     "wsl_specific"),
    (dict(files={"/.dockerenv": ""}, listings={"/dev": ["nvidia0"]}),   # devices passed in: the host's module
     "nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded", "driver_not_loaded"),
    (dict(files={"/proc/modules": "nouveau 2 0 - Live 0x0\n"}),
     "nvidia-smi cannot talk to the NVIDIA driver: nouveau holds the GPU", "nouveau_conflict"),
    (dict(commands={"modinfo_nvidia": ran(["modinfo"], "", 1, "modinfo: ERROR: Module nvidia not found.\n")}),
     "nvidia-smi cannot talk to the NVIDIA driver: no nvidia module is built for this kernel", "driver_not_loaded"),
    ({}, "nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded", "driver_not_loaded"),
])
def test_couldnt_communicate_is_explained_by_the_machine(extra, title, kb):
    rest = {k: v for k, v in extra.items() if k != "commands"}   # the parameter itself stays as it is
    f = one(driver.driver_answers, snap(commands={"nvidia_smi_xml": _COULDNT, **extra.get("commands", {})}, **rest))
    assert (f.status, f.title, f.fix.kb_id) == (Status.FAIL, title, kb)
    assert f.evidence[0].source == "command:nvidia_smi_xml"


# --- DRV001: each way nvidia-smi fails, with the fix for this distribution ----------------------

UBUNTU = {"/etc/os-release": 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\n'}
COULDNT = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
NOT_LOADED_UBUNTU = ("sudo modprobe nvidia && nvidia-smi", "sudo dmesg | grep -iE 'nvidia|nvrm' | tail -20", "dkms status",
                     "sudo apt install --reinstall linux-headers-$(uname -r) && sudo dkms autoinstall", "sudo reboot")


def test_drv001_unknown_failure_loads_the_module_the_distribution_way():
    f = one(driver.driver_answers, snap(files=UBUNTU, commands={"nvidia_smi_xml": ran(["nvidia-smi"], "something new\n", 42)}))
    assert (f.status, f.title) == (Status.FAIL, "nvidia-smi failed")
    assert [(e.source, e.excerpt) for e in f.evidence] == [("command:nvidia_smi_xml", "`nvidia-smi` exited 42: something new")]
    assert f.fix.kb_id == "driver_not_loaded" and f.fix.commands == NOT_LOADED_UBUNTU


def test_drv001_reads_nvidia_smis_words_on_stderr_too():
    s = snap(files=UBUNTU, commands={"nvidia_smi_xml": ran(["nvidia-smi", "-q", "-x"], "", 12,
                                                           "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.\n")})
    f = one(driver.driver_answers, s)
    assert f.title == "nvidia-smi cannot find the NVML library (libnvidia-ml.so)" and f.symptom_of == ()
    assert f.fix.commands == ("ldconfig -p | grep libnvidia-ml    # libnvidia-ml.so.1 must be listed",
                              "sudo apt install --reinstall libnvidia-compute-<driver_branch>    # Ubuntu's package "
                              "holding libnvidia-ml", "sudo ldconfig && nvidia-smi")


@pytest.mark.parametrize("rc, title, kb", [
    (8, "nvidia-smi exited 8: a GPU's external power cables are not properly attached", "driver_gpu_lost"),
    (14, "nvidia-smi exited 14: a GPU's infoROM is corrupted", "driver_inforom_corrupted"),
    (2, "nvidia-smi exited 2: an argument nvidia-smi was given is invalid (an option this driver's nvidia-smi does "
        "not know)", None),
])
def test_drv001_falls_back_on_the_exit_codes_meaning_and_its_recipe(rc, title, kb):
    f = one(driver.driver_answers, snap(commands={"nvidia_smi_xml": ran(["nvidia-smi", "-q", "-x"], "garbled\n", rc)}))
    assert (f.status, f.title) == (Status.FAIL, title)
    assert [(e.source, e.excerpt) for e in f.evidence] == [
        ("command:nvidia_smi_xml", f"`nvidia-smi -q -x` exited {rc}: garbled")]
    assert (f.fix.kb_id if f.fix else None) == kb


def test_drv001_version_mismatch_leaves_the_fix_to_drv002_only_when_it_knows_both_versions():
    mismatch = ran(["nvidia-smi"], "Failed to initialize NVML: Driver/library version mismatch\n", 18)
    module_only = one(driver.driver_answers, snap(files={"/proc/driver/nvidia/version": NVRM.format("550.54.15")},
                                                  commands={"nvidia_smi_xml": mismatch}))
    assert module_only.title == "the NVIDIA kernel module and user-space driver have different versions"
    assert module_only.detail is None and module_only.fix.commands[0] == "sudo reboot"
    assert module_only.symptom_of == ("DRV002",)
    both = ran(["nvidia-smi"], mismatch.stdout + "NVML library version: 535.104\n", 18)
    known = one(driver.driver_answers, snap(files={"/proc/driver/nvidia/version": NVRM.format("550.54.15")},
                                            commands={"nvidia_smi_xml": both}))
    assert known.detail == "DRV002 has both versions and the fix." and known.fix is None


def test_drv001_couldnt_communicate_because_nouveau_drives_the_gpu():
    lspci = ran(["lspci", "-k"], LSPCI.stdout.replace("\tKernel modules", "\tKernel driver in use: nouveau\n\tKernel modules"))
    f = one(driver.driver_answers, snap(files=UBUNTU, commands={"nvidia_smi_xml": ran(["nvidia-smi"], COULDNT, 9),
                                                                "lspci": lspci}))
    assert f.title == "nvidia-smi cannot talk to the NVIDIA driver: nouveau holds the GPU"
    assert f.evidence[1].excerpt.endswith("(kernel driver in use: nouveau)")
    assert f.fix.kb_id == "nouveau_conflict" and f.fix.commands[1] == "sudo update-initramfs -u"


@pytest.mark.parametrize("sb_state, modinfo, title", [
    ("SecureBoot enabled\n", ran(["modinfo"], "", 1, "modinfo: ERROR: Module nvidia not found.\n"),
     "nvidia-smi cannot talk to the NVIDIA driver: no nvidia module is built for this kernel"),
    ("SecureBoot disabled\n", ran(["modinfo"], "filename:       /lib/modules/6.8.0/updates/dkms/nvidia.ko\n"),
     "nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded"),
])
def test_drv001_couldnt_communicate_blames_secure_boot_only_for_a_module_that_exists(sb_state, modinfo, title):
    s = snap(files=UBUNTU, commands={"nvidia_smi_xml": ran(["nvidia-smi"], COULDNT, 9), "modinfo_nvidia": modinfo,
                                     "mokutil_sb_state": ran(["mokutil"], sb_state)})
    f = one(driver.driver_answers, s)
    assert f.title == title and f.fix.commands == NOT_LOADED_UBUNTU


@pytest.mark.parametrize("os_release, install", [
    (UBUNTU["/etc/os-release"], "sudo ubuntu-drivers install    # Ubuntu; on Debian: sudo apt install nvidia-driver"),
    ('ID=rhel\nVERSION_ID="9.4"\n', "sudo dnf install nvidia-driver    # from NVIDIA's CUDA repository or RPM Fusion"),
])
def test_drv001_missing_driver_is_installed_the_distribution_way(os_release, install):
    s = snap(files={"/etc/os-release": os_release}, commands={"nvidia_smi_xml": NO_SMI, "lspci": LSPCI})
    assert one(driver.driver_answers, s).fix.commands == (install, "sudo reboot")


def test_drv001_an_answer_with_an_unknown_exit_code_says_only_the_code():
    from pathlib import Path

    xml = (Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi" / "xml" /
           "rtx-3090_driver-525.147.05_cuda-12.0.xml").read_text()
    f = one(driver.driver_answers, snap(commands={"nvidia_smi_xml": ran(["nvidia-smi", "-q", "-x"], xml, 99)}))
    assert (f.status, f.title) == (Status.OK, "driver 525.147.05 answers, 1 GPU(s) visible (nvidia-smi exited 99)")
    f = one(driver.driver_answers, snap(commands={"nvidia_smi_xml": ran(["nvidia-smi", "-q", "-x"], xml, 14)}))
    assert f.title == "driver 525.147.05 answers, 1 GPU(s) visible (nvidia-smi exited 14: a GPU's infoROM is corrupted)"
