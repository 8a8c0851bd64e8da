"""Machine values that fix recipes are tailored with (driver version, distribution, torch build...).

Each value is computed from facts only when they are present; a recipe shows ``<name>``
for a value the snapshot does not have.
"""

from __future__ import annotations

from typing import Any, Dict


def machine_context(f) -> Dict[str, Any]:
    from gpudoctor.recipes import distro_family

    ctx: Dict[str, Any] = {}
    osr = f.get("os_release")
    wsl = f.get("wsl") or {}
    ctx["distro"] = (osr or {}).get("PRETTY_NAME")
    ctx["platform_family"] = "wsl" if wsl.get("inside") else distro_family(osr)
    ctx["kernel"] = f.get("kernel_release")
    driver = f.get("driver_version")
    ctx["driver_version"] = driver["version"] if driver else None
    module = f.get("kernel_module")
    ctx["kernel_module_version"] = module["version"] if module else None
    userspace = f.get("userspace_driver")
    ctx["userspace_driver_version"] = userspace["version"] if userspace else ctx["driver_version"]
    ctx["driver_branch"] = (ctx["driver_version"] or ctx["kernel_module_version"] or "").split(".")[0] or None
    ctx["cuda_driver_max"] = f.get("cuda_driver_max")
    ctx.update(_cuda_toolkit_context(f))
    gpus = f.get("gpus") or []
    if gpus:
        ctx["gpu_name"] = gpus[0].name
        ctx["compute_cap"] = gpus[0].compute_cap
        ctx["gpu_count"] = len(gpus)
    torch = f.get("torch")
    if torch:
        ctx["torch_version"] = torch.get("version")
        ctx["torch_base_version"] = (torch.get("version") or "").split("+")[0] or None
        ctx["torch_cuda"] = torch.get("cuda")
    tf = f.get("tensorflow")
    if tf:
        ctx["tf_version"] = tf.get("version")
    ctx["python"] = f.snapshot.meta.get("python") or "python"
    from gpudoctor.framework_fixes import framework_context  # torch/TF fit, CUDA_VISIBLE_DEVICES

    ctx.update(framework_context(f))
    return ctx


def _cuda_toolkit_context(f) -> Dict[str, Any]:
    """The toolkit builds use here (CUDA_HOME, nvcc, /usr/local/cuda), else the driver's CUDA major."""
    from gpudoctor.facts.cuda_paths import default_toolkit

    toolkit = default_toolkit(f) if f.has("cuda_toolkits") else None
    if toolkit is not None and toolkit.major_minor():
        return {"cuda_root": toolkit.root, "cuda_major": toolkit.major_minor().split(".")[0]}
    driver_max = f.get("cuda_driver_max")
    return {"cuda_major": driver_max.split(".")[0]} if driver_max else {}
