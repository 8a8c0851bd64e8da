"""Model states per GPU: weights, gradients and optimizer states, sharded the ZeRO way.

Bytes per parameter follow the ZeRO paper's accounting (Rajbhandari et al. 2019,
https://arxiv.org/abs/1910.02054, section 3.1): mixed-precision Adam keeps 2 bytes of fp16
weights, 2 of fp16 gradients and K = 12 of optimizer state (fp32 master weights, momentum,
variance): 16 bytes per parameter. Stage 1 shards the optimizer states over the N GPUs
(2 + 2 + 12/N), stage 2 the gradients too (2 + 14/N), stage 3 the weights too (16/N).
FSDP's FULL_SHARD is stage 3, SHARD_GRAD_OP stage 2. Without --mixed-precision the states
are kept in the weights' dtype (fp32 training: 4 + 4 + 8 for Adam); an 8-bit optimizer
keeps fixed bytes; Adafactor keeps row and column sums per matrix. With LoRA the base
weights are frozen: only the adapters (fp32) have gradients and optimizer states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

from gpudoctor.knowledge import memory as kb
from gpudoctor.memory.model import ModelSpec

ADAPTER_BYTES = 4     # PEFT keeps LoRA adapters in fp32


@dataclass(frozen=True)
class States:
    weights: float
    gradients: float
    optimizer: float
    notes: tuple


def lora_params(spec: ModelSpec, rank: int) -> int:
    """Adapter parameters: r·(in + out) per adapted projection (A is r×in, B is out×r) in every layer."""
    t = spec.transformer
    return t.layers * sum(rank * (i + o) for i, o in t.lora_pairs)


def _state_bytes(opt: kb.Optimizer, spec: ModelSpec, trained: int, elem: float, lora: bool) -> float:
    if opt.factored:
        if lora or not spec.matrices:
            return 4 * trained      # no matrix shapes: counted like vectors, an upper bound
        return 4 * sum(r + c for r, c in spec.matrices) + 4 * spec.vector_params
    return trained * (opt.state_copies * elem + opt.state_bytes)


def model_states(spec: ModelSpec, dtype: kb.Dtype, train: bool, opt: kb.Optimizer, mixed: bool,
                 lora_rank: int, gpus: int, zero: int) -> States:
    notes: List[str] = []
    weights = spec.params * dtype.bytes
    if not train:
        return States(weights / gpus, 0.0, 0.0, _inference_notes(gpus))
    if lora_rank:
        trained = lora_params(spec, lora_rank)
        weights += trained * ADAPTER_BYTES
        grad_elem = state_elem = ADAPTER_BYTES
        master = 0.0
        notes.append(f"LoRA rank {lora_rank}: {trained:,} adapter parameters in fp32 are trained, "
                     f"the {spec.params:,} base weights are frozen (no gradients, no optimizer state)")
    else:
        trained = spec.trainable_params
        grad_elem = dtype.bytes
        state_elem = 4 if mixed or dtype.bytes >= 4 else dtype.bytes
        master = kb.master_weight_bytes() * trained if mixed and dtype.bytes < 4 else 0.0
    grads = trained * grad_elem
    optim = _state_bytes(opt, spec, trained, state_elem, bool(lora_rank)) + master
    shard = lambda stage: gpus if zero >= stage else 1      # noqa: E731 - ZeRO stage >= s shards that state
    if gpus > 1:
        notes.append(f"ZeRO stage {zero} over {gpus} GPUs: " + _sharded_words(zero))
    return States(weights / shard(3), grads / shard(2), optim / shard(1), tuple(notes))


def _sharded_words(zero: int) -> str:
    return ["nothing is sharded (data parallel: every GPU holds all model states)",
            "optimizer states are sharded", "optimizer states and gradients are sharded",
            "weights, gradients and optimizer states are sharded"][zero]


def _inference_notes(gpus: int) -> tuple:
    if gpus == 1:
        return ()
    return (f"inference over {gpus} GPUs: weights and KV cache split evenly (tensor or pipeline parallel)",)
