"""Machine values that fix recipes are tailored with (driver version, distribution, torch build...).

Each value is computed from facts only when they are present; a recipe shows ``<name>``
for a value the snapshot does not have.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from gpudoctor.facts.cuda_paths import default_toolkit
from gpudoctor.facts.system import OsRelease
from gpudoctor.framework_fixes import framework_context

DISTRO_FAMILIES = ("debian", "rhel", "suse", "arch")


def distro_family(os_release: Optional[OsRelease]) -> str:
    """The distribution family whose commands a recipe gives: debian, rhel, suse, arch or default."""
    if not os_release:
        return "default"
    ids = [os_release.id or ""] + list(os_release.id_like)
    for i in ids:
        i = i.lower()
        if i in ("debian", "ubuntu"):
            return "debian"
        if i in ("rhel", "fedora", "centos", "rocky", "almalinux", "ol", "amzn"):
            return "rhel"
        if i.startswith(("sles", "suse", "opensuse")):
            return "suse"
        if i in ("arch", "manjaro"):
            return "arch"
    return "default"


def machine_context(f) -> Dict[str, Any]:
    ctx: Dict[str, Any] = {}
    osr = f.get("os_release")
    wsl = f.get("wsl")
    ctx["distro"] = osr.pretty_name if osr else None
    ctx["platform_family"] = "wsl" if wsl and wsl.inside else distro_family(osr)
    ctx["kernel"] = f.get("kernel_release")
    driver = f.get("driver_version")
    ctx["driver_version"] = driver.version if driver else None
    module = f.get("kernel_module")
    ctx["kernel_module_version"] = module.version if module else None
    userspace = f.get("userspace_driver")
    # When the module will not load, the module file on disk or the libraries' names still tell the version.
    on_disk = f.get("nvidia_module_file")
    ctx["driver_version"] = (ctx["driver_version"] or (on_disk.version if on_disk else None)
                             or (userspace.version if userspace else None))
    ctx["userspace_driver_version"] = userspace.version if userspace else ctx["driver_version"]
    ctx["driver_branch"] = (ctx["driver_version"] or ctx["kernel_module_version"] or "").split(".")[0] or None
    ctx["cuda_driver_max"] = f.get("cuda_driver_max")
    install = f.get("driver_install")
    ctx["driver_install"] = install.method if install else None
    ctx.update(_cuda_toolkit_context(f))
    gpus = f.get("gpus") or ()
    if gpus:
        ctx["gpu_name"] = gpus[0].name
        ctx["compute_cap"] = gpus[0].compute_cap
        ctx["gpu_count"] = len(gpus)
    torch = f.get("torch")
    if torch:
        ctx["torch_version"] = torch.version
        ctx["torch_base_version"] = (torch.version or "").split("+")[0] or None
        ctx["torch_cuda"] = torch.cuda
    tf = f.get("tensorflow")
    if tf:
        ctx["tf_version"] = tf.version
    ctx["python"] = f.get("python_path") or "python"
    ctx.update(framework_context(f))  # torch/TF fit, CUDA_VISIBLE_DEVICES
    return ctx


def _cuda_toolkit_context(f) -> Dict[str, Any]:
    """The toolkit builds use here (CUDA_HOME, nvcc, /usr/local/cuda), else the driver's CUDA major."""
    toolkit = default_toolkit(f) if f.has("cuda_toolkits") else None
    if toolkit is not None and toolkit.major_minor():
        return {"cuda_root": toolkit.root, "cuda_major": toolkit.major_minor().split(".")[0]}
    driver_max = f.get("cuda_driver_max")
    return {"cuda_major": driver_max.split(".")[0]} if driver_max else {}
