"""`gpudoctor memory`: will a model fit on these GPUs, what to change if not, and where the memory went.

The planning is ``gpudoctor.memory`` (pure arithmetic over data with sources); this module
reads the options, collects the machine (or replays a snapshot) through the facts layer,
runs the children (``--torch-module``, ``--measure``) and prints.
"""

from __future__ import annotations

import os
import sys
from typing import Dict, Optional

import click

from gpudoctor import liveread
from gpudoctor.commands.common import (InputError, color_option, json_option, load_snapshot, python_option,
                                       snapshot_option)
from gpudoctor.exitcodes import ExitCode

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4")
OPTIMIZERS = ("sgd", "momentum", "adam", "adamw", "adamw-8bit", "adafactor")
_choice = lambda values: click.Choice(values, case_sensitive=False)  # noqa: E731


def _collect(timeout: float):
    from gpudoctor.probes.collect import CollectOptions, collect

    return collect(CollectOptions(timeout=timeout, commands=("nvidia_smi_xml",), frameworks=()))


def _machine(snapshot_path: Optional[str], timeout: float):
    from gpudoctor.facts import Facts
    from gpudoctor.memory.machine import read_machine

    snap = load_snapshot(snapshot_path) if snapshot_path else _collect(timeout)
    return read_machine(Facts(snap))


def _targets(o: Dict, machine):
    from gpudoctor.memory import targets

    if o["gpu"]:
        return [targets.named_target(o["gpu"], o["gpus"] or 1)]
    if o["gpu_memory"]:
        from gpudoctor.memory.units import parse_size

        return [targets.sized_target(parse_size(o["gpu_memory"]), o["gpus"] or 1)]
    return targets.machine_targets(machine, "nvidia-smi" if machine.source == "live" else f"snapshot {machine.source}")


def _measure(o: Dict, machine, python: str) -> Dict:
    from gpudoctor.memory import inputs, measure

    if not machine.gpus:
        return {"ran": False, "skipped": f"no GPU on this machine ({machine.why_no_gpus})"}
    baseline = machine.gpus[0].used_mib * 2 ** 20 if len(machine.gpus) == 1 and machine.gpus[0].used_mib else None
    shape = inputs.input_shape(o["input_shape"])
    answer = measure.run(python, os.environ, o["timeout"] * 4, baseline, o["torch_module"] if shape else None,
                         shape, bool(o["input_shape"] and o["input_shape"].startswith("tokens:")))
    return measure.interpret(answer)


def _run(o: Dict, python: str, measure_fn=None) -> Dict:
    """The whole document; ``measure_fn`` (machine, python) -> measure doc is the --measure step, a seam for tests."""
    from gpudoctor.memory import inputs, live, processes, read, report

    doc: Dict = {"schema": report.SCHEMA}
    if o["read"]:
        doc["read"] = read.read(_read_text(o["read"]))
    spec = inputs.model(o, python, os.environ, o["timeout"] * 4)
    settings = inputs.settings(o) if spec is not None else None
    needs_machine = o["live"] or o["measure"] or (spec is not None and not (o["gpu"] or o["gpu_memory"]))
    machine = _machine(o["snapshot_path"], o["timeout"]) if needs_machine else None
    if o["measure"]:
        doc["measure"] = (measure_fn or (lambda m, p: _measure(o, m, p)))(machine, python)
    if spec is not None:
        doc.update(_plan(o, spec, settings, machine, doc.get("measure") or {}))
    if o["live"]:
        owners = processes.describe({p.pid for p in machine.processes if p.pid}) if machine.source == "live" else {}
        doc["live"] = live.build(machine, owners)
    return doc


def _plan(o: Dict, spec, settings, machine, measured: Dict) -> Dict:
    """The plan against the GPUs asked for; what --measure found replaces the estimates."""
    from gpudoctor.memory import report

    if measured.get("activation_bytes_per_sample") and settings.activation_bytes_per_sample is None:
        settings = settings.but(activation_bytes_per_sample=measured["activation_bytes_per_sample"])
    lazy, why = machine.lazy_loading() if machine else (True, "a current PyTorch build (assumed)")
    context = measured.get("context_bytes")
    doc = report.build(spec, settings, _targets(o, machine), lazy, why, None if context is None else context / 2 ** 20)
    if machine is not None and not (o["gpu"] or o["gpu_memory"]):
        doc["notes"] += _machine_notes(machine)
    return doc


def _machine_notes(machine) -> list:
    if not machine.gpus:
        return [f"no GPU on this machine to compare with: {machine.why_no_gpus}"]
    return [f"MIG is enabled on GPU {g.index}: a job gets one MIG instance (nvidia-smi -L lists them), "
            "not the whole GPU compared here" for g in machine.gpus if g.mig_mode == "Enabled"]


MAX_READ_BYTES = 64 << 20  # a memory summary is a few KB, an OOM log rarely a few MB


def _read_text(path: str) -> str:
    """The text to --read: a FIFO or device is refused, a file or stdin over the cap too."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_READ_BYTES + 1)
        if len(data) > MAX_READ_BYTES:
            raise ValueError(f"--read -: over {MAX_READ_BYTES} bytes on stdin")
        return data.decode("utf-8", errors="replace")
    text, why = liveread.read_text(path, MAX_READ_BYTES)
    if text is None:
        raise ValueError(f"--read {path}: {why}")
    return text


def _text(doc: Dict) -> str:
    from gpudoctor.memory import live, measure, read, render

    parts = []
    if "read" in doc:
        parts.append("\n".join(read.render(doc["read"])) + "\n")
    if "live" in doc:
        parts.append("\n".join(live.render(doc["live"])) + "\n")
    if "measure" in doc:
        parts.append("\n".join(measure.render(doc["measure"])) + "\n")
    if "breakdown" in doc:
        parts.append(render.render_plan(doc))
    return "\n".join(parts)


@click.command("memory")
@click.option("--params", metavar="N", help="Parameter count: 7B, 138M, 7e9 or 124439808.")
@click.option("--config", type=click.Path(), metavar="PATH", help="A Hugging Face config.json, or its model folder.")
@click.option("--torch-module", metavar="MODULE:CALLABLE",
              help="Build this nn.Module on the meta device in a child of --python and count it.")
@click.option("--layers", type=click.IntRange(1), help="With --params: transformer layers (for activations).")
@click.option("--hidden", type=click.IntRange(1), help="With --params: hidden size.")
@click.option("--heads", type=click.IntRange(1), help="With --params: attention heads.")
@click.option("--kv-heads", type=click.IntRange(1), help="With --params: key/value heads (grouped-query attention).")
@click.option("--vocab", type=click.IntRange(1), help="With --params: vocabulary size.")
@click.option("--dtype", type=_choice(DTYPES), default="fp32", show_default=True, help="Weights' dtype.")
@click.option("--train", is_flag=True, help="Plan training (default: inference).")
@click.option("--optimizer", type=_choice(OPTIMIZERS), default="adamw", show_default=True)
@click.option("--mixed-precision", is_flag=True, help="16-bit weights and gradients with fp32 master weights "
              "(with --dtype fp32: autocast, fp32 states and 16-bit activations).")
@click.option("--lora", type=click.IntRange(1), metavar="RANK", help="Train LoRA adapters of this rank; the base is frozen.")
@click.option("--grad-checkpointing", is_flag=True, help="Recompute activations in the backward pass.")
@click.option("--batch", type=click.IntRange(1), default=1, show_default=True, help="Micro-batch per GPU.")
@click.option("--seq-len", type=click.IntRange(1), help="Tokens per sample (default: 2048 or the model's maximum).")
@click.option("--context-len", type=click.IntRange(1), help="Inference: tokens in the KV cache (default: --seq-len).")
@click.option("--kv-dtype", type=_choice(DTYPES), help="Inference: the KV cache's dtype (default: the activations').")
@click.option("--gpus", type=click.IntRange(1), default=1, show_default=True, help="GPUs the job runs on.")
@click.option("--zero", type=click.IntRange(0, 3), help="DeepSpeed ZeRO stage over --gpus.")
@click.option("--fsdp", type=_choice(("no-shard", "grad-op", "full")), help="PyTorch FSDP sharding (full = ZeRO-3).")
@click.option("--activation-bytes-per-sample", metavar="SIZE", help="Activations of one sample (e.g. 150MiB), "
              "for models the transformer formula does not describe.")
@click.option("--gpu", metavar="NAME", help="Plan for a named GPU (\"H100 80GB\", \"RTX 3090\") instead of this machine's.")
@click.option("--gpu-memory", metavar="SIZE", help="Plan for a GPU with this much memory (24GiB).")
@snapshot_option
@click.option("--live", is_flag=True, help="Where the memory of each GPU is now: processes, owners, free.")
@click.option("--measure", is_flag=True, help="Measure the CUDA context and allocator in a child of --python "
              "(with --torch-module and --input-shape: one sample's activations).")
@click.option("--input-shape", metavar="SHAPE", help="With --measure --torch-module: one sample, 3,224,224 or tokens:512.")
@click.option("--read", metavar="FILE", help="Explain a saved torch.cuda.memory_summary() or OOM message (- for stdin).")
@python_option
@click.option("--timeout", type=click.FloatRange(1, 600), default=15.0, show_default=True,
              help="Seconds for the machine's collection (children get 4x).")
@json_option
@color_option
def command(python, as_json, color, **o):
    """Will this model fit on these GPUs, what to change if not, and where did the memory go.

    Counts weights, gradients, optimizer states (ZeRO/FSDP sharding included), activations
    (Korthikanti et al. 2022 for transformers), the KV cache and the CUDA context, and
    compares them with this machine's GPUs, a --snapshot, or a --gpu you name.

    \b
    Examples:
      gpudoctor memory --params 7B --dtype fp32 --gpu "RTX 4090"
      gpudoctor memory --config llama-2-7b/ --train --dtype bf16 --mixed-precision --batch 4
      gpudoctor memory --config config.json --train --gpus 8 --zero 3 --gpu "A100 80GB"
      gpudoctor memory --torch-module mypkg.models:build --train --optimizer sgd --gpu T4
      gpudoctor memory --config mistral/ --context-len 32768 --dtype bf16 --kv-dtype fp8
      gpudoctor memory --live                   # who uses each GPU now
      gpudoctor memory --measure                # this machine's CUDA context, allocated vs reserved
      gpudoctor memory --read oom.txt           # a pasted OOM message or memory_summary()

    Exit codes: 0 it fits (or the question was answered), 1 it does not fit on the given
    GPUs, 2 bad input (an unreadable config, an unknown dtype or GPU name).
    """
    from gpudoctor.render.json import dumps

    python = python or sys.executable
    if not any(o[k] for k in ("params", "config", "torch_module", "live", "measure", "read")):
        raise InputError("say what to look at: a model (--params, --config, --torch-module), --live, "
                         "--measure or --read FILE")
    if (o["gpu"] or o["gpu_memory"]) and (o["snapshot_path"] or o["live"]):
        raise InputError("--gpu/--gpu-memory plan for a GPU that is not here; they exclude --snapshot and --live")
    if o["gpu"] and o["gpu_memory"]:
        raise InputError("give --gpu or --gpu-memory, not both")
    if o["input_shape"] and not (o["measure"] and o["torch_module"]):
        raise InputError("--input-shape is the sample --measure feeds a --torch-module; give both")
    if o["measure"] and o["snapshot_path"]:
        raise InputError("--measure runs on this machine; it cannot be combined with --snapshot")
    try:
        doc = _run(o, python)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    click.echo(dumps(doc) if as_json else _text(doc), nl=False)
    return ExitCode.PROBLEM if doc.get("fits") is False else ExitCode.OK
