"""Measure this machine's CUDA context and PyTorch's allocator, and print one JSON line.

Run by ``gpudoctor memory --measure`` as ``python -c <this file> '<json settings>'`` in a child
of the user's interpreter (standard library and torch only). Steps on one GPU:

1. ``torch.zeros(1, device="cuda")`` creates the CUDA context; the process's memory as
   nvidia-smi counts it (NVML's per-process figure, or the device's used memory minus what
   was used before, given by the parent) minus ``memory_reserved()`` is the context.
2. Three 64 MiB tensors, then the middle one freed: allocated drops, reserved does not - the
   caching allocator keeps the block for reuse.
3. With a module (``--torch-module`` and ``--input-shape``): forward and backward at batch 1
   and 2; the difference of the peaks (``max_memory_allocated()``) is one sample's activations.
"""

import importlib
import json
import os
import sys

MARKER = "GPUDOCTOR-MEASURE-JSON:"
BLOCK = 64 * 2 ** 20


def _own_nvml_bytes():
    """This process's memory on all GPUs as NVML (and so nvidia-smi) counts it, or None."""
    try:
        import pynvml as nv
        nv.nvmlInit()
        total = 0
        for i in range(nv.nvmlDeviceGetCount()):
            for p in nv.nvmlDeviceGetComputeRunningProcesses(nv.nvmlDeviceGetHandleByIndex(i)):
                if p.pid == os.getpid():
                    total += p.usedGpuMemory or 0
        return total or None
    except Exception:
        return None


def _reading(torch, dev, baseline):
    free, total = torch.cuda.mem_get_info(dev)
    own = _own_nvml_bytes()
    how = "nvml"
    if own is None and baseline is not None:
        own, how = total - free - baseline, "device used minus before"
    return {"allocated": torch.cuda.memory_allocated(dev), "reserved": torch.cuda.memory_reserved(dev),
            "free": free, "total": total, "process_used": own, "process_used_from": how if own is not None else None}


def _module_activations(torch, cfg):
    name, _, attr = cfg["target"].partition(":")
    fn = importlib.import_module(name)
    for part in attr.split("."):
        fn = getattr(fn, part)
    with torch.device("cuda"):
        model = fn() if not isinstance(fn, torch.nn.Module) else fn.cuda()
    model.train()
    peaks = {}
    for batch in (1, 2):
        shape = [batch] + cfg["input_shape"]
        x = (torch.randint(0, 100, shape, device="cuda") if cfg.get("tokens")
             else torch.randn(shape, device="cuda"))
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        out = model(x)
        out = getattr(out, "logits", out)
        out = out[0] if isinstance(out, (tuple, list)) else out
        out.float().sum().backward()
        torch.cuda.synchronize()
        peaks[batch] = torch.cuda.max_memory_allocated() - base
        model.zero_grad(set_to_none=True)
        del out, x
    return {"peak_batch1": peaks[1], "peak_batch2": peaks[2], "per_sample": peaks[2] - peaks[1]}


def _skip_reason(torch):
    if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        return f"torch {torch.__version__} is a CPU-only build (torch.version.cuda is None)"
    return f"torch.cuda.is_available() is False with torch {torch.__version__} (CUDA {torch.version.cuda})"


def main(argv):
    cfg = json.loads(argv[1])
    try:
        import torch
    except Exception as exc:
        return {"skipped": f"`import torch` fails: {type(exc).__name__}: {exc}"}
    if not torch.cuda.is_available():
        return {"skipped": _skip_reason(torch), "torch": torch.__version__}
    dev = cfg.get("device", 0)
    torch.cuda.set_device(dev)
    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": dev,
           "name": torch.cuda.get_device_name(dev), "module_loading": os.environ.get("CUDA_MODULE_LOADING")}
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    out["after_init"] = _reading(torch, dev, cfg.get("baseline_used"))
    blocks = [torch.empty(BLOCK, dtype=torch.uint8, device="cuda") for _ in range(3)]
    del blocks[1]
    torch.cuda.synchronize()
    out["after_free"] = _reading(torch, dev, cfg.get("baseline_used"))
    del blocks
    torch.cuda.empty_cache()
    if cfg.get("target"):
        out["module"] = _module_activations(torch, cfg)
    return out


if __name__ == "__main__":
    try:
        result = main(sys.argv)
    except BaseException as exc:  # the measurement itself failed: that is the answer
        result = {"error": {"type": type(exc).__name__, "message": str(exc)[:2000]}}
    print(MARKER + json.dumps(result))
    sys.exit(0)
