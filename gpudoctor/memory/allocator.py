"""One model of PyTorch's CUDA caching allocator, shared by ``explain`` (OOM messages) and ``memory``.

The accounting, in the words of PyTorch's memory-management notes:

* what nvidia-smi shows for a process = its CUDA context + what PyTorch reserved;
* reserved (``torch.cuda.memory_reserved()``) = allocated (live tensors,
  ``memory_allocated()``) + cached-but-free blocks kept for reuse;
* a cached block can only serve a request it is large enough for: reserved-but-unallocated
  memory split into pieces too small for the request is fragmentation.

From the numbers of an OOM message: a request larger than the whole GPU is a bug in the
program (a tensor's shape), not the environment; a cache holding at least the request in
free-but-unusable pieces is fragmentation (``expandable_segments``); memory held outside this
process's allocator (other processes, contexts) is "other processes"; else the GPU is full.
All sizes are MiB.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from gpudoctor.memory.units import pytorch_size as human

FRAGMENTED_SHARE = 0.05      # reserved-but-unallocated must also be >= 5% of the GPU to matter
OTHERS_SHARE = 0.25          # memory outside this process above 25% of the GPU: other processes
# One allocation several times the whole GPU is a blown-up tensor shape (130674 GiB on an 80 GiB GPU); a request
# up to this many times the GPU is a batch, resolution or model that does not fit this GPU: reduce it.
ABSURD_FACTOR = 4


@dataclass(frozen=True)
class AllocatorState:
    """What is known of one GPU and one process's allocator, in MiB (None: not known)."""

    total: Optional[float] = None
    free: Optional[float] = None
    requested: Optional[float] = None
    allocated: Optional[float] = None
    reserved: Optional[float] = None
    reserved_unallocated: Optional[float] = None
    cached: Optional[float] = None            # PyTorch 1.x messages: held by the allocator, not by tensors
    process_used: Optional[float] = None      # nvidia-smi's figure for the process (context included)
    non_releasable: Optional[float] = None    # memory_summary's inactive split blocks


@dataclass
class OomVerdict:
    kind: str                        # "program_bug", "fragmentation", "other_processes", "exhausted", "unknown"
    recipe: Optional[str]
    explanation: List[str]
    numbers: Dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """What explain's JSON carries of the verdict (its explanation is in the diagnosis's sentences)."""
        return {"kind": self.kind, "numbers": dict(self.numbers)}


def unallocated(s: AllocatorState) -> Optional[float]:
    """Reserved by the cache but holding no tensor."""
    if s.reserved_unallocated is not None:
        return s.reserved_unallocated
    if s.reserved is not None and s.allocated is not None:
        return max(0.0, s.reserved - s.allocated)
    return s.cached


def reserved(s: AllocatorState) -> Optional[float]:
    if s.reserved is not None:
        return s.reserved
    unalloc = unallocated(s)
    return None if s.allocated is None or unalloc is None else s.allocated + unalloc


def outside(s: AllocatorState) -> Optional[float]:
    """Memory in use on the GPU by anything but this process's PyTorch allocator."""
    res = reserved(s)
    if res is None or s.total is None or s.free is None:
        return None
    return max(0.0, s.total - s.free - res)


def context_share(s: AllocatorState) -> Optional[float]:
    """nvidia-smi's figure for the process minus PyTorch's reserved memory: the CUDA context (and
    memory other libraries took with cudaMalloc directly, such as NCCL's buffers)."""
    res = reserved(s)
    return None if s.process_used is None or res is None else max(0.0, s.process_used - res)


def classify_oom(s: AllocatorState) -> OomVerdict:
    if s.requested is None or s.total is None:
        return OomVerdict("unknown", "oom_exhausted", [])
    req, total = s.requested, s.total
    numbers = {"requested": human(req), "total": human(total)}
    if req > ABSURD_FACTOR * total:
        return OomVerdict("program_bug", None, [
            f"The program asked for {human(req)} in one allocation on a GPU with {human(total)} in total: "
            "no GPU setting can satisfy that. A tensor's shape is wrong (a size or index blown up by the code "
            "or the data); this looks like a bug in the program, not the environment."], numbers)
    if req > total:
        return OomVerdict("exhausted", "oom_exhausted", [
            f"One allocation of {human(req)} is larger than the whole GPU ({human(total)}): this batch, input "
            "size or model does not fit this GPU at any setting.",
            "Reduce the batch size, image or sequence size, or load the model quantized or split over several "
            "GPUs; or use a GPU with more memory."], numbers)
    unalloc = unallocated(s)
    if unalloc is not None:
        numbers["reserved_unallocated"] = human(unalloc)
    if _fragmented(s, unalloc):
        return OomVerdict("fragmentation", "oom_fragmentation", [
            f"PyTorch's caching allocator holds {human(unalloc)} reserved but unallocated - at least the "
            f"{human(req)} requested - yet no single free block is large enough: the cache is fragmented.",
            "Let the allocator grow segments instead (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; "
            "max_split_size_mb on PyTorch before 2.1) before reaching for a smaller batch."], numbers)
    out = outside(s)
    if out is not None:
        numbers["used_outside_pytorch"] = human(out)
    if out is not None and out >= OTHERS_SHARE * total:
        return OomVerdict("other_processes", "oom_exhausted", [
            f"{human(out)} of the GPU's {human(total)} is used outside this program's PyTorch allocator - "
            "other processes (another training run, a notebook kernel, a desktop) or a leak in native code.",
            "Free the GPU (nvidia-smi lists the processes) or choose another one with CUDA_VISIBLE_DEVICES."], numbers)
    return OomVerdict("exhausted", "oom_exhausted", [
        f"The GPU is simply full: {human(req)} more does not fit in {human(total)}"
        + (f" ({human(s.free)} free)" if s.free is not None else "") + ".",
        "Reduce the batch size or sequence length, use mixed precision (bf16/fp16) or gradient checkpointing, "
        "and make sure nothing keeps old tensors alive between steps."], numbers)


def _fragmented(s: AllocatorState, unalloc: Optional[float]) -> bool:
    if unalloc is None or unalloc < s.requested:
        return False
    return unalloc >= FRAGMENTED_SHARE * s.total or (s.free is not None and s.free >= s.requested)


def account(s: AllocatorState) -> List[str]:
    """The numbers explained in the accounting's own terms, one sentence per relation that is known."""
    lines = []
    res, unalloc, ctx = reserved(s), unallocated(s), context_share(s)
    if s.process_used is not None and res is not None:
        lines.append(f"nvidia-smi's {human(s.process_used)} for the process = CUDA context and other non-PyTorch "
                     f"memory {human(ctx)} + PyTorch's reserved {human(res)}.")
    if res is not None and s.allocated is not None:
        lines.append(f"Reserved {human(res)} = allocated {human(s.allocated)} (live tensors) + {human(unalloc)} "
                     "cached but free: the caching allocator keeps freed blocks for reuse instead of returning "
                     "them to the driver (torch.cuda.empty_cache() returns the unused ones to other processes, "
                     "not to this one).")
    if s.non_releasable:
        lines.append(f"{human(s.non_releasable)} of it sits in blocks split around live tensors (non-releasable): "
                     "free space that cannot be returned, and serves only requests that fit in the pieces - "
                     "fragmentation (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces it).")
    out = outside(s)
    if out is not None:
        lines.append(f"{human(out)} of the GPU's {human(s.total)} is in use outside this process's allocator "
                     f"(its CUDA context, other processes), {human(s.free)} is free.")
    return lines
