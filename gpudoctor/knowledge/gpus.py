"""GPU product name -> compute capability, from ``data/gpus.json``.

A fallback for when the device itself cannot be asked: ``nvidia-smi
--query-gpu=compute_cap`` (driver 510+) and NVML are authoritative. Handles the
spellings nvidia-smi prints across driver generations ("Tesla V100-SXM2-32GB",
"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB" on 460, "NVIDIA GeForce RTX 3060 Laptop
GPU") and names the 80-column table cuts off ("GeForce GTX 108...").
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

from ._load import load

Key = Tuple[str, ...]


@dataclass(frozen=True)
class GpuInfo:
    name: str           # canonical product name, or the visible part of a truncated one
    compute_cap: str    # "8.6"
    architecture: str   # "Ampere"
    source: str
    verified: bool = True
    note: str = ""


def _tokens(text: str) -> List[str]:
    rules = load("gpus")["normalize"]
    s = text.lower()
    for sep in rules["separators"]:
        s = s.replace(sep, " ")
    return [t for t in s.split() if t not in rules["drop_words"]]


@lru_cache(maxsize=None)
def _keys() -> Tuple[Tuple[Key, int], ...]:
    """(token key, row index) for every name and alias."""
    out = []
    for i, row in enumerate(load("gpus")["gpus"]):
        for spelling in [row["name"]] + row.get("aliases", []):
            out.append((tuple(_tokens(spelling)), i))
    return tuple(out)


def _info(row: Dict[str, Any], name: Optional[str] = None, note: Optional[str] = None) -> GpuInfo:
    return GpuInfo(name or row["name"], row["compute_cap"], row["architecture"], row["source"], row["verified"],
                   row.get("note", "") if note is None else note)


def _contains(tokens: List[str], key: Key) -> bool:
    n = len(key)
    return any(tuple(tokens[i:i + n]) == key for i in range(len(tokens) - n + 1))


def _truncated(text: str) -> Optional[Tuple[List[str], str]]:
    """('GeForce GTX 108...') -> (['gtx'], '108'); None if the name was not cut off."""
    for mark in load("gpus")["normalize"]["truncation_marks"]:
        if text.rstrip().endswith(mark):
            visible = text.rstrip()[: -len(mark)]
            tokens = _tokens(visible)
            partial = tokens.pop() if tokens and not visible[-1:].isspace() else ""
            return tokens, partial
    return None


def _could_be(key: Key, complete: List[str], partial: str) -> bool:
    """Could a name that starts with `complete` + `partial` be the product with this key?"""
    if tuple(complete[: len(key)]) == key:
        return True
    n = len(complete)
    if tuple(key[:n]) != tuple(complete):
        return False
    return not partial or (len(key) > n and key[n].startswith(partial))


def _match_truncated(text: str, complete: List[str], partial: str) -> Optional[GpuInfo]:
    if not complete and not partial:
        return None
    rows = load("gpus")["gpus"]
    hits = {i for key, i in _keys() if _could_be(key, complete, partial)}
    caps = {rows[i]["compute_cap"] for i in hits}
    if len(caps) != 1:
        return None  # unknown, or the visible part fits products of different CCs
    row = rows[min(hits)]
    return _info(row, name=text.strip(), note=f"truncated name; every product it can be has CC {row['compute_cap']}")


def gpu_info(name: str) -> Optional[GpuInfo]:
    """Compute capability and architecture for a product name, or None ("Graphics Device", unknown)."""
    if not name or not name.strip():
        return None
    cut = _truncated(name)
    if cut is not None:
        return _match_truncated(name, *cut)
    tokens = _tokens(name)
    best = max(((len(key), -i, i) for key, i in _keys() if key and _contains(tokens, key)), default=None)
    return _info(load("gpus")["gpus"][best[2]]) if best else None
