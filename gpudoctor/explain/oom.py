"""Read a CUDA out-of-memory message's numbers and tell which kind of OOM it is.

PyTorch prints two formats:

* up to 2.0: ``Tried to allocate R (GPU 0; T total capacity; A already allocated;
  F free; S reserved in total by PyTorch)`` (1.x said ``S cached``);
* from 2.1: ``Tried to allocate R. GPU 0 has a total capacity of T of which F is free.
  [Process P has U memory in use.] [Including non-PyTorch memory, this process has U
  memory in use.] Of the allocated memory A is allocated by PyTorch, and C is reserved
  by PyTorch but unallocated.``

The signatures' patterns (``knowledge/signatures/oom.json``) pull the numbers out; the
judgement is the caching-allocator model that ``gpudoctor memory`` uses too
(``gpudoctor.memory.allocator``), so both commands read the same message the same way.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from gpudoctor.explain.values import Size
from gpudoctor.memory.allocator import AllocatorState, OomVerdict, classify_oom


def _mib(values: Dict[str, Any], name: str) -> Optional[float]:
    v = values.get(name)
    return v.mib if isinstance(v, Size) else None


def state_from_values(values: Dict[str, Any]) -> AllocatorState:
    """The allocator's numbers among a signature's typed values (Size -> MiB)."""
    names = ("total", "free", "requested", "allocated", "reserved", "reserved_unallocated", "cached", "process_used")
    return AllocatorState(**{n: _mib(values, n) for n in names})


def analyse(values: Dict[str, Any]) -> OomVerdict:
    return classify_oom(state_from_values(values))
