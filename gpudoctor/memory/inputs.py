"""Command-line values -> the planner's inputs; every mistake is a ValueError of one line."""

from __future__ import annotations

import os
from typing import Dict, List, Mapping, Optional

from gpudoctor.knowledge import memory as kb
from gpudoctor.memory import hf_config, torch_module
from gpudoctor.memory.model import ModelSpec, transformer_from_options
from gpudoctor.memory.plan import Settings
from gpudoctor.memory.units import parse_count, parse_size


def model(o: Dict, python: str, env: Mapping[str, str], timeout: float) -> Optional[ModelSpec]:
    """The model from exactly one of --params, --config, --torch-module (None if none is given)."""
    given = [k for k in ("params", "config", "torch_module") if o.get(k)]
    if len(given) > 1:
        raise ValueError("give the model one way: --params, --config or --torch-module")
    shape = transformer_from_options(o.get("layers"), o.get("hidden"), o.get("heads"), o.get("vocab"), o.get("kv_heads"))
    if shape is not None and given and given[0] != "params":
        raise ValueError("--layers/--hidden/--heads/--vocab describe a --params model; a config or module has its own")
    if not given:
        if shape is not None:
            raise ValueError("--layers/--hidden/--heads/--vocab need --params N")
        return None
    if given[0] == "params":
        n = parse_count(o["params"])
        return ModelSpec(n, "--params", transformer=shape)
    if given[0] == "config":
        return hf_config.spec_from_config(hf_config.load_config(o["config"]), os.path.basename(o["config"].rstrip("/")))
    answer = torch_module.run_child(o["torch_module"], python, env, timeout)
    return torch_module.spec_from_child(answer, o["torch_module"])


def settings(o: Dict) -> Settings:
    zero = o.get("zero") or 0
    if o.get("fsdp"):
        if o.get("zero") is not None:
            raise ValueError("--fsdp and --zero say the same thing; give one")
        zero = kb.fsdp_zero_stage(o["fsdp"])
    per_sample = o.get("activation_bytes_per_sample")
    return Settings(
        dtype=kb.dtype(o.get("dtype") or "fp32").name, train=bool(o.get("train")),
        optimizer=kb.optimizer(o.get("optimizer") or "adamw").name, mixed_precision=bool(o.get("mixed_precision")),
        lora_rank=o.get("lora") or 0, grad_checkpointing=bool(o.get("grad_checkpointing")),
        batch=o.get("batch") or 1, seq_len=o.get("seq_len"), context_len=o.get("context_len"),
        kv_dtype=kb.dtype(o["kv_dtype"]).name if o.get("kv_dtype") else None, gpus=o.get("gpus") or 1, zero=zero,
        activation_bytes_per_sample=None if per_sample is None else parse_size(per_sample))


def input_shape(text: Optional[str]) -> Optional[List[int]]:
    """"3,224,224" -> [3, 224, 224]; "tokens:512" -> [512] (token ids)."""
    if not text:
        return None
    dims = text.split(":", 1)[-1]
    try:
        shape = [int(d) for d in dims.split(",")]
    except ValueError:
        shape = []
    if not shape or min(shape) <= 0:
        raise ValueError(f"--input-shape {text!r}: write C,H,W (e.g. 3,224,224) or tokens:LENGTH")
    return shape
