"""The job a hook runs for: its GPUs and its user, read from Slurm's environment.

A Prolog (PrologFlags=Alloc) gets SLURM_JOB_ID, SLURM_JOB_USER and SLURM_JOB_GPUS, the
indices of the GPUs allocated to the job, e.g. "0,1" (https://slurm.schedmd.com/prolog_epilog.html);
a hook run inside the job sees its CUDA_VISIBLE_DEVICES. `--no-foreign-processes` then
judges only the job's own GPUs, and processes of the job's user there are not foreign
(a process on another GPU belongs to another job and is none of this one's business).
Pure functions of the environment; NOD004 judges the processes (checks/processes.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Mapping, Optional, Tuple

from gpudoctor import visible_devices

MAX_GPUS = 4096  # the hook's own limit on --gpus; a range beyond it is not a GPU list


@dataclass(frozen=True)
class Job:
    job_id: str
    user: Optional[str]                 # SLURM_JOB_USER
    gpus: Optional[Tuple[str, ...]]     # nvidia-smi indices ("0") or UUID prefixes ("GPU-5c89");
    #                                     None: the job's GPUs are not known, so every GPU counts
    source: Optional[str] = None        # the variable the GPUs were read from


def slurm_gpus(raw: str) -> Optional[Tuple[str, ...]]:
    """SLURM_JOB_GPUS: "0,1,3" (ranges such as "0-3" accepted too); "" is a job without GPUs.
    None when the value is not such a list."""
    out = []
    for part in (p.strip() for p in raw.split(",") if p.strip()):
        m = re.fullmatch(r"(\d{1,4})(?:-(\d{1,4}))?", part)
        low, high = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (1, 0)
        if not low <= high < MAX_GPUS:
            return None
        out.extend(str(i) for i in range(low, high + 1))
    return tuple(dict.fromkeys(out))


def cuda_gpus(raw: str) -> Optional[Tuple[str, ...]]:
    """CUDA_VISIBLE_DEVICES, read as CUDA reads it (indices or GPU-UUID prefixes); None for MIG
    UUIDs, which nvidia-smi's process list does not name."""
    spec = visible_devices.parse(raw)
    return spec.entries if spec.mode in ("index", "uuid") else None


def job_from_environ(environ: Mapping[str, str]) -> Optional[Job]:
    """The Slurm job the hook runs for, or None outside a job."""
    job_id = (environ.get("SLURM_JOB_ID") or "").strip()
    if not job_id:
        return None
    user = (environ.get("SLURM_JOB_USER") or "").strip() or None
    for name, read in (("SLURM_JOB_GPUS", slurm_gpus), ("CUDA_VISIBLE_DEVICES", cuda_gpus)):
        if environ.get(name) is not None:
            gpus = read(environ[name])
            if gpus is not None:
                return Job(job_id, user, gpus, name)
    return Job(job_id, user, None)


def for_job(requirements, environ: Mapping[str, str]):
    """Requirements for --no-foreign-processes within the Slurm job of ``environ``: its GPUs
    (``job_gpus``, judged by NOD004) and its user allowed. Unchanged outside a job."""
    job = job_from_environ(environ)
    if job is None or not requirements.no_foreign_processes:
        return requirements
    if job.user and job.user not in requirements.allow_users:
        requirements = replace(requirements, allow_users=requirements.allow_users + (job.user,))
    if job.gpus is not None:
        requirements = replace(requirements, job_gpus=job.gpus)
    return requirements
