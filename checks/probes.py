"""Probe health: a framework probe or the NVML reader that hung or crashed is a finding.

Importing torch or TensorFlow can itself be the failure (a missing libcudnn, a
segfaulting extension, a hang in CUDA initialisation); the probes record how the
child process ended and this check reports it instead of losing it.
"""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.frameworks import FrameworkProbe
from gpudoctor.findings import Evidence, ok, warn
from gpudoctor.recipes import recipe

def _tail(text: str, lines: int = 4) -> str:
    return "\n".join((text or "").strip().splitlines()[-lines:])


def _problem(run: FrameworkProbe):
    name, python = run.framework, run.python
    if run.timed_out:
        return f"importing {name} in {python} did not finish within {'?' if run.duration_s is None else run.duration_s}s"
    if run.error:
        return f"{python} could not be started ({run.error})"
    if not run.answered:
        rc = run.returncode
        if rc == 0:
            return f"the {name} probe printed no result: is {python} a Python interpreter?"
        how = f"was killed by signal {-rc}" if isinstance(rc, int) and rc < 0 else f"exited {rc}"
        return f"the {name} probe in {python} {how} without an answer"
    if run.import_error:
        err = run.import_error
        return f"`import {name}` fails in {python}: {err.type}: {err.message}"
    return None


def _timed_out(f: Facts, run: FrameworkProbe):
    """A probe that did not answer in time says nothing about the install: never advise a reinstall."""
    secs = "?" if run.duration_s is None else f"{run.duration_s:.0f}"
    return warn(f"the {run.framework} probe did not answer within {secs}s: gpudoctor cannot tell how "
                f"{run.framework} is built", subject=run.framework, family="gpudoctor",
                detail=f"Importing {run.framework} in {run.python} took longer than the time gpudoctor allows "
                       "(a busy machine, a slow network filesystem, or an import that hangs); the checks that "
                       f"read {run.framework}'s build were skipped.",
                evidence=[Evidence(f"framework:{run.framework}", _tail(run.stderr) or f"no answer after {secs}s")],
                fix=recipe("probe_timeout", f, framework=run.framework, seconds=secs))


@check("PRB001", "probes-finished", "framework probes finished", needs=("framework_probes",))
def probes_finished(f: Facts):
    """Each framework probe (a child of the target interpreter) must import its framework and answer in time."""
    findings = []
    runs = f["framework_probes"]
    for run in runs:
        if run.timed_out:
            findings.append(_timed_out(f, run))
            continue
        problem = _problem(run)
        if problem:
            stderr = _tail(run.stderr) or _tail(run.traceback)
            findings.append(warn(problem, subject=run.framework,
                                 detail="Your jobs import the same package the same way, so they will fail or "
                                        "hang the same way.",
                                 evidence=[Evidence(f"framework:{run.framework}", stderr or problem)],
                                 fix=recipe("framework_import_fails", f, framework=run.framework)))
    probed = [run.framework for run in runs]
    if not findings:
        return ok("framework probes finished" + (f" ({', '.join(probed)})" if probed else " (none probed)"))
    return findings


CHECKS = (probes_finished,)
