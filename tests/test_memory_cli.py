"""`gpudoctor memory` as a user runs it: text, --json, exit codes, one-line errors."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT, invoke

CONFIGS = ROOT / "tests" / "data" / "memory" / "configs"
GTX1070 = "fixtures/scenarios/fw-cvd-invalid-truncates"      # 6 x GTX 1070, ethminer and Xorg on them
H100X8 = "fixtures/scenarios/core-8gpu-server"


@pytest.fixture(autouse=True)
def _in_the_tree(monkeypatch):
    """Paths in these commands and their messages are relative to the tree, as a user in it types them."""
    monkeypatch.chdir(ROOT)


def memory(*args, **kw):
    return invoke("memory", *args, **kw)


def test_7b_fp32_does_not_fit_a_4090_and_the_changes_say_what_does():
    proc = memory("--params", "7B", "--gpu", "RTX 4090")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "gpudoctor memory: 7.00B parameters (--params), inference, fp32, batch 1 × 2048 tokens"
    assert "  weights            26.08 GiB  7.00B × fp32" in lines
    assert any(line.startswith("  GeForce RTX 4090 (named)  23.99 GiB") and " NO " in line for line in lines)
    assert "It does not fit." in lines
    assert "  4. bf16 weights (--dtype bf16): saves 13.04 GiB, needs 13.43 GiB  -> fits" in lines


def test_json_document():
    proc = memory("--config", str(CONFIGS / "llama-2-7b.json"), "--train", "--dtype", "bf16", "--mixed-precision",
                  "--gpus", "8", "--zero", "3", "--gpu", "A100 80GB", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "gpudoctor.memory/1" and doc["fits"] is True
    b = doc["breakdown"]
    assert set(b) == {"weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "kv_cache_bytes",
                      "context_bytes"}
    assert b["weights_bytes"] + b["gradients_bytes"] + b["optimizer_bytes"] == 16 * 6_738_415_616 // 8
    assert doc["total_bytes"] == sum(b.values())
    assert doc["model"]["params"] == 6_738_415_616
    gpu = doc["gpus"][0]
    assert (gpu["name"], gpu["count"], gpu["compute_cap"], gpu["fits"]) == ("NVIDIA A100-SXM4-80GB", 8, "8.0", True)
    assert gpu["max_batch"] >= 1
    assert doc["formulas"][0].startswith("activations: Korthikanti et al. 2022 (arXiv:2205.05198), no recomputation")


def test_replayed_snapshot_groups_identical_gpus():
    proc = memory("--params", "13B", "--dtype", "fp16", "--snapshot", H100X8)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("  GPUs 0-7"))
    assert row.split()[:6] == ["GPUs", "0-7", "(NVIDIA", "H100", "80GB", "HBM3)"] and " yes " in row
    doc = json.loads(memory("--params", "13B", "--dtype", "fp16", "--snapshot", H100X8, "--json").stdout)
    assert len(doc["gpus"]) == 8 and doc["gpus"][0]["total_bytes"] == 81559 * 2 ** 20


def test_other_processes_count_against_a_snapshots_gpus():
    doc = json.loads(memory("--params", "3B", "--dtype", "fp16", "--snapshot", GTX1070, "--json").stdout)
    used = [g["used_bytes"] // 2 ** 20 for g in doc["gpus"]]
    assert used == [2466, 2294, 2294, 2294, 2294, 2294]
    assert doc["gpus"][0]["available_bytes"] == (8112 - 2466 - 400) * 2 ** 20
    assert doc["gpus"][0]["context_basis"] == ("a current PyTorch build (assumed): lazy kernel loading, "
                                               "the published figure with CUDA 11.7+")


def test_an_old_torch_build_loads_kernels_eagerly():
    """torch 1.12.1+cu102 recorded on an RTX 3060 Laptop GPU (Ampere): the published Ampere context applies."""
    doc = json.loads(memory("--params", "1B", "--snapshot", "fixtures/scenarios/fw-torch-old-wheel-on-rtx3060-laptop",
                            "--json").stdout)
    assert doc["breakdown"]["context_bytes"] == 1486 * 2 ** 20
    assert doc["context_basis"] == ("torch 1.12.1+cu102 (CUDA 10.2): eager kernel loading, as measured on a "
                                    "GeForce RTX 3090 with torch 1.7.1+cu110")
    assert doc["gpus"][0]["available_bytes"] == (6144 - 5 - 1486) * 2 ** 20


def test_live_view_of_a_snapshot():
    proc = memory("--live", "--snapshot", GTX1070, "--json")
    assert proc.returncode == 0
    gpu0 = json.loads(proc.stdout)["live"]["gpus"][0]
    assert [(p["pid"], p["used_bytes"] // 2 ** 20, p["command"]) for p in gpu0["processes"]] == [
        (1357, 99, "/usr/lib/xorg/Xorg"), (2384, 79, "/usr/bin/gnome-shell"), (3093, 2283, "./ethminer")]
    assert gpu0["unattributed_bytes"] == 5 * 2 ** 20 and gpu0["free_bytes"] == (8112 - 2466) * 2 ** 20
    text = memory("--live", "--snapshot", GTX1070).stdout
    assert "GPU 0 (GeForce GTX 1070): 7.92 GiB total, 2.41 GiB used, 5.51 GiB free" in text
    assert "  3093  C     -     2.23 GiB   ./ethminer" in text


def test_read_an_oom_message_from_stdin():
    oom = ("RuntimeError: CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total capacity; 781.59 MiB "
           "already allocated; 3.03 GiB free; 1.24 GiB reserved in total by PyTorch)")
    proc = memory("--read", "-", input=oom)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "Reading CUDA out of memory (other processes):"
    assert "1.73 GiB of the GPU's 6.00 GiB is in use outside this process's allocator" in proc.stdout


@pytest.mark.parametrize("args,message", [
    ((), "gpudoctor: say what to look at: a model (--params, --config, --torch-module), --live, --measure or --read FILE"),
    (("--params", "seven"), "gpudoctor: not a parameter count: 'seven' (write 7B, 138M, 7e9 or 124439808)"),
    (("--params", "7B", "--gpu", "A100"), "gpudoctor: GPU name 'A100' is ambiguous: NVIDIA A100-SXM4-80GB "
                                          "(81920 MiB), NVIDIA A100-SXM4-40GB (40960 MiB)"),
    (("--params", "7B", "--gpu", "Voodoo 5"), "gpudoctor: unknown GPU 'Voodoo 5': not in gpudoctor's table"),
    (("--params", "7B", "--train", "--zero", "2", "--gpu", "T4"), "gpudoctor: --zero 2 shards over GPUs: add --gpus N"),
    (("--params", "7B", "--dtype", "fp64"), "gpudoctor: Invalid value for '--dtype': 'fp64' is not one of"),
    (("--params", "7B", "--measure", "--snapshot", H100X8), "gpudoctor: --measure runs on this machine"),
    (("--params", "7B", "--gpu", "T4", "--snapshot", H100X8), "gpudoctor: --gpu/--gpu-memory plan for a GPU"),
    (("--config", "tests/data/memory/configs"), "gpudoctor: tests/data/memory/configs/config.json: no such file"),
    (("--read", "README.md"), "gpudoctor: no torch.cuda.memory_summary() table and no CUDA out-of-memory"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    proc = memory(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_bad_config_file(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama", "hidden_size": 4096,')
    proc = memory("--config", str(tmp_path), "--gpu", "T4")
    assert proc.returncode == 2
    assert proc.stderr == f"gpudoctor: {tmp_path}/config.json: not valid JSON (Expecting property name enclosed in " \
                          "double quotes at line 1)\n"


def test_torch_module_from_the_command_line():
    proc = memory("--torch-module", "tests.data.memory.tiny_model:build", "--train", "--optimizer", "adam",
                  "--gpu", "T4", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["model"]["params"] == 83_562
    assert doc["breakdown"]["weights_bytes"] + doc["breakdown"]["gradients_bytes"] + \
        doc["breakdown"]["optimizer_bytes"] == 16 * 83_562


def test_help_has_examples_and_exit_codes():
    proc = memory("--help")
    assert proc.returncode == 0
    assert 'gpudoctor memory --params 7B --dtype fp32 --gpu "RTX 4090"' in proc.stdout
    assert "Exit codes: 0 it fits" in proc.stdout
    assert "memory" in invoke("--help").stdout


def test_fsdp_full_shard_is_zero_3():
    args = ("--params", "7B", "--train", "--dtype", "bf16", "--mixed-precision", "--gpus", "8", "--gpu", "H100 80GB",
            "--json")
    fsdp = json.loads(memory(*args, "--fsdp", "full").stdout)
    zero = json.loads(memory(*args, "--zero", "3").stdout)
    assert fsdp["breakdown"] == zero["breakdown"] and fsdp["settings"]["zero"] == 3
    assert fsdp["breakdown"]["optimizer_bytes"] == 7e9 * 12 / 8
    both = memory(*args, "--fsdp", "full", "--zero", "3")
    assert both.returncode == 2 and both.stderr == "gpudoctor: --fsdp and --zero say the same thing; give one\n"


def test_generation_offers_a_smaller_kv_cache_where_fp8_exists():
    args = ("--config", str(CONFIGS / "llama-2-7b.json"), "--dtype", "bf16", "--context-len", "8192", "--batch", "4",
            "--json")
    l4 = {c["id"]: c for c in json.loads(memory(*args, "--gpu", "L4").stdout)["changes"]}
    assert l4["kv_fp8"]["saves_bytes"] == 8 * 2 ** 30 and l4["kv_fp8"]["flags"] == "--kv-dtype fp8"
    assert l4["context_len"]["flags"] == "--context-len 4096"
    a10 = {c["id"] for c in json.loads(memory(*args, "--gpu", "A10").stdout)["changes"]}
    assert "kv_fp8" not in a10 and "context_len" in a10


def test_mig_is_said():
    doc = json.loads(memory("--params", "7B", "--snapshot", "fixtures/scenarios/core-a100-mig", "--json").stdout)
    assert "MIG is enabled on GPU 0: a job gets one MIG instance (nvidia-smi -L lists them), not the whole GPU " \
           "compared here" in doc["notes"]


def test_idle_identical_gpus_share_one_paragraph_and_a_batch_that_cannot_fit_is_none():
    text = memory("--live", "--snapshot", H100X8).stdout.splitlines()
    assert text[0] == "GPUs 0-7 (NVIDIA H100 80GB HBM3): 79.65 GiB total, 1.00 MiB used, 79.65 GiB free each"
    plan = memory("--config", str(CONFIGS / "llama-2-7b.json"), "--train", "--dtype", "bf16", "--mixed-precision",
                  "--gpu", "A100 80GB").stdout.splitlines()
    row = next(line for line in plan if line.startswith("  NVIDIA A100-SXM4-80GB (named)"))
    assert row.split()[-1] == "none" and " NO " in row
