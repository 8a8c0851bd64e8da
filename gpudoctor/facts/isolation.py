"""Facts about running isolated from the host's driver: containers and WSL2."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

from gpudoctor.facts import Facts, Missing, NotApplicable, fact
from gpudoctor.facts.cuda import Link
from gpudoctor.facts.driver import DriverLib, versioned_driver_libs
from gpudoctor.facts.libraries import CachedLib, libs_named


@dataclass(frozen=True)
class ContainerGpu:
    """What the container runtime passed in: NVIDIA device nodes and the NVIDIA_* variables."""

    kind: str                    # "docker", "podman", "kubernetes"...; "container" when unknown
    devices: Tuple[str, ...]     # the /dev listing (nvidia* names)
    gpu_nodes: Tuple[str, ...]   # the GPU nodes among them: "nvidia0", "nvidia1"
    visible: Optional[str]       # NVIDIA_VISIBLE_DEVICES
    capabilities: Optional[str]  # NVIDIA_DRIVER_CAPABILITIES
    require_cuda: Optional[str]  # NVIDIA_REQUIRE_CUDA (set by CUDA images)


@fact("container_gpu")
def container_gpu(f: Facts) -> ContainerGpu:
    """Inside a container: the NVIDIA device nodes and NVIDIA_* variables the runtime passed in."""
    where = f["container"]
    if not where.inside:
        raise NotApplicable("not running inside a container")
    devices = f["dev_nodes"]
    return ContainerGpu(where.kind or "container", devices, tuple(n for n in devices if re.fullmatch(r"nvidia\d+", n)),
                        f.env.get("NVIDIA_VISIBLE_DEVICES"), f.env.get("NVIDIA_DRIVER_CAPABILITIES"),
                        f.env.get("NVIDIA_REQUIRE_CUDA"))


@dataclass(frozen=True)
class WslGpu:
    """Under WSL: the driver Windows mounts, and any Linux driver installed in the distribution."""

    wsl2: bool
    wsl_libs: Tuple[str, ...]                  # names in /usr/lib/wsl/lib
    linux_driver_libs: Tuple[DriverLib, ...]   # libcuda.so.<version> / libnvidia-ml.so.<version> files
    libcuda_cache: Optional[Tuple[CachedLib, ...]]  # libcuda in `ldconfig -p`; None: ldconfig -p not recorded
    foreign_libcuda: Tuple[CachedLib, ...]     # those outside /usr/lib/wsl
    module_loaded: bool                        # an nvidia kernel module is loaded (it should not be under WSL)
    libcuda_so1: Optional[Link]                # how /usr/lib/wsl/lib/libcuda.so.1 resolved; None: not recorded


@fact("wsl_gpu")
def wsl_gpu(f: Facts) -> WslGpu:
    """Under WSL: the driver files Windows mounts at /usr/lib/wsl/lib, and any Linux driver installed
    in the distribution (libcuda.so.<version> files, libcuda in the loader cache outside /usr/lib/wsl)."""
    where = f["wsl"]
    if not where.inside:
        raise NotApplicable("not running under WSL")
    cache = f.get("ldconfig")
    libcuda = tuple(libs_named(cache, "libcuda.so")) if cache is not None else None
    link = next((ln for ln in f.get("links") or () if ln.path == "/usr/lib/wsl/lib/libcuda.so.1"), None)
    return WslGpu(where.wsl2, where.wsl_libs, versioned_driver_libs(f), libcuda,
                  tuple(lib for lib in libcuda or () if not lib.path.startswith("/usr/lib/wsl/")),
                  f.has("kernel_module") or "nvidia" in (f.get("loaded_modules") or frozenset()), link)
