"""Activation and KV-cache memory of transformer models, from the published formulas.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
(https://arxiv.org/abs/2205.05198), section 4.1: one transformer layer stores
``s·b·h·(34 + 5·a·s/h)`` bytes for the backward pass in 16-bit training without
recomputation (s sequence length, b micro-batch, h hidden size, a attention heads): 11sbh +
5as²b for attention, 19sbh for the MLP, 4sbh for the two LayerNorms. Of those, the dropout
masks (2sbh + as²b) are one byte per element whatever the precision, so with e-byte
activations a layer stores ``s·b·h·(16e + 2) + a·s²·b·(2e + 1)`` (e = 2 gives the paper's
34 and 5). With full recomputation only each layer's input (e·s·b·h bytes) is kept, plus
one layer's activations while it is recomputed. The output layer's logits are kept in
fp32 for the loss: 4·s·b·v bytes (section 4.3).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudoctor.memory.model import Transformer

PAPER = "Korthikanti et al. 2022 (arXiv:2205.05198)"


@dataclass(frozen=True)
class Estimate:
    bytes: float
    formula: str


def _coefficients(e: float) -> str:
    return f"{16 * e + 2:g} + {2 * e + 1:g}·a·s/h"


def layer_bytes(t: Transformer, s: int, b: int, e: float) -> float:
    """One layer's stored activations (the paper's per-layer formula, e-byte activations)."""
    return s * b * t.hidden * (16 * e + 2) + t.heads * s * s * b * (2 * e + 1)


def training(t: Transformer, s: int, b: int, e: float, recompute: bool) -> Estimate:
    layer = layer_bytes(t, s, b, e)
    output = 2 * e * s * b * t.hidden + 2 * 4 * s * b * t.vocab
    tail = f" + output layer 2·{e:g}·s·b·h + fp32 logits and their gradient 2·4·s·b·v ({int(e * 8)}-bit activations)"
    if recompute:
        kept = t.layers * e * s * b * t.hidden
        return Estimate(kept + layer + output, (
            f"{PAPER}, full recomputation: L·{e:g}·s·b·h for the layer inputs kept + one layer's "
            f"s·b·h·({_coefficients(e)}) while it is recomputed" + tail))
    return Estimate(t.layers * layer + output, (
        f"{PAPER}, no recomputation: L·s·b·h·({_coefficients(e)})" + tail))


def inference(t: Transformer, s: int, b: int, e: float) -> Estimate:
    """Nothing is kept for a backward pass: one layer's working set at a time, the last token's logits."""
    return Estimate(layer_bytes(t, s, b, e) + 4 * b * t.vocab, (
        f"inference: one layer's working set s·b·h·({_coefficients(e)}) ({PAPER}'s per-layer figure, "
        "nothing kept for backward) + the last token's fp32 logits 4·b·v"))


def kv_cache(t: Transformer, tokens: int, b: int, kv_bytes: float) -> Estimate:
    if not t.decoder_layers:
        return Estimate(0, "no KV cache: an encoder-only model does not generate")
    return Estimate(2 * t.decoder_layers * t.kv_heads * t.head_dim * tokens * b * kv_bytes, (
        f"KV cache: 2 (K and V) × {t.decoder_layers} layers × {t.kv_heads} KV heads × {t.head_dim} head dim "
        f"× {tokens} tokens × batch × {kv_bytes:g} bytes"))
