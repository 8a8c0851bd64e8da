"""--measure: the child's readings turned into the CUDA context, the allocator's accounting, the plan's context."""

from __future__ import annotations

import json
import os
import sys

from gpudoctor.commands import memory as cmd
from gpudoctor.memory import measure
from gpudoctor.memory.machine import Machine

MIB = 2 ** 20
# Synthetic readings (no GPU on the machine these tests were written on): 24 GiB GPU, a 400 MiB context.
ANSWER = {"torch": "2.5.1+cu124", "cuda": "12.4", "device": 0, "name": "NVIDIA GeForce RTX 4090",
          "module_loading": None,
          "after_init": {"allocated": 512, "reserved": 2 * MIB, "free": 23 * 1024 * MIB, "total": 24 * 1024 * MIB,
                         "process_used": 402 * MIB, "process_used_from": "nvml"},
          "after_free": {"allocated": 128 * MIB + 512, "reserved": 194 * MIB, "free": 22 * 1024 * MIB,
                         "total": 24 * 1024 * MIB, "process_used": 594 * MIB, "process_used_from": "nvml"}}


def test_readings_become_context_and_accounting():
    doc = measure.interpret(ANSWER)
    assert doc["ran"] and doc["context_bytes"] == 400 * MIB and doc["context_from"] == "nvml"
    assert doc["explanation"][0] == ("CUDA context on GPU 0 (NVIDIA GeForce RTX 4090), torch 2.5.1+cu124 with CUDA "
                                     "12.4: 400.00 MiB (nvidia-smi's figure for the process minus "
                                     "torch.cuda.memory_reserved()).")
    assert doc["explanation"][1] == ("After three 64 MiB tensors and freeing the middle one: 128.00 MiB allocated, "
                                     "194.00 MiB reserved.")
    assert doc["explanation"][2] == ("nvidia-smi's 594.00 MiB for the process = CUDA context and other non-PyTorch "
                                     "memory 400.00 MiB + PyTorch's reserved 194.00 MiB.")
    assert doc["explanation"][3].startswith("Reserved 194.00 MiB = allocated 128.00 MiB (live tensors) + 66.00 MiB "
                                            "cached but free")


def test_a_skip_or_a_failure_is_said():
    assert measure.interpret({"skipped": "torch 2.13.0+cpu is a CPU-only build (torch.version.cuda is None)"}) == {
        "ran": False, "skipped": "torch 2.13.0+cpu is a CPU-only build (torch.version.cuda is None)"}
    failed = measure.interpret({"error": {"type": "RuntimeError", "message": "CUDA error: out of memory"}})
    assert failed["skipped"] == "the measurement failed: RuntimeError: CUDA error: out of memory"
    assert measure.render(failed) == ["Measurement skipped: the measurement failed: RuntimeError: CUDA error: "
                                      "out of memory"]


def test_the_real_child_skips_without_a_visible_gpu():
    answer = measure.run(sys.executable, dict(os.environ, CUDA_VISIBLE_DEVICES=""), 120)
    reason = answer["skipped"]
    assert reason.endswith("is a CPU-only build (torch.version.cuda is None)") or \
        reason.startswith("torch.cuda.is_available() is False with torch"), reason


def test_the_real_child_on_this_host():
    """A GPU host measures (the freed 64 MiB stays reserved); a host without one says why it did not."""
    doc = measure.interpret(measure.run(sys.executable, os.environ, 120))
    if not doc["ran"]:
        assert "CPU-only build" in doc["skipped"] or "is_available() is False" in doc["skipped"]
        return
    after = doc["readings"]["after_free"]
    assert after["reserved"] - after["allocated"] >= 64 * MIB
    assert doc["context_bytes"] is None or doc["context_bytes"] > 0


def test_a_python_without_an_answer(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'ImportError: libcudart.so.12: cannot open shared object file' >&2\nexit 1\n")
    fake.chmod(0o755)
    assert measure.run(str(fake), os.environ, 10) == {
        "error": {"type": "NoAnswer", "message": "ImportError: libcudart.so.12: cannot open shared object file"}}


def test_child_answer_is_read_from_its_marker_line(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'warming up'\necho 'GPUDOCTOR-MEASURE-JSON:" + json.dumps(ANSWER) + "'\n")
    fake.chmod(0o755)
    assert measure.run(str(fake), os.environ, 10) == ANSWER


def _options(**given):
    # click >= 8.2 marks an option without a default with a sentinel: None, as the command receives it
    opts = {p.name: p.default if isinstance(p.default, (str, int, float)) else None for p in cmd.command.params}
    opts.update(given)
    return opts


def test_without_a_gpu_measure_says_why_and_runs_nothing():
    machine = Machine((), (), False, "`nvidia-smi -q -x`: not found", None, None, None, "live")
    assert cmd._measure(_options(measure=True), machine, "/nonexistent/python") == {
        "ran": False, "skipped": "no GPU on this machine (`nvidia-smi -q -x`: not found)"}


def test_measured_context_and_activations_replace_the_estimates():
    measured = {"ran": True, "context_bytes": 612 * MIB, "activation_bytes_per_sample": 300 * MIB}
    doc = cmd._run(_options(params="1B", dtype="fp16", measure=True, gpu="RTX 4090", batch=4, timeout=5.0),
                   sys.executable, lambda machine, python: measured)
    assert doc["breakdown"]["context_bytes"] == 612 * MIB
    assert doc["context_basis"] == "measured on this machine (--measure)"
    assert doc["breakdown"]["activations_bytes"] == 4 * 300 * MIB
    assert doc["settings"]["activation_bytes_per_sample"] == 300 * MIB
