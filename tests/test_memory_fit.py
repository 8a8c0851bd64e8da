"""Judging a plan against GPUs: sizes by name, CUDA contexts, headroom, largest batch, ranked changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.knowledge import memory as kb
from gpudoctor.memory import changes, fit, report
from gpudoctor.memory.hf_config import load_config, spec_from_config
from gpudoctor.memory.model import ModelSpec
from gpudoctor.memory.plan import Settings, make_plan
from gpudoctor.memory.targets import context_for, named_target, sized_target

CONFIGS = Path(__file__).resolve().parent / "data" / "memory" / "configs"
GIB, MIB = 2 ** 30, 2 ** 20


def spec(name):
    return spec_from_config(load_config(str(CONFIGS / f"{name}.json")))


@pytest.mark.parametrize("asked,name,mib", [
    ("H100 80GB", "NVIDIA H100 80GB HBM3", 81559),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 81559),      # nvidia-smi's own spelling
    ("RTX 3090", "GeForce RTX 3090", 24576),
    ("NVIDIA GeForce RTX 3060 Laptop GPU", "GeForce RTX 3060 Laptop GPU", 6144),
    ("RTX 3060", "GeForce RTX 3060", 12288),
    ("Tesla T4", "Tesla T4", 15360),
    ("A100 40GB", "NVIDIA A100-SXM4-40GB", 40960),
    ("v100-sxm2-32gb", "Tesla V100-SXM2-32GB", 32510),
])
def test_gpu_sizes_by_name(asked, name, mib):
    row = kb.gpu_memory(asked)
    assert (row.name, row.memory_mib) == (name, mib)


def test_ambiguous_and_unknown_gpu_names():
    with pytest.raises(ValueError, match=r"'A100' is ambiguous: NVIDIA A100-SXM4-80GB \(81920 MiB\), "
                                         r"NVIDIA A100-SXM4-40GB \(40960 MiB\)"):
        kb.gpu_memory("A100")
    with pytest.raises(ValueError, match="unknown GPU 'Voodoo 5'.*--gpu-memory"):
        kb.gpu_memory("Voodoo 5")


@pytest.mark.parametrize("arch,lazy,mib", [
    ("Ampere", False, 1486),      # RTX 3090, torch 1.7.1+cu110 (pytorch#49877)
    ("Volta", False, 1341),       # V100-SXM2-16GB, the Hugging Face docs' 1343 MB with one cache block
    ("Turing", False, 877),
    ("Hopper", False, 1024),      # no published row: the eager default (">1000MB" before CUDA 11.7)
    ("Ampere", True, 400),        # lazy loading: "around 400MB" (pytorch#109888)
    (None, True, 400),
])
def test_cuda_context_estimates(arch, lazy, mib):
    assert kb.cuda_context(arch, lazy).mib == mib


def test_measured_context_wins():
    target = named_target("RTX 3090", 1)
    assert context_for(target.architecture, True, "why", 612.5).mib == 612.5
    assert context_for(target.architecture, False, "torch 1.7.1 (CUDA 11.0)", None).basis == (
        "torch 1.7.1 (CUDA 11.0): eager kernel loading, as measured on a GeForce RTX 3090 with torch 1.7.1+cu110")


def test_fits_headroom_and_largest_batch():
    s = Settings(dtype="fp16", batch=2, activation_bytes_per_sample=GIB)
    plan = make_plan(ModelSpec(10 ** 9, "x"), s)                       # 2e9 bytes of weights + 2 GiB
    v = fit.judge(plan, sized_target(24 * GIB, 1), kb.ContextEstimate(400, "test", "test"))
    assert v.available_bytes == 24 * GIB - 400 * MIB
    assert v.fits and v.headroom_bytes == 24 * GIB - 400 * MIB - 2e9 - 2 * GIB
    assert v.max_batch == int((24 * GIB - 400 * MIB - 2e9) // GIB) == 21


def test_binding_gpu_is_the_nth_roomiest():
    plan = make_plan(ModelSpec(10 ** 9, "x"), Settings(dtype="fp16"))
    ctx = kb.ContextEstimate(0, "t", "t")
    vs = [fit.judge(plan, sized_target(n * GIB, 1), ctx) for n in (8, 24, 16)]
    assert fit.binding(vs, 1).target.total_bytes == 24 * GIB
    assert fit.binding(vs, 2).target.total_bytes == 16 * GIB
    assert fit.binding(vs, 5).target.total_bytes == 8 * GIB
    assert fit.fits_all(vs, 3) is True and fit.fits_all([], 1) is None
    tiny = [fit.judge(plan, sized_target(GIB, 1), ctx)]
    assert fit.fits_all(tiny, 1) is False


def _titles(doc):
    return {c["id"]: c for c in doc["changes"]}


@pytest.mark.parametrize("gpu", ["Tesla V100-PCIE-16GB", "Tesla T4"])
def test_never_bf16_on_volta_or_turing(gpu):
    doc = report.build(spec("gpt2"), Settings(train=True, batch=8), [named_target(gpu, 1)], True, "t")
    mp = _titles(doc)["mixed_precision"]
    assert mp["flags"] == "--dtype fp16 --mixed-precision"
    assert "loss scaling" in mp["title"]
    assert not any("--dtype bf16" in c["flags"] for c in doc["changes"])
    bf16 = report.build(spec("gpt2"), Settings(dtype="bf16"), [named_target(gpu, 1)], True, "t")
    assert bf16["advice"] == [f"{gpu} (named): bf16 needs compute capability 8.0+, this GPU has "
                              f"{'7.0' if 'V100' in gpu else '7.5'}: use fp16 with loss scaling"]


def test_ampere_gets_bf16_and_unknown_gpus_get_the_requirement():
    doc = report.build(spec("gpt2"), Settings(train=True, batch=8), [named_target("A100 40GB", 1)], True, "t")
    assert _titles(doc)["mixed_precision"]["flags"] == "--dtype bf16 --mixed-precision"
    alone = report.build(spec("gpt2"), Settings(train=True, batch=8), [], True, "t")
    assert _titles(alone)["mixed_precision"]["title"] == "bf16 mixed precision (needs compute capability 8.0+)"
    assert alone["fits"] is None and _titles(alone)["mixed_precision"]["fits"] is None
    fp8 = report.build(spec("gpt2"), Settings(), [named_target("L4", 1)], True, "t")
    assert "fp8_weights" in _titles(fp8)
    assert "fp8_weights" not in _titles(report.build(spec("gpt2"), Settings(), [named_target("A10", 1)], True, "t"))


def test_changes_are_ranked_by_bytes_saved_and_say_whether_they_fit():
    doc = report.build(spec("llama-2-7b"), Settings(dtype="bf16", train=True, mixed_precision=True, batch=2),
                       [named_target("A100 80GB", 1)], True, "t")
    saved = [c["saves_bytes"] for c in doc["changes"]]
    assert saved == sorted(saved, reverse=True) and all(s > 0 for s in saved)
    by_id = _titles(doc)
    base = doc["total_bytes"] - doc["breakdown"]["context_bytes"]
    ckpt = make_plan(spec("llama-2-7b"), Settings(dtype="bf16", train=True, mixed_precision=True, batch=2,
                                                  grad_checkpointing=True))
    assert by_id["grad_checkpointing"]["saves_bytes"] == round(base - ckpt.model_bytes)
    assert by_id["shard"]["flags"] == "--gpus 8 --zero 3" and by_id["shard"]["fits"] is True
    # 8 bytes of fp32 moments become 2; the fp32 master copy stays: 12 -> 6 bytes per parameter
    assert by_id["adamw_8bit"]["saves_bytes"] == spec("llama-2-7b").params * 6
    assert doc["fits"] is False and doc["gpus"][0]["max_batch"] == 0


def test_precision_advice_for_tf32_and_fp8():
    assert changes.precision_advice(Settings(dtype="tf32"), "7.0", "V100") == [
        "V100: tf32 needs compute capability 8.0+, this GPU has 7.0: use plain fp32 math (no saving in memory)"]
    assert changes.precision_advice(Settings(dtype="fp8"), "8.6", "A10") == [
        "A10: fp8 needs compute capability 8.9+, this GPU has 8.6: use fp16 with loss scaling"]
    assert changes.precision_advice(Settings(dtype="fp16"), "7.0", "V100") == []
