"""A short description of the machine for the top of a report (not a judgement)."""

from __future__ import annotations

from typing import Dict

from gpudoctor.facts import Facts, NotApplicable
from gpudoctor.findings import clip


def _framework(f: Facts, name: str) -> Dict:
    fw = f.get(name)
    if fw is None:  # not installed is an answer; a probe that timed out or crashed is not
        exc = f.failure(name)
        return {"installed": False if isinstance(exc, NotApplicable) else None, "why": str(exc) if exc else None}
    out = {"installed": True, "version": fw.version}
    if fw.import_error:
        out["import_error"] = fw.import_error.message
    if name == "torch":
        out.update(cuda=fw.cuda, available=fw.cuda_available, device_count=fw.device_count)
    elif name == "tensorflow":
        out.update(cuda=fw.cuda, cuda_build=fw.cuda_build, gpus=len(fw.gpus or ()))
    elif name == "jax":
        out.update(backend=fw.backend, devices=None if fw.devices is None else list(fw.devices))
    return out


def machine_summary(f: Facts) -> Dict:
    meta = f.snapshot.meta
    osr = f.get("os_release")
    driver = f.get("driver_version")
    module = f.get("kernel_module")
    gpus = f.get("gpus") or ()
    container = f.get("container")
    wsl = f.get("wsl")
    nvcc = f.get("nvcc")
    probed = [d for d in f.snapshot.frameworks.values() if isinstance(d, dict)]
    python_version = next((d.get("python") for d in probed if d.get("python")), None)
    return {
        "hostname": meta.get("hostname"),
        "python": {"path": meta.get("python"), "version": python_version} if meta.get("python") else None,
        "os": (osr.pretty_name if osr else None) or meta.get("platform", {}).get("system"),
        "kernel": f.get("kernel_release"),
        "container": container.kind if container and container.inside else None,
        "wsl": bool(wsl and wsl.inside),
        "driver_version": driver.version if driver else None,
        "kernel_module_version": module.version if module else None,
        "cuda_driver_max": f.get("cuda_driver_max"),
        "nvcc": nvcc.version if nvcc else None,
        "gpus": [g.to_dict() for g in gpus],
        "no_gpu_reason": None if gpus else clip(f.why_missing("gpus")),
        "frameworks": {name: _framework(f, name) for name in ("torch", "tensorflow", "jax")},
        "env": {k: v for k, v in f.env.items() if k.startswith(("CUDA_", "NVIDIA_", "TF_", "PYTORCH_"))},
    }
