"""The plan: how many bytes one GPU needs for a model under given settings (pure arithmetic).

``make_plan(spec, settings)`` adds the model states (``states``) and the batch-dependent
part: activations (``activations``: the Korthikanti formula for a transformer shape, or
``--activation-bytes-per-sample`` × batch) and, when generating, the KV cache. The CUDA
context is per GPU and is added where GPUs are judged (``fit``). Settings are validated
here, so every caller gets the same one-line errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional

from gpudoctor.knowledge import memory as kb
from gpudoctor.memory import activations as act
from gpudoctor.memory.model import ModelSpec
from gpudoctor.memory.states import model_states

DEFAULT_SEQ_LEN = 2048
QUANTIZED = ("int8", "int4")


@dataclass(frozen=True)
class Settings:
    dtype: str = "fp32"
    train: bool = False
    optimizer: str = "adamw"
    mixed_precision: bool = False
    lora_rank: int = 0
    grad_checkpointing: bool = False
    batch: int = 1
    seq_len: Optional[int] = None           # None: min(2048, the model's maximum)
    context_len: Optional[int] = None       # tokens in the KV cache when generating; None: seq_len
    kv_dtype: Optional[str] = None          # None: the activations' dtype
    gpus: int = 1
    zero: int = 0
    activation_bytes_per_sample: Optional[int] = None

    def but(self, **changes) -> "Settings":
        return replace(self, **changes)


@dataclass
class Plan:
    settings: Settings
    seq_len: int
    breakdown: Dict[str, float]              # per GPU, without the CUDA context
    per_sample: float                        # the part that grows with the batch, per sample
    formulas: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @property
    def model_bytes(self) -> float:
        return sum(self.breakdown.values())

    @property
    def fixed_bytes(self) -> float:
        return self.model_bytes - self.per_sample * self.settings.batch


def validate(spec: ModelSpec, s: Settings) -> None:
    dt = kb.dtype(s.dtype)
    kb.optimizer(s.optimizer)
    if s.kv_dtype:
        kb.dtype(s.kv_dtype)
    if s.train and dt.name in QUANTIZED and not s.lora_rank:
        raise ValueError(f"--dtype {dt.name} weights can only be trained with --lora (QLoRA); "
                         "full training needs fp32, bf16 or fp16 weights")
    if s.mixed_precision and not s.train:
        raise ValueError("--mixed-precision describes training; add --train")
    if s.lora_rank and (spec.transformer is None or not spec.transformer.lora_pairs):
        raise ValueError("--lora needs the model's shape (a config.json, a transformers module, "
                         "or --layers/--hidden/--heads/--vocab)")
    if s.zero and s.gpus == 1:
        raise ValueError(f"--zero {s.zero} shards over GPUs: add --gpus N (N > 1)")


def activation_bytes(e_dtype: kb.Dtype, s: Settings) -> float:
    """16-bit activations under mixed precision or 16/8/4-bit weights; fp32 otherwise."""
    return 2.0 if s.mixed_precision or e_dtype.bytes < 4 else 4.0


def seq_len_for(spec: ModelSpec, s: Settings) -> int:
    if s.seq_len:
        return s.seq_len
    most = spec.transformer.max_positions if spec.transformer else None
    return min(DEFAULT_SEQ_LEN, most) if most else DEFAULT_SEQ_LEN


def make_plan(spec: ModelSpec, s: Settings) -> Plan:
    validate(spec, s)
    dt = kb.dtype(s.dtype)
    st = model_states(spec, dt, s.train, kb.optimizer(s.optimizer), s.mixed_precision, s.lora_rank, s.gpus, s.zero)
    seq = seq_len_for(spec, s)
    plan = Plan(s, seq, {"weights_bytes": st.weights, "gradients_bytes": st.gradients,
                         "optimizer_bytes": st.optimizer, "activations_bytes": 0.0, "kv_cache_bytes": 0.0},
                0.0, [], list(st.notes))
    _add_activations(plan, spec, dt, s, seq)
    return plan


def _add_activations(plan: Plan, spec: ModelSpec, dt: kb.Dtype, s: Settings, seq: int) -> None:
    e, t = activation_bytes(dt, s), spec.transformer
    if s.activation_bytes_per_sample is not None:
        per = float(s.activation_bytes_per_sample)
        plan.formulas.append(f"activations: {per:,.0f} bytes per sample (--activation-bytes-per-sample) × batch")
        if s.grad_checkpointing:
            plan.notes.append("gradient checkpointing is not applied to a per-sample figure: measure it with it on")
    elif t is not None:
        one = act.training(t, seq, 1, e, s.grad_checkpointing) if s.train else act.inference(t, seq, 1, e)
        per = one.bytes
        plan.formulas.append("activations: " + one.formula)
    else:
        per = 0.0
        plan.notes.append("activations not counted: give a config.json, --layers/--hidden/--heads/--vocab, "
                          "--activation-bytes-per-sample, or measure them with --measure")
    kv_per = 0.0
    if t is not None and not s.train and t.decoder_layers:
        kv_dtype = kb.dtype(s.kv_dtype) if s.kv_dtype else (dt if dt.bytes >= 2 else kb.dtype("fp16"))
        kv = act.kv_cache(t, s.context_len or seq, 1, kv_dtype.bytes)
        kv_per = kv.bytes / s.gpus
        plan.formulas.append(kv.formula + (f" ÷ {s.gpus} GPUs" if s.gpus > 1 else ""))
    plan.breakdown["activations_bytes"] = per * s.batch + _autocast_copies(spec, dt, s, plan)
    plan.breakdown["kv_cache_bytes"] = kv_per * s.batch
    plan.per_sample = per + kv_per


def _autocast_copies(spec: ModelSpec, dt: kb.Dtype, s: Settings, plan: Plan) -> float:
    """fp32 weights under autocast: the 16-bit copies of the weights live until the backward pass ends."""
    if not (s.train and s.mixed_precision and dt.bytes >= 4):
        return 0.0
    plan.formulas.append("autocast: 16-bit copies of the weights kept for the backward pass, 2 bytes × parameters "
                         "(with the fp32 weights, the 6 bytes per parameter of Hugging Face's model memory anatomy)")
    return spec.params * 2 / (s.gpus if s.zero == 3 else 1)
