"""The fixes the torch checks print, each chosen against every fact of the machine (gpudoctor.remedies):
a newer driver only when it can help on every GPU, a build only when it runs on this driver, on
every GPU and on this Python, and "none fits" said plainly when nothing does."""

from __future__ import annotations

from gpudoctor.facts import Facts
from gpudoctor.framework_fixes import knowledge_os, min_driver, torch_fit
from gpudoctor.recipes import recipe
from gpudoctor.remedies import driver_blocked, torch_ways


def sm(cc: str) -> str:
    """"8.6" -> "sm_86" (how torch and nvcc name architectures)."""
    return "sm_" + cc.replace(".", "")


def python(f: Facts) -> str:
    return f.get("python_path") or "python"


def _build(fit, f: Facts):
    return (f"torch {fit.pin}+{fit.variant.name} (CUDA {fit.variant.cuda})", fit.install_command(python(f)))


def driver_fix(f: Facts, tb, need: str):
    """TRC002: the driver is older than torch's CUDA needs."""
    ways = torch_ways(f, tb, need)
    alt, cmd = (_build(ways.build, f) if ways.build else
                ("a torch build for an older CUDA (none in gpudoctor's table fits this driver, these GPUs and this Python)",
                 "# none known: see https://pytorch.org/get-started/previous-versions/"))
    if ways.driver_blocked:
        return recipe("framework_build_for_driver", f, min_driver=need, framework=f"torch {tb.version}",
                      blocked=ways.driver_blocked, alternative=alt, alternative_command=cmd)
    return recipe("driver_too_old", f, min_driver=need, framework=f"torch {tb.version}",
                  alternative=f"install {alt}" + (", which runs on it" if ways.build else ""), alternative_command=cmd)


def arch_fix(f: Facts, tb, gpu):
    """TRC003: no kernels for ``gpu``: a build that has them, on this driver if one exists."""
    values = dict(compute_cap=gpu.compute_cap, sm=sm(gpu.compute_cap), gpu_name=gpu.name)
    fit = torch_ways(f, tb, None).build
    if fit is not None:
        return recipe("arch_unsupported", f, **values, install=fit.install_command(python(f)),
                      advice=f"torch {fit.pin}+{fit.variant.name} (CUDA {fit.variant.cuda}) has kernels for it "
                             "and runs on this driver")
    os = knowledge_os(f.get("target_os"))
    ccs = [g.compute_cap for g in f.get("gpus") or () if g.compute_cap]
    other = torch_fit(tb.version, None, ccs, os, getattr(f.get("torch"), "python_version", None))
    need = min_driver(other.variant.cuda, os) if other is not None else None
    if other is not None and need and not driver_blocked(f.get("gpus") or (), need):
        return recipe("arch_unsupported", f, **values, install=other.install_command(python(f)),
                      advice=f"torch {other.pin}+{other.variant.name} has kernels for it but needs driver "
                             f">= {need}, so upgrade the driver too")
    return recipe("arch_unsupported", f, **values, install="# see https://github.com/pytorch/pytorch#from-source",
                  advice=f"no published torch build in gpudoctor's table has kernels for it and runs on a driver "
                         f"this GPU supports; build torch from source with TORCH_CUDA_ARCH_LIST={gpu.compute_cap}")
