"""GPU health that nvidia-smi reports: memory errors waiting for a reset, a corrupted infoROM."""

from __future__ import annotations

import re

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import recorded_smi_key, smi_key
from gpudoctor.findings import Evidence, fail, ok, skip, warn
from gpudoctor.recipes import recipe


def _memory_problems(g) -> list:
    """What a GPU's page-retirement, row-remapping and ECC fields say is wrong (None: not reported)."""
    out = []
    if g.retired_pages_pending:
        out.append("retired pages pending (applied at the next GPU reset)")
    if g.remapped_rows_pending:
        out.append("remapped rows pending (applied at the next GPU reset)")
    if g.ecc_uncorrected_volatile:
        out.append(f"{g.ecc_uncorrected_volatile} uncorrected ECC error(s) since the driver loaded")
    return out


@check("DRV003", "gpu-memory-errors", "no GPU memory errors waiting for a reset", needs=("smi",))
def gpu_memory_errors(f: Facts):
    """Pending page retirement (before A100), pending row remapping (A100+) and volatile uncorrected
    ECC errors, per GPU, from nvidia-smi."""
    report = f["smi"]
    findings = []
    for i, g in enumerate(report.gpus):
        problems = _memory_problems(g)
        if not problems:
            continue
        label = f"GPU {g.index if g.index is not None else i} ({g.name or 'unknown GPU'})"
        index = g.index if g.index is not None else i
        # NVIDIA's guidance for pending retirement / remapping is to drain the GPU and reset it: a
        # failure, so that `check` and the hook (which drains on it) say the same.
        findings.append(fail(f"{label}: {'; '.join(problems)}", subject=g.pci_bus_id,
                             detail="Bad GPU memory is only taken out of use at the next GPU reset; until then "
                                    "jobs can hit it and die with uncorrectable ECC errors.",
                             evidence=[Evidence(f"command:{smi_key(f)}", p) for p in problems],
                             fix=recipe("driver_gpu_memory_errors", f, gpu=label, gpu_index=index,
                                        what="; ".join(problems))))
    if findings:
        return findings
    reported = [g for g in report.gpus if (g.retired_pages_pending, g.remapped_rows_pending,
                                           g.ecc_uncorrected_volatile) != (None, None, None)]
    if not reported:
        return ok(f"{len(report.gpus)} GPU(s) report no memory-error counters (consumer GPUs and "
                  "this nvidia-smi output do not)")
    return ok(f"no pending page retirement, row remapping or uncorrected ECC errors on {len(reported)} GPU(s)")


@check("DRV004", "gpu-inforom", "GPU infoROMs are intact", needs=("smi_result",))
def gpu_inforom(f: Facts):
    """nvidia-smi warns 'infoROM is corrupted at gpu ...' (and exits 14) when a board's infoROM is damaged."""
    res = f["smi_result"]
    lines = [ln.strip() for ln in (res.stdout + "\n" + res.stderr).splitlines() if "inforom is corrupted" in ln.lower()]
    report = f.get("smi")
    seen = {_bare(ln) for ln in lines}  # the parser keeps the same warning without its "WARNING:" prefix
    lines += [w for w in (report.warnings if report else ()) if "inforom" in w.lower() and _bare(w) not in seen]
    if not lines and res.returncode != 14:
        if not res.ok:
            return skip(f"GPU infoROMs are intact: skipped, nvidia-smi did not answer ({res.describe()})")
        return ok("nvidia-smi prints no infoROM warning")
    key = recorded_smi_key(f)
    ev = [Evidence(f"command:{key}", ln) for ln in lines[:4]] or [Evidence(f"command:{key}", res.describe())]
    said = _bare(lines[0]) if lines else "nvidia-smi exited 14: a GPU's infoROM is corrupted"
    return warn(said,
                detail="The infoROM keeps the board's ECC and page-retirement records; while it is corrupted they "
                       "are lost. The GPU may keep working, but it needs the vendor's repair or an RMA.",
                evidence=ev, fix=recipe("driver_inforom_corrupted", f))


def _bare(line: str) -> str:
    return re.sub(r"^WARNING:\s*", "", line.strip()).rstrip(".")


@check("DRV006", "row-remap-failure", "no GPU has run out of spare memory rows", needs=("smi",))
def row_remap_failure(f: Facts):
    """nvidia-smi's "Remapping Failure Occurred" (A100 and later): a bad memory row found no spare row.
    Unlike a pending remapping (DRV003) a reset does not cure it: the board needs replacing."""
    report = f["smi"]
    failed = [(g.index if g.index is not None else i, g) for i, g in enumerate(report.gpus) if g.remapped_rows_failure]
    if failed:
        return [fail(f"GPU {i} ({g.name or 'unknown GPU'}): row remapping failed, no spare memory rows left",
                     subject=g.pci_bus_id, family="xid_or_hardware",
                     detail="A memory row went bad and could not be replaced; resets do not help and jobs on this "
                            "GPU can hit uncorrectable memory errors.",
                     evidence=[Evidence(f"command:{smi_key(f)}", "Remapping Failure Occurred: Yes")],
                     fix=recipe("gpu_replace_board", f, gpu=f"GPU {i} ({g.name or 'unknown GPU'})", gpu_index=i))
                for i, g in failed]
    reported = [g for g in report.gpus if g.remapped_rows_failure is not None]
    if not reported:
        return skip("row remapping: no GPU reports it (A100 and later do, in nvidia-smi -q and -q -x)")
    return ok(f"no row remapping failure on {len(reported)} GPU(s)")


CHECKS = (gpu_memory_errors, gpu_inforom, row_remap_failure)
