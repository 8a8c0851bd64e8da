"""What the planner knows about a model: its parameter count and, when known, its shapes.

A ``ModelSpec`` comes from ``--params`` (a count only), a Hugging Face ``config.json``
(``hf_config``: the count computed from the shapes) or ``--torch-module`` (``torch_module``:
the module built on the meta device in a child python). The transformer shape (layers,
hidden size, heads, vocabulary) is what the activation and KV-cache formulas need;
``matrices`` (rows, cols of every 2-D parameter) is what Adafactor's factored state and
LoRA's adapters need.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Tuple


@dataclass(frozen=True)
class Transformer:
    layers: int                 # decoder + encoder layers (T5 counts both stacks)
    hidden: int                 # h
    heads: int                  # a
    kv_heads: int               # grouped-query attention: fewer K/V heads than query heads
    head_dim: int
    vocab: int
    max_positions: Optional[int] = None
    decoder_layers: int = 0     # layers that keep a KV cache when generating (0: an encoder only)
    lora_pairs: Tuple[Tuple[int, int], ...] = ()   # (in, out) of each adapted projection in one layer


@dataclass(frozen=True)
class ModelSpec:
    params: int
    source: str                                 # "--params 7B", "config.json (llama)", "torch module m:f"
    trainable: Optional[int] = None             # None: every parameter (a module may freeze some)
    transformer: Optional[Transformer] = None
    matrices: Tuple[Tuple[int, int], ...] = ()  # every 2-D parameter, for Adafactor
    vector_params: int = 0                      # parameters in 1-D tensors (biases, norms)
    notes: Tuple[str, ...] = field(default_factory=tuple)

    @property
    def trainable_params(self) -> int:
        return self.params if self.trainable is None else self.trainable

    def with_transformer(self, t: Transformer) -> "ModelSpec":
        return replace(self, transformer=t)


def transformer_from_options(layers, hidden, heads, vocab, kv_heads=None) -> Optional[Transformer]:
    """The shape given on the command line with --params (all four, or none)."""
    given = [layers, hidden, heads, vocab]
    if all(v is None for v in given):
        return None
    if any(v is None for v in given):
        raise ValueError("--layers, --hidden, --heads and --vocab go together (the activation formula needs all four)")
    if hidden % heads:
        raise ValueError(f"--hidden {hidden} is not a multiple of --heads {heads}")
    kv = kv_heads or heads
    return Transformer(layers, hidden, heads, kv, hidden // heads, vocab, None, layers,
                       ((hidden, hidden), (hidden, kv * (hidden // heads))))
