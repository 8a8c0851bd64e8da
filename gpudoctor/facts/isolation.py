"""Facts about running isolated from the host's driver: containers and WSL2."""

from __future__ import annotations

import re
from typing import Dict

from gpudoctor.facts import Facts, Missing, fact
from gpudoctor.facts.driver import versioned_driver_libs
from gpudoctor.facts.libraries import libs_named


@fact("container_gpu")
def container_gpu(f: Facts) -> Dict:
    """Inside a container: the NVIDIA device nodes and NVIDIA_* variables the runtime passed in."""
    where = f["container"]
    if not where["inside"]:
        raise Missing("not running inside a container")
    devices = f.snapshot.listing("/dev")
    if devices is None:
        raise Missing("/dev was not listed in this snapshot")
    return {"kind": where["kind"] or "container", "devices": list(devices),
            "gpu_nodes": [n for n in devices if re.fullmatch(r"nvidia\d+", n)],
            "visible": f.env.get("NVIDIA_VISIBLE_DEVICES"),
            "capabilities": f.env.get("NVIDIA_DRIVER_CAPABILITIES"),
            "require_cuda": f.env.get("NVIDIA_REQUIRE_CUDA")}


@fact("wsl_gpu")
def wsl_gpu(f: Facts) -> Dict:
    """Under WSL: the driver files Windows mounts at /usr/lib/wsl/lib, and any Linux driver installed
    in the distribution (libcuda.so.<version> files, libcuda in the loader cache outside /usr/lib/wsl)."""
    where = f["wsl"]
    if not where["inside"]:
        raise Missing("not running under WSL")
    cache = f.get("ldconfig")
    libcuda = libs_named(cache, "libcuda.so") if cache is not None else None
    return {"wsl2": where["wsl2"], "wsl_libs": where["wsl_libs"],
            "linux_driver_libs": versioned_driver_libs(f),
            "libcuda_cache": libcuda,  # None: ldconfig -p not recorded
            "foreign_libcuda": [lib for lib in libcuda or [] if not lib.path.startswith("/usr/lib/wsl/")],
            "module_loaded": f.has("kernel_module") or "nvidia" in (f.get("loaded_modules") or set()),
            "libcuda_so1": f.snapshot.link("/usr/lib/wsl/lib/libcuda.so.1")}
