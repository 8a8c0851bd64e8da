"""The environment variables gpudoctor records: an allow-list, nothing else.

Anything not listed here never enters a snapshot, a report or a bundle.
"""

from __future__ import annotations

from typing import Dict, Mapping

ALLOWED = (
    # device selection
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA", "SLURM_JOB_GPUS", "SLURM_STEP_GPUS",
    "GPU_DEVICE_ORDINAL",
    # TensorFlow / PyTorch / JAX memory and logging
    "TF_FORCE_GPU_ALLOW_GROWTH", "TF_GPU_ALLOCATOR", "TF_CPP_MIN_LOG_LEVEL",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NVML_BASED_CUDA_CHECK",
    "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR", "XLA_FLAGS", "JAX_PLATFORMS",
    # toolkit and library lookup
    "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "PATH",
    "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "VIRTUAL_ENV",
    # CUDA runtime behaviour (DCGM flags several of these as harmful on production nodes)
    "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING", "CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT",
    "CUDA_CACHE_DISABLE", "CUDA_INJECTION64_PATH", "NSIGHT_CUDA_DEBUGGER",
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "CUDA_AUTO_BOOST",
    # NCCL
    "NCCL_DEBUG", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME", "NCCL_SHM_DISABLE",
    # where we are running
    "WSL_DISTRO_NAME", "container", "KUBERNETES_SERVICE_HOST", "SLURM_JOB_ID",
)


def collect_env(environ: Mapping[str, str]) -> Dict[str, str]:
    return {name: environ[name] for name in ALLOWED if name in environ}
