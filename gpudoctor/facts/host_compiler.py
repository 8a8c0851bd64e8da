"""Facts about nvcc's host compiler: the gcc on PATH and the newest gcc the build toolkit accepts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudoctor.facts import Facts, Missing, command_result, fact
from gpudoctor.facts.cuda import Toolkit
from gpudoctor.facts.cuda_paths import default_toolkit

_GCC_LINE = re.compile(r"\)\s+(\d+)\.(\d+)(?:\.(\d+))?")
_GCC_LIMIT = re.compile(r"unsupported GNU version! gcc versions later than (\d+) are not supported")


@dataclass(frozen=True)
class HostGcc:
    version: str    # "11.4.0"
    major: int      # 11
    line: str       # gcc --version's first line, quoted as evidence


@dataclass(frozen=True)
class NvccGccLimit:
    gcc_max: int        # the newest gcc major the toolkit accepts
    toolkit: Toolkit    # the toolkit builds use
    source: str         # "file:/usr/local/cuda-12.2/include/crt/host_config.h"


@fact("host_gcc")
def host_gcc(f: Facts) -> HostGcc:
    """The gcc nvcc calls by default, from `gcc --version`'s first line: "gcc (Ubuntu 11.4.0-1ubuntu1~22.04)
    11.4.0" (Debian, Ubuntu), "gcc (GCC) 13.2.1 20231011 (Red Hat 13.2.1-4)" (Fedora, RHEL)."""
    line = (command_result(f, "gcc_version").stdout.splitlines() or [""])[0]
    m = _GCC_LINE.search(line)
    if not m:
        raise Missing("gcc --version printed no version")
    return HostGcc(".".join(g for g in m.groups() if g is not None), int(m.group(1)), line.strip())


@fact("nvcc_gcc_max")
def nvcc_gcc_max(f: Facts) -> NvccGccLimit:
    """The newest gcc major version the toolkit a build uses accepts, as its crt/host_config.h states it:
    `#error -- unsupported GNU version! gcc versions later than 12 are not supported!` (CUDA 12.0-12.3)."""
    toolkit = default_toolkit(f)
    if toolkit is None:
        raise Missing("no CUDA toolkit that builds would use")
    path = toolkit.root.rstrip("/") + "/include/crt/host_config.h"
    m = _GCC_LIMIT.search(f.snapshot.text(path) or "")
    if not m:
        raise Missing(f"{path} was not recorded or names no gcc limit")
    return NvccGccLimit(int(m.group(1)), toolkit, f"file:{path}")
