"""What frameworks do at run time, from ``data/cuda_init_errors.json`` and ``data/tf_runtime.json``.

Which cause a CUDA initialisation error stands for, which libraries a TensorFlow build
dlopen()s and from which pip wheels, and which values TensorFlow's memory variables accept.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from ._load import load


def init_error_cause(message: str) -> Optional[Dict]:
    """The row whose pattern matches a framework's CUDA initialisation error (first match wins):
    ``cause``, ``recipe``, ``points_to`` (the check that reports the cause), ``source``."""
    for row in load("cuda_init_errors")["errors"]:
        if re.search(row["pattern"], message or "", re.I):
            return row
    return None


def tf_libraries(cuda: Optional[str], cudnn: Optional[str]) -> List[Tuple[str, Optional[str]]]:
    """(soname, pip wheel) of the CUDA runtime and cuDNN a TensorFlow build for ``cuda``/``cudnn`` loads:
    ("12.5.1", "9") -> [("libcudart.so.12", "nvidia-cuda-runtime-cu12"), ("libcudnn.so.9", "nvidia-cudnn-cu12")]."""
    try:
        v = Version(str(cuda))
    except InvalidVersion:
        return []
    libs = load("tf_runtime")["libraries"]
    row = libs.get(f"{v.major}.{v.minor}") or libs.get(str(v.major))
    if row is None:
        return []
    out = [tuple(row["cudart"])]
    if cudnn:
        out.append((f"libcudnn.so.{str(cudnn).split('.')[0]}", row.get("cudnn_wheel")))
    return out


def tf_optional_library(soname: str) -> Optional[Dict]:
    """The row of ``optional_libraries`` this library matches (TensorRT's libnvinfer...), or None."""
    import re

    return next((row for row in load("tf_runtime").get("optional_libraries", ())
                 if re.search(row["pattern"], soname)), None)


def tf_env_rule(name: str) -> Dict:
    """Accepted values of TF_FORCE_GPU_ALLOW_GROWTH / TF_GPU_ALLOCATOR, what else does, and the source."""
    return load("tf_runtime")["env"][name]


def torch_release_versions() -> List[str]:
    """Every PyTorch major.minor in the release table ("1.12" ... "2.15")."""
    return [r["version"] for r in load("torch_releases")["releases"]]


def tf_build_versions() -> List[Tuple[str, str]]:
    """(TensorFlow version, CUDA it was built with) for every tested Linux GPU build."""
    return [(r["version"], r["cuda"]) for r in load("tf_builds")["builds"]]


def tf_last_native_windows_gpu() -> str:
    """The last TensorFlow major.minor with GPU support on native Windows ("2.10")."""
    return load("tf_builds")["windows"]["last_native_gpu"]
