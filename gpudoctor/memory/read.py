"""``--read``: explain a pasted ``torch.cuda.memory_summary()`` table or CUDA out-of-memory message.

An OOM message is read with ``explain``'s own signatures (``knowledge/signatures/oom.json``)
and judged by the shared allocator model, so ``gpudoctor explain`` and ``gpudoctor memory``
say the same about the same message; ``memory`` adds the accounting sentence by sentence.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from gpudoctor.memory import allocator, summary
from gpudoctor.memory.units import MIB, fmt_bytes


def read(text: str) -> Dict:
    """The numbers found and what they mean; ValueError when the text holds neither form."""
    table = summary.parse(text)
    if table is not None and table["rows"]:
        return _from_summary(table)
    oom = _oom_values(text)
    if oom is not None:
        return _from_oom(oom)
    raise ValueError("no torch.cuda.memory_summary() table and no CUDA out-of-memory message with numbers "
                     "found in the text")


def _from_summary(table: Dict) -> Dict:
    rows = table["rows"]
    cur = {k: v["current"] / MIB for k, v in rows.items()}
    state = allocator.AllocatorState(allocated=cur.get("allocated"), reserved=cur.get("reserved"),
                                     non_releasable=cur.get("non_releasable"))
    lines = allocator.account(state)
    if "allocated" in rows and "reserved" in rows:
        lines.append(f"At the peak: {fmt_bytes(rows['allocated']['peak'])} allocated, "
                     f"{fmt_bytes(rows['reserved']['peak'])} reserved - the peak is what must fit on the GPU, "
                     "with the CUDA context on top.")
    if table["alloc_retries"]:
        lines.append(f"{table['alloc_retries']} cudaMalloc retries: a request failed, the allocator freed its "
                     "cache and tried again - memory pressure, often with fragmentation (slow, one step from OOM).")
    if table["ooms"]:
        lines.append(f"{table['ooms']} CUDA out-of-memory errors were raised in this process.")
    numbers = {f"{k}_{part}_bytes": v[part] for k, v in rows.items() for part in ("current", "peak")}
    return {"kind": "memory_summary", "device": table["device"], "numbers": numbers, "explanation": lines}


def _oom_values(text: str) -> Optional[Dict]:
    """The typed values of the first OOM signature that matched, read by explain's scanner."""
    from gpudoctor.explain import catalog as _catalog
    from gpudoctor.explain.diagnose import typed_values
    from gpudoctor.explain.sources import Source, scan

    cat = _catalog.load()
    result = scan(Source("<pasted>", "text", text=text), cat, None, 1)
    for sig_id, hit in result.hits.items():
        sig = cat.by_id[sig_id]
        if sig.analysis == "oom":
            values = typed_values(sig, hit.values)
            if values.get("requested") is not None:
                return values
    return None


def _from_oom(values: Dict) -> Dict:
    from gpudoctor.explain.oom import state_from_values

    state = state_from_values(values)
    verdict = allocator.classify_oom(state)
    lines: List[str] = allocator.account(state) + verdict.explanation
    numbers = {k: round(getattr(state, k) * MIB) for k in ("requested", "total", "free", "allocated", "reserved",
                                                           "reserved_unallocated", "process_used")
               if getattr(state, k) is not None}
    return {"kind": "oom", "verdict": verdict.kind, "recipe": verdict.recipe, "numbers": numbers,
            "explanation": lines}


def render(doc: Dict) -> List[str]:
    title = ("torch.cuda.memory_summary()" + (f" of device {doc['device']}" if doc.get("device") is not None else "")
             if doc["kind"] == "memory_summary" else f"CUDA out of memory ({doc['verdict'].replace('_', ' ')})")
    return [f"Reading {title}:"] + [f"  {line}" for line in doc["explanation"]]
