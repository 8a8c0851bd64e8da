"""PyTorch build checks: CUDA or CPU wheel, driver new enough, kernels for the GPU, CUDA usable."""

from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from packaging.version import InvalidVersion, Version

from gpudoctor import knowledge
from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.frameworks import RaisedError
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, fail, ok, skip, unknown
from gpudoctor.framework_fixes import driver_older_than, knowledge_os, min_driver
from gpudoctor.knowledge.framework_runtime import init_error_cause
from gpudoctor.recipes import recipe
from gpudoctor.remedies import torch_archs, torch_ways, uncovered
from gpudoctor_checks.torch_fixes import arch_fix, driver_fix, python, sm

EV = "framework:torch"


def _build_line(tb) -> str:
    if tb.hip:
        return f"torch {tb.version}: torch.version.hip = {tb.hip} (a ROCm build)"
    archs = f", compiled for {' '.join(tb.arch_list)}" if tb.arch_list else ""
    return f"torch {tb.version}: torch.version.cuda = {tb.cuda!r}{archs}"


def _driver(f: Facts):
    """The driver version nvidia-smi or NVML answered with, or None."""
    driver = f.get("driver_version")
    return driver.version if driver else None


@check("TRC001", "torch-cuda-build", "PyTorch is a CUDA build", needs=("torch_build",))
def torch_cuda_build(f: Facts):
    """A CPU-only (or ROCm) torch wheel on a machine with an NVIDIA GPU cannot use the GPU."""
    tb = f["torch_build"]
    if not tb.cpu_only and not tb.hip:
        return ok(f"torch {tb.version} is built for CUDA {tb.cuda}", evidence=[Evidence(EV, _build_line(tb))])
    kind = "ROCm (AMD) build" if tb.hip else "CPU-only build"
    gpu = f.get("nvidia_gpu_present")
    if gpu is None or not gpu.present:
        why = "there is no GPU" if gpu is not None else "gpudoctor found no sign of a GPU"
        return ok(f"torch {tb.version}, {kind}; fine, {why}", evidence=[Evidence(EV, _build_line(tb))])
    ev = [Evidence(EV, _build_line(tb)), Evidence(gpu.source, gpu.evidence)]
    if tb.init_error:
        ev.append(Evidence(EV, f"torch.cuda.init(): {tb.init_error.type}: {tb.init_error.message}"))
    return fail(f"torch {tb.version} is a {kind}, but this machine has {gpu.count} NVIDIA GPU(s)",
                subject=f"torch {tb.version}",
                detail="torch.cuda.is_available() is False and .cuda() raises \"Torch not compiled with CUDA "
                       "enabled\": the wheel has no GPU code.",
                evidence=ev, fix=recipe("torch_cpu_build", f))


@check("TRC002", "torch-driver", "NVIDIA driver is new enough for torch's CUDA",
       needs=("torch_build", "driver_version"))
def torch_driver(f: Facts):
    """torch's CUDA (torch.version.cuda) needs a minimum driver (CUDA minor-version compatibility)."""
    tb = f["torch_build"]
    if not tb.cuda:
        return skip(f"torch {tb.version} has no CUDA, so it needs no NVIDIA driver")
    os = knowledge_os(f.get("target_os"))
    driver = f["driver_version"]
    have = driver.version
    try:
        need = knowledge.min_driver_for_cuda(tb.cuda, os)
        supports = f.get("cuda_driver_max") or knowledge.max_cuda_for_driver(have, os) or "?"
        Version(have)
    except (ValueError, InvalidVersion):
        return skip(f"driver {have!r} or CUDA {tb.cuda!r} is not a version gpudoctor can compare")
    if need is None:
        return skip(f"gpudoctor does not know which driver CUDA {tb.cuda} needs")
    ev = [Evidence(driver.source, f"driver {have}, supports CUDA up to {supports}"),
          Evidence(EV, _build_line(tb))]
    if Version(have) >= Version(need.min_driver):
        return ok(f"driver {have} runs torch {tb.version} (CUDA {tb.cuda} needs >= {need.min_driver})",
                  evidence=ev)
    if tb.init_error:
        ev.append(Evidence(EV, f"torch.cuda.init(): {tb.init_error.message.splitlines()[0]}"))
    title = (f"driver {have} supports CUDA up to {supports}; torch {tb.version} needs at least "
             f"{need.min_driver}")
    detail = ("CUDA initialisation fails with \"The NVIDIA driver on your system is too old\": torch "
              "cannot use the GPU until the driver is upgraded or torch is built for an older CUDA.")
    gpus = [g for g in f.get("gpus") or () if g.compute_cap]
    missing = uncovered(gpus, torch_archs(tb, os))
    if missing:  # a newer driver cannot add kernels: the binding problem is TRC003's, and so is the fix
        return fail(title, subject=f"torch {tb.version}", evidence=ev, symptom_of=("TRC003",),
                    detail=detail + " A newer driver would not help: the wheel also has no kernels for "
                                    f"{missing[0].name} (TRC003).", fix=arch_fix(f, tb, missing[0]))
    return fail(title, subject=f"torch {tb.version}", detail=detail, evidence=ev,
                fix=driver_fix(f, tb, need.min_driver))


@check("TRC003", "torch-arch", "torch has kernels for each GPU", needs=("torch_build", "gpus"))
def torch_arch(f: Facts):
    """Each GPU's compute capability must be covered by torch.cuda.get_arch_list() (SASS or PTX)."""
    tb = f["torch_build"]
    if not tb.cuda:
        return skip(f"torch {tb.version} has no CUDA kernels")
    archs = torch_archs(tb, knowledge_os(f.get("target_os")))
    if archs is None:
        return unknown(f"torch {tb.version} did not report its compiled architectures (CUDA unavailable) and "
                       "gpudoctor's release table does not know this build")
    gpus = [g for g in f["gpus"] if g.compute_cap]
    if not gpus:
        return unknown("no GPU's compute capability is known (nvidia-smi, NVML and the name table are silent)")
    ev_archs = Evidence(EV, f"torch {tb.version} compiled for {' '.join(archs.archs)} (from {archs.source})")
    missing = uncovered(gpus, archs)
    if not missing:
        caps = ", ".join(sorted({sm(g.compute_cap) for g in gpus}))
        return ok(f"torch {tb.version} has kernels for {caps}", evidence=[ev_archs])
    source = f"command:{smi_key(f)}" if f.has("smi") else "nvml:devices"
    ev = [Evidence(source, f"{g.label()}: compute capability {g.compute_cap} ({sm(g.compute_cap)})")
          for g in missing] + [ev_archs]
    ev += [Evidence(EV, w.strip().splitlines()[0]) for w in tb.warnings if "not compatible" in w][:1]
    names = ", ".join(sorted({f"{g.name} ({sm(g.compute_cap)})" for g in missing}))
    return fail(f"{names}: no kernels in torch {tb.version}, built for {' '.join(archs.archs)}",
                subject=f"torch {tb.version}",
                detail="Every CUDA operation fails with \"no kernel image is available for execution on the "
                       "device\"; torch warns \"... is not compatible with the current PyTorch installation\"."
                       + ("" if tb.arch_list else " torch lists no architectures while CUDA is unavailable, so "
                                                  "the list comes from gpudoctor's release table."),
                evidence=ev, fix=arch_fix(f, tb, missing[0]))


# Checks whose problem, when one is found, explains torch.cuda.is_available() being False (most
# telling first: torch's own message may point at one of them).
UNAVAILABLE_CAUSES = ("TRC003", "TRC002", "TRC001", "DRV001", "DRV002", "CVD001", "CTR001", "CTR002",
                      "WSL001", "WSL002", "NOU001", "SEC001")


def first_sentence(message: str, limit: int = 160) -> str:
    """"The NVIDIA driver ... too old (found version 11070). Please update ..." -> its first sentence."""
    coded = re.search(r"Error \d+: [^.\n]+", message)  # cudaGetDeviceCount()'s "Error 804: ..." says it all
    line = coded.group(0) if coded else (message.strip().splitlines() or [""])[0]
    cut = re.split(r"(?<=[.!?])\s+(?=[A-Z])", line, maxsplit=1)[0]
    return cut if len(cut) <= limit else cut[:limit - 3] + "..."


@check("TRC004", "torch-cuda-available", "torch.cuda.is_available()", needs=("torch_build",))
def torch_cuda_available(f: Facts):
    """When torch has CUDA but is_available() is False, show torch's own exception and its likely cause."""
    tb = f["torch_build"]
    if not tb.cuda:
        return skip(f"torch {tb.version} is not a CUDA build (TRC001)")
    if tb.available:
        counts = Counter(d.name or "?" for d in tb.devices)
        names = ", ".join(f"{n} x {k}" if n > 1 else k for k, n in counts.items()) or "no device details"
        return ok(f"torch.cuda.is_available() is True, {tb.device_count} GPU(s): {names}",
                  evidence=[Evidence(EV, f"cuda:{d.index} {d.name}, compute {d.capability}")
                            for d in tb.devices])
    gpu = f.get("nvidia_gpu_present")
    if gpu is not None and not gpu.present:
        return ok(f"torch {tb.version} has CUDA, but this machine has no NVIDIA GPU: it runs on the CPU")
    if gpu is not None and gpu.host_only:
        return fail(f"torch.cuda.is_available() is False: the host has {gpu.count} NVIDIA GPU(s), but none was "
                    "passed into this container", subject=f"torch {tb.version}",
                    evidence=[Evidence(gpu.source, gpu.evidence), Evidence("listing:/dev", "no /dev/nvidia* device")],
                    symptom_of=("DRV001", "CTR001"), fix=recipe("no_device_in_container", f))
    if f.has("smi_result") and not f.has("smi"):
        return skip("the NVIDIA driver does not answer, which explains it (DRV001)")
    err = tb.init_error or RaisedError("?", "is_available() returned False without an exception")
    row = init_error_cause(err.message)
    cause = row["cause"] if row else "torch's message matches no cause gpudoctor knows"
    ev = [Evidence(EV, f"torch.cuda.init(): {err.type}: {err.message}"), Evidence(EV, _build_line(tb))]
    if f.env.get("LD_LIBRARY_PATH"):  # compat and stub libcuda copies come in this way
        ev.append(Evidence("env:LD_LIBRARY_PATH", f.env["LD_LIBRARY_PATH"]))
    points_to = (row or {}).get("points_to")
    elsewhere = points_to if points_to and _fails_there(f, tb, points_to) else None
    detail = f"Likely cause: {cause}." + (f" {elsewhere} has the details and the fix." if elsewhere else "")
    fix = None if elsewhere else _unavailable_fix(f, tb, row, cause)
    return fail(f"torch.cuda.is_available() is False: {first_sentence(err.message)}",
                family=None if fix is not None else "cuda_init_error_other",
                symptom_of=tuple(dict.fromkeys(([points_to] if points_to else []) + list(UNAVAILABLE_CAUSES))),
                subject=f"torch {tb.version}", detail=detail, evidence=ev, fix=fix)


def _unavailable_fix(f: Facts, tb, row: Optional[dict], cause: str):
    if row is None or row["recipe"] != "driver_too_old":
        return recipe(row["recipe"] if row else "torch_cuda_unavailable", f, cause=cause)
    need = min_driver(tb.cuda, knowledge_os(f.get("target_os")))
    fit = torch_ways(f, tb, None).build
    alt = (dict(alternative=f"install torch {fit.pin}+{fit.variant.name} (CUDA {fit.variant.cuda})",
                alternative_command=fit.install_command(python(f))) if fit else
           dict(alternative="install a torch build for an older CUDA (none in gpudoctor's table fits this machine)",
                alternative_command="# none known: see https://pytorch.org/get-started/previous-versions/"))
    return recipe("driver_too_old", f, min_driver=need, framework=f"torch {tb.version}", **alt)


def _fails_there(f: Facts, tb, check_id: str) -> bool:
    """Does the check this cause points to report it (so its fix need not be repeated here)?"""
    if check_id == "TRC002":
        need = min_driver(tb.cuda, knowledge_os(f.get("target_os")))
        return driver_older_than(_driver(f), need)
    if check_id == "CVD001":
        return f["visible_devices_spec"].is_set
    if check_id == "DRV001":
        return not f.has("smi")
    return False


CHECKS = (torch_cuda_build, torch_driver, torch_arch, torch_cuda_available)
