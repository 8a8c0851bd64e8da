"""``--torch-module MODULE:CALLABLE``: a model's parameters counted without importing torch here.

The callable runs in a child of ``--python`` (``torch_module_child.py``) under
``torch.device("meta")`` with no GPU visible and a timeout; its answer is one marked JSON
line. A module with a Hugging Face ``config`` also yields the transformer shape, so the
activation formula applies to it as to a config.json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Mapping, Optional

from gpudoctor import runner
from gpudoctor.memory.model import ModelSpec

_SCRIPT = Path(__file__).with_name("torch_module_child.py")
MARKER = "GPUDOCTOR-MODULE-JSON:"
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def run_child(target: str, python: str, env: Mapping[str, str], timeout: float, cwd: Optional[str] = None) -> Dict:
    """The child's JSON answer; ValueError with one line when it could not give one."""
    if not _TARGET.match(target):
        raise ValueError(f"--torch-module {target!r}: write MODULE:CALLABLE, e.g. mypkg.models:build")
    child_env = dict(env, CUDA_VISIBLE_DEVICES="", PYTHONDONTWRITEBYTECODE="1", PYTHONIOENCODING="utf-8")
    res = runner.run((python, "-c", _SCRIPT.read_text(encoding="utf-8"), target), timeout=timeout,
                     env=child_env, cwd=cwd)
    if res.timed_out:
        raise ValueError(f"--torch-module {target}: building it on the meta device took over {timeout:.0f}s")
    for line in reversed(res.stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    said = (res.stderr.strip().splitlines() or [res.describe()])[-1]
    raise ValueError(f"--torch-module {target}: {python} gave no answer ({said})")


def spec_from_child(answer: Dict, target: str) -> ModelSpec:
    if "error" in answer:
        err = answer["error"]
        raise ValueError(f"--torch-module {target}: {err['type']}: {err['message'].splitlines()[0] if err['message'] else ''}")
    notes = []
    if answer.get("off_meta"):
        notes.append(f"{answer['off_meta']:,} parameters were created off the meta device by {target}")
    spec = ModelSpec(answer["params"], f"torch module {target} ({answer['class']})", answer["trainable"],
                     matrices=tuple(tuple(m) for m in answer["matrices"]),
                     vector_params=answer["vector_params"] + answer["other_params"], notes=tuple(notes))
    return _with_config_shape(spec, answer.get("config"))


def _with_config_shape(spec: ModelSpec, config: Optional[Dict]) -> ModelSpec:
    """A transformers model carries its config: its shape feeds the activation formula."""
    if not config or "model_type" not in config:
        return spec
    from gpudoctor.memory.hf_config import spec_from_config

    try:
        shaped = spec_from_config(config)
    except ValueError:
        return spec
    return spec.with_transformer(shaped.transformer)
