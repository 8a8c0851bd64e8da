"""nvcc's host compiler: every CUDA release refuses a gcc newer than the ones it was tested with."""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, ok, warn
from gpudoctor.recipes import recipe


@check("CUDA004", "host-compiler", "nvcc accepts the host gcc", needs=("host_gcc", "nvcc_gcc_max"))
def host_compiler(f: Facts):
    """The gcc on PATH against the limit in the build toolkit's crt/host_config.h: a newer gcc stops every
    CUDA build (extensions, pip installs that compile) with 'unsupported GNU version'."""
    gcc, limit = f["host_gcc"], f["nvcc_gcc_max"]
    label, top = f"CUDA {limit.toolkit.version or '(version unknown)'}", limit.gcc_max
    ev = [Evidence("command:gcc_version", gcc.line),
          Evidence(limit.source, f"gcc versions later than {top} are not supported")]
    if gcc.major <= top:
        return ok(f"gcc {gcc.version}; {label} accepts gcc up to {top}", evidence=ev)
    return warn(f"gcc {gcc.version} is newer than {label} accepts (gcc {top} or older): building CUDA code "
                "fails with 'unsupported GNU version'",
                detail="Only builds are affected (CUDA extensions, packages compiled at install time); running "
                       "prebuilt CUDA programs works.",
                evidence=ev, fix=recipe("cuda_host_compiler", f, gcc_max=top))


CHECKS = (host_compiler,)
