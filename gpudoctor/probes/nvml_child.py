"""Read NVML through nvidia-ml-py (module ``pynvml``) and print one JSON object.

Run as a child process (``python -m gpudoctor.probes.nvml_child``) so that a hung or
crashing driver cannot take gpudoctor down. Every reading is its value or the name
of the NVML error, e.g. ``NVMLError_NotSupported`` (consumer GPUs without ECC) or
``NVMLError_DriverNotLoaded`` (the kernel module is not loaded; nvidia-smi prints
"couldn't communicate with the NVIDIA driver"). A ``LibRmVersionMismatch`` error is
the "Driver/library version mismatch" after a driver upgrade without a reboot.
"""

from __future__ import annotations

import json
import sys


def _err(exc: BaseException) -> dict:
    return {"error": type(exc).__name__, "message": str(exc)}


def _text(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _read(fn, *args, convert=None):
    try:
        value = fn(*args)
    except Exception as exc:  # NVMLError subclasses, or missing symbols on old drivers
        return _err(exc)
    value = _text(value)
    return {"value": convert(value) if convert else value}


def _device(nv, i: int) -> dict:
    try:
        h = nv.nvmlDeviceGetHandleByIndex(i)
    except Exception as exc:
        return {"index": i, "handle": _err(exc)}
    mib = 1024 * 1024
    d = {"index": i}
    d["name"] = _read(nv.nvmlDeviceGetName, h)
    d["uuid"] = _read(nv.nvmlDeviceGetUUID, h)
    d["pci_bus_id"] = _read(lambda x: _text(nv.nvmlDeviceGetPciInfo(x).busId), h)
    d["memory"] = _read(lambda x: (lambda m: {"total_mib": m.total // mib, "used_mib": m.used // mib,
                                               "free_mib": m.free // mib})(nv.nvmlDeviceGetMemoryInfo(x)), h)
    d["compute_cap"] = _read(lambda x: "%d.%d" % nv.nvmlDeviceGetCudaComputeCapability(x), h)
    d["mig_mode"] = _read(lambda x: nv.nvmlDeviceGetMigMode(x)[0], h)
    d["persistence_mode"] = _read(nv.nvmlDeviceGetPersistenceMode, h)
    d["temperature_c"] = _read(nv.nvmlDeviceGetTemperature, h, 0)
    d["retired_pages_pending"] = _read(nv.nvmlDeviceGetRetiredPagesPendingStatus, h)
    d["remapped_rows"] = _read(lambda x: list(nv.nvmlDeviceGetRemappedRows(x)), h)
    d["processes"] = _read(lambda x: [{"pid": p.pid, "used_mib": (p.usedGpuMemory or 0) // mib}
                                      for p in nv.nvmlDeviceGetComputeRunningProcesses(x)], h)
    return d


def main() -> int:
    out: dict = {}
    try:
        import pynvml as nv
    except Exception as exc:  # nvidia-ml-py not installed in this interpreter
        out["init"] = _err(exc)
        print(json.dumps(out))
        return 0
    try:
        nv.nvmlInit()
    except Exception as exc:
        out["init"] = _err(exc)
        print(json.dumps(out))
        return 0
    out["init"] = {"value": "ok"}
    out["driver_version"] = _read(nv.nvmlSystemGetDriverVersion)
    out["nvml_version"] = _read(nv.nvmlSystemGetNVMLVersion)
    out["cuda_driver_version"] = _read(nv.nvmlSystemGetCudaDriverVersion)
    count = _read(nv.nvmlDeviceGetCount)
    out["device_count"] = count
    out["devices"] = [_device(nv, i) for i in range(count.get("value") or 0)]
    try:
        nv.nvmlShutdown()
    except Exception:
        pass
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
