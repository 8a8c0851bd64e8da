"""Parameter count and shapes from a Hugging Face ``config.json`` alone (no weights, no transformers).

Handles the config.json files on the Hub for Llama-style decoders (``llama``, ``mistral``,
``qwen2``, ``gemma``, ``phi3``: ``num_key_value_heads`` for grouped-query attention,
``head_dim`` where given, ``tie_word_embeddings``), GPT-2 (``n_embd``, ``n_layer``,
``n_inner`` null meaning 4 x n_embd), BERT/RoBERTa (the encoder and its pooler, no task
head) and T5/mT5 (``d_kv``, ``num_decoder_layers``, ``feed_forward_proj`` "gated-gelu").
Which model_type has which shape is data (``knowledge/data/model_families.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Tuple

from gpudoctor import liveread
from gpudoctor.knowledge.memory import model_family
from gpudoctor.memory.model import ModelSpec, Transformer

Mats = List[Tuple[int, int]]
MAX_CONFIG_BYTES = 16 << 20  # a config.json is a few KB; tokenizer-sized files are not configs


def load_config(path: str) -> Dict:
    """The parsed config.json of a file or a model folder; ValueError with one line otherwise."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        data = json.loads(liveread.read_bytes(str(p), MAX_CONFIG_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{p}: no such file") from None
    except liveread.Refused as exc:  # a FIFO would block a plain read, /dev/zero never end
        raise ValueError(f"{p}: cannot read it ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p}: cannot read it ({exc.__class__.__name__})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ValueError(f"{p}: not a Hugging Face config.json (nested too deeply)") from None
    if not isinstance(data, dict) or "model_type" not in data:
        raise ValueError(f"{p}: not a Hugging Face config.json (no model_type)")
    return data


def spec_from_config(cfg: Dict, where: str = "config.json") -> ModelSpec:
    family = model_family(str(cfg["model_type"]))
    mats, vectors, shape = _SHAPES[family["shape"]](cfg, family)
    params = sum(r * c for r, c in mats) + vectors
    return ModelSpec(params, f"{where}, {cfg['model_type']}", transformer=shape, matrices=tuple(mats),
                     vector_params=vectors)


def _int(cfg: Dict, *keys: str, default=None) -> int:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"config.json: {key} is {value!r}, not a positive integer")
            return value
    if default is not None:
        return default
    raise ValueError(f"config.json has no {' / '.join(keys)}")


def _tied(cfg: Dict, family: Dict) -> bool:
    value = cfg.get("tie_word_embeddings")
    return family["tied_default"] if value is None else bool(value)


def _decoder(cfg: Dict, family: Dict):
    h, L = _int(cfg, "hidden_size"), _int(cfg, "num_hidden_layers")
    a, V, inter = _int(cfg, "num_attention_heads"), _int(cfg, "vocab_size"), _int(cfg, "intermediate_size")
    kv = _int(cfg, "num_key_value_heads", default=a)
    d = _int(cfg, "head_dim", default=h // a)
    q_out, kv_out = a * d, kv * d
    fused = family["lora"] == "qkv"
    attn = [(h, q_out + 2 * kv_out)] if fused else [(h, q_out), (h, kv_out), (h, kv_out)]
    layer = attn + [(q_out, h)] + ([(h, 2 * inter)] if fused else [(h, inter), (h, inter)]) + [(inter, h)]
    bias = _decoder_biases(cfg, family, h, inter, q_out + 2 * kv_out)
    mats = [(V, h)] + layer * L + ([] if _tied(cfg, family) else [(h, V)])
    lora = ((h, q_out + 2 * kv_out),) if fused else ((h, q_out), (h, kv_out))
    shape = Transformer(L, h, a, kv, d, V, cfg.get("max_position_embeddings"), L, lora)
    return mats, L * (2 * h + bias) + h, shape


def _decoder_biases(cfg: Dict, family: Dict, h: int, inter: int, qkv_out: int) -> int:
    """Bias elements per layer: Llama's attention_bias puts one on q, k, v and o; Qwen2 on q, k, v."""
    if cfg.get("attention_bias"):
        bias = qkv_out + h
    else:
        bias = qkv_out if family["qkv_bias"] else 0
    return bias + (2 * inter + h if cfg.get("mlp_bias") else 0)


def _gpt2(cfg: Dict, family: Dict):
    h, L, a = _int(cfg, "n_embd"), _int(cfg, "n_layer"), _int(cfg, "n_head")
    V, P = _int(cfg, "vocab_size"), _int(cfg, "n_positions")
    inter = _int(cfg, "n_inner", default=4 * h)
    mats = [(V, h), (P, h)] + [(h, 3 * h), (h, h), (h, inter), (inter, h)] * L
    vectors = L * (4 * h + 3 * h + h + inter + h) + 2 * h      # 2 LayerNorms, 4 biases; ln_f
    return mats, vectors, Transformer(L, h, a, a, h // a, V, P, L, ((h, 3 * h),))


def _bert(cfg: Dict, family: Dict):
    h, L, a = _int(cfg, "hidden_size"), _int(cfg, "num_hidden_layers"), _int(cfg, "num_attention_heads")
    V, inter, P = _int(cfg, "vocab_size"), _int(cfg, "intermediate_size"), _int(cfg, "max_position_embeddings")
    types = _int(cfg, "type_vocab_size", default=2)
    mats = [(V, h), (P, h), (types, h)] + [(h, h)] * 4 * L + [(h, inter), (inter, h)] * L + [(h, h)]
    vectors = 2 * h + L * (4 * h + inter + h + 4 * h) + h     # embedding LN; biases + 2 LNs per layer; pooler bias
    return mats, vectors, Transformer(L, h, a, a, h // a, V, P, 0, ((h, h), (h, h)))


def _t5(cfg: Dict, family: Dict):
    d, dkv, a = _int(cfg, "d_model"), _int(cfg, "d_kv"), _int(cfg, "num_heads")
    dff, V = _int(cfg, "d_ff"), _int(cfg, "vocab_size")
    enc = _int(cfg, "num_layers")
    dec = _int(cfg, "num_decoder_layers", default=enc)
    inner, buckets = a * dkv, _int(cfg, "relative_attention_num_buckets", default=32)
    attn = [(d, inner)] * 3 + [(inner, d)]
    ff = [(d, dff)] * (2 if str(cfg.get("feed_forward_proj", "relu")).startswith("gated") else 1) + [(dff, d)]
    mats = [(V, d)] + (attn + ff) * enc + (attn * 2 + ff) * dec + [(buckets, a)] * 2
    mats += [] if _tied(cfg, family) else [(d, V)]
    vectors = enc * 2 * d + d + dec * 3 * d + d             # T5 LayerNorm has a weight and no bias
    shape = Transformer(enc + dec, d, a, a, dkv, V, cfg.get("n_positions"), dec, ((d, inner), (d, inner)))
    return mats, vectors, shape


_SHAPES = {"decoder": _decoder, "gpt2": _gpt2, "bert": _bert, "t5": _t5}
