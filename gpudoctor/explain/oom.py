"""Read a CUDA out-of-memory message's numbers and tell which kind of OOM it is.

PyTorch prints two formats:

* up to 2.0: ``Tried to allocate R (GPU 0; T total capacity; A already allocated;
  F free; S reserved in total by PyTorch)`` (1.x said ``S cached``);
* from 2.1: ``Tried to allocate R. GPU 0 has a total capacity of T of which F is free.
  [Process P has U memory in use.] [Including non-PyTorch memory, this process has U
  memory in use.] Of the allocated memory A is allocated by PyTorch, and C is reserved
  by PyTorch but unallocated.``

From them: a request several times larger than the whole GPU is a bug in the program (a
tensor shape), not the environment, while one somewhat larger than the GPU does not fit it; PyTorch's cache holding at least the request in free-but-unusable
pieces is fragmentation (``expandable_segments``); memory held by other processes, or a
GPU simply full of this program's tensors, is exhaustion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from gpudoctor.explain.values import Size, human

FRAGMENTED_SHARE = 0.05      # reserved-but-unallocated must also be >= 5% of the GPU to matter
# One allocation several times the whole GPU is a blown-up tensor shape (130674 GiB on an 80 GiB GPU); a request
# up to this many times the GPU is a batch, resolution or model that does not fit this GPU: reduce it.
ABSURD_FACTOR = 4
OTHERS_SHARE = 0.25          # memory outside this process above 25% of the GPU: other processes


@dataclass
class OomAnalysis:
    kind: str                        # "program_bug", "fragmentation", "other_processes", "exhausted", "unknown"
    recipe: Optional[str]
    explanation: List[str]
    numbers: Dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "numbers": dict(self.numbers)}


def _mib(values: Dict[str, Any], name: str) -> Optional[float]:
    v = values.get(name)
    return v.mib if isinstance(v, Size) else None


def _unallocated(values: Dict[str, Any]) -> Optional[float]:
    direct = _mib(values, "reserved_unallocated")
    if direct is not None:
        return direct
    reserved, allocated = _mib(values, "reserved"), _mib(values, "allocated")
    if reserved is not None and allocated is not None:
        return max(0.0, reserved - allocated)
    return _mib(values, "cached")    # PyTorch 1.x: "cached" = held by the allocator, not by tensors


def _outside(values: Dict[str, Any], total: float, free: float) -> Optional[float]:
    """Memory used on the GPU by anything but this process's PyTorch allocator."""
    reserved = _mib(values, "reserved")
    if reserved is None:
        allocated, unalloc = _mib(values, "allocated"), _unallocated(values)
        if allocated is None or unalloc is None:
            return None
        reserved = allocated + unalloc
    return max(0.0, total - free - reserved)


def analyse(values: Dict[str, Any]) -> OomAnalysis:
    requested, total, free = _mib(values, "requested"), _mib(values, "total"), _mib(values, "free")
    if requested is None or total is None:
        return OomAnalysis("unknown", "oom_exhausted", [])
    numbers = {"requested": human(requested), "total": human(total)}
    if requested > ABSURD_FACTOR * total:
        return OomAnalysis("program_bug", None, [
            f"The program asked for {human(requested)} in one allocation on a GPU with {human(total)} in total: "
            "no GPU setting can satisfy that. A tensor's shape is wrong (a size or index blown up by the code "
            "or the data); this looks like a bug in the program, not the environment."], numbers)
    if requested > total:
        return OomAnalysis("exhausted", "oom_exhausted", [
            f"One allocation of {human(requested)} is larger than the whole GPU ({human(total)}): this batch, input "
            "size or model does not fit this GPU at any setting.",
            "Reduce the batch size, image or sequence size, or load the model quantized or split over several "
            "GPUs; or use a GPU with more memory."], numbers)
    unalloc = _unallocated(values)
    if unalloc is not None:
        numbers["reserved_unallocated"] = human(unalloc)
    if unalloc is not None and unalloc >= requested and unalloc >= FRAGMENTED_SHARE * total or \
            (unalloc is not None and free is not None and unalloc >= requested and free >= requested):
        return OomAnalysis("fragmentation", "oom_fragmentation", [
            f"PyTorch's caching allocator holds {human(unalloc)} reserved but unallocated - at least the "
            f"{human(requested)} requested - yet no single free block is large enough: the cache is fragmented.",
            "Let the allocator grow segments instead (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; "
            "max_split_size_mb on PyTorch before 2.1) before reaching for a smaller batch."], numbers)
    outside = _outside(values, total, free) if free is not None else None
    if outside is not None:
        numbers["used_outside_pytorch"] = human(outside)
    if outside is not None and outside >= OTHERS_SHARE * total:
        return OomAnalysis("other_processes", "oom_exhausted", [
            f"{human(outside)} of the GPU's {human(total)} is used outside this program's PyTorch allocator - "
            "other processes (another training run, a notebook kernel, a desktop) or a leak in native code.",
            "Free the GPU (nvidia-smi lists the processes) or choose another one with CUDA_VISIBLE_DEVICES."], numbers)
    return OomAnalysis("exhausted", "oom_exhausted", [
        f"The GPU is simply full: {human(requested)} more does not fit in {human(total)}"
        + (f" ({human(free)} free)" if free is not None else "") + ".",
        "Reduce the batch size or sequence length, use mixed precision (bf16/fp16) or gradient checkpointing, "
        "and make sure nothing keeps old tensors alive between steps."], numbers)
