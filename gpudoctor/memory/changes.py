"""The changes that make a plan smaller, each re-planned and ranked by the bytes it saves.

Precision changes follow the GPU's compute capability (``min_cc`` in ``data/memory.json``):
bf16 and TF32 need 8.0+, fp8 8.9+, so a V100 (7.0) or a T4 (7.5) is offered fp16 with loss
scaling, never bf16. When no GPU is known, bf16 is offered with its requirement said.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from gpudoctor.knowledge import memory as kb
from gpudoctor.memory.model import ModelSpec
from gpudoctor.memory.plan import Plan, Settings, make_plan

LORA_RANK = 16
SHARD_COUNTS = (2, 4, 8, 16, 32, 64)

Candidate = Tuple[str, str, str, Settings]      # id, title, command-line flags, the changed settings


@dataclass(frozen=True)
class Change:
    id: str
    title: str
    flags: str
    saves_bytes: float
    need_bytes: float
    fits: Optional[bool]


def _half_type(cc: Optional[str]) -> str:
    return "fp16" if kb.compare_cc(cc, "8.0") is False else "bf16"


def _precision(s: Settings, cc: Optional[str]) -> List[Candidate]:
    half = _half_type(cc)
    why = " (needs compute capability 8.0+)" if half == "bf16" and cc is None else ""
    why = " with loss scaling (bf16 needs compute capability 8.0+)" if half == "fp16" else why
    out: List[Candidate] = []
    if s.dtype in ("fp32", "tf32") and s.train and not s.mixed_precision:
        out.append(("mixed_precision", f"{half} mixed precision{why}", f"--dtype {half} --mixed-precision",
                    s.but(dtype=half, mixed_precision=True)))
    if s.dtype in ("fp32", "tf32") and not s.train:
        out.append(("half_weights", f"{half} weights{why}", f"--dtype {half}", s.but(dtype=half)))
    if not s.train and kb.dtype(s.dtype).bytes > 1:
        if kb.compare_cc(cc, "8.9"):
            out.append(("fp8_weights", "fp8 weights (compute capability 8.9+)", "--dtype fp8", s.but(dtype="fp8")))
        out.append(("int8_weights", "int8 weights (bitsandbytes LLM.int8())", "--dtype int8", s.but(dtype="int8")))
        out.append(("int4_weights", "4-bit weights (bitsandbytes NF4)", "--dtype int4", s.but(dtype="int4")))
    return out


def _training(spec: ModelSpec, s: Settings, plan: Plan) -> List[Candidate]:
    out: List[Candidate] = []
    shaped = spec.transformer is not None and s.activation_bytes_per_sample is None
    if not s.grad_checkpointing and shaped:
        out.append(("grad_checkpointing", "gradient checkpointing", "--grad-checkpointing",
                    s.but(grad_checkpointing=True)))
    if s.optimizer in ("adam", "adamw") and not s.lora_rank:
        out.append(("adamw_8bit", "8-bit AdamW (bitsandbytes)", "--optimizer adamw-8bit", s.but(optimizer="adamw-8bit")))
    if not s.lora_rank and spec.transformer is not None and spec.transformer.lora_pairs:
        out.append(("lora", f"LoRA rank {LORA_RANK} (frozen base model)", f"--lora {LORA_RANK}",
                    s.but(lora_rank=LORA_RANK)))
        out.append(("qlora", f"QLoRA: 4-bit base model + LoRA rank {LORA_RANK}", f"--dtype int4 --lora {LORA_RANK}",
                    s.but(lora_rank=LORA_RANK, dtype="int4", mixed_precision=False)))
    if s.gpus > 1 and s.zero < 3:
        out.append(("zero", f"ZeRO stage {s.zero + 1}", f"--zero {s.zero + 1}", s.but(zero=s.zero + 1)))
    return out


def _shape(spec: ModelSpec, s: Settings, plan: Plan, cc: Optional[str]) -> List[Candidate]:
    out: List[Candidate] = []
    if s.batch > 1:
        words = f"batch 1 (× {s.batch} gradient-accumulation steps)" if s.train else "batch 1"
        out.append(("batch", words, "--batch 1", s.but(batch=1)))
    if spec.transformer is not None and plan.breakdown["activations_bytes"] and plan.seq_len >= 256:
        out.append(("seq_len", f"sequence length {plan.seq_len // 2}", f"--seq-len {plan.seq_len // 2}",
                    s.but(seq_len=plan.seq_len // 2)))
    if plan.breakdown["kv_cache_bytes"] and kb.dtype(s.kv_dtype or s.dtype).bytes >= 2 and kb.compare_cc(cc, "8.9"):
        out.append(("kv_fp8", "fp8 KV cache (compute capability 8.9+)", "--kv-dtype fp8", s.but(kv_dtype="fp8")))
    if plan.breakdown["kv_cache_bytes"]:
        tokens = s.context_len or plan.seq_len
        out.append(("context_len", f"KV cache for {tokens // 2} tokens", f"--context-len {tokens // 2}",
                    s.but(context_len=tokens // 2)))
    return out


def _shard(spec: ModelSpec, s: Settings, fits: Callable[[Plan], Optional[bool]]) -> List[Candidate]:
    """ZeRO-3 / FSDP FULL_SHARD over the fewest GPUs that make it fit (8 when no GPU is known)."""
    if not s.train or s.gpus > 1:
        return []
    for n in SHARD_COUNTS:
        trial = s.but(gpus=n, zero=3)
        verdict = fits(make_plan(spec, trial))
        if verdict or (verdict is None and n == 8):
            return [("shard", f"ZeRO-3 / FSDP FULL_SHARD over {n} GPUs", f"--gpus {n} --zero 3", trial)]
    return []


def rank(spec: ModelSpec, s: Settings, plan: Plan, cc: Optional[str],
         fits: Callable[[Plan], Optional[bool]]) -> List[Change]:
    """Every applicable change with the bytes it saves on one GPU, largest saving first."""
    found = _precision(s, cc) + (_training(spec, s, plan) if s.train else []) + _shape(spec, s, plan, cc)
    found += _shard(spec, s, fits)
    out = []
    for cid, title, flags, changed in found:
        try:
            new = make_plan(spec, changed)
        except ValueError:
            continue
        saved = plan.model_bytes - new.model_bytes
        if saved > 0:
            out.append(Change(cid, title, flags, saved, new.model_bytes, fits(new)))
    return sorted(out, key=lambda c: -c.saves_bytes)


def precision_advice(s: Settings, cc: Optional[str], label: str) -> List[str]:
    """What the asked dtype means on this GPU: a type it cannot compute in, or a faster one it can."""
    dt = kb.dtype(s.dtype)
    if cc is None:
        return []
    if kb.compare_cc(cc, dt.min_cc) is False:
        alt = "fp16 with loss scaling" if dt.name in ("bf16", "fp8") else "plain fp32 math (no saving in memory)"
        return [f"{label}: {dt.name} needs compute capability {dt.min_cc}+, this GPU has {cc}: use {alt}"]
    if dt.name == "fp32" and kb.compare_cc(cc, "8.0"):
        return [f"{label}: compute capability {cc} runs bf16 and TF32 natively"]
    return []
