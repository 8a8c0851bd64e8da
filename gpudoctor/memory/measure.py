"""``--measure``: this machine's CUDA context and allocator, measured in a child of ``--python``.

The child (``measure_child.py``) answers with raw readings; this module turns them into
the context figure the plan uses instead of the published estimate, the allocated vs
reserved vs nvidia-smi accounting in the allocator model's words, and (with a module) one
sample's activation bytes. Without a GPU it says why nothing was measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from gpudoctor import runner
from gpudoctor.memory import allocator
from gpudoctor.memory.units import MIB, fmt_bytes

_SCRIPT = Path(__file__).with_name("measure_child.py")
MARKER = "GPUDOCTOR-MEASURE-JSON:"


def run(python: str, env: Mapping[str, str], timeout: float, baseline_used: Optional[int] = None,
        target: Optional[str] = None, input_shape: Optional[List[int]] = None, tokens: bool = False) -> Dict:
    """The child's raw answer: readings, ``skipped`` or ``error``; never raises for the child's sake."""
    cfg = {"baseline_used": baseline_used, "target": target, "input_shape": input_shape, "tokens": tokens}
    res = runner.run((python, "-c", _SCRIPT.read_text(encoding="utf-8"), json.dumps(cfg)), timeout=timeout,
                     env=dict(env, PYTHONIOENCODING="utf-8"))
    for line in reversed(res.stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    if res.timed_out:
        return {"error": {"type": "Timeout", "message": f"the measurement took over {timeout:.0f}s"}}
    said = (res.stderr.strip().splitlines() or [res.describe()])[-1]
    return {"error": {"type": "NoAnswer", "message": said}}


def _state(reading: Dict) -> allocator.AllocatorState:
    mib = {k: (None if reading.get(k) is None else reading[k] / MIB)
           for k in ("total", "free", "allocated", "reserved", "process_used")}
    return allocator.AllocatorState(**mib)


def interpret(answer: Dict) -> Dict:
    if "skipped" in answer:
        return {"ran": False, "skipped": answer["skipped"]}
    if "error" in answer:
        return {"ran": False, "skipped": f"the measurement failed: {answer['error']['type']}: {answer['error']['message']}"}
    init, after = answer["after_init"], answer["after_free"]
    context = allocator.context_share(_state(init))
    doc = {"ran": True, "device": answer["device"], "name": answer["name"], "torch": answer["torch"],
           "cuda": answer["cuda"], "module_loading": answer.get("module_loading"),
           "context_bytes": None if context is None else round(context * MIB),
           "context_from": init.get("process_used_from"), "readings": {"after_init": init, "after_free": after},
           "explanation": _explain(answer, context)}
    if "module" in answer:
        doc["activation_bytes_per_sample"] = answer["module"]["per_sample"]
        doc["module"] = answer["module"]
    return doc


def _explain(answer: Dict, context: Optional[float]) -> List[str]:
    lines = []
    if context is not None:
        lines.append(f"CUDA context on GPU {answer['device']} ({answer['name']}), torch {answer['torch']} with "
                     f"CUDA {answer['cuda']}: {allocator.human(context)} (nvidia-smi's figure for the process "
                     "minus torch.cuda.memory_reserved()).")
    else:
        lines.append("The process's own memory could not be read (no pynvml in that python and no baseline): "
                     "the context is not measured.")
    after = answer["after_free"]
    lines.append(f"After three 64 MiB tensors and freeing the middle one: {fmt_bytes(after['allocated'])} allocated, "
                 f"{fmt_bytes(after['reserved'])} reserved.")
    return lines + allocator.account(_state(after))


def render(doc: Dict) -> List[str]:
    if not doc["ran"]:
        return [f"Measurement skipped: {doc['skipped']}"]
    lines = ["Measured on this machine:"] + [f"  {line}" for line in doc["explanation"]]
    if "activation_bytes_per_sample" in doc:
        m = doc["module"]
        lines.append(f"  Activations of the module: peak {fmt_bytes(m['peak_batch1'])} at batch 1, "
                     f"{fmt_bytes(m['peak_batch2'])} at batch 2: {fmt_bytes(m['per_sample'])} per sample.")
    return lines
