"""A short description of the machine for the top of a report (not a judgement)."""

from __future__ import annotations

from typing import Dict

from gpudoctor.facts import Facts
from gpudoctor.findings import clip


def _framework(f: Facts, name: str) -> Dict:
    data = f.get(name)
    if data is None:
        return {"installed": False, "why": f.why_missing(name)}
    out = {"installed": True, "version": data.get("version")}
    if data.get("import_error"):
        out["import_error"] = data["import_error"].get("message")
    if name == "torch":
        out.update(cuda=data.get("cuda"), available=data.get("available"), device_count=data.get("device_count"))
    elif name == "tensorflow":
        info = data.get("build_info") or {}
        out.update(cuda=info.get("cuda_version"), cuda_build=info.get("is_cuda_build", data.get("cuda_built")),
                   gpus=len(data.get("gpus") or []))
    elif name == "jax":
        out.update(backend=data.get("backend"), devices=data.get("devices"))
    return out


def machine_summary(f: Facts) -> Dict:
    meta = f.snapshot.meta
    osr = f.get("os_release") or {}
    driver = f.get("driver_version")
    module = f.get("kernel_module")
    gpus = f.get("gpus") or []
    container = f.get("container") or {}
    wsl = f.get("wsl") or {}
    nvcc = f.get("nvcc")
    probed = [d for d in f.snapshot.frameworks.values() if isinstance(d, dict)]
    python_version = next((d.get("python") for d in probed if d.get("python")), None)
    return {
        "hostname": meta.get("hostname"),
        "python": {"path": meta.get("python"), "version": python_version} if meta.get("python") else None,
        "os": osr.get("PRETTY_NAME") or meta.get("platform", {}).get("system"),
        "kernel": f.get("kernel_release"),
        "container": container.get("kind") if container.get("inside") else None,
        "wsl": bool(wsl.get("inside")),
        "driver_version": driver["version"] if driver else None,
        "kernel_module_version": module["version"] if module else None,
        "cuda_driver_max": f.get("cuda_driver_max"),
        "nvcc": nvcc["version"] if nvcc else None,
        "gpus": [g.to_dict() for g in gpus],
        "no_gpu_reason": None if gpus else clip(f.why_missing("gpus")),
        "frameworks": {name: _framework(f, name) for name in ("torch", "tensorflow", "jax")},
        "env": {k: v for k, v in f.env.items() if k.startswith(("CUDA_", "NVIDIA_", "TF_", "PYTORCH_"))},
    }
