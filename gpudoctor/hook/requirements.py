"""The hook's requirements and their judgement: pure functions of a NodeView.

Each requirement returns a :class:`Result` whose ``message`` is short enough to become a
Slurm drain reason ("7 of 8 GPUs visible"). ``REQUIREMENTS`` is in order of importance:
the one-line verdict lists failed requirements in this order.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import Enum
from typing import Callable, List, Optional, Tuple

from gpudoctor.hook.node import NodeView


class State(str, Enum):
    OK = "ok"
    PROBLEM = "problem"
    UNKNOWN = "unknown"  # the requirement could not be judged (data missing)


@dataclass(frozen=True)
class Result:
    check: str
    state: State
    message: str

    def to_dict(self) -> dict:
        return {"check": self.check, "state": self.state.value, "message": self.message}


@dataclass(frozen=True)
class Requirements:
    """What a node must satisfy before a job starts; None/False means "not required"."""

    gpus: Optional[int] = None               # at least this many GPUs visible
    min_driver: Optional[str] = None         # "535.104.05"
    min_free_mem_mib: Optional[int] = None   # on every GPU
    no_foreign_processes: bool = False       # no compute process on any GPU ...
    allow_processes: Tuple[str, ...] = ()    # ... except these names (basename or full path)
    allow_users: Tuple[str, ...] = ()        # ... or processes of these users
    cuda: Optional[str] = None               # the driver and installed frameworks must support it
    persistence: bool = False                # persistence mode on for every GPU
    pending_retirement: bool = True          # no retired pages / row remaps waiting for a GPU reset
    max_temp: Optional[int] = None           # degrees C, on every GPU

    def needs_frameworks(self) -> bool:
        return self.cuda is not None


def _ok(check, msg):
    return Result(check, State.OK, msg)


def _bad(check, msg):
    return Result(check, State.PROBLEM, msg)


def _unknown(check, msg):
    return Result(check, State.UNKNOWN, msg)


def _secs(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds >= 10 or float(seconds).is_integer() else f"{seconds:.1f}s"


def _first_words(res) -> str:
    """nvidia-smi's most telling line: a warning or error if it printed one, else its first prose
    line (its XML or table, when it printed some, is not a reason)."""
    lines = [ln.strip() for ln in f"{res.stdout}\n{res.stderr}".splitlines() if ln.strip()]
    prose = [ln for ln in lines if not ln.startswith(("<", "+", "|", "="))]
    telling = [ln for ln in prose if re.search(r"warning|error|unable|failed", ln, re.I)]
    return (telling or prose or [""])[0]


def smi_exit(returncode):
    """What nvidia-smi's exit code means (knowledge data), or None."""
    from gpudoctor.knowledge.smi_codes import smi_exit_code  # loaded when nvidia-smi failed, not on every run

    return smi_exit_code(returncode)


def driver(v: NodeView, r: Requirements) -> Result:
    """nvidia-smi must answer; how it failed is the reason (hung, missing, driver not loaded)."""
    res = v.smi_result
    if res is None:
        return _unknown("driver", "nvidia-smi was not recorded")
    if res.error == "not found":
        if r.gpus == 0:
            return _ok("driver", "no nvidia-smi, and no GPU is required")
        return _bad("driver", "nvidia-smi not found (no NVIDIA driver installed)")
    if res.error:
        return _bad("driver", f"nvidia-smi could not run ({res.error})")
    if res.timed_out:
        return _bad("driver", f"nvidia-smi did not answer within {_secs(res.duration_s)}")
    if res.returncode != 0 or v.smi is None and not res.stdout.strip():
        return _failed(v, res)
    if v.smi is None:
        return _unknown("driver", f"nvidia-smi output unreadable: {v.smi_missing}")
    errors = getattr(v.smi, "errors", ())
    if errors:
        return _bad("driver", f"nvidia-smi: {errors[0][:100]}")
    return _ok("driver", f"driver {v.driver_version} answers, {len(v.gpus)} GPU(s)")


def _failed(v: NodeView, res) -> Result:
    text = f"{res.stdout}\n{res.stderr}".lower()
    if "couldn't communicate" in text:
        return _bad("driver", "NVIDIA driver not loaded (nvidia-smi cannot reach it)")
    if "version mismatch" in text:
        return _bad("driver", "NVIDIA driver/library version mismatch (reboot or reload the module)")
    if "no devices were found" in text:
        return _bad("driver", "NVIDIA driver loaded but it finds no GPU")
    said = _first_words(res)
    code = smi_exit(res.returncode)
    if code is not None and code.output_usable and v.smi is not None and code.status != "fail":
        return _ok("driver", f"driver {v.driver_version} answers, {len(v.gpus)} GPU(s); "
                             f"nvidia-smi exit {res.returncode}: {said[:80] or code.meaning}")
    if code is not None:
        return _bad("driver", f"{code.meaning} (nvidia-smi exit {res.returncode})"
                              + (f": {said[:80]}" if said else ""))
    return _bad("driver", f"nvidia-smi failed (exit {res.returncode}){': ' + said[:80] if said else ''}")


def gpu_count(v: NodeView, r: Requirements) -> Optional[Result]:
    if r.gpus is None:
        return None
    if v.smi is None:
        return _no_gpu_list("gpu_count", v, r)
    n = len(v.gpus)
    if n < r.gpus:
        return _bad("gpu_count", f"{n} of {r.gpus} GPUs visible")
    return _ok("gpu_count", f"{n} GPU(s) visible, {r.gpus} required")


def _no_gpu_list(check: str, v: NodeView, r: Requirements, what: str = "GPU list") -> Result:
    """No nvidia-smi data: fine on a node that needs no GPU, else this requirement is unknown."""
    if r.gpus == 0 and v.smi_result is not None and v.smi_result.error == "not found":
        return _ok(check, "no GPU on this node, and none is required")
    return _unknown(check, f"no {what} (nvidia-smi gave none)")


def _gpu_list(indexes) -> str:
    """"GPU 3", "GPUs 1,3", "GPUs 0-7": short enough for a drain reason on an 8-GPU node."""
    idx = sorted(i for i in indexes if i is not None)
    if len(idx) == 1:
        return f"GPU {idx[0]}"
    runs, start = [], None
    for a, b in zip(idx, idx[1:] + [None]):
        start = a if start is None else start
        if b != a + 1:
            runs.append(f"{start}-{a}" if a - start >= 2 else ",".join(str(x) for x in range(start, a + 1)))
            start = None
    return "GPUs " + ",".join(runs)


def pending_retirement(v: NodeView, r: Requirements) -> Optional[Result]:
    """Retired pages / row remaps pending take effect only at the next GPU reset; until then
    the bad memory stays in use (NVIDIA's guidance: drain and reset the GPU)."""
    if not r.pending_retirement:
        return None
    if v.smi is None:
        return _no_gpu_list("pending_retirement", v, r)
    pages = [g.index for g in v.gpus if g.retired_pages_pending]
    rows = [g.index for g in v.gpus if g.remapped_rows_pending]
    if rows:
        return _bad("pending_retirement", f"{_gpu_list(rows)}: row remap pending (reset the GPU)")
    if pages:
        return _bad("pending_retirement", f"{_gpu_list(pages)}: retired pages pending (reset the GPU)")
    return _ok("pending_retirement", "no retired pages or row remaps pending")


def min_driver(v: NodeView, r: Requirements) -> Optional[Result]:
    if r.min_driver is None:
        return None
    from packaging.version import InvalidVersion, Version

    if not v.driver_version:
        return _unknown("min_driver", "driver version unknown")
    try:
        too_old = Version(v.driver_version) < Version(r.min_driver)
    except InvalidVersion:
        return _unknown("min_driver", f"driver version {v.driver_version!r} unreadable")
    if too_old:
        return _bad("min_driver", f"driver {v.driver_version} < {r.min_driver}")
    return _ok("min_driver", f"driver {v.driver_version} >= {r.min_driver}")


def driver_cuda(v: NodeView) -> Optional[str]:
    """The newest CUDA the driver supports: nvidia-smi's word, else the knowledge table."""
    if v.cuda_driver_max:
        return v.cuda_driver_max
    if not v.driver_version:
        return None
    from gpudoctor import knowledge

    try:
        return knowledge.max_cuda_for_driver(v.driver_version)
    except ValueError:
        return None


def cuda(v: NodeView, r: Requirements) -> Optional[Result]:
    if r.cuda is None:
        return None
    from packaging.version import Version

    have = driver_cuda(v)
    if have is None:
        return _unknown("cuda", "the driver's CUDA version is unknown")
    if Version(have) < Version(r.cuda):
        return _bad("cuda", f"driver {v.driver_version} supports CUDA {have} < {r.cuda}")
    if not v.cuda_driver_max and v.driver_version:  # judged from the table: check its floor too
        from gpudoctor import knowledge

        need = knowledge.min_driver_for_cuda(r.cuda)
        if need is not None and Version(v.driver_version) < Version(need.min_driver):
            return _bad("cuda", f"driver {v.driver_version} < {need.min_driver} needed for CUDA {r.cuda}")
    return _ok("cuda", f"driver supports CUDA {have} >= {r.cuda}")


def framework_cuda(v: NodeView, r: Requirements) -> Optional[Result]:
    """Installed torch/TensorFlow builds must target a CUDA the driver supports (<= its CUDA)."""
    if r.cuda is None:
        return None
    from packaging.version import Version

    have = driver_cuda(v)
    bad, unknown = [], []
    for fw in v.frameworks.values():
        if fw.cuda is None:
            bad.append(f"{fw.name} {fw.version} is a CPU-only build")
        elif have is None:
            unknown.append(f"{fw.name} needs CUDA {fw.cuda}, the driver's CUDA is unknown")
        elif Version(_major_minor(fw.cuda)) > Version(have):
            bad.append(f"{fw.name} {fw.version} needs CUDA {_major_minor(fw.cuda)} > driver's {have}")
    unknown.extend(v.frameworks_unknown.values())
    if bad:
        return _bad("framework_cuda", "; ".join(bad))
    if unknown:
        return _unknown("framework_cuda", "; ".join(unknown))
    names = ", ".join(f"{fw.name} {fw.version} (CUDA {fw.cuda})" for fw in v.frameworks.values())
    return _ok("framework_cuda", names or "no torch or TensorFlow installed")


def _major_minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])


def _per_gpu(check: str, v: NodeView, r: Requirements, attr: str, what: str):
    """(values by GPU index, None) or (None, Result) when there is no GPU list or a GPU
    does not report ``attr``."""
    if v.smi is None:
        return None, _no_gpu_list(check, v, r)
    values = {g.index: getattr(g, attr) for g in v.gpus}
    missing = [i for i, x in values.items() if x is None]
    if missing:
        return None, _unknown(check, f"{_gpu_list(missing)}: {what} not reported")
    return values, None


def max_temp(v: NodeView, r: Requirements) -> Optional[Result]:
    if r.max_temp is None:
        return None
    temps, unknown = _per_gpu("max_temp", v, r, "temperature_c", "temperature")
    if unknown:
        return unknown
    hot = {i: t for i, t in temps.items() if t > r.max_temp}
    if hot:
        return _bad("max_temp", f"{_gpu_list(hot)} at {max(hot.values())}C > {r.max_temp}C")
    return _ok("max_temp", f"hottest GPU {max(temps.values(), default=0)}C <= {r.max_temp}C")


def persistence(v: NodeView, r: Requirements) -> Optional[Result]:
    if not r.persistence:
        return None
    modes, unknown = _per_gpu("persistence", v, r, "persistence_mode", "persistence mode")
    if unknown:
        return unknown
    off = [i for i, m in modes.items() if str(m).lower() != "enabled"]
    if off:
        return _bad("persistence", f"{_gpu_list(off)}: persistence mode off")
    return _ok("persistence", "persistence mode on")


def foreign_processes(v: NodeView, r: Requirements) -> Optional[Result]:
    if not r.no_foreign_processes:
        return None
    if v.smi is None:
        return _no_gpu_list("foreign_processes", v, r, "process list")
    foreign = [p for p in v.processes if _is_compute(p) and not _allowed(p, v, r)]
    if not foreign:
        return _ok("foreign_processes", "no foreign compute process on any GPU")
    shown = ", ".join(f"{os.path.basename(p.name or '?')} pid {p.pid} on GPU {p.gpu_index}" for p in foreign[:2])
    more = f" (+{len(foreign) - 2} more)" if len(foreign) > 2 else ""
    return _bad("foreign_processes", f"{len(foreign)} foreign GPU process(es): {shown}{more}")


def _is_compute(p) -> bool:
    """Type "C", "C+G" or "M+C" computes; "G" is graphics (Xorg, a desktop) and is not counted."""
    return p.type is None or "C" in p.type


def _allowed(p, v: NodeView, r: Requirements) -> bool:
    name = p.name or ""
    if name in r.allow_processes or os.path.basename(name) in r.allow_processes:
        return True
    owner = v.owners.get(p.pid) if p.pid is not None else None
    return owner is not None and owner in r.allow_users


def min_free_mem(v: NodeView, r: Requirements) -> Optional[Result]:
    if r.min_free_mem_mib is None:
        return None
    totals, unknown = _per_gpu("min_free_mem", v, r, "memory_total_mib", "memory")
    if unknown:
        return unknown
    free = {g.index: g.memory_total_mib - (g.memory_used_mib or 0) for g in v.gpus}
    short = {i: m for i, m in free.items() if m < r.min_free_mem_mib}
    if short:
        return _bad("min_free_mem", f"{_gpu_list(short)}: {_mib(min(short.values()))} free < "
                                    f"{_mib(r.min_free_mem_mib)}")
    return _ok("min_free_mem", f"least free {_mib(min(free.values(), default=0))} >= {_mib(r.min_free_mem_mib)}")


def _mib(mib: int) -> str:
    return f"{mib / 1024:.1f}GiB" if mib >= 1024 else f"{mib}MiB"


REQUIREMENTS: Tuple[Callable[[NodeView, Requirements], Optional[Result]], ...] = (
    driver, gpu_count, pending_retirement, min_driver, cuda, framework_cuda,
    max_temp, persistence, foreign_processes, min_free_mem,
)
CHECK_IDS = ("driver", "gpu_count", "pending_retirement", "min_driver", "cuda", "framework_cuda",
             "max_temp", "persistence", "foreign_processes", "min_free_mem")


def evaluate(view: NodeView, req: Requirements) -> List[Result]:
    """Every requested requirement's result, most important first."""
    return [res for fn in REQUIREMENTS if (res := fn(view, req)) is not None]
