"""gpudoctor's compatibility knowledge: facts in ``data/*.json``, small loaders here.

Every row in the data files carries a ``source`` URL and a ``verified`` flag; the
loaders only read and compare (versions with ``packaging.version.Version``).
"""
from .archs import arch_covers, toolkit_supports_cc
from .cuda import (
    DriverRequirement,
    LegacyBranch,
    cuda_from_driver_api_int,
    driver_possible,
    legacy_branch,
    max_cuda_for_driver,
    min_driver_for_cuda,
    toolkit_driver,
)
from .gpus import GpuInfo, gpu_info
from .tensorflow import TfBuild, tf_build
from .torch import TorchRelease, TorchVariant, torch_local_variant, torch_release, torch_variants_for

__all__ = [
    "DriverRequirement",
    "GpuInfo",
    "TfBuild",
    "TorchRelease",
    "TorchVariant",
    "arch_covers",
    "LegacyBranch",
    "cuda_from_driver_api_int",
    "driver_possible",
    "legacy_branch",
    "gpu_info",
    "max_cuda_for_driver",
    "min_driver_for_cuda",
    "tf_build",
    "toolkit_driver",
    "toolkit_supports_cc",
    "torch_local_variant",
    "torch_release",
    "torch_variants_for",
]
