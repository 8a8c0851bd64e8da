"""Active tests, run only when asked: DCGM's diagnostic (``dcgmi diag -r LEVEL -j``) and
gpudoctor's smoke test (a child of the job's interpreter). Both load the GPUs, so they run one
after the other, after the passive probes, each under its own timeout and never past
``deadline``. Their results are ordinary command records in the snapshot
(``commands/dcgmi_diag.*``, ``commands/smoke_test.*``): a replay judges them like any other.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable, Mapping, Optional

from gpudoctor import runner
from gpudoctor.probes import commands
from gpudoctor.requirements import Requirements
from gpudoctor.snapshot import Snapshot

DCGM_KEY = "dcgmi_diag"
SMOKE_KEY = "smoke_test"
# What the snapshot records as the smoke test's argv: the script itself is gpudoctor's, not the user's.
SMOKE_ARGV_NAME = "<gpudoctor smoke test: gpudoctor/probes/smoke_child.py>"
MAX_STDERR_CHARS = 64 * 1024


def dcgm_argv(level: int) -> tuple:
    return ("dcgmi", "diag", "-r", str(level), "-j")


def run_dcgm(level: int, environ: Mapping[str, str], timeout: float) -> runner.CommandResult:
    """``dcgmi diag -r LEVEL -j``; "not found" when DCGM is not installed."""
    argv = dcgm_argv(level)
    exe = commands.resolve(argv[0], environ.get("PATH"))
    if exe is None:
        return runner.CommandResult(argv, error="not found")
    res = runner.run((exe,) + argv[1:], timeout=timeout, env={**environ, "LC_ALL": "C"})
    return dataclasses.replace(res, argv=argv)  # as typed; the resolved path only in an error


def smoke_config(timeout: float) -> dict:
    """What the child is told to do: sizes, dtypes and the NCCL worker's source, from the data file."""
    from gpudoctor.knowledge import node_health

    settings = node_health.smoke_settings()
    return {"dtypes": [{"dtype": d.dtype, "label": d.label, "min_cc": d.min_cc} for d in node_health.smoke_dtypes()],
            "matrix_n": settings["matrix_n"], "block_mib": settings["block_mib"],
            "copy_mib": settings["copy_mib"], "copy_repeats": settings["copy_repeats"],
            "allreduce_mib": settings["allreduce_mib"], "allreduce_repeats": settings["allreduce_repeats"],
            # the all-reduce must give up before the whole child is killed, to report what hung
            "nccl_timeout_s": max(5.0, min(settings["timeout_nccl_s"], timeout * 0.6)),
            "worker": Path(__file__).with_name("allreduce_child.py").read_text(encoding="utf-8")}


def run_smoke(python: str, environ: Mapping[str, str], timeout: float) -> runner.CommandResult:
    """The smoke test in a child of ``python``, in its own process group (killed whole at the timeout)."""
    import json

    from gpudoctor.probes.frameworks import probe_env

    source = Path(__file__).with_name("smoke_child.py").read_text(encoding="utf-8")
    res = runner.run((python, "-c", source), timeout=timeout, env=probe_env(environ),
                     stdin_data=json.dumps(smoke_config(timeout)).encode("utf-8"))
    return dataclasses.replace(res, argv=(python, "-c", SMOKE_ARGV_NAME), stderr=res.stderr[-MAX_STDERR_CHARS:])


def record(snap: Snapshot, req: Requirements, python: str, environ: Mapping[str, str],
           deadline: Optional[float] = None, note: Callable[[str, str], None] = lambda name, state: None) -> None:
    """Run the active tests ``req`` asks for into ``snap`` (DCGM first: its GPU load is the heavier)."""
    from gpudoctor.knowledge import dcgm, node_health

    def budget(limit: float) -> float:
        return limit if deadline is None else max(0.1, min(limit, deadline - time.monotonic() - 0.25))

    if req.dcgm:
        note("dcgm", "start")
        snap.commands[DCGM_KEY] = run_dcgm(req.dcgm, environ, budget(dcgm.level_timeout_s(req.dcgm)))
        note("dcgm", "done")
    if req.smoke:
        note("smoke test", "start")
        snap.commands[SMOKE_KEY] = run_smoke(python, environ, budget(node_health.smoke_settings()["timeout_smoke_s"]))
        note("smoke test", "done")
