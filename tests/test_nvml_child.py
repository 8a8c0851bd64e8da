"""The NVML reader records each reading's value or its NVML error name, in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

FAKE_PYNVML = '''
class NVMLError(Exception):
    pass
class NVMLError_DriverNotLoaded(NVMLError):
    pass
class NVMLError_NotSupported(NVMLError):
    pass
MODE = {mode!r}
class _Mem:
    total, used, free = 24564 * 2**20, 1 * 2**20, 24563 * 2**20
class _Pci:
    busId = b"00000000:84:00.0"
class _Proc:
    pid, usedGpuMemory = 4242, 2048 * 2**20
def nvmlInit():
    if MODE == "not-loaded":
        raise NVMLError_DriverNotLoaded("Driver Not Loaded")
def nvmlShutdown(): pass
def nvmlSystemGetDriverVersion(): return "535.86.05"
def nvmlSystemGetNVMLVersion(): return "12.535.86.05"
def nvmlSystemGetCudaDriverVersion(): return 12020
def nvmlDeviceGetCount(): return 1
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetName(h): return b"NVIDIA GeForce RTX 4090"
def nvmlDeviceGetUUID(h): return "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437"
def nvmlDeviceGetPciInfo(h): return _Pci()
def nvmlDeviceGetMemoryInfo(h): return _Mem()
def nvmlDeviceGetCudaComputeCapability(h): return (8, 9)
def nvmlDeviceGetMigMode(h): raise NVMLError_NotSupported("Not Supported")
def nvmlDeviceGetPersistenceMode(h): return 1
def nvmlDeviceGetTemperature(h, sensor): return 41
def nvmlDeviceGetRetiredPagesPendingStatus(h): raise NVMLError_NotSupported("Not Supported")
def nvmlDeviceGetRemappedRows(h): return (0, 0, 0, 0)
def nvmlDeviceGetComputeRunningProcesses(h): return [_Proc()]
'''


def run_child(tmp_path, mode):
    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML.format(mode=mode))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))  # the fake pynvml before any real one
    out = subprocess.run([sys.executable, "-m", "gpudoctor.probes.nvml_child"], capture_output=True,
                         text=True, env=env, timeout=30, cwd=str(ROOT))  # this tree's child, from any folder
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_driver_not_loaded_is_recorded_by_name(tmp_path):
    data = run_child(tmp_path, "not-loaded")
    assert data == {"init": {"error": "NVMLError_DriverNotLoaded", "message": "Driver Not Loaded"}}


def test_readings_are_values_or_error_names(tmp_path):
    data = run_child(tmp_path, "ok")
    assert data["driver_version"] == {"value": "535.86.05"}
    assert data["cuda_driver_version"] == {"value": 12020}
    dev = data["devices"][0]
    assert dev["name"] == {"value": "NVIDIA GeForce RTX 4090"}
    assert dev["pci_bus_id"] == {"value": "00000000:84:00.0"}
    assert dev["memory"]["value"] == {"total_mib": 24564, "used_mib": 1, "free_mib": 24563}
    assert dev["compute_cap"] == {"value": "8.9"}
    assert dev["mig_mode"]["error"] == "NVMLError_NotSupported"
    assert dev["processes"]["value"] == [{"pid": 4242, "used_mib": 2048}]


def test_facts_fall_back_to_nvml_when_nvidia_smi_is_missing(tmp_path):
    from gpudoctor.facts import Facts
    from gpudoctor.facts.nvidia import DriverVersion
    from gpudoctor.runner import CommandResult
    from gpudoctor.snapshot import Snapshot

    snap = Snapshot(nvml=run_child(tmp_path, "ok"))
    snap.commands["nvidia_smi_xml"] = CommandResult(("nvidia-smi", "-q", "-x"), error="not found")
    f = Facts(snap)
    assert f["driver_version"] == DriverVersion(version="535.86.05", source="nvml:driver_version")
    assert f["cuda_driver_max"] == "12.2"
    gpu = f["gpus"][0]
    assert (gpu.name, gpu.compute_cap, gpu.memory_total_mib, gpu.mig_mode) == \
        ("NVIDIA GeForce RTX 4090", "8.9", 24564, None)
