"""Parsed views of the torch and TensorFlow probes: the build, what it logged, the libraries around it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from gpudoctor.facts import Facts, Missing, fact
from gpudoctor.facts.frameworks import RaisedError, record
from gpudoctor.knowledge.framework_runtime import tf_optional_library


@dataclass(frozen=True)
class TorchDevice:
    """One GPU as torch.cuda.get_device_properties() described it (None: not read)."""

    index: Optional[int]
    name: Optional[str]
    capability: Optional[str]   # "8.6"
    uuid: Optional[str]
    pci_bus_id: Optional[int]
    total_memory_mib: Optional[int]


@dataclass(frozen=True)
class TorchBuild:
    version: str                  # "2.3.1+cu121"
    base: str                     # "2.3.1"
    variant: Optional[str]        # local tag: "cu121", "cpu", "rocm6.0"; None for a plain PyPI wheel
    cuda: Optional[str]           # torch.version.cuda: "12.1"; None for CPU and ROCm builds
    hip: Optional[str]
    arch_list: Tuple[str, ...]    # torch.cuda.get_arch_list()
    available: bool
    device_count: Optional[int]
    init_error: Optional[RaisedError]  # what torch.cuda.init() raised when CUDA is not available
    devices: Tuple[TorchDevice, ...]
    warnings: Tuple[str, ...]

    @property
    def cpu_only(self) -> bool:
        return self.cuda is None and self.hip is None


def _imported(f: Facts, name: str) -> Dict:
    """The probe's raw record of ``name``, when it is installed and imports."""
    err = f[name].import_error
    if err:
        raise Missing(f"`import {name}` fails ({err.type}: {err.message}); see PRB001")
    return record(f, name)


@fact("torch_build")
def torch_build(f: Facts) -> TorchBuild:
    """The installed torch build: CUDA version, compiled architectures, what torch.cuda said."""
    t = _imported(f, "torch")
    version = str(t.get("version") or "")
    base, _, local = version.partition("+")
    err = t.get("init_error")
    return TorchBuild(version, base, local or None, t.get("cuda"), t.get("hip"), tuple(t.get("arch_list") or ()),
                      bool(t.get("available")), t.get("device_count"),
                      RaisedError(err.get("type"), err.get("message")) if err else None,
                      tuple(TorchDevice(d.get("index"), d.get("name"), d.get("capability"), d.get("uuid"),
                                        d.get("pci_bus_id"), d.get("total_memory_mib")) for d in t.get("devices") or ()),
                      tuple(t.get("warnings") or ()))


@dataclass(frozen=True)
class TfInfo:
    version: str
    cuda_build: bool
    cuda: Optional[str]           # build_info cuda_version: "12.5.1"
    cudnn: Optional[str]          # build_info cudnn_version: "9"
    archs: Tuple[str, ...]        # build_info cuda_compute_capabilities
    gpus: Tuple[str, ...]         # tf.config.list_physical_devices("GPU") names
    gpu_details: Tuple[Dict, ...]  # tf.config.experimental.get_device_details(), free-form as TF returns it
    distributions: Dict[str, str]  # {"tensorflow": "2.18.0", "tensorflow-cpu": ...}


@fact("tf_info")
def tf_info(f: Facts) -> TfInfo:
    """The installed TensorFlow build (build_info) and the GPUs it registered."""
    t = _imported(f, "tensorflow")
    info = t.get("build_info") or {}
    cuda_build = bool(info.get("is_cuda_build", t.get("cuda_built")))
    return TfInfo(str(t.get("version") or ""), cuda_build, _str(info.get("cuda_version")),
                  _str(info.get("cudnn_version")), tuple(info.get("cuda_compute_capabilities") or ()),
                  tuple(t.get("gpus") or ()), tuple(t.get("gpu_details") or ()), dict(t.get("distributions") or {}))


def _str(v) -> Optional[str]:
    return None if v in (None, "") else str(v)


@dataclass(frozen=True)
class TfLog:
    failed: Tuple[Tuple[str, str], ...]   # (library, dlerror) from "Could not load dynamic library", required ones
    opened: Tuple[str, ...]               # "Successfully opened dynamic library ..."
    skipped_gpus: Optional[str]           # the "Cannot dlopen some GPU libraries" line
    cuinit: Optional[str]                 # "failed call to cuInit: ..."
    growth_unparsed: Optional[str]        # TF_FORCE_GPU_ALLOW_GROWTH "could not be parsed"
    ignored_gpus: Tuple[str, ...] = ()    # "Ignoring visible gpu device ... minimum required Cuda capability"
    optional_failed: Tuple[Tuple[str, str], ...] = ()  # libraries TF can do without (TensorRT), not failures


_FAILED = re.compile(r"Could not (?:load dynamic library|dlopen library) '([^']+)'; dlerror: ([^;\n]*)")
_OPENED = re.compile(r"Successfully opened dynamic library (\S+)")


@fact("tf_log")
def tf_log(f: Facts) -> TfLog:
    """What TensorFlow logged on stderr while importing and listing GPUs (libraries it could not load...)."""
    text = f["tensorflow_probe"].stderr
    failed: Dict[str, str] = {}
    for lib, why in _FAILED.findall(text):
        failed.setdefault(lib, why.strip())
    optional = {lib: why for lib, why in failed.items() if tf_optional_library(lib)}
    return TfLog(tuple((k, v) for k, v in failed.items() if k not in optional),
                 tuple(dict.fromkeys(_OPENED.findall(text))),
                 _line(text, "Cannot dlopen some GPU libraries"), _line(text, "failed call to cuInit"),
                 _line(text, "TF_FORCE_GPU_ALLOW_GROWTH environment variable is set but could not be parsed"),
                 tuple(line.strip() for line in text.splitlines() if "Ignoring visible gpu device" in line),
                 tuple(optional.items()))


def _line(text: str, needle: str) -> Optional[str]:
    for line in text.splitlines():
        if needle in line:
            return line.strip()
    return None


@dataclass(frozen=True)
class CudaLibraries:
    """Where CUDA runtime and cuDNN libraries can come from: the loader cache and pip's nvidia-* wheels."""

    linker: Dict[str, Tuple[str, ...]]   # soname -> paths in `ldconfig -p`: {"libcudnn.so.8": ("/usr/lib/...",)}
    linker_recorded: bool                # False: `ldconfig -p` was not recorded
    wheels: Dict[str, str]               # nvidia-* wheel -> version: {"nvidia-cudnn-cu12": "9.1.0.70"}
    ld_library_path: Optional[str]


@fact("cuda_libraries")
def cuda_libraries(f: Facts) -> CudaLibraries:
    """CUDA runtime and cuDNN libraries the loader can find (ldconfig -p) and pip's nvidia-* wheels."""
    cache = f.get("ldconfig")
    linker: Dict[str, List[str]] = {}
    for lib in cache or []:
        if re.match(r"lib(?:cudart|cudnn|cublas|cuda)\.so", lib.name):
            linker.setdefault(lib.name, []).append(lib.path)
    wheels: Dict[str, str] = {}
    for name in ("tensorflow", "torch"):
        wheels.update((f.snapshot.frameworks.get(name) or {}).get("nvidia_wheels") or {})
    if cache is None and not wheels:
        raise Missing("neither `ldconfig -p` nor the installed nvidia-* wheels were recorded")
    return CudaLibraries({k: tuple(v) for k, v in linker.items()}, cache is not None, wheels,
                         f.env.get("LD_LIBRARY_PATH"))


@fact("target_os")
def target_os(f: Facts) -> str:
    """The OS the jobs run on: linux, wsl, windows or darwin."""
    system = str((f.snapshot.meta.get("platform") or {}).get("system") or "Linux").lower()
    wsl = f.get("wsl")
    if system == "linux" and wsl is not None and wsl.inside:
        return "wsl"
    return system
