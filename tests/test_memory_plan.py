"""The plan's arithmetic against published figures: the notes' examples, the ZeRO paper, Korthikanti et al."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.memory import activations
from gpudoctor.memory.hf_config import load_config, spec_from_config
from gpudoctor.memory.model import ModelSpec, transformer_from_options
from gpudoctor.memory.plan import Settings, make_plan
from gpudoctor.memory.states import lora_params
from gpudoctor.memory.units import fmt_bytes, parse_count, parse_size

CONFIGS = Path(__file__).resolve().parent / "data" / "memory" / "configs"
VGG16 = 138_357_544        # torchvision's vgg16: "138.36M" in its model table


def llama():
    return spec_from_config(load_config(str(CONFIGS / "llama-2-7b.json")))


def test_counts_and_sizes_as_people_write_them():
    assert [parse_count(t) for t in ("7B", "7e9", "138M", "138.36M", "124439808", "1.5T")] == \
        [7_000_000_000, 7_000_000_000, 138_000_000, 138_360_000, 124_439_808, 1_500_000_000_000]
    assert [parse_size(t) for t in ("24GiB", "80GB", "1536MiB", "1.5 GiB", "4096")] == \
        [24 * 2 ** 30, 80 * 2 ** 30, 1536 * 2 ** 20, 3 * 2 ** 29, 4096]
    for bad in ("seven", "7Q", "-1", "0"):
        with pytest.raises(ValueError):
            parse_count(bad)


def test_notes_7b_in_fp32_is_26_08_gib_of_weights():
    plan = make_plan(ModelSpec(parse_count("7B"), "--params"), Settings(dtype="fp32"))
    assert plan.breakdown["weights_bytes"] == 28e9
    assert fmt_bytes(plan.breakdown["weights_bytes"]) == "26.08 GiB"


def test_notes_vgg16_528_mib_and_four_times_that_with_adam():
    weights = make_plan(ModelSpec(VGG16, "vgg16"), Settings()).breakdown["weights_bytes"]
    assert round(weights / 2 ** 20) == 528
    trained = make_plan(ModelSpec(VGG16, "vgg16"), Settings(train=True, optimizer="adam"))
    b = trained.breakdown
    assert (b["gradients_bytes"], b["optimizer_bytes"]) == (weights, 2 * weights)
    assert trained.model_bytes == 4 * weights
    sgd = make_plan(ModelSpec(VGG16, "vgg16"), Settings(train=True, optimizer="sgd")).model_bytes
    momentum = make_plan(ModelSpec(VGG16, "vgg16"), Settings(train=True, optimizer="momentum")).model_bytes
    assert (sgd, momentum) == (2 * weights, 3 * weights)       # SGD one more copy, momentum two, Adam three


# ZeRO paper (arXiv:1910.02054) Figure 1: Psi = 7.5B, N_d = 64, K = 12 -> 120 GB, 31.4 GB, 16.6 GB, 1.9 GB.
@pytest.mark.parametrize("stage,gpus,per_gpu", [(0, 1, 120e9), (1, 64, 31.40625e9), (2, 64, 16.640625e9),
                                                (3, 64, 1.875e9)])
def test_zero_model_states_match_the_paper(stage, gpus, per_gpu):
    s = Settings(dtype="fp16", train=True, optimizer="adam", mixed_precision=True, gpus=gpus, zero=stage)
    assert make_plan(ModelSpec(7_500_000_000, "zero"), s).model_bytes == per_gpu


def test_mixed_precision_adam_is_2_plus_2_plus_12_bytes():
    b = make_plan(ModelSpec(1000, "x"), Settings(dtype="bf16", train=True, optimizer="adamw",
                                                 mixed_precision=True)).breakdown
    assert (b["weights_bytes"], b["gradients_bytes"], b["optimizer_bytes"]) == (2000, 2000, 12000)
    amp = make_plan(ModelSpec(1000, "x"), Settings(dtype="fp32", train=True, mixed_precision=True)).breakdown
    assert (amp["weights_bytes"], amp["gradients_bytes"], amp["optimizer_bytes"]) == (4000, 4000, 8000)
    pure = make_plan(ModelSpec(1000, "x"), Settings(dtype="bf16", train=True)).breakdown
    assert pure["optimizer_bytes"] == 4000                       # states in the weights' dtype, no master copy


def test_autocast_keeps_16_bit_copies_of_fp32_weights():
    """Hugging Face's anatomy: mixed precision keeps 6 bytes of weights per parameter (fp32 + a 16-bit copy)."""
    plan = make_plan(ModelSpec(1000, "x"), Settings(dtype="fp32", train=True, mixed_precision=True,
                                                    activation_bytes_per_sample=100, batch=3))
    assert plan.breakdown["activations_bytes"] == 2000 + 300 and plan.per_sample == 100
    assert plan.breakdown["weights_bytes"] + plan.breakdown["activations_bytes"] - 300 == 6000
    assert any(f.startswith("autocast: 16-bit copies of the weights") for f in plan.formulas)
    deepspeed_style = make_plan(ModelSpec(1000, "x"), Settings(dtype="bf16", train=True, mixed_precision=True))
    assert deepspeed_style.breakdown["activations_bytes"] == 0


def test_eight_bit_and_factored_optimizers():
    assert make_plan(ModelSpec(1000, "x"), Settings(train=True, optimizer="adamw-8bit")).breakdown[
        "optimizer_bytes"] == 2000
    gpt2 = spec_from_config(load_config(str(CONFIGS / "gpt2.json")))
    factored = 4 * sum(r + c for r, c in gpt2.matrices) + 4 * gpt2.vector_params
    got = make_plan(gpt2, Settings(train=True, optimizer="adafactor")).breakdown["optimizer_bytes"]
    assert got == factored and got < 0.01 * 8 * gpt2.params


def test_korthikanti_per_layer_formula_and_recomputation():
    t = llama().transformer
    layer = 2048 * 1 * 4096 * (34 + 5 * 32 * 2048 / 4096)
    assert activations.layer_bytes(t, 2048, 1, 2) == layer == 956_301_312
    output = 2 * 2 * 2048 * 4096 + 2 * 4 * 2048 * 32000     # LayerNorm/projection inputs; logits and gradient
    full = activations.training(t, 2048, 1, 2, recompute=False)
    assert full.bytes == 32 * layer + output
    assert "L·s·b·h·(34 + 5·a·s/h)" in full.formula and "no recomputation" in full.formula
    assert "output layer 2·2·s·b·h + fp32 logits and their gradient 2·4·s·b·v (16-bit activations)" in full.formula
    ckpt = activations.training(t, 2048, 1, 2, recompute=True)
    assert ckpt.bytes == 32 * 2 * 2048 * 4096 + layer + output
    assert "full recomputation: L·2·s·b·h" in ckpt.formula


def test_activations_scale_with_batch_and_fp32_doubles_the_values_not_the_masks():
    t = llama().transformer
    assert activations.layer_bytes(t, 512, 4, 4) == 512 * 4 * 4096 * 66 + 32 * 512 * 512 * 4 * 9
    plan = make_plan(llama(), Settings(dtype="bf16", train=True, mixed_precision=True, batch=3, seq_len=1024))
    assert plan.breakdown["activations_bytes"] == 3 * plan.per_sample
    assert plan.fixed_bytes == plan.model_bytes - plan.breakdown["activations_bytes"]


def test_kv_cache_and_grouped_query_attention():
    plan = make_plan(llama(), Settings(dtype="fp16", context_len=4096))
    assert plan.breakdown["kv_cache_bytes"] == 2 * 32 * 32 * 128 * 4096 * 2 == 2 * 2 ** 30
    mistral = spec_from_config(load_config(str(CONFIGS / "mistral-7b.json")))
    assert make_plan(mistral, Settings(dtype="fp16", context_len=4096)).breakdown["kv_cache_bytes"] == 2 ** 29
    fp8 = make_plan(llama(), Settings(dtype="fp16", context_len=4096, kv_dtype="fp8"))
    assert fp8.breakdown["kv_cache_bytes"] == 2 ** 30
    assert make_plan(llama(), Settings(train=True, context_len=4096)).breakdown["kv_cache_bytes"] == 0


def test_lora_trains_adapters_only():
    spec = llama()
    assert lora_params(spec, 8) == 4_194_304          # PEFT's "trainable params" for Llama-2-7B, r=8, q_proj+v_proj
    b = make_plan(spec, Settings(dtype="bf16", train=True, lora_rank=16)).breakdown
    adapters = lora_params(spec, 16)
    assert b["weights_bytes"] == spec.params * 2 + adapters * 4
    assert (b["gradients_bytes"], b["optimizer_bytes"]) == (adapters * 4, adapters * 8)
    qlora = make_plan(spec, Settings(dtype="int4", train=True, lora_rank=16)).breakdown
    assert qlora["weights_bytes"] == spec.params * 0.5 + adapters * 4


def test_shape_given_with_params_enables_the_formula():
    t = transformer_from_options(32, 4096, 32, 32000)
    with_shape = make_plan(ModelSpec(6_738_415_616, "--params", transformer=t), Settings(dtype="bf16", train=True,
                                                                                        mixed_precision=True))
    assert with_shape.breakdown["activations_bytes"] == make_plan(llama(), with_shape.settings).breakdown[
        "activations_bytes"]
    with pytest.raises(ValueError, match="go together"):
        transformer_from_options(32, 4096, None, None)


def test_per_sample_bytes_for_other_models():
    plan = make_plan(ModelSpec(VGG16, "vgg16"), Settings(train=True, batch=16,
                                                         activation_bytes_per_sample=50 * 2 ** 20))
    assert plan.breakdown["activations_bytes"] == 16 * 50 * 2 ** 20
    bare = make_plan(ModelSpec(VGG16, "vgg16"), Settings(train=True))
    assert bare.breakdown["activations_bytes"] == 0 and "activations not counted" in bare.notes[0]


@pytest.mark.parametrize("settings,message", [
    (Settings(dtype="int4", train=True), "can only be trained with --lora"),
    (Settings(mixed_precision=True), "add --train"),
    (Settings(train=True, zero=2), "add --gpus N"),
    (Settings(dtype="fp64"), "unknown dtype 'fp64'"),
    (Settings(train=True, optimizer="lion"), "unknown optimizer 'lion'"),
])
def test_impossible_settings_are_one_line_errors(settings, message):
    with pytest.raises(ValueError, match=message):
        make_plan(ModelSpec(1000, "x"), settings)


def test_lora_needs_a_shape():
    with pytest.raises(ValueError, match="--lora needs the model's shape"):
        make_plan(ModelSpec(1000, "x"), Settings(train=True, lora_rank=8))


def test_inference_over_several_gpus_splits_weights_and_kv_cache():
    one = make_plan(llama(), Settings(dtype="fp16", context_len=4096))
    two = make_plan(llama(), Settings(dtype="fp16", context_len=4096, gpus=2))
    assert two.breakdown["weights_bytes"] == one.breakdown["weights_bytes"] / 2
    assert two.breakdown["kv_cache_bytes"] == one.breakdown["kv_cache_bytes"] / 2
    assert two.notes == ["inference over 2 GPUs: weights and KV cache split evenly (tensor or pipeline parallel)"]
