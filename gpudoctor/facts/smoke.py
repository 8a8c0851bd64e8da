"""The smoke test fact: what ``probes/smoke_child.py`` measured in the job's interpreter.

The child prints one marked JSON line (``GPUDOCTOR-SMOKE-JSON:``) with raw measurements per
visible GPU: a memory block written and read back, matrix products in each dtype (the largest
difference to the CPU's float64 product), host<->device copy times, and with several GPUs an
NCCL all-reduce. A child without torch, with a CPU-only torch or whose CUDA does not start
says so in the same line; one that was killed at its timeout printed nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from gpudoctor.facts import Facts, Missing, NotApplicable, fact

KEY = "smoke_test"
MARKER = "GPUDOCTOR-SMOKE-JSON:"


@dataclass(frozen=True)
class Matmul:
    dtype: str                       # "fp32", "fp16", "bf16"
    max_abs_diff: Optional[float]    # max |gpu - cpu|; NaN when the GPU produced NaN
    max_abs_ref: Optional[float]     # max |cpu|
    skipped: Optional[str] = None    # "needs compute capability 8.0"
    error: Optional[str] = None      # "RuntimeError: CUDA error: ..."


@dataclass(frozen=True)
class SmokeDevice:
    index: int                       # torch's device index (after CUDA_VISIBLE_DEVICES)
    name: Optional[str]
    compute_cap: Optional[str]
    pci_bus_id: Optional[str]        # "0000:3b:00.0" (torch's properties), to match nvidia-smi's GPU
    uuid: Optional[str]              # "GPU-5e6f...", as nvidia-smi prints it (torch 2.0+)
    block_mib: Optional[int]
    block_ok: Optional[bool]         # the block read back what was written
    block_error: Optional[str]
    matmuls: Tuple[Matmul, ...]
    copy_bytes: Optional[int]
    h2d_s: Tuple[float, ...]         # seconds per host->device copy of copy_bytes
    d2h_s: Tuple[float, ...]
    pinned: Optional[bool]           # False: pinning was refused, pageable memory was used
    copy_error: Optional[str]


@dataclass(frozen=True)
class AllReduce:
    world: int                       # ranks = visible GPUs
    correct: Optional[bool]          # every rank saw the right sum
    bytes: Optional[int]
    seconds: Tuple[float, ...]       # rank 0's time per all-reduce
    error: Optional[str]             # the first rank's error
    timed_out: bool
    limit_s: Optional[float]


@dataclass(frozen=True)
class SmokeTest:
    python: str
    torch: Optional[str]             # "2.4.0+cu121"
    cuda_error: Optional[str]        # CUDA did not start: "RuntimeError: No CUDA GPUs are available"
    cuda_visible_devices: Optional[str]
    devices: Tuple[SmokeDevice, ...]
    allreduce: Optional[AllReduce]   # None with fewer than two GPUs
    duration_s: float


def _err(d: Any) -> Optional[str]:
    return f"{d.get('type')}: {d.get('message')}" if isinstance(d, dict) and d else None


def _device(d: Dict) -> SmokeDevice:
    block, copy = d.get("alloc") or {}, d.get("copy") or {}
    return SmokeDevice(
        d.get("index", 0), d.get("name"), d.get("compute_cap"), d.get("pci_bus_id"), d.get("uuid"), block.get("mib"),
        block.get("ok"), _err(block.get("error")),
        tuple(Matmul(m.get("dtype", "?"), m.get("max_abs_diff"), m.get("max_abs_ref"), m.get("skipped"),
                     _err(m.get("error"))) for m in d.get("matmul") or []),
        copy.get("bytes"), tuple(copy.get("h2d_s") or ()), tuple(copy.get("d2h_s") or ()), copy.get("pinned"),
        _err(copy.get("error")))


def _allreduce(d: Optional[Dict]) -> Optional[AllReduce]:
    if not d:
        return None
    ranks = d.get("ranks") or []
    errors = [_err(r.get("error")) for r in ranks if r.get("error")]
    first = ranks[0] if ranks else {}
    correct = all(r.get("correct") for r in ranks) if ranks and not errors else None
    return AllReduce(d.get("world", 0), correct, first.get("bytes"), tuple(first.get("seconds") or ()),
                     errors[0] if errors else None, bool(d.get("timed_out")), d.get("seconds_limit"))


def _payload(stdout: str) -> Optional[Dict]:
    lines = [ln for ln in stdout.splitlines() if ln.startswith(MARKER)]
    return json.loads(lines[-1][len(MARKER):]) if lines else None


@fact("smoke_test")
def smoke_test(f: Facts) -> SmokeTest:
    """The smoke test's measurements per GPU (check --deep, hook --smoke), in the job's interpreter."""
    res = f.snapshot.command(KEY)
    if res is None:
        raise Missing("the smoke test was not run (gpudoctor check --deep, or hook --smoke)")
    if res.timed_out:
        raise Missing(f"the smoke test did not finish within {res.duration_s:.0f}s (its processes were killed)")
    try:
        data = _payload(res.stdout) if res.ran else None
    except json.JSONDecodeError:
        data = None
    python = res.argv[0] if res.argv else "python"
    if data is None:
        tail = (res.stderr.strip().splitlines() or [""])[-1][:300]
        raise Missing(f"the smoke test in {python} ended without a result ({res.describe()}){': ' + tail if tail else ''}")
    if data.get("torch_error"):
        raise NotApplicable(f"torch cannot be imported in {python} ({_err(data['torch_error'])}): no GPU test to run")
    if not data.get("cuda_build"):
        raise NotApplicable(f"torch {data.get('torch')} in {python} is a CPU-only build: no GPU to test")
    return SmokeTest(python, data.get("torch"), _err(data.get("cuda_error")), data.get("cuda_visible_devices"),
                     tuple(_device(d) for d in data.get("devices") or []), _allreduce(data.get("nccl")),
                     res.duration_s)
