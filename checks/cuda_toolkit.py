"""CUDA toolkit checks: does the driver run each installed toolkit, and do the lookups agree on one?"""

from __future__ import annotations

from typing import List, Optional, Sequence

from packaging.version import Version

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.cuda import Toolkit
from gpudoctor.facts.cuda_paths import Pick, default_toolkit
from gpudoctor.facts.driver import DriverForCuda
from gpudoctor.findings import Evidence, fail, ok, warn
from gpudoctor.knowledge import max_cuda_for_driver, min_driver_for_cuda, toolkit_driver
from gpudoctor.recipes import recipe


def _driver_verdict(t: Toolkit, driver: str, os: str):
    """("ok" | "warn" | "fail", minimum requirement, the toolkit's own driver) for one toolkit."""
    need = min_driver_for_cuda(t.version, os)
    own = toolkit_driver(t.version, os)
    if need is None:
        return None, None, own
    if Version(driver) < Version(need.min_driver):
        return "fail", need, own
    if own is not None and Version(driver) < Version(own.min_driver):
        return "warn", need, own
    return "ok", need, own


def _toolkit_finding(f: Facts, t: Toolkit, verdict: str, need, own, driver: DriverForCuda, selected: bool):
    have, os = driver.version, driver.os
    most = max_cuda_for_driver(have, os) or f.get("cuda_driver_max") or "?"
    wanted = own.min_driver if own else need.min_driver
    ev = [Evidence(t.source, t.label()), Evidence(driver.source, f"driver {have} (supports CUDA up to {most})")]
    rule = (f"CUDA {t.version} needs driver >= {need.min_driver} "
            + ("(CUDA minor-version compatibility)" if need.rule == "minor-compat" else "(the driver it shipped with)")
            + (f" and {own.min_driver} for all its features." if own and own.min_driver != need.min_driver else "."))
    values = dict(toolkit_version=t.version, toolkit_root=t.root, min_driver=need.min_driver, rule=need.rule,
                  toolkit_driver=own.min_driver if own else need.min_driver, driver_version=have,
                  cuda_driver_max=most, wanted_driver=wanted, wanted_branch=wanted.split(".")[0],
                  cuda_max_dashed=most.replace(".", "-"))
    fix = recipe("cuda_toolkit_too_new", f, **values)
    if verdict == "fail":
        make = fail if selected else warn
        return make(f"CUDA {t.version} at {t.root} needs driver >= {need.min_driver}; this machine has {have}",
                    detail=f"{rule} Nothing built with this toolkit can start on this driver "
                    "('CUDA driver version is insufficient for CUDA runtime version')."
                    + ("" if selected else " It is not the toolkit PATH, CUDA_HOME or /usr/local/cuda select."),
                    evidence=ev, fix=fix)
    return warn(f"CUDA {t.version} at {t.root} runs on driver {have} only through minor-version "
                f"compatibility; its PTX and newest features need driver {own.min_driver}",
                detail=f"{rule} Programs built with it start, but PTX it generates cannot be JIT-compiled "
                "by this driver (cudaErrorUnsupportedPtxVersion) and some new APIs are missing.",
                evidence=ev, fix=fix)


@check("CUDA001", "toolkit-driver", "the driver runs the installed CUDA toolkits",
       needs=("cuda_toolkits", "driver_for_cuda"))
def toolkit_driver_fit(f: Facts):
    """Each CUDA toolkit against the driver: below the minimum (minor-version compatibility for 11+,
    the toolkit's own driver for 10.x and older) fails; below the toolkit's own driver warns."""
    toolkits = [t for t in f["cuda_toolkits"] if t.version]
    driver = f["driver_for_cuda"]
    if not toolkits:
        return ok("no CUDA toolkit installed (framework wheels bring their own CUDA runtime)")
    chosen = default_toolkit(f)
    findings, fine = [], []
    for t in toolkits:
        verdict, need, own = _driver_verdict(t, driver.version, driver.os)
        if verdict in ("fail", "warn"):
            selected = chosen is None or t == chosen or len(toolkits) == 1
            findings.append(_toolkit_finding(f, t, verdict, need, own, driver, selected))
        elif verdict == "ok":
            fine.append(t)
    if findings:
        return findings
    names = ", ".join(f"{t.version} ({t.root})" for t in fine)
    return ok(f"driver {driver.version} runs CUDA {names}" if fine else "no CUDA toolkit of a known version",
              evidence=[Evidence(driver.source, f"driver {driver.version}")])


def _versions(picks: Sequence[Pick]) -> List[str]:
    return sorted({p.version for p in picks if p.version})


def _target(f: Facts) -> Optional[Toolkit]:
    """The toolkit to settle on: the one the user chose (CUDA_HOME, nvcc, /usr/local/cuda), else the newest."""
    chosen = default_toolkit(f)
    if chosen:
        return chosen
    toolkits = [t for t in f["cuda_toolkits"] if t.version]
    return toolkits[-1] if toolkits else None


def _cleaned(value: str, toolkits: Sequence[Toolkit], first: str) -> str:
    """``value`` (a PATH-like list) with every toolkit directory removed and ``first`` put in front."""
    keep = [e for e in value.split(":") if e and not any(t.owns(e.rstrip("/")) for t in toolkits)]
    return ":".join([first] + keep)


def _agreement(toolkits: Sequence[Toolkit], picks: Sequence[Pick]) -> str:
    """"2 CUDA toolkit(s): ...; nvcc on PATH and CUDA_HOME agree on CUDA 12.4"."""
    names = list(dict.fromkeys(p.what for p in picks))
    who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    agree = f"; {who} {'agree on' if len(names) > 1 else 'uses'} CUDA {_versions(picks)[0]}" if _versions(picks) else ""
    return f"{len(toolkits)} CUDA toolkit(s): {'; '.join(t.label() for t in toolkits)}{agree}"


@check("CUDA002", "toolkit-paths", "PATH, CUDA_HOME and LD_LIBRARY_PATH use one CUDA toolkit",
       needs=("cuda_toolkits", "cuda_picks"))
def toolkit_paths(f: Facts):
    """nvcc on PATH, CUDA_HOME/CUDA_PATH and the CUDA directories in LD_LIBRARY_PATH must name the same
    toolkit; a CUDA_HOME that is not a toolkit directory is a problem too."""
    toolkits, picks = f["cuda_toolkits"], [p for p in f["cuda_picks"] if p.what != "/usr/local/cuda"]
    ev = [Evidence(p.source, p.describe()) for p in f["cuda_picks"]]
    # Only a snapshot that recorded links can tell that a CUDA_HOME directory does not exist.
    dangling = [p for p in picks if p.what in ("CUDA_HOME", "CUDA_PATH") and p.toolkit is None and f.has("links")]
    disagree = len(_versions(picks)) > 1
    if not disagree and not dangling:
        return ok(_agreement(toolkits, picks) if toolkits else "no CUDA toolkit installed", evidence=ev)
    target = _target(f)
    if target is None:
        return warn("CUDA lookups point at toolkits that are not installed", evidence=ev)
    if disagree:
        title = "CUDA lookups disagree: " + ", ".join(f"{p.what} -> {p.version or '?'}" for p in picks)
        detail = "Builds would mix nvcc, headers and libraries of different CUDA releases."
    else:
        title = f"{dangling[0].what}={dangling[0].value} is not a CUDA toolkit directory"
        detail = ("Build tools that honour it (PyTorch C++/CUDA extensions, CMake, DeepSpeed) look for nvcc and "
                  "headers there and fail ('CUDA_HOME does not exist').")
    others = sorted({p.toolkit.root if p.toolkit else p.value for p in picks
                     if p.version != target.major_minor() or p in dangling})
    fix = recipe("cuda_toolkit_path", f, picks="; ".join(p.describe() for p in picks),
                 nvcc_release=next((p.version for p in picks if p.what == "nvcc on PATH"), None),
                 target_root=target.root, target_release=target.major_minor(),
                 path_value=_cleaned(f.env.get("PATH") or "", toolkits, f"{target.root}/bin"),
                 ld_value=_cleaned(f.env.get("LD_LIBRARY_PATH") or "", toolkits, f"{target.root}/lib64"),
                 other_roots=", ".join(others) or "other toolkits")
    return warn(title, detail=detail, evidence=ev, fix=fix)


CHECKS = (toolkit_driver_fit, toolkit_paths)
