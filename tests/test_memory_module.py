"""--torch-module: the module is built on the meta device in a child python, never in gpudoctor's process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudoctor.memory import torch_module
from tests.conftest import needs_torch

HERE = Path(__file__).resolve().parent / "data" / "memory"
ENV = dict(os.environ, PYTHONPATH=str(HERE))


def spec(target):
    return torch_module.spec_from_child(torch_module.run_child(target, sys.executable, ENV, 120), target)


# Targets whose answers come from one python (the child's own main() run per target), so that torch is imported
# once instead of once per target (about 1.5 s of CPU each). The target that notes torch._dynamo comes first, so
# that it runs as in a fresh child. One target per child, the product's way, is tested by the tests that call
# spec() or run_child() (the users' module imported before torch, torch never imported in gpudoctor's process).
BATCH = ("tiny_model:build_noting_dynamo", "tiny_model:build", "tiny_model:build_frozen_embedding",
         "tiny_model:build_huge", "tiny_model:not_a_module", "tiny_model:broken")


@pytest.fixture(scope="module")
def answers():
    code = "import runpy, sys; main = runpy.run_path(sys.argv[1])['main']; [main(['child', t]) for t in sys.argv[2:]]"
    env = dict(ENV, CUDA_VISIBLE_DEVICES="", PYTHONIOENCODING="utf-8")
    start = time.monotonic()
    ran = subprocess.run([sys.executable, "-c", code, str(torch_module._SCRIPT), *BATCH], env=env,
                         capture_output=True, text=True, timeout=300)
    lines = [line[len(torch_module.MARKER):] for line in ran.stdout.splitlines() if line.startswith(torch_module.MARKER)]
    assert len(lines) == len(BATCH), ran.stderr[-2000:]
    return {**dict(zip(BATCH, map(json.loads, lines))), "_seconds": time.monotonic() - start}


@pytest.fixture
def batch_spec(answers):
    return lambda target: torch_module.spec_from_child(answers[target], target)


@needs_torch
def test_counts_parameters_and_shapes_on_the_meta_device(batch_spec):
    s = batch_spec("tiny_model:build")
    assert s.params == 83_562 and s.trainable_params == 83_562
    assert sorted(s.matrices) == [(10, 256), (256, 64), (1000, 64)]
    assert s.vector_params == 256 + 10 + 128 + 8 + 216       # biases, LayerNorm, and the 4-D conv kernel
    assert s.source == "torch module tiny_model:build (TinyNet)" and s.notes == ()


@needs_torch
def test_frozen_parameters_are_not_trained(batch_spec):
    s = batch_spec("tiny_model:build_frozen_embedding")
    assert (s.params, s.trainable_params) == (83_562, 19_562)


@needs_torch
def test_building_skips_the_init_functions_that_would_import_dynamo(batch_spec):
    s = batch_spec("tiny_model:build_noting_dynamo")
    assert s.source == "torch module tiny_model:build_noting_dynamo (NoDynamo)" and s.params == 83_562


def test_the_init_functions_are_no_ops_while_building_and_restored_after():
    from types import SimpleNamespace

    from gpudoctor.memory import torch_module_child as child

    filled = []
    init = SimpleNamespace(normal_=lambda t, *a, **k: filled.append(t), kaiming_uniform_=lambda t, a=0: filled.append(t))
    original = init.normal_
    with child._no_init(init):
        assert init.normal_("w", 0.0, std=0.02) == "w" and init.kaiming_uniform_("v", a=5) == "v"
    assert filled == [] and init.normal_ is original
    init.normal_("x")
    assert filled == ["x"]


@needs_torch
def test_a_40_gb_module_costs_no_memory_and_little_time(answers, batch_spec):
    assert batch_spec("tiny_model:build_huge").params == 10_000_100_000
    assert answers["_seconds"] < 60          # all the targets: allocating 40 GB for real would fail or take far longer


@needs_torch
def test_torch_is_never_imported_in_gpudoctors_process():
    code = ("import os, sys; from gpudoctor.memory import torch_module as t; "
            "a = t.run_child('tiny_model:MODULE', sys.executable, os.environ, 120); "
            "print(t.spec_from_child(a, 'tiny_model:MODULE').params, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=180)
    assert out.stdout.split() == ["83562", "False"], out.stderr      # a class is a callable too


@pytest.mark.parametrize("target,message", [
    ("tiny_model:not_a_module", "TypeError: tiny_model:not_a_module returned int, not a torch.nn.Module"),
    ("tiny_model:broken", "RuntimeError: weights file missing"),
])
@needs_torch
def test_failures_are_one_line(batch_spec, target, message):
    with pytest.raises(ValueError, match=f"^{re.escape(f'--torch-module {target}: {message}')}$"):
        batch_spec(target)


def test_a_module_that_is_not_there_is_one_line():
    with pytest.raises(ValueError, match="^--torch-module no_such_module_xyz:build: ModuleNotFoundError: "
                                         "No module named 'no_such_module_xyz'$"):
        spec("no_such_module_xyz:build")


def test_the_users_module_is_imported_before_torch():
    with pytest.raises(ValueError, match="ImportError: torch imported before this module: False"):
        spec("says_if_torch_came_first:build")


def test_target_must_be_module_colon_callable():
    with pytest.raises(ValueError, match="write MODULE:CALLABLE"):
        torch_module.run_child("tiny_model.build", sys.executable, ENV, 10)


def test_a_python_that_gives_no_answer(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'Fatal Python error: init failed' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(ValueError, match="gave no answer \\(Fatal Python error: init failed\\)"):
        torch_module.run_child("tiny_model:build", str(fake), ENV, 10)


def test_a_transformers_model_brings_its_config_shape():
    """What the child answers for a transformers model (its config.to_dict()) gives the activation formula a shape."""
    cfg = json.loads((HERE / "configs" / "gpt2.json").read_text())
    answer = {"params": 124_439_808, "trainable": 124_439_808, "class": "GPT2LMHeadModel", "matrices": [],
              "vector_params": 0, "other_params": 0, "off_meta": 0, "config": cfg}
    s = torch_module.spec_from_child(answer, "m:f")
    assert (s.transformer.layers, s.transformer.hidden, s.transformer.vocab) == (12, 768, 50257)
    answer["config"] = {"model_type": "mamba"}
    assert torch_module.spec_from_child(answer, "m:f").transformer is None    # unknown family: count only
    answer["off_meta"] = 10
    assert torch_module.spec_from_child(answer, "m:f").notes == (
        "10 parameters were created off the meta device by m:f",)
