"""The active smoke test (``check --deep``, ``hook --smoke``): compute, copies and NCCL, with numbers.

The child only measures; these checks judge with the tolerances and link rates in
``knowledge/data/smoke_test.json`` and ``pcie_links.json`` and the arithmetic in
``gpudoctor/measures.py``. Without torch, with a CPU-only torch or without a visible GPU the
checks skip and say why (the ``smoke_test`` fact decides the first two).
"""

from __future__ import annotations

from typing import List, Optional

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, Finding, fail, ok, skip
from gpudoctor.knowledge import node_health
from gpudoctor.measures import relative_error
from gpudoctor.recipes import recipe

EV = "command:smoke_test"
# A CUDA that will not start is what these checks explain, when they have a problem.
CUDA_CAUSES = ("DRV001", "TRC001", "TRC002", "TRC004", "CTR001")
HIDDEN = ("", "-1", "nodevfiles", "none", "void")


def no_gpu(f: Facts) -> Optional[Finding]:
    """The skip (no GPU visible to the job) or failure (CUDA does not start) before any GPU test."""
    test = f["smoke_test"]
    cvd = test.cuda_visible_devices
    if cvd is not None and cvd.strip().lower() in HIDDEN:
        return skip(f"smoke test: no GPU is visible to the job (CUDA_VISIBLE_DEVICES={cvd!r})")
    if test.cuda_error is None and test.devices:
        return None
    smi = f.get("smi")
    if test.cuda_error is None or smi is None or not smi.gpus:
        return skip(f"smoke test: no GPU here ({test.cuda_error or 'torch sees no CUDA device'})")
    return fail(f"CUDA does not start in {test.python}: {test.cuda_error[:120]}", family="cuda_init_error_other",
                symptom_of=CUDA_CAUSES, evidence=[Evidence(EV, test.cuda_error[:300])],
                detail=f"nvidia-smi lists {len(smi.gpus)} GPU(s), but torch {test.torch} cannot use them.",
                fix=recipe("cuda_init_error_other", f, cause=test.cuda_error[:200]))


def _compute_problems(d) -> List[str]:
    tolerance = {t.label: t.tolerance for t in node_health.smoke_dtypes()}
    out = []
    if d.block_error or d.block_ok is False:
        out.append(f"{d.block_mib} MiB block: {d.block_error or 'read back wrong values'}")
    for m in d.matmuls:
        if m.skipped:
            continue
        err = relative_error(m.max_abs_diff, m.max_abs_ref)
        if m.error:
            out.append(f"{m.dtype} matmul: {m.error[:120]}")
        elif err > tolerance.get(m.dtype, 0.05):
            out.append(f"{m.dtype} matmul differs from the CPU by {err:.2g} (tolerance {tolerance.get(m.dtype)})")
    return out


def _compute_summary(d) -> str:
    done = [f"{m.dtype} {relative_error(m.max_abs_diff, m.max_abs_ref):.1e}" for m in d.matmuls if not m.skipped]
    skipped = [m.dtype for m in d.matmuls if m.skipped]
    return (f"GPU {d.index} ({d.name}, cc {d.compute_cap}): {d.block_mib} MiB block ok; matmul error vs CPU "
            + ", ".join(done) + (f"; {'/'.join(skipped)} not supported" if skipped else ""))


@check("SMK001", "smoke-compute", "every GPU allocates memory and multiplies matrices like the CPU",
       needs=("smoke_test",), params=("smoke",))
def smoke_compute(f: Facts):
    """A memory block written and read back, and fp32/fp16/bf16 matrix products compared with the CPU's."""
    early = no_gpu(f)
    if early is not None:
        return early
    test, findings = f["smoke_test"], []
    for d in test.devices:
        problems = _compute_problems(d)
        if problems:
            label = f"GPU {d.index} ({d.name or 'unknown GPU'})"
            findings.append(fail(f"{label}: {problems[0]}", subject=d.pci_bus_id, family="gpu_smoke_failure",
                                 detail="; ".join(problems), evidence=[Evidence(EV, p) for p in problems],
                                 fix=recipe("gpu_smoke_failure", f, gpu=label, gpu_index=d.index,
                                            what="; ".join(problems))))
    if findings:
        return findings
    return ok(f"{len(test.devices)} GPU(s) computed like the CPU (fp32/fp16/bf16 where supported)",
              evidence=[Evidence(EV, _compute_summary(d)) for d in test.devices])


CHECKS = (smoke_compute,)
