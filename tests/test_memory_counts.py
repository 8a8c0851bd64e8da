"""Parameter counts from config.json alone, against the counts the model authors and the Hub publish.

The configs in tests/data/memory/configs/ hold the shape keys of the published config.json
files (each names its source). Published counts: GPT-2 small 124,439,808 (what
transformers reports for openai-community/gpt2, "124M" in the GPT-2 release); Llama-2-7B
6,738,415,616 (the Hub's "6.74B"; "7B" in the paper); BERT-base 110M in the BERT paper,
109,482,240 for the encoder with its pooler; T5-small "60M" (T5 paper), 60,506,624 with the
tied head. Every count was also checked against transformers 5.23 instantiating the same
config on the meta device (not a test dependency).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpudoctor.memory.hf_config import load_config, spec_from_config

CONFIGS = Path(__file__).resolve().parent / "data" / "memory" / "configs"


def spec(name):
    return spec_from_config(load_config(str(CONFIGS / f"{name}.json")))


@pytest.mark.parametrize("name,published", [
    ("gpt2", 124_439_808),
    ("llama-2-7b", 6_738_415_616),
    ("bert-base-uncased", 109_482_240),
    ("t5-small", 60_506_624),
])
def test_counts_match_the_published_ones(name, published):
    assert spec(name).params == published


def test_bert_is_the_110m_of_the_paper_and_gpt2_the_124m():
    assert round(spec("bert-base-uncased").params / 1e6, 2) == 109.48
    assert round(spec("gpt2").params / 1e6) == 124


def test_grouped_query_attention_shrinks_k_and_v():
    """Mistral-7B: 8 KV heads of 128 for 32 query heads; k and v are 4096 x 1024, not 4096 x 4096."""
    s = spec("mistral-7b")
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert s.params == 32 * per_layer + 2 * 32000 * 4096 + 4096 == 7_241_732_096
    assert (s.transformer.kv_heads, s.transformer.head_dim) == (8, 128)


def test_untied_llama_counts_the_head_and_tying_removes_it(tmp_path):
    cfg = json.loads((CONFIGS / "llama-2-7b.json").read_text())
    cfg["tie_word_embeddings"] = True
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert spec("llama-2-7b").params - spec_from_config(load_config(str(tmp_path))).params == 32000 * 4096


def test_shapes_feed_the_activation_formula():
    t = spec("llama-2-7b").transformer
    assert (t.layers, t.hidden, t.heads, t.vocab, t.max_positions, t.decoder_layers) == (32, 4096, 32, 32000, 4096, 32)
    assert spec("bert-base-uncased").transformer.decoder_layers == 0      # an encoder keeps no KV cache
    t5 = spec("t5-small").transformer
    assert (t5.layers, t5.decoder_layers, t5.head_dim) == (12, 6, 64)


def test_qwen2_biases_and_gated_t5(tmp_path):
    qwen = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
            "num_key_value_heads": 2, "num_hidden_layers": 24, "vocab_size": 151936, "tie_word_embeddings": True}
    assert spec_from_config(qwen).params == 494_032_768            # Qwen2-0.5B as transformers counts it
    mt5 = {"model_type": "mt5", "d_model": 512, "d_kv": 64, "d_ff": 1024, "num_heads": 6, "num_layers": 8,
           "vocab_size": 250112, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}
    assert round(spec_from_config(mt5).params / 1e6) == 300        # mT5-Small: "300M" in the mT5 paper


@pytest.mark.parametrize("content,message", [
    ("{not json", "not valid JSON"),
    ('{"hidden_size": 4096}', "not a Hugging Face config.json (no model_type)"),
    ('{"model_type": "llama", "hidden_size": 4096}', "config.json has no num_hidden_layers"),
    ('{"model_type": "mamba"}', "model_type 'mamba' is not one gpudoctor can count"),
    ('{"model_type": "gpt2", "n_embd": "768", "n_layer": 12, "n_head": 12, "vocab_size": 1, "n_positions": 1}',
     "n_embd is '768', not a positive integer"),
])
def test_bad_configs_say_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=re.escape(message)):
        spec_from_config(load_config(str(path)))


def test_missing_file_and_folder_without_config(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        load_config(str(tmp_path / "nope.json"))
    with pytest.raises(ValueError, match=r"config\.json: no such file"):
        load_config(str(tmp_path))
