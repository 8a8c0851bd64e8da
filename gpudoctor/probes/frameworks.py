"""Probe torch, TensorFlow and JAX in a child of the user's interpreter.

The child prints one marked JSON line (see ``framework_probe.py``); its exit code,
stderr (TensorFlow logs the libraries it failed to load there), duration and
timeout are kept next to the result, so a crash or hang is a finding too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Mapping

from gpudoctor import runner

FRAMEWORKS = ("torch", "tensorflow", "jax")
MARKER = "GPUDOCTOR-PROBE-JSON:"
_SCRIPT = Path(__file__).with_name("framework_probe.py")
# TensorFlow's stderr can be long; the start and the library-loading lines matter.
MAX_STDERR_CHARS = 64 * 1024


def probe_env(env: Mapping[str, str]) -> Dict[str, str]:
    child = dict(env)
    child["TF_CPP_MIN_LOG_LEVEL"] = "0"  # make TensorFlow say which libraries it could not load
    child.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    child["PYTHONIOENCODING"] = "utf-8"
    return child


def probe(name: str, python: str, env: Mapping[str, str], timeout: float) -> Dict:
    """Run the probe for ``name``; returns its JSON plus a ``probe`` record of how it ran."""
    source = _SCRIPT.read_text(encoding="utf-8")
    res = runner.run((python, "-c", source, name), timeout=timeout, env=probe_env(env))
    record = {"python": python, "returncode": res.returncode, "duration_s": res.duration_s,
              "timed_out": res.timed_out, "error": res.error,
              "stderr": res.stderr[-MAX_STDERR_CHARS:]}
    result: Dict = {}
    for line in reversed(res.stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                result = json.loads(line[len(MARKER):])
            except (json.JSONDecodeError, RecursionError) as exc:  # nested too deep: a hostile child
                record["parse_error"] = str(exc)
            break
    if not isinstance(result, dict):
        record["parse_error"] = f"expected a JSON object, got {type(result).__name__}"
        result = {}
    result["probe"] = record
    return result
