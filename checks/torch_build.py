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
from gpudoctor.findings import Evidence, fail, ok, skip
from gpudoctor.framework_fixes import driver_older_than, knowledge_os, min_driver, torch_fit
from gpudoctor.knowledge.framework_runtime import init_error_cause
from gpudoctor.recipes import recipe

EV = "framework:torch"


def sm(cc: str) -> str:
    """"8.6" -> "sm_86" (how torch and nvcc name architectures)."""
    return "sm_" + cc.replace(".", "")


def _build_line(tb) -> str:
    if tb.hip:
        return f"torch {tb.version}: torch.version.hip = {tb.hip} (a ROCm build)"
    archs = f", compiled for {' '.join(tb.arch_list)}" if tb.arch_list else ""
    return f"torch {tb.version}: torch.version.cuda = {tb.cuda!r}{archs}"


def _python(f: Facts) -> str:
    return f.get("python_path") or "python"


def _driver(f: Facts):
    """The driver version nvidia-smi or NVML answered with, or None."""
    driver = f.get("driver_version")
    return driver.version if driver else None


def _fit(f: Facts, tb, any_driver: bool = False):
    driver = None if any_driver else _driver(f)
    ccs = [g.compute_cap for g in f.get("gpus") or () if g.compute_cap]
    return torch_fit(tb.version, driver, ccs, knowledge_os(f.get("target_os")))


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
    return fail(f"driver {have} supports CUDA up to {supports}; torch {tb.version} needs at least "
                f"{need.min_driver}", subject=f"torch {tb.version}",
                detail="CUDA initialisation fails with \"The NVIDIA driver on your system is too old\": torch "
                       "cannot use the GPU until the driver is upgraded or torch is built for an older CUDA.",
                evidence=ev, fix=_driver_fix(f, tb, need.min_driver))


def _driver_fix(f: Facts, tb, need: str):
    fit = _fit(f, tb)
    if fit is None:
        return recipe("driver_too_old", f, min_driver=need, framework=f"torch {tb.version}",
                      alternative="(no torch build in gpudoctor's table runs on this driver and GPU)",
                      alternative_command="# none known: upgrade the driver")
    return recipe("driver_too_old", f, min_driver=need, framework=f"torch {tb.version}",
                  alternative=f"install torch {fit.pin}+{fit.variant.name} (CUDA {fit.variant.cuda}), which runs "
                              "on it", alternative_command=fit.install_command(_python(f)))


@check("TRC003", "torch-arch", "torch has kernels for each GPU", needs=("torch_build", "gpus"))
def torch_arch(f: Facts):
    """Each GPU's compute capability must be covered by torch.cuda.get_arch_list() (SASS or PTX)."""
    tb = f["torch_build"]
    if not tb.cuda:
        return skip(f"torch {tb.version} has no CUDA kernels")
    if not tb.arch_list:
        return skip(f"torch {tb.version} did not report its compiled architectures")
    gpus = [g for g in f["gpus"] if g.compute_cap]
    if not gpus:
        return skip("no GPU's compute capability is known (nvidia-smi, NVML and the name table are silent)")
    missing = [g for g in gpus if not knowledge.arch_covers(tb.arch_list, g.compute_cap)]
    if not missing:
        caps = ", ".join(sorted({sm(g.compute_cap) for g in gpus}))
        return ok(f"torch {tb.version} has kernels for {caps}", evidence=[Evidence(EV, _build_line(tb))])
    source = f"command:{smi_key(f)}" if f.has("smi") else "nvml:devices"
    ev = [Evidence(source, f"{g.label()}: compute capability {g.compute_cap} ({sm(g.compute_cap)})")
          for g in missing] + [Evidence(EV, _build_line(tb))]
    ev += [Evidence(EV, w.strip().splitlines()[0]) for w in tb.warnings if "not compatible" in w][:1]
    names = ", ".join(sorted({f"{g.name} ({sm(g.compute_cap)})" for g in missing}))
    return fail(f"{names}: no kernels in torch {tb.version}, built for {' '.join(tb.arch_list)}",
                subject=f"torch {tb.version}",
                detail="Every CUDA operation fails with \"no kernel image is available for execution on the "
                       "device\"; torch warns \"... is not compatible with the current PyTorch installation\".",
                evidence=ev, fix=_arch_fix(f, tb, missing[0]))


def _arch_fix(f: Facts, tb, gpu):
    values = dict(compute_cap=gpu.compute_cap, sm=sm(gpu.compute_cap), gpu_name=gpu.name)
    fit = _fit(f, tb)
    if fit is not None:
        return recipe("arch_unsupported", f, **values, install=fit.install_command(_python(f)),
                      advice=f"torch {fit.pin}+{fit.variant.name} (CUDA {fit.variant.cuda}) has kernels for it "
                             "and runs on this driver")
    other = _fit(f, tb, any_driver=True)
    if other is not None:
        need = min_driver(other.variant.cuda, knowledge_os(f.get("target_os")))
        return recipe("arch_unsupported", f, **values, install=other.install_command(_python(f)),
                      advice=f"torch {other.pin}+{other.variant.name} has kernels for it but needs driver "
                             f">= {need}, so upgrade the driver too")
    return recipe("arch_unsupported", f, **values, install="# see https://github.com/pytorch/pytorch#from-source",
                  advice=f"no published torch build in gpudoctor's table has kernels for it; build torch from "
                         f"source with TORCH_CUDA_ARCH_LIST={gpu.compute_cap}")


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
                subject=f"torch {tb.version}", detail=detail, evidence=ev, fix=fix)


def _unavailable_fix(f: Facts, tb, row: Optional[dict], cause: str):
    if row is None or row["recipe"] != "driver_too_old":
        return recipe(row["recipe"] if row else "torch_cuda_unavailable", f, cause=cause)
    need = min_driver(tb.cuda, knowledge_os(f.get("target_os")))
    fit = _fit(f, tb)
    alt = (dict(alternative=f"install torch {fit.pin}+{fit.variant.name} (CUDA {fit.variant.cuda})",
                alternative_command=fit.install_command(_python(f))) if fit else
           dict(alternative="(no torch build in gpudoctor's table fits)", alternative_command="# none known"))
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
