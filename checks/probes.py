"""Probe health: a framework probe or the NVML reader that hung or crashed is a finding.

Importing torch or TensorFlow can itself be the failure (a missing libcudnn, a
segfaulting extension, a hang in CUDA initialisation); the probes record how the
child process ended and this check reports it instead of losing it.
"""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, ok, warn
from gpudoctor.recipes import recipe

FRAMEWORKS = ("torch", "tensorflow", "jax")


def _tail(text: str, lines: int = 4) -> str:
    return "\n".join((text or "").strip().splitlines()[-lines:])


def _problem(name: str, data: dict):
    probe = data.get("probe") or {}
    python = probe.get("python") or data.get("executable") or "the target interpreter"
    if probe.get("timed_out"):
        return f"importing {name} in {python} did not finish within {probe.get('duration_s', '?')}s"
    if probe.get("error"):
        return f"{python} could not be started ({probe['error']})"
    if "installed" not in data:
        rc = probe.get("returncode")
        if rc == 0:
            return f"the {name} probe printed no result: is {python} a Python interpreter?"
        how = f"was killed by signal {-rc}" if isinstance(rc, int) and rc < 0 else f"exited {rc}"
        return f"the {name} probe in {python} {how} without an answer"
    if data.get("import_error"):
        err = data["import_error"]
        return f"`import {name}` fails in {python}: {err.get('type')}: {err.get('message')}"
    return None


@check("PRB001", "probes-finished", "framework probes finished", needs=())
def probes_finished(f: Facts):
    """Each framework probe (a child of the target interpreter) must import its framework and answer in time."""
    findings = []
    for name in FRAMEWORKS:
        data = f.snapshot.frameworks.get(name)
        if data is None:
            continue
        problem = _problem(name, data)
        if problem:
            stderr = _tail((data.get("probe") or {}).get("stderr", "")) or _tail(data.get("traceback", ""))
            findings.append(warn(problem, subject=name,
                                 detail="Your jobs import the same package the same way, so they will fail or "
                                        "hang the same way.",
                                 evidence=[Evidence(f"framework:{name}", stderr or problem)],
                                 fix=recipe("framework_import_fails", f, framework=name)))
    probed = [n for n in FRAMEWORKS if n in f.snapshot.frameworks]
    if not findings:
        return ok("framework probes finished" + (f" ({', '.join(probed)})" if probed else " (none probed)"))
    return findings


CHECKS = (probes_finished,)
