"""Core fact providers parse real-world file and command formats."""

from __future__ import annotations

from gpudoctor.facts import Facts, NotApplicable
from gpudoctor.facts.cuda import Nvcc
from gpudoctor.facts.system import Container
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import FileRecord, Snapshot


def facts(files=None, commands=None, env=None, listings=None):
    s = Snapshot(env=env or {}, listings=listings or {})
    s.files = {p: FileRecord(p, content=c) for p, c in (files or {}).items()}
    s.commands = commands or {}
    return Facts(s)


def test_kernel_module_proprietary_and_open():
    f = facts({"/proc/driver/nvidia/version":
               "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"})
    assert f["kernel_module"].version == "535.104.05" and f["kernel_module"].open is False
    f = facts({"/proc/driver/nvidia/version":
               "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 20 01:40:31 UTC 2025\n"})
    assert f["kernel_module"].version == "570.124.06" and f["kernel_module"].open is True
    f = facts({})  # not recorded: cannot tell
    assert "cannot tell whether the NVIDIA kernel module is loaded" in f.why_missing("kernel_module")
    assert not isinstance(f.failure("kernel_module"), NotApplicable)
    s = Snapshot()
    s.files["/proc/driver/nvidia/version"] = FileRecord("/proc/driver/nvidia/version", error="missing")
    f = Facts(s)  # read, and not there: no module is loaded, an answer
    assert isinstance(f.failure("kernel_module"), NotApplicable)
    assert "no NVIDIA kernel module is loaded" in f.why_missing("kernel_module")


LSPCI = """01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102 [GeForce RTX 3090] [10de:2204] (rev a1)
\tSubsystem: ASUSTeK Computer Inc. Device [1043:87b3]
\tKernel driver in use: nouveau
\tKernel modules: nvidiafb, nouveau
01:00.1 Audio device [0403]: NVIDIA Corporation GA102 High Definition Audio Controller [10de:1aef] (rev a1)
\tKernel driver in use: snd_hda_intel
"""


def test_lspci_display_controllers_only_with_bound_driver():
    f = facts(commands={"lspci": CommandResult(("lspci", "-nnk", "-d", "10de:"), 0, LSPCI)})
    (dev,) = f["pci_gpus"]
    assert (dev.slot, dev.device_id, dev.kernel_driver) == ("01:00.0", "10de:2204", "nouveau")
    assert dev.kernel_modules == ("nvidiafb", "nouveau")


def test_container_detection():
    assert facts({"/.dockerenv": ""})["container"] == Container(inside=True, kind="docker")
    assert facts({"/proc/1/cgroup": "0::/kubepods/besteffort/pod1/abc\n"})["container"].kind == "kubernetes"
    assert facts({"/run/.containerenv": ""})["container"].kind == "podman"
    assert facts({"/proc/1/cgroup": "0::/init.scope\n"})["container"] == Container(inside=False, kind=None)


def test_wsl_detection():
    f = facts({"/proc/version": "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@...) #1 SMP\n"},
              listings={"/usr/lib/wsl/lib": ["libcuda.so", "libcuda.so.1", "libnvidia-ml.so.1"], "/dev/dxg": []})
    assert f["wsl"].inside and f["wsl"].wsl2 and "libcuda.so.1" in f["wsl"].wsl_libs
    assert facts({"/proc/version": "Linux version 6.1.0-18-amd64\n"})["wsl"].inside is False


def test_os_release_quotes_and_comments():
    f = facts({"/etc/os-release": '# comment\nNAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID=\'9.3\'\n'})
    assert f["os_release"].id_like == ("rhel", "centos", "fedora") and f["os_release"].version_id == "9.3"
    assert f["os_release"].id == "rocky"


def test_nvcc_release():
    out = "Cuda compilation tools, release 12.4, V12.4.131\nBuild cuda_12.4.r12.4/compiler.34097967_0\n"
    f = facts(commands={"nvcc_version": CommandResult(("nvcc", "--version"), 0, out)})
    assert f["nvcc"] == Nvcc(release="12.4", version="12.4.131")
    f = facts(commands={"nvcc_version": CommandResult(("nvcc", "--version"), error="not found")})
    assert f.why_missing("nvcc") == "`nvcc --version`: not found"
