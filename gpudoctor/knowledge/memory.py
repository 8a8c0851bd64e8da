"""The numbers GPU-memory planning reads: dtypes, optimizers, CUDA contexts, GPU sizes, model families.

Facts live in ``data/memory.json``, ``cuda_context.json``, ``gpu_memory.json`` and
``model_families.json``; this module only looks them up. Unknown names raise
``ValueError`` with one line naming the choices, for ``gpudoctor: ...`` messages.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ._load import load
from .gpus import _tokens


@dataclass(frozen=True)
class Dtype:
    name: str
    bytes: float
    min_cc: Optional[str]
    note: str
    source: str


@dataclass(frozen=True)
class Optimizer:
    name: str
    state_copies: int = 0          # copies of the parameter (fp32 under mixed precision)
    state_bytes: float = 0.0       # fixed bytes per parameter (8-bit states)
    factored: bool = False         # Adafactor: rows + cols per matrix
    note: str = ""
    source: str = ""


@dataclass(frozen=True)
class ContextEstimate:
    mib: float
    basis: str                     # what the figure stands for, said in the output
    source: str


@dataclass(frozen=True)
class GpuMemory:
    name: str
    memory_mib: int
    verified: bool
    source: str


def dtype(name: str) -> Dtype:
    key = name.strip().lower()
    for row in load("memory")["dtypes"]:
        if key == row["name"] or key in row["aliases"]:
            return Dtype(row["name"], row["bytes"], row["min_cc"], row["note"], row["source"])
    raise ValueError(f"unknown dtype {name!r} (known: {', '.join(dtype_names())})")


def dtype_names() -> List[str]:
    return [row["name"] for row in load("memory")["dtypes"]]


def optimizer(name: str) -> Optimizer:
    for row in load("memory")["optimizers"]:
        if row["name"] == name.strip().lower():
            return Optimizer(row["name"], row.get("state_copies", 0), row.get("state_bytes", 0.0),
                             row.get("factored", False), row["note"], row["source"])
    raise ValueError(f"unknown optimizer {name!r} (known: {', '.join(optimizer_names())})")


def optimizer_names() -> List[str]:
    return [row["name"] for row in load("memory")["optimizers"]]


def master_weight_bytes() -> float:
    return load("memory")["master_weights"]["bytes"]


def fsdp_zero_stage(strategy: str) -> int:
    for row in load("memory")["sharding"]:
        if row["fsdp"] == strategy:
            return row["zero"]
    raise ValueError(f"unknown FSDP strategy {strategy!r}")


def fsdp_strategies() -> List[str]:
    return [row["fsdp"] for row in load("memory")["sharding"]]


def cuda_context(architecture: Optional[str], lazy: bool) -> ContextEstimate:
    """The largest published context for this GPU generation and loading mode, else the mode's default."""
    data = load("cuda_context")
    rows = [r for r in data["measurements"] if r["lazy"] == lazy and architecture and r["architecture"] == architecture]
    if rows:
        row = max(rows, key=lambda r: r["context_mib"])
        return ContextEstimate(row["context_mib"], f"as measured on a {row['gpu']} with {row['framework']}",
                               row["source"])
    row = data["default"]["lazy" if lazy else "eager"]
    basis = "the published figure with CUDA 11.7+" if lazy else "the published figure before CUDA 11.7"
    return ContextEstimate(row["context_mib"], basis, row["source"])


def gpu_memory(name: str) -> GpuMemory:
    """The memory of a GPU product by name ("H100 80GB", "RTX 3090", or nvidia-smi's own spelling)."""
    asked = set(_tokens(name))
    if not asked:
        raise ValueError("an empty GPU name")
    rows = load("gpu_memory")["gpus"]
    keyed = [(frozenset(_tokens(s)), r) for r in rows for s in [r["name"]] + r.get("aliases", [])]
    exact = [r for k, r in keyed if k == asked]
    inside = sorted(((len(k), r) for k, r in keyed if k < asked), key=lambda x: -x[0])
    if exact or inside:
        row = exact[0] if exact else inside[0][1]
        return GpuMemory(row["name"], row["memory_mib"], row["verified"], row["source"])
    wider = _distinct([r for k, r in keyed if asked < k])
    if len({r["memory_mib"] for r in wider}) == 1:
        row = wider[0]
        return GpuMemory(row["name"], row["memory_mib"], row["verified"], row["source"])
    if wider:
        choices = ", ".join(f"{r['name']} ({r['memory_mib']} MiB)" for r in wider)
        raise ValueError(f"GPU name {name!r} is ambiguous: {choices}")
    raise ValueError(f"unknown GPU {name!r}: not in gpudoctor's table of GPU memory sizes "
                     "(give its memory instead, e.g. --gpu-memory 24GiB)")


def _distinct(rows: List[Dict]) -> List[Dict]:
    seen, out = set(), []
    for r in rows:
        if r["name"] not in seen:
            seen.add(r["name"])
            out.append(r)
    return out


def model_family(model_type: str) -> Dict:
    for row in load("model_families")["families"]:
        if row["model_type"] == model_type:
            return row
    known = ", ".join(r["model_type"] for r in load("model_families")["families"])
    raise ValueError(f"config.json model_type {model_type!r} is not one gpudoctor can count "
                     f"(known: {known}); give --params N instead")


def compare_cc(cc: Optional[str], minimum: Optional[str]) -> Optional[bool]:
    """True if compute capability ``cc`` reaches ``minimum``; None when ``cc`` is unknown."""
    if minimum is None:
        return True
    if not cc:
        return None
    return _cc(cc) >= _cc(minimum)


def _cc(text: str) -> Tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)
