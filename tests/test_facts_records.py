"""Facts read from whole records: every field of a record distinct, the fact compared whole.

The scenario goldens pin what the recorded machines hold; these pin the fields and branches that no
recording exercises (a smoke test's every measurement, DCGM 3.x and 4.x result shapes, NVSwitch signs,
fabric manager answers), and the exact reason a fact is missing.
"""

from __future__ import annotations

import json

import pytest

from gpudoctor.facts import Facts, Missing, NotApplicable
from gpudoctor.facts import dcgm as dcgm_facts
from gpudoctor.facts import kernel as kernel_facts
from gpudoctor.facts.cuda import Link, Toolkit, nvcc_on_path
from gpudoctor.facts.cuda_paths import Pick, default_toolkit
from gpudoctor.facts.dcgm import DcgmDiag, DcgmResult, DcgmWarning
from gpudoctor.facts.fabric import FabricManager, NvSwitchSystem
from gpudoctor.facts.frameworks import FrameworkInstall, FrameworkProbe, RaisedError
from gpudoctor.facts.gpu_faults import GpuFault
from gpudoctor.facts.nvidia import Gpu, expected_format, first_line, smi_failure
from gpudoctor.facts.nvml import Nvml, NvmlDevice
from gpudoctor.facts.smoke import MARKER, AllReduce, Matmul, SmokeDevice, SmokeTest
from gpudoctor.runner import CommandResult
from gpudoctor.smi.model import SmiMigDevice
from tests.builders import ran, snap


def _fact(snapshot, name):
    return Facts(snapshot)[name]


def _reason(snapshot, name, kind=Missing):
    with pytest.raises(kind) as info:
        Facts(snapshot)[name]
    return str(info.value)


# --- the smoke test ------------------------------------------------------------------------------

SMOKE_ARGV = ("/opt/venv/bin/python", "-c", "smoke")


def _smoke(payload=None, stdout=None, **result):
    out = stdout if stdout is not None else "noise\n" + MARKER + json.dumps(payload)
    fields = {"returncode": 0, "stdout": out, "stderr": "", "duration_s": 7.25, **result}
    return snap(commands={"smoke_test": CommandResult(SMOKE_ARGV, **fields)})


FULL_DEVICE = {
    "index": 3, "name": "NVIDIA H100 80GB HBM3", "compute_cap": "9.0", "pci_bus_id": "0000:3b:00.0",
    "uuid": "GPU-5e6f0000-1111-2222-3333-444455556666",
    "alloc": {"mib": 512, "ok": False, "error": {"type": "RuntimeError", "message": "block differs"}},
    "matmul": [{"dtype": "fp32", "max_abs_diff": 2.5e-05, "max_abs_ref": 41.5},
               {"dtype": "bf16", "max_abs_diff": None, "max_abs_ref": None, "skipped": "needs compute capability 8.0"},
               {"max_abs_diff": 1.0, "max_abs_ref": 2.0, "error": {"type": "ValueError", "message": "nan"}}],
    "copy": {"bytes": 268435456, "h2d_s": [0.011, 0.012], "d2h_s": [0.021], "pinned": False,
             "error": {"type": "OSError", "message": "pin refused"}},
}


def test_every_field_of_a_smoke_device_and_of_the_all_reduce_is_read():
    payload = {"torch": "2.4.0+cu121", "cuda_build": "12.1", "cuda_visible_devices": "3,1",
               "cuda_error": {"type": "RuntimeError", "message": "late"},
               "devices": [FULL_DEVICE, {"index": 1}],
               "nccl": {"world": 2, "seconds_limit": 30.5, "timed_out": 1,
                        "ranks": [{"correct": True, "bytes": 1048576, "seconds": [0.5, 0.25]}, {"correct": True}]}}
    got = _fact(_smoke(payload), "smoke_test")
    assert got == SmokeTest(
        "/opt/venv/bin/python", "2.4.0+cu121", "RuntimeError: late", "3,1",
        (SmokeDevice(3, "NVIDIA H100 80GB HBM3", "9.0", "0000:3b:00.0", "GPU-5e6f0000-1111-2222-3333-444455556666",
                     512, False, "RuntimeError: block differs",
                     (Matmul("fp32", 2.5e-05, 41.5), Matmul("bf16", None, None, "needs compute capability 8.0"),
                      Matmul("?", 1.0, 2.0, None, "ValueError: nan")),
                     268435456, (0.011, 0.012), (0.021,), False, "OSError: pin refused"),
         SmokeDevice(1, None, None, None, None, None, None, None, (), None, (), (), None, None)),
        AllReduce(2, True, 1048576, (0.5, 0.25), None, True, 30.5), 7.25)


def test_a_device_without_an_index_is_device_zero_and_a_healthy_one_has_no_errors():
    got = _fact(_smoke({"torch": "2.4.0", "cuda_build": "12.1", "devices": [
        {"alloc": {"mib": 64, "ok": True}, "copy": {"bytes": 8, "h2d_s": [0.5], "d2h_s": [0.25], "pinned": True}}]}),
        "smoke_test")
    assert got.devices == (SmokeDevice(0, None, None, None, None, 64, True, None, (), 8, (0.5,), (0.25,), True, None),)
    assert got.allreduce is None and got.cuda_error is None and got.cuda_visible_devices is None


@pytest.mark.parametrize("ranks,expected", [
    ([{"correct": True}, {"correct": False}], (False, None)),
    ([{"correct": True, "error": {"type": "DistBackendError", "message": "NCCL timeout"}},
      {"error": {"type": "RuntimeError", "message": "second"}}], (None, "DistBackendError: NCCL timeout")),
    ([], (None, None)),
])
def test_the_all_reduce_is_correct_only_when_every_rank_says_so_and_names_the_first_error(ranks, expected):
    got = _fact(_smoke({"torch": "2.4", "cuda_build": "12.1", "devices": [],
                        "nccl": {"world": 4, "ranks": ranks}}), "smoke_test").allreduce
    assert (got.correct, got.error) == expected
    assert (got.world, got.timed_out, got.limit_s) == (4, False, None)
    assert got.bytes is None and got.seconds == ()


def test_an_empty_nccl_record_is_no_all_reduce():
    assert _fact(_smoke({"torch": "2.4", "cuda_build": "12.1", "nccl": {}}), "smoke_test").allreduce is None


def test_the_last_marked_line_is_the_result():
    first = MARKER + json.dumps({"torch": "1.0", "cuda_build": "11.0"})
    last = MARKER + json.dumps({"torch": "2.0", "cuda_build": "12.0"})
    assert _fact(_smoke(stdout=f"{first}\n{last}\n"), "smoke_test").torch == "2.0"


def test_why_the_smoke_test_has_no_result():
    assert _reason(snap(), "smoke_test") == "the smoke test was not run (gpudoctor check --deep, or hook --smoke)"
    assert _reason(_smoke(stdout="", timed_out=True, duration_s=59.6), "smoke_test") == \
        "the smoke test did not finish within 60s (its processes were killed)"
    assert _reason(_smoke(stdout="nothing marked\n", returncode=1, stderr="Traceback\n  boom\nKeyError: 'x'\n"),
                   "smoke_test") == ("the smoke test in /opt/venv/bin/python ended without a result "
                                     "(`/opt/venv/bin/python -c smoke` exited 1): KeyError: 'x'")
    assert _reason(_smoke(stdout=MARKER + "{not json", returncode=0), "smoke_test") == \
        "the smoke test in /opt/venv/bin/python ended without a result (`/opt/venv/bin/python -c smoke` exited 0)"
    # a child that could not be started at all has no marked line, whatever its stdout
    assert _reason(_smoke(stdout=MARKER + "{}", error="not found", returncode=None), "smoke_test") == \
        "the smoke test in /opt/venv/bin/python ended without a result (`/opt/venv/bin/python -c smoke`: not found)"
    no_argv = snap(commands={"smoke_test": CommandResult((), 1, "", "", 1.0)})
    assert _reason(no_argv, "smoke_test") == "the smoke test in python ended without a result (`` exited 1)"


def test_a_smoke_test_without_torch_or_cuda_is_not_applicable():
    assert _reason(_smoke({"torch_error": {"type": "ModuleNotFoundError", "message": "No module named 'torch'"}}),
                   "smoke_test", NotApplicable) == (
        "torch cannot be imported in /opt/venv/bin/python (ModuleNotFoundError: No module named 'torch'): "
        "no GPU test to run")
    assert _reason(_smoke({"torch": "2.4.0+cpu", "cuda_build": None}), "smoke_test", NotApplicable) == \
        "torch 2.4.0+cpu in /opt/venv/bin/python is a CPU-only build: no GPU to test"


# --- DCGM ----------------------------------------------------------------------------------------

def _dcgm_doc(results, root="DCGM Diagnostic", summary=None, **extra):
    test = {"name": "memory", "results": results}
    if summary is not None:
        test["test_summary"] = summary
    return json.dumps({root: {"test_categories": [{"category": "Hardware", "tests": [test]}], **extra}})


@pytest.mark.parametrize("result,gpu", [
    ({"entity_group": "GPU", "entity_id": 2, "status": "Pass"}, "2"),
    ({"entity_id": 5, "status": "Pass"}, "5"),                   # no group: a GPU
    ({"entity_group": "CPU", "entity_id": 1, "status": "Pass"}, None),
    ({"gpu_ids": "0,1", "entity_id": 4, "status": "Pass"}, "0,1"),
    ({"gpu_id": 7, "entity_group": "GPU", "entity_id": 4, "status": "Pass"}, "7"),
    ({"gpu_ids": [0, 1], "gpu_id": 7, "status": "Pass"}, "[0, 1]"),
    ({"status": "Pass"}, None),
])
def test_which_gpu_a_dcgm_result_is_about(result, gpu):
    _, results, _ = dcgm_facts.parse(_dcgm_doc([result]))
    assert results == (DcgmResult("Hardware", "memory", gpu, "pass", (), ()),)


def test_dcgm_warnings_in_every_shape():
    warnings = [{"warning": "ECC DBE", "error_id": "95", "error_severity": 2},
                {"message": "from message", "error_id": True, "error_severity": "high"},
                {"error_id": None},
                "a string warning", 42]
    _, results, _ = dcgm_facts.parse(_dcgm_doc([{"entity_id": 0, "status": "FAIL", "warnings": warnings,
                                                  "info": ["one", 2, "three"]}]))
    assert results[0].warnings == (DcgmWarning("ECC DBE", 95, 2), DcgmWarning("from message", None, None),
                                   DcgmWarning("", None, None), DcgmWarning("a string warning", None, None))
    assert results[0].info == ("one", "three") and results[0].status == "fail"


def test_a_failed_dcgm_4_result_takes_its_warnings_and_info_from_the_summary():
    summary = {"warnings": [{"warning": "summary reason", "error_id": 7}], "info": ["summary info"]}
    _, failed, _ = dcgm_facts.parse(_dcgm_doc([{"entity_id": 0, "status": "Fail"}], summary=summary))
    assert failed[0].warnings == (DcgmWarning("summary reason", 7, None),) and failed[0].info == ("summary info",)
    _, passed, _ = dcgm_facts.parse(_dcgm_doc([{"entity_id": 0, "status": "Pass"}], summary=summary))
    assert passed[0].warnings == () and passed[0].info == ("summary info",)
    _, own, _ = dcgm_facts.parse(_dcgm_doc([{"entity_id": 0, "status": "Fail", "warnings": ["own"], "info": ["mine"]}],
                                            summary=summary))
    assert own[0].warnings == (DcgmWarning("own", None, None),) and own[0].info == ("mine",)


def test_dcgm_versions_names_and_runtime_errors():
    text = "dcgmi noise\n" + json.dumps({"metadata": {"version": "4.2.3"}, "DCGM Diagnostic": {
        "version": "9.9", "runtime_error": "",
        "test_categories": [{"tests": [{"results": [{"entity_id": 0}]}]}]}})
    assert dcgm_facts.parse(text) == ("4.2.3", (DcgmResult("", "?", "0", "", (), ()),), None)
    old = json.dumps({"DCGM GPU Diagnostic": {"version": "3.3.5", "runtime_error": "no GPUs",
                                              "test_categories": []}})
    assert dcgm_facts.parse(old) == ("3.3.5", (), "no GPUs")
    with pytest.raises(ValueError, match="no JSON in dcgmi's output"):
        dcgm_facts.parse("Error: nothing")
    with pytest.raises(ValueError, match="has no 'DCGM Diagnostic' object"):
        dcgm_facts.parse('{"other": 1}')


DCGM_ARGV = ("dcgmi", "diag", "-r", "3", "-j")


def _dcgm(stdout="", **result):
    fields = {"returncode": 0, "stdout": stdout, "stderr": "", "duration_s": 120.4, **result}
    return snap(commands={"dcgmi_diag": CommandResult(DCGM_ARGV, **fields)})


def test_the_dcgm_fact_whole_and_why_it_can_be_missing():
    got = _fact(_dcgm(_dcgm_doc([{"entity_id": 1, "status": "Warn"}]), returncode=226), "dcgm_diag")
    assert got == DcgmDiag(3, None, (DcgmResult("Hardware", "memory", "1", "warn", (), ()),), 226)
    short = snap(commands={"dcgmi_diag": CommandResult(("dcgmi", "diag", "-r"), 0, _dcgm_doc([]), "", 1.0)})
    assert _fact(short, "dcgm_diag").level is None
    assert _reason(snap(), "dcgm_diag") == "dcgmi diag was not run (gpudoctor check --dcgm LEVEL, or hook --dcgm LEVEL)"
    assert _reason(_dcgm(error="not found", returncode=None), "dcgm_diag", NotApplicable) == \
        "DCGM is not installed (dcgmi not found on PATH)"
    assert _reason(_dcgm(timed_out=True, returncode=None), "dcgm_diag") == \
        "`dcgmi diag -r 3 -j` did not finish within 120s"
    assert _reason(_dcgm("Error: Unable to connect to host engine. Host engine connection invalid/disconnected.",
                         returncode=235), "dcgm_diag", NotApplicable).startswith("DCGM's nv-hostengine is not running")
    assert _reason(_dcgm("", stderr="dcgmi: bad option\nmore\n", returncode=2), "dcgm_diag") == \
        "`dcgmi diag -r 3 -j` exited 2: no JSON in dcgmi's output (dcgmi: bad option)"
    assert _reason(_dcgm("x" * 500 + "\n", returncode=2), "dcgm_diag") == \
        "`dcgmi diag -r 3 -j` exited 2: no JSON in dcgmi's output (" + "x" * 200 + ")"
    assert _reason(_dcgm("   ", returncode=2), "dcgm_diag") == "`dcgmi diag -r 3 -j` exited 2: no JSON in dcgmi's output"
    runtime = json.dumps({"DCGM Diagnostic": {"runtime_error": "  " + "y" * 400 + "  "}})
    assert _reason(_dcgm(runtime), "dcgm_diag") == "dcgmi diag could not run: " + "y" * 300


# --- NVSwitch signs and the fabric manager --------------------------------------------------------

LSPCI = ("lspci", "-nn")
SWITCH_LSPCI = "05:00.0 Bridge [0680]: NVIDIA Corporation Device [10de:22a3] (rev a1)"
JOURNAL_HEAD = "Nov 27 10:00:00 node kernel: Linux version 6.8.0-45-generic (buildd@lcy02)"


def _journal(*lines):
    return ran(("journalctl", "-k", "-b"), "\n".join((JOURNAL_HEAD,) + lines) + "\n")


def test_nvswitch_device_nodes_are_the_first_sign_and_name_at_most_four():
    nodes = ["nvidia0", "nvidiactl", "nvidia-nvswitchctl"] + [f"nvidia-nvswitch{i}" for i in range(6)]
    got = _fact(snap(listings={"/dev": nodes}, commands={"lspci": ran(LSPCI, SWITCH_LSPCI)}), "nvswitch")
    assert got == NvSwitchSystem("listing:/dev", "/dev/nvidia-nvswitch0 /dev/nvidia-nvswitch1 "
                                                 "/dev/nvidia-nvswitch2 /dev/nvidia-nvswitch3")


def test_an_nvswitch_on_the_pci_bus_is_read_by_its_last_vendor_device_id():
    lspci = "\n".join([
        "3b:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)",
        "06:00.0 Bridge [0680]: NVIDIA Corporation Device [10de:22a3] with [10de:9999]",
        "   " + SWITCH_LSPCI + "   ",
    ])
    got = _fact(snap(listings={"/dev": ["nvidia0", "nvidia-nvswitch"]}, commands={"lspci": ran(LSPCI, lspci)}), "nvswitch")
    assert got == NvSwitchSystem("command:lspci", SWITCH_LSPCI + " (NVSwitch of the H100 generation)")


@pytest.mark.parametrize("line,expected", [
    ("  Nov 27 10:00:01 node kernel: nvidia-nvswitch3: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up  ",
     "Nov 27 10:00:01 node kernel: nvidia-nvswitch3: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up"),
    ("Nov 27 10:00:01 node kernel: nvidia-nvswitch: Probing device 0000:05:00.0, Vendor Id = 0x10de, "
     "Device Id = 0x1AF1, Class = 0x68000",
     "Nov 27 10:00:01 node kernel: nvidia-nvswitch: Probing device 0000:05:00.0, Vendor Id = 0x10de, "
     "Device Id = 0x1AF1, Class = 0x68000"),
    ("Nov 27 10:00:01 node kernel: nvidia-nvswitch: Probing device 0000:05:00.0, Vendor Id = 0x10de, "
     "Device Id = 0x1234, Class = 0x68000", None),
])
def test_an_nvswitch_in_the_kernel_log(line, expected):
    s = snap(listings={"/dev": ["nvidia0"]}, commands={"kernel_journal": _journal(line),
                                                        "lspci": ran(LSPCI, "00:00.0 Host bridge [0600]: Intel [8086:1234]")})
    if expected is None:
        assert _reason(s, "nvswitch", NotApplicable) == \
            "no NVSwitch: neither NVSwitch devices nor an NVSwitch baseboard's GPUs were found"
    else:
        assert _fact(s, "nvswitch") == NvSwitchSystem("command:kernel_journal", expected)


def test_no_sign_of_an_nvswitch_without_gpus_or_dev_is_missing():
    assert _reason(snap(), "nvswitch") == "nvidia-smi was not recorded in this snapshot"


FM_ACTIVE = ("systemctl", "is-active", "nvidia-fabricmanager")
FM_VERSION = ("nv-fabricmanager", "--version")


@pytest.mark.parametrize("result,state", [
    (ran(FM_ACTIVE, "active\n"), ("active", "`systemctl is-active nvidia-fabricmanager`: active")),
    (ran(FM_ACTIVE, "  failed  \nsecond\n", 3),
     ("failed", "`systemctl is-active nvidia-fabricmanager`: failed")),
    (ran(FM_ACTIVE, "Active\n", 0, "warning: odd\nmore\n"),
     (None, "`systemctl is-active nvidia-fabricmanager` exited 0: warning: odd")),
    (ran(FM_ACTIVE, ""), (None, "`systemctl is-active nvidia-fabricmanager` exited 0")),
    (CommandResult(FM_ACTIVE, None, "active\n", "", 5.0, timed_out=True),
     (None, "`systemctl is-active nvidia-fabricmanager` did not answer within 5s")),
    (CommandResult(FM_ACTIVE, None, "active\n", "no such program\n", 0.0, error="not found"),
     (None, "`systemctl is-active nvidia-fabricmanager`: not found: no such program")),
])
def test_the_fabric_manager_state_and_how_it_was_learned(result, state):
    got = _fact(snap(commands={"fabricmanager_active": result}), "fabric_manager")
    assert got == FabricManager(*state, None, "`nv-fabricmanager --version` was not recorded")


@pytest.mark.parametrize("result,version", [
    (ran(FM_VERSION, "Fabric Manager version is : 525.60.13\n"),
     ("525.60.13", "Fabric Manager version is : 525.60.13")),
    (ran(FM_VERSION, "banner\n", 0, "  FABRIC MANAGER VERSION IS 550.54  \n"),
     ("550.54", "FABRIC MANAGER VERSION IS 550.54")),
    (ran(FM_VERSION, "version is : unknown\n"), (None, "`nv-fabricmanager --version` exited 0")),
    (ran(FM_VERSION, "Fabric Manager version is : 535.1\n", 1),
     ("535.1", "Fabric Manager version is : 535.1")),
    (CommandResult(FM_VERSION, None, "Fabric Manager version is : 535.1\n", "", 9.0, timed_out=True),
     (None, "`nv-fabricmanager --version` did not answer within 9s")),
    (CommandResult(FM_VERSION, None, "", "", 0.0, error="not found"), (None, "`nv-fabricmanager --version`: not found")),
])
def test_the_fabric_manager_version_and_how_it_was_learned(result, version):
    got = _fact(snap(commands={"fabricmanager_version": result}), "fabric_manager")
    assert got == FabricManager(None, "`systemctl is-active nvidia-fabricmanager` was not recorded", *version)


def test_a_fabric_manager_never_asked_about_is_missing():
    assert _reason(snap(), "fabric_manager") == "the fabric manager state was not recorded in this snapshot"


# --- framework probes ----------------------------------------------------------------------------


def _frameworks(**records):
    s = snap()
    s.frameworks = records
    return s


def test_a_torch_record_read_whole():
    s = _frameworks(torch={
        "installed": True, "version": "2.3.1+cu121", "python": "3.11.9", "cuda": "12.1", "cuda_built": True,
        "available": False, "device_count": 0, "gpus": ["ignored for torch"], "backend": "none", "devices": ["x"],
        "import_error": {"type": "RuntimeError", "message": "probe raised"}, "traceback": "Traceback ...",
        "probe": {"python": "/opt/venv/bin/python", "duration_s": 2.5, "returncode": 0, "stderr": "warn\n"}})
    assert _fact(s, "torch_probe") == FrameworkProbe(
        "torch", "/opt/venv/bin/python", False, 2.5, None, 0, True, True, RaisedError("RuntimeError", "probe raised"),
        "warn\n", "Traceback ...")
    assert _fact(s, "torch") == FrameworkInstall(
        "torch", "2.3.1+cu121", "3.11.9", RaisedError("RuntimeError", "probe raised"), True, "12.1", True, False, 0,
        ("ignored for torch",), "none", None)


def test_a_torch_record_without_its_cuda_field_does_not_know_the_build():
    got = _fact(_frameworks(torch={"installed": True, "version": "2.3.1", "cuda_built": False}), "torch")
    assert (got.build_known, got.cuda, got.cuda_build, got.gpus, got.devices) == (False, None, False, None, None)
    assert _fact(_frameworks(torch={"installed": True, "cuda": None}), "torch").build_known is True


def test_a_tensorflow_record_reads_its_build_info():
    s = _frameworks(tensorflow={
        "installed": True, "version": "2.15.0", "cuda": "ignored", "cuda_built": False,
        "build_info": {"cuda_version": "12.2", "is_cuda_build": True}, "gpus": ["/physical_device:GPU:0"],
        "devices": ["ignored"], "executable": "/usr/bin/python3"})
    assert _fact(s, "tensorflow") == FrameworkInstall(
        "tensorflow", "2.15.0", None, None, True, "12.2", True, None, None, ("/physical_device:GPU:0",), None, None)
    assert _fact(s, "tensorflow_probe").python == "/usr/bin/python3"
    no_info = _fact(_frameworks(tensorflow={"installed": True, "cuda_built": True, "cuda": "11.8"}), "tensorflow")
    assert (no_info.build_known, no_info.cuda, no_info.cuda_build) == (False, None, True)
    info_without_flag = _fact(_frameworks(tensorflow={"installed": True, "cuda_built": False, "build_info": {}}),
                              "tensorflow")
    assert (info_without_flag.build_known, info_without_flag.cuda_build) == (True, False)


def test_a_jax_record_keeps_its_devices():
    got = _fact(_frameworks(jax={"installed": True, "version": "0.4.30", "backend": "gpu",
                                 "devices": ["cuda:0", "cuda:1"]}), "jax")
    assert (got.backend, got.devices, got.gpus) == ("gpu", ("cuda:0", "cuda:1"), None)


@pytest.mark.parametrize("record,kind,reason", [
    ({"probe": {"python": "/p/python", "timed_out": True, "duration_s": 30.0}}, Missing,
     "the torch probe did not finish within 30.0s"),
    ({"probe": {"timed_out": True}}, Missing, "the torch probe did not finish within ?s"),
    ({"installed": False, "probe": {"python": "/p/python"}}, NotApplicable, "torch is not installed for /p/python"),
    ({"probe": {"python": "/p/python", "error": "not found"}}, Missing,
     "the torch probe could not run /p/python: not found"),
    ({"probe": {"returncode": -11}}, Missing, "the torch probe gave no answer (exit code -11)"),
])
def test_why_a_framework_has_no_install_record(record, kind, reason):
    assert _reason(_frameworks(torch=record), "torch", kind) == reason


def test_an_unprobed_framework_is_missing_and_the_probe_defaults():
    assert _reason(snap(), "torch_probe") == "torch was not probed in this snapshot"
    assert _fact(_frameworks(jax={}), "jax_probe") == FrameworkProbe(
        "jax", "the target interpreter", False, None, None, None, False, None, None, "", "")
    assert _fact(_frameworks(jax={}, torch={}), "framework_probes") == (
        _fact(_frameworks(torch={}), "torch_probe"), _fact(_frameworks(jax={}), "jax_probe"))


# --- NVML, nvidia-smi's expected formats, the kernel log's commands ------------------------------


def _nvml(raw):
    s = snap()
    s.nvml = raw
    return s


def test_nvml_readings_whole_with_refused_ones_as_none():
    refused = {"error": "NVMLError_NotSupported"}
    raw = {"driver_version": {"value": "550.54.15"}, "cuda_driver_version": {"value": 12040},
           "device_count": {"value": 2},
           "devices": [{"index": 4, "name": {"value": "NVIDIA A100-SXM4-80GB"}, "uuid": {"value": "GPU-aa"},
                        "pci_bus_id": {"value": "00000000:07:00.0"},
                        "memory": {"value": {"total_mib": 81920, "used_mib": 512}},
                        "compute_cap": {"value": "8.0"}, "mig_mode": {"value": 1}},
                       {"name": refused, "memory": refused, "mig_mode": refused, "uuid": "not a reading"}]}
    assert _fact(_nvml(raw), "nvml") == Nvml("550.54.15", 12040, 2, (
        NvmlDevice(4, "NVIDIA A100-SXM4-80GB", "GPU-aa", "00000000:07:00.0", 81920, 512, "8.0", 1),
        NvmlDevice(1, None, None, None, None, None, None, None)))


def test_nvml_values_of_the_wrong_type_are_unknown():
    got = _fact(_nvml({"driver_version": {"value": 550}, "cuda_driver_version": {"value": "12040"},
                       "device_count": {"value": "2"}}), "nvml")
    assert got == Nvml("550", None, None, ())
    assert _fact(_nvml({"driver_version": {"value": ""}, "devices": None}), "nvml") == Nvml(None, None, None, ())
    assert _reason(_nvml({}), "nvml") == "NVML was not recorded in this snapshot"


@pytest.mark.parametrize("argv,fmt", [
    (("nvidia-smi", "-q", "-x"), "xml"), (("nvidia-smi", "--xml-format", "-q"), "xml"),
    (("nvidia-smi", "--query-gpu=name", "--format=csv"), "csv"), (("nvidia-smi", "--format=csv,noheader"), "csv"),
    (("nvidia-smi", "--query-compute-apps=pid"), "csv"),
    (("nvidia-smi", "-q"), "query"), (("nvidia-smi", "--query"), "query"),
    (("nvidia-smi", "-L"), "list"), (("nvidia-smi", "--list-gpus"), "list"),
    (("nvidia-smi",), "table"), (("-q",), "table"), (("nvidia-smi", "-x-q"), "table"),
])
def test_the_format_each_nvidia_smi_command_line_prints(argv, fmt):
    assert expected_format(argv) == fmt


def test_first_line_and_smi_failure():
    assert first_line("\n   \n  NVIDIA-SMI has failed  \nsecond") == "NVIDIA-SMI has failed"
    assert first_line("x" * 5000) == "x" * 300        # only the first 4 KiB is looked at
    assert first_line(" " * 4096 + "late words") == "" and first_line(" " * 4095 + "late") == "l"
    assert first_line("y" * 400 + "\n") == "y" * 300
    assert first_line(None) == "" and first_line("") == ""
    failed = ran(("nvidia-smi",), "", 9, "  couldn't communicate with the NVIDIA driver \n")
    assert smi_failure(failed) == "`nvidia-smi` exited 9: couldn't communicate with the NVIDIA driver"
    both = ran(("nvidia-smi",), "from stdout\n", 9, "from stderr\n")
    assert smi_failure(both) == "`nvidia-smi` exited 9: from stdout"
    fine = ran(("nvidia-smi",), "table\n")
    assert smi_failure(fine) == "`nvidia-smi` exited 0"


JOURNAL_ARGV = ("journalctl", "-k", "-b")


@pytest.mark.parametrize("result,expected", [
    (None, (None, None)),
    (ran(JOURNAL_ARGV, "-- Logs begin --\n\nline one\n  \nline two\n"), ("line one\nline two", None)),
    (ran(JOURNAL_ARGV, "-- No entries --\n", 0, "\n  hint: no access  \n"),
     (None, "journalctl -k printed no kernel message of this boot (hint: no access)")),
    (ran(JOURNAL_ARGV, ""), (None, "journalctl -k printed no kernel message of this boot")),
    (ran(JOURNAL_ARGV, "out first\n", 1, "  Permission denied \n"),
     (None, "`journalctl -k -b` exited 1: Permission denied")),
    (ran(JOURNAL_ARGV, "\n", 1), (None, "`journalctl -k -b` exited 1")),
    (CommandResult(JOURNAL_ARGV, None, "partial\n", "said\n", 10.0, timed_out=True),
     (None, "`journalctl -k -b` did not answer within 10s")),
    (CommandResult(JOURNAL_ARGV, None, "", "said\n", 0.0, error="not found"), (None, "`journalctl -k -b`: not found")),
])
def test_a_kernel_log_command_read_or_why_not(result, expected):
    s = snap(commands={} if result is None else {"kernel_journal": result})
    assert kernel_facts._command_text(Facts(s), "kernel_journal", "journalctl -k") == expected


# --- CUDA toolkits on disk and nvcc on PATH ------------------------------------------------------


def _vjson(version):
    return json.dumps({"cuda": {"name": "CUDA SDK", "version": version}})


def test_nvcc_on_path_is_the_first_resolved_one_along_path():
    links = {"/usr/local/cuda/bin/nvcc": {"target": None, "real": "/usr/local/cuda-12.4/bin/nvcc"},
             "/usr/bin/nvcc": {"target": "/etc/alternatives/nvcc", "real": "/usr/lib/cuda/bin/nvcc"},
             "bin/nvcc": {"target": None, "real": "/wrong"}}
    s = snap(env={"PATH": "bin:/opt/none:/usr/local/cuda/bin/:/usr/bin"}, links=links)
    assert nvcc_on_path(Facts(s)) == Link("/usr/local/cuda/bin/nvcc", None, "/usr/local/cuda-12.4/bin/nvcc")
    s = snap(env={"PATH": "/usr/bin:/usr/local/cuda/bin"}, links=links)
    assert nvcc_on_path(Facts(s)) == Link("/usr/bin/nvcc", "/etc/alternatives/nvcc", "/usr/lib/cuda/bin/nvcc")
    assert nvcc_on_path(Facts(snap(links=links))) is None


def test_toolkits_from_usr_local_cuda_home_and_version_files():
    files = {"/usr/local/cuda-12.4/version.json": _vjson("12.4.1"),
             "/usr/local/cuda-11.8/version.txt": "CUDA Version 11.8.89\n",
             "/opt/cuda-12.1/version.json": _vjson("12.1.0"),
             "/srv/kits/cu/version.txt": "CUDA Version 10.2.89",
             "/srv/kits/empty/version.json": "{}"}
    s = snap(files=files, env={"CUDA_HOME": "/opt/cuda-12.1/", "CUDA_PATH": "cuda-9.0", "CUDA_ROOT": "/opt/nothing"},
             listings={"/usr/local": ["bin", "cuda", "cuda-11.8", "cuda-12.4", "cuda-13.0", "lib"]},
             links={"/usr/local/cuda": {"target": "/etc/alternatives/cuda", "real": "/usr/local/cuda-12.4"}})
    assert _fact(s, "cuda_toolkits") == (
        Toolkit("/srv/kits/cu", "10.2.89", "file:/srv/kits/cu/version.txt"),
        Toolkit("/usr/local/cuda-11.8", "11.8.89", "file:/usr/local/cuda-11.8/version.txt"),
        Toolkit("/opt/cuda-12.1", "12.1.0", "file:/opt/cuda-12.1/version.json"),
        Toolkit("/usr/local/cuda-12.4", "12.4.1", "file:/usr/local/cuda-12.4/version.json", ("/usr/local/cuda",)),
        Toolkit("/usr/local/cuda-13.0", "13.0", "listing:/usr/local"))


def test_a_toolkit_found_through_nvcc_on_path_and_an_unresolved_usr_local_cuda():
    s = snap(env={"PATH": "/opt/conda/bin"}, listings={"/usr/local": ["cuda", "cuda-12.2"]},
             files={"/opt/conda/pkgs/cuda-toolkit/version.json": _vjson("12.6.2")},
             links={"/opt/conda/bin/nvcc": {"target": "../pkgs/cuda-toolkit/bin/nvcc",
                                            "real": "/opt/conda/pkgs/cuda-toolkit/bin/nvcc"}})
    # /usr/local/cuda without its link target could be either toolkit: it stays a toolkit of its own
    assert _fact(s, "cuda_toolkits") == (
        Toolkit("/usr/local/cuda", None, "listing:/usr/local"),
        Toolkit("/usr/local/cuda-12.2", "12.2", "listing:/usr/local"),
        Toolkit("/opt/conda/pkgs/cuda-toolkit", "12.6.2", "file:/opt/conda/pkgs/cuda-toolkit/version.json"))
    # with one toolkit beside it, it is that one
    alone = snap(listings={"/usr/local": ["cuda", "cuda-12.2"]})
    assert _fact(alone, "cuda_toolkits") == (
        Toolkit("/usr/local/cuda-12.2", "12.2", "listing:/usr/local", ("/usr/local/cuda",)),)


def test_no_toolkit_locations_recorded_is_missing_and_an_empty_usr_local_is_none():
    assert _reason(snap(), "cuda_toolkits") == "CUDA toolkit locations were not recorded in this snapshot"
    assert _fact(snap(listings={"/usr/local": []}), "cuda_toolkits") == ()


NVCC_OUT = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n"


def _with_nvcc(**kw):
    commands = {"nvcc_version": ran(("nvcc", "--version"), NVCC_OUT)}
    return snap(commands=commands, **kw)


def test_an_nvcc_outside_every_toolkit_is_a_toolkit_of_its_own():
    distro = _with_nvcc(env={"PATH": "/usr/bin"}, listings={"/usr/local": []},
                        links={"/usr/bin/nvcc": {"target": None, "real": "/usr/bin/nvcc"}})
    assert _fact(distro, "cuda_toolkits") == (Toolkit("/usr", "12.4", "command:nvcc_version"),)
    unknown_place = _with_nvcc(env={"PATH": "/usr/bin"})
    assert _fact(unknown_place, "cuda_toolkits") == (Toolkit("nvcc", "12.4", "command:nvcc_version"),)
    odd_name = _with_nvcc(env={"PATH": "/opt/x"}, links={"/opt/x/nvcc": {"target": "w", "real": "/opt/x/nvcc-wrap"}})
    assert _fact(odd_name, "cuda_toolkits") == (Toolkit("/opt/x/nvcc-wrap", "12.4", "command:nvcc_version"),)


@pytest.mark.parametrize("version", ["12.4", "12.4.1"])
def test_an_nvcc_of_a_known_toolkits_release_is_that_toolkit(version):
    files = {"/usr/local/cuda-12.4/version.json": _vjson(version)} if version != "12.4" else {}
    s = _with_nvcc(env={"PATH": "/usr/bin"}, listings={"/usr/local": ["cuda-12.4"]}, files=files,
                   links={"/usr/bin/nvcc": {"target": None, "real": "/usr/bin/nvcc"}})
    assert [t.root for t in _fact(s, "cuda_toolkits")] == ["/usr/local/cuda-12.4"]


def test_an_nvcc_inside_a_known_toolkit_adds_nothing():
    s = _with_nvcc(env={"PATH": "/usr/local/cuda-11.8/bin"}, listings={"/usr/local": ["cuda-11.8"]},
                   links={"/usr/local/cuda-11.8/bin/nvcc": {"target": None, "real": "/usr/local/cuda-11.8/bin/nvcc"}})
    assert _fact(s, "cuda_toolkits") == (Toolkit("/usr/local/cuda-11.8", "11.8", "listing:/usr/local"),)


def test_nvcc_without_a_release_number_is_missing():
    s = snap(commands={"nvcc_version": ran(("nvcc", "--version"), "nvcc: something else\n")})
    assert _reason(s, "nvcc") == "nvcc --version printed no release number"


@pytest.mark.parametrize("kw,root", [
    ({"env": {"CUDA_HOME": "/opt/a/cuda-12.1/"}}, "/opt/a/cuda-12.1"),
    ({"env": {"CUDA_PATH": "/opt/b/cuda-11.7"}}, "/opt/b/cuda-11.7"),
    ({"env": {"CUDA_ROOT": "/opt/c/cuda-10.2//"}}, "/opt/c/cuda-10.2"),
    ({"files": {"/srv/kit/version.json": _vjson("12.3.2")}}, "/srv/kit"),
    ({"files": {"/srv/old/version.txt": "CUDA Version 9.2.148"}}, "/srv/old"),
    ({"env": {"PATH": "/opt/bin"}, "links": {"/opt/bin/nvcc": {"target": "../nv/cuda-12.3/bin/nvcc",
                                                               "real": "/opt/nv/cuda-12.3/bin/nvcc"}}},
     "/opt/nv/cuda-12.3"),
])
def test_each_way_a_toolkit_is_found_on_its_own(kw, root):
    s = snap(listings={"/usr/local": []}, **kw)
    assert [t.root for t in _fact(s, "cuda_toolkits")] == [root]


# --- GPU faults from the kernel log, and a GPU's dict ---------------------------------------------


FAULT_LINES = [
    "Nov 27 10:01:00 node kernel: NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.",
    "Nov 27 10:02:00 node kernel: nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028, Non-fatal, Link 4 egress error",
    "Nov 27 10:02:01 node kernel: nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 4 egress error",
    "Nov 27 10:03:00 node kernel: nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 48 LTSSM Fault Up",
    "Nov 27 10:04:00 node kernel: NVRM: Xid (PCI:0000:3b:00): 999, pid=1, name=python, something",
]


def test_gpu_faults_of_every_kind_read_whole():
    got = _fact(snap(commands={"kernel_journal": _journal(*FAULT_LINES)}), "gpu_faults")
    assert got == (
        GpuFault("GPU lost", "the GPU has fallen off the bus and does not respond", "GPU at PCI 0000:91:00", None,
                 "RESTART_BM", "RESTART_BM", "reboot", 1, (FAULT_LINES[0],), None, None, "0000:91:00"),
        GpuFault("SXid 12028", "Non-fatal NVSwitch error", "2 NVSwitches (PCI 0000:06:00, 0000:07:00)", None,
                 "IGNORE", None, "informational", 2, (FAULT_LINES[1], FAULT_LINES[2]), None, 12028, None),
        GpuFault("SXid 20034", "Fatal NVSwitch error", "NVSwitch at PCI 0000:07:00", None,
                 "RESTART_BM", None, "reboot", 1, (FAULT_LINES[3],), None, 20034, None),
        GpuFault("Xid 999", "an Xid NVIDIA's catalog does not list", "GPU at PCI 0000:3b:00", None,
                 "UNKNOWN", None, "service", 1, (FAULT_LINES[4],), None, 999, "0000:3b:00"))


def test_a_gpu_as_a_dict_lists_its_mig_devices_as_dicts():
    mig = SmiMigDevice(0, 1, 0, 0, "1g.10gb", "MIG-1111", 9856, 13)
    gpu = Gpu(0, "NVIDIA A100-SXM4-80GB", "GPU-aa", "00000000:07:00.0", 81920, 1000, "8.0", "Enabled", (mig, "raw"))
    assert gpu.to_dict() == {
        "index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aa", "pci_bus_id": "00000000:07:00.0",
        "memory_total_mib": 81920, "memory_used_mib": 1000, "compute_cap": "8.0", "mig_mode": "Enabled",
        "mig_devices": [mig.to_dict(), "raw"]}
    assert mig.to_dict()["profile"] == "1g.10gb"
    assert gpu.label() == "GPU 0 (NVIDIA A100-SXM4-80GB)" and Gpu(2, None, None, None, None, None, None, None).label() \
        == "GPU 2 (unknown GPU)"


# --- which toolkit a build uses -------------------------------------------------------------------


TWO_KITS = {"/usr/local": ["cuda", "cuda-11.8", "cuda-12.4"]}
TO_11 = {"/usr/local/cuda": {"target": "/usr/local/cuda-11.8", "real": "/usr/local/cuda-11.8"}}
NVCC_12 = {"/opt/bin/nvcc": {"target": "/usr/local/cuda-12.4/bin/nvcc", "real": "/usr/local/cuda-12.4/bin/nvcc"}}


@pytest.mark.parametrize("kw,root", [
    ({"env": {"CUDA_PATH": "/usr/local/cuda-12.4"}, "links": TO_11}, "/usr/local/cuda-12.4"),
    ({"env": {"CUDA_HOME": "/usr/local/cuda-11.8", "CUDA_PATH": "/usr/local/cuda-12.4"}}, "/usr/local/cuda-11.8"),
    ({"env": {"PATH": "/opt/bin"}, "links": {**TO_11, **NVCC_12}}, "/usr/local/cuda-12.4"),
    ({"env": {"CUDA_PATH": "/usr/local/cuda-11.8", "PATH": "/opt/bin"}, "links": NVCC_12}, "/usr/local/cuda-11.8"),
    ({"links": TO_11}, "/usr/local/cuda-11.8"),
    ({}, "/usr/local/cuda"),                        # a /usr/local/cuda whose target was not recorded
])
def test_the_toolkit_a_build_uses_by_priority(kw, root):
    got = default_toolkit(Facts(snap(listings=TWO_KITS, **kw)))
    assert (got.root if got else None) == root


def test_two_toolkits_and_nothing_saying_which_is_no_default():
    assert default_toolkit(Facts(snap(listings={"/usr/local": ["cuda-11.8", "cuda-12.4"]}))) is None
    assert default_toolkit(Facts(snap(listings={"/usr/local": ["cuda-11.8"]}))).root == "/usr/local/cuda-11.8"


def test_the_nvcc_pick_names_the_toolkit_of_its_release_when_its_place_is_unknown():
    commands = {"nvcc_version": ran(("nvcc", "--version"), NVCC_OUT)}
    picks = _fact(snap(listings=TWO_KITS, commands=commands), "cuda_picks")
    nvcc = next(p for p in picks if p.what == "nvcc on PATH")
    assert nvcc == Pick("nvcc on PATH", "nvcc", "command:nvcc_version",
                        Toolkit("/usr/local/cuda-12.4", "12.4", "listing:/usr/local"), "12.4")
    assert nvcc.describe() == "nvcc on PATH -> CUDA 12.4 at /usr/local/cuda-12.4"
    one_kit = _fact(snap(listings={"/usr/local": ["cuda-11.8"]}, commands=commands), "cuda_picks")
    assert next(p for p in one_kit if p.what == "nvcc on PATH").describe() == \
        "nvcc on PATH -> CUDA 12.4 at nvcc"
