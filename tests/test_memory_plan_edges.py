"""The plan's branches one by one: which activation figure, which KV-cache dtype, which sequence length, which
states are sharded, and the exact formulas and notes the report prints for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.knowledge import memory as kb
from gpudoctor.memory import activations, fit
from gpudoctor.memory.hf_config import load_config, spec_from_config
from gpudoctor.memory.model import ModelSpec, Transformer, transformer_from_options
from gpudoctor.memory.plan import Settings, activation_bytes, make_plan, seq_len_for
from gpudoctor.memory.states import lora_params, model_states
from gpudoctor.memory.targets import sized_target

CONFIGS = Path(__file__).resolve().parent / "data" / "memory" / "configs"
PAPER = "Korthikanti et al. 2022 (arXiv:2205.05198)"
GIB = 2 ** 30


def spec(name):
    return spec_from_config(load_config(str(CONFIGS / f"{name}.json")))


def test_gpt2_int8_inference_keeps_a_16_bit_kv_cache_over_its_1024_positions():
    plan = make_plan(spec("gpt2"), Settings(dtype="int8"))
    assert plan.seq_len == 1024
    layer = 1024 * 768 * 34 + 12 * 1024 * 1024 * 5              # 16-bit activations: e = 2
    kv = 2 * 12 * 12 * 64 * 1024 * 2                            # int8 weights, fp16 K and V
    assert plan.breakdown == {"weights_bytes": 124_439_808, "gradients_bytes": 0.0, "optimizer_bytes": 0.0,
                              "activations_bytes": layer + 4 * 50257, "kv_cache_bytes": kv}
    assert plan.per_sample == layer + 4 * 50257 + kv
    assert plan.formulas == [
        f"activations: inference: one layer's working set s·b·h·(34 + 5·a·s/h) ({PAPER}'s per-layer figure, "
        "nothing kept for backward) + the last token's fp32 logits 4·b·v",
        "KV cache: 2 (K and V) × 12 layers × 12 KV heads × 64 head dim × 1024 tokens × batch × 2 bytes"]
    assert plan.notes == []


def test_fp32_training_with_checkpointing_keeps_the_layer_inputs():
    plan = make_plan(spec("gpt2"), Settings(dtype="fp32", train=True, grad_checkpointing=True, batch=2))
    kept = 12 * 4 * 1024 * 768
    layer = 1024 * 768 * 66 + 12 * 1024 * 1024 * 9
    output = 2 * 4 * 1024 * 768 + 2 * 4 * 1024 * 50257
    assert plan.per_sample == kept + layer + output
    assert plan.breakdown["activations_bytes"] == 2 * (kept + layer + output)
    assert plan.breakdown["kv_cache_bytes"] == 0.0                 # training generates nothing
    assert plan.formulas == [
        f"activations: {PAPER}, full recomputation: L·4·s·b·h for the layer inputs kept + one layer's "
        "s·b·h·(66 + 9·a·s/h) while it is recomputed + output layer 2·4·s·b·h + fp32 logits and their gradient "
        "2·4·s·b·v (32-bit activations)"]


def test_sequence_length_asked_then_the_model_maximum_then_2048():
    assert seq_len_for(spec("gpt2"), Settings(seq_len=4096)) == 4096
    assert seq_len_for(spec("gpt2"), Settings()) == 1024
    assert seq_len_for(spec("llama-2-7b"), Settings()) == 2048
    assert seq_len_for(ModelSpec(1000, "x"), Settings()) == 2048
    no_maximum = ModelSpec(1000, "x", transformer=transformer_from_options(2, 64, 4, 100))
    assert seq_len_for(no_maximum, Settings()) == 2048


def test_kv_cache_follows_the_context_and_splits_over_gpus():
    llama = spec("llama-2-7b")
    own = make_plan(llama, Settings(dtype="bf16", seq_len=512))
    assert own.breakdown["kv_cache_bytes"] == 2 * 32 * 32 * 128 * 512 * 2
    two = make_plan(llama, Settings(dtype="bf16", seq_len=512, context_len=1024, gpus=2, batch=3))
    per = 2 * 32 * 32 * 128 * 1024 * 2 / 2
    assert two.breakdown["kv_cache_bytes"] == 3 * per
    assert two.formulas[-1] == ("KV cache: 2 (K and V) × 32 layers × 32 KV heads × 128 head dim × 1024 tokens "
                                "× batch × 2 bytes ÷ 2 GPUs")
    assert make_plan(llama, Settings(dtype="fp32", seq_len=8)).formulas[-1].endswith("× 8 tokens × batch × 4 bytes")


def test_an_encoder_keeps_no_kv_cache():
    plan = make_plan(spec("bert-base-uncased"), Settings(dtype="fp16"))
    assert plan.seq_len == 512 and plan.breakdown["kv_cache_bytes"] == 0.0
    assert len(plan.formulas) == 1 and plan.formulas[0].startswith("activations: inference")
    assert activations.kv_cache(spec("bert-base-uncased").transformer, 512, 1, 2) == activations.Estimate(
        0, "no KV cache: an encoder-only model does not generate")


def test_a_per_sample_figure_wins_over_the_formula_and_is_not_checkpointed():
    plan = make_plan(spec("gpt2"), Settings(train=True, grad_checkpointing=True, batch=4,
                                            activation_bytes_per_sample=50 * 2 ** 20))
    assert plan.breakdown["activations_bytes"] == 4 * 50 * 2 ** 20 and plan.per_sample == 50 * 2 ** 20
    assert plan.formulas == ["activations: 52,428,800 bytes per sample (--activation-bytes-per-sample) × batch"]
    assert plan.notes == ["gradient checkpointing is not applied to a per-sample figure: measure it with it on"]
    plain = make_plan(ModelSpec(1000, "x"), Settings(activation_bytes_per_sample=0))
    assert plain.per_sample == 0 and plain.notes == []           # 0 is a figure, not "not given"


def test_no_shape_and_no_figure_says_activations_were_not_counted():
    plan = make_plan(ModelSpec(1000, "x"), Settings(batch=8))
    assert plan.per_sample == 0 and plan.breakdown["activations_bytes"] == 0.0 and plan.formulas == []
    assert plan.notes == ["activations not counted: give a config.json, --layers/--hidden/--heads/--vocab, "
                          "--activation-bytes-per-sample, or measure them with --measure"]


def test_activations_are_16_bit_under_mixed_precision_or_narrow_weights():
    assert activation_bytes(kb.dtype("fp32"), Settings()) == 4.0
    assert activation_bytes(kb.dtype("fp32"), Settings(mixed_precision=True, train=True)) == 2.0
    assert [activation_bytes(kb.dtype(d), Settings()) for d in ("bf16", "fp16", "int8", "int4")] == [2.0] * 4


@pytest.mark.parametrize("settings,message", [
    (Settings(dtype="int8", train=True), "--dtype int8 weights can only be trained with --lora (QLoRA); "
                                         "full training needs fp32, bf16 or fp16 weights"),
    (Settings(mixed_precision=True), "--mixed-precision describes training; add --train"),
    (Settings(train=True, zero=3), "--zero 3 shards over GPUs: add --gpus N (N > 1)"),
    (Settings(kv_dtype="fp64"), "unknown dtype 'fp64'"),
])
def test_impossible_settings_say_exactly_why(settings, message):
    with pytest.raises(ValueError) as e:
        make_plan(spec("gpt2"), settings)
    assert str(e.value).startswith(message)


def test_possible_settings_pass():
    for s in (Settings(dtype="int4"), Settings(dtype="int4", train=True, lora_rank=8), Settings(kv_dtype="fp8"),
              Settings(train=True, zero=3, gpus=2), Settings(train=True, mixed_precision=True, zero=1, gpus=2)):
        assert make_plan(spec("gpt2"), s).seq_len == 1024
    no_projections = ModelSpec(1000, "x", transformer=Transformer(2, 64, 4, 4, 16, 100))
    with pytest.raises(ValueError, match="--lora needs the model's shape"):
        make_plan(no_projections, Settings(train=True, lora_rank=8))


def test_autocast_copies_are_sharded_only_with_the_weights():
    base = Settings(dtype="fp32", train=True, mixed_precision=True, activation_bytes_per_sample=0, gpus=4)
    assert make_plan(ModelSpec(1000, "x"), base.but(zero=3)).breakdown["activations_bytes"] == 500
    assert make_plan(ModelSpec(1000, "x"), base.but(zero=2)).breakdown["activations_bytes"] == 2000
    assert make_plan(ModelSpec(1000, "x"), base.but(zero=2)).formulas[-1] == (
        "autocast: 16-bit copies of the weights kept for the backward pass, 2 bytes × parameters (with the fp32 "
        "weights, the 6 bytes per parameter of Hugging Face's model memory anatomy)")
    for s in (base.but(train=False, mixed_precision=False), base.but(dtype="bf16"), base.but(mixed_precision=False)):
        assert make_plan(ModelSpec(1000, "x"), s.but(zero=0)).breakdown["activations_bytes"] == 0


@pytest.mark.parametrize("zero,words,per_gpu", [
    (0, "nothing is sharded (data parallel: every GPU holds all model states)", (4000, 4000, 8000)),
    (1, "optimizer states are sharded", (4000, 4000, 4000)),
    (2, "optimizer states and gradients are sharded", (4000, 2000, 4000)),
    (3, "weights, gradients and optimizer states are sharded", (2000, 2000, 4000)),
])
def test_zero_stages_say_what_they_shard(zero, words, per_gpu):
    st = model_states(ModelSpec(1000, "x"), kb.dtype("fp32"), True, kb.optimizer("adamw"), False, 0, 2, zero)
    assert (st.weights, st.gradients, st.optimizer) == per_gpu
    assert st.notes == (f"ZeRO stage {zero} over 2 GPUs: {words}",)
    assert model_states(ModelSpec(1000, "x"), kb.dtype("fp32"), True, kb.optimizer("adamw"), False, 0, 1, 0).notes == ()


def test_lora_states_and_their_note():
    llama = spec("llama-2-7b")
    st = model_states(llama, kb.dtype("bf16"), True, kb.optimizer("adamw"), True, 8, 1, 0)
    assert st.notes == ("LoRA rank 8: 4,194,304 adapter parameters in fp32 are trained, the 6,738,415,616 base "
                        "weights are frozen (no gradients, no optimizer state)",)
    assert (st.gradients, st.optimizer) == (4_194_304 * 4, 4_194_304 * 8)    # fp32 adapters, no master copy
    factored = model_states(llama, kb.dtype("bf16"), True, kb.optimizer("adafactor"), False, 8, 1, 0)
    assert factored.optimizer == 4 * lora_params(llama, 8)         # adapter shapes unknown: counted like vectors


def test_adafactor_without_matrix_shapes_is_an_upper_bound():
    st = model_states(ModelSpec(1000, "x"), kb.dtype("fp32"), True, kb.optimizer("adafactor"), False, 0, 1, 0)
    assert st.optimizer == 4000


def test_the_largest_batch_is_floored_and_never_negative():
    plan = make_plan(ModelSpec(10 ** 9, "x"), Settings(dtype="fp16", activation_bytes_per_sample=GIB))
    assert fit.largest_batch(plan, 2e9 + 2.5 * GIB) == 2
    assert fit.largest_batch(plan, 2e9 + 3 * GIB) == 3
    assert fit.largest_batch(plan, 1e9) == 0
    assert fit.largest_batch(make_plan(ModelSpec(10 ** 9, "x"), Settings()), 1e12) is None
    v = fit.judge(plan, sized_target(4 * GIB, 1), kb.ContextEstimate(512, "t", "t"))
    assert v.available_bytes == 4 * GIB - 512 * 2 ** 20 and v.max_batch == 1
    exact = fit.judge(plan, sized_target(int(2e9) + GIB, 1), kb.ContextEstimate(0, "t", "t"))
    assert exact.fits and exact.headroom_bytes == 0


def test_activation_formulas_grow_with_the_batch():
    t = spec("gpt2").transformer
    one, four = activations.training(t, 128, 1, 2, False), activations.training(t, 128, 4, 2, False)
    assert four.bytes == 4 * one.bytes
    assert activations.training(t, 128, 4, 2, True).bytes == 4 * activations.training(t, 128, 1, 2, True).bytes
    assert activations.inference(t, 128, 4, 2).bytes == 4 * activations.inference(t, 128, 1, 2).bytes
    assert activations.kv_cache(t, 128, 4, 2).bytes == 4 * activations.kv_cache(t, 128, 1, 2).bytes == 4 * 4718592


def test_a_lora_without_a_shape_says_where_to_get_one():
    with pytest.raises(ValueError) as e:
        make_plan(ModelSpec(1000, "x"), Settings(train=True, lora_rank=8))
    assert str(e.value) == ("--lora needs the model's shape (a config.json, a transformers module, "
                            "or --layers/--hidden/--heads/--vocab)")


def test_memory_in_use_by_other_processes_is_not_available():
    plan = make_plan(ModelSpec(1000, "x"), Settings(activation_bytes_per_sample=1))
    target = sized_target(4 * GIB, 1)
    from dataclasses import replace

    busy = fit.judge(plan, replace(target, used_bytes=GIB), kb.ContextEstimate(0, "t", "t"))
    assert busy.available_bytes == 3 * GIB
    assert fit.largest_batch(plan, 4000 + 10) == 10            # one byte per sample still counts
