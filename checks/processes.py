"""Foreign processes: a job should start on GPUs nobody else is computing on."""

from __future__ import annotations

import os

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, fail, ok, unknown
from gpudoctor_checks.node import gpu_list


def is_compute(p) -> bool:
    """Type "C", "C+G" or "M+C" computes; "G" is graphics (Xorg, a desktop) and is not counted."""
    return p.type is None or "C" in p.type


def _allowed_name(p, names) -> bool:
    name = p.name or ""
    return name in names or os.path.basename(name) in names


def _on_job_gpus(p, job_gpus) -> bool:
    """With the job's GPUs known (SLURM_JOB_GPUS: indices, or CUDA_VISIBLE_DEVICES: indices or UUID
    prefixes), only processes on them are the job's business; one whose GPU is not recorded counts."""
    if job_gpus is None or (p.gpu_index is None and not p.gpu_uuid):
        return True
    uuid = (p.gpu_uuid or "").lower()
    return any(str(p.gpu_index) == g if g.isdigit() else bool(uuid) and uuid.startswith(g.lower())
               for g in job_gpus)


@check("NOD004", "foreign-processes", "no foreign compute process on the GPUs", needs=("gpu_processes",),
       params=("no_foreign_processes",))
def foreign_processes(f: Facts):
    """Compute processes on the (job's) GPUs, except allowed names and allowed users' processes.
    Process owners come from the snapshot (recorded live); a replay without them cannot tell."""
    req = f.requirements
    candidates = [p for p in f["gpu_processes"] if is_compute(p) and _on_job_gpus(p, req.job_gpus)
                  and not _allowed_name(p, req.allow_processes)]
    owners = f.get("process_owners")
    if req.allow_users and candidates and owners is None:
        return unknown(f"cannot tell whose {len(candidates)} GPU process(es) these are: "
                    f"{f.why_missing('process_owners')}")
    foreign = [p for p in candidates if not (req.allow_users and owners.get(p.pid) in req.allow_users)]
    if not foreign:
        return ok("no foreign compute process on any GPU")
    shown = ", ".join(f"{os.path.basename(p.name or '?')} pid {p.pid} on GPU {p.gpu_index}" for p in foreign[:2])
    more = f" (+{len(foreign) - 2} more)" if len(foreign) > 2 else ""
    ev = [Evidence("command:nvidia_smi_xml", f"GPU {p.gpu_index}: pid {p.pid} {p.name} "
                   f"({(owners or {}).get(p.pid, 'owner unknown')})") for p in foreign[:8]]
    return fail(f"{len(foreign)} foreign GPU process(es) on {gpu_list(p.gpu_index for p in foreign)}: "
                f"{shown}{more}", evidence=ev, family="node_requirement")


CHECKS = (foreign_processes,)
