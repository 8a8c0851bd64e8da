"""Which CUDA toolkit each lookup picks: nvcc on PATH, CUDA_HOME/CUDA_PATH, LD_LIBRARY_PATH, /usr/local/cuda."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from gpudoctor.facts import Facts, fact
from gpudoctor.facts.cuda import Toolkit, nvcc_on_path, real_path

_PATH_VERSION = re.compile(r"cuda-(\d+\.\d+)(?:/|$)")


@dataclass(frozen=True)
class Pick:
    """One way of finding CUDA and what it finds: ("nvcc on PATH", "/usr/local/cuda-11.8/bin/nvcc", ...)."""

    what: str                  # "nvcc on PATH", "CUDA_HOME", "LD_LIBRARY_PATH", "/usr/local/cuda"
    value: str                 # the path as the user set it
    source: str                # evidence source: "env:CUDA_HOME", "command:nvcc_version", ...
    toolkit: Optional[Toolkit]
    version: Optional[str]     # major.minor the pick means, even without a known toolkit

    def describe(self) -> str:
        said = self.what if self.value in (self.what, "nvcc") else f"{self.what} {self.value}"
        return f"{said} -> " + (self.toolkit.label() if self.toolkit else
                                f"CUDA {self.version}" if self.version else "no toolkit found")


def toolkit_for(toolkits: Sequence[Toolkit], snapshot, path: str) -> Optional[Toolkit]:
    real = real_path(snapshot, path)
    return next((t for t in toolkits if t.owns(real) or t.owns(path)), None)


def _pick(what, value, source, toolkit, version=None) -> Pick:
    m = _PATH_VERSION.search(value)
    return Pick(what, value, source, toolkit, (toolkit.major_minor() if toolkit else None) or version
                or (m.group(1) if m else None))


def _nvcc_pick(f: Facts, toolkits: Sequence[Toolkit]) -> Optional[Pick]:
    nvcc = f.get("nvcc")
    where = nvcc_on_path(f)
    if not nvcc and not where:
        return None
    toolkit = toolkit_for(toolkits, f.snapshot, where.path) if where else None
    if toolkit is None and nvcc:
        same = [t for t in toolkits if t.major_minor() == nvcc.release]
        toolkit = same[0] if len(same) == 1 else None
    value = where.path if where else "nvcc"
    return _pick("nvcc on PATH", value, "command:nvcc_version", toolkit, nvcc.release if nvcc else None)


@fact("cuda_picks")
def cuda_picks(f: Facts) -> Tuple[Pick, ...]:
    """What nvcc on PATH, CUDA_HOME/CUDA_PATH, each CUDA entry of LD_LIBRARY_PATH and /usr/local/cuda
    resolve to. Always present (empty when none of them is set or recorded)."""
    toolkits = f.get("cuda_toolkits") or ()
    picks: List[Pick] = []
    nvcc = _nvcc_pick(f, toolkits)
    if nvcc:
        picks.append(nvcc)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = f.env.get(var)
        if value:
            picks.append(_pick(var, value, f"env:{var}", toolkit_for(toolkits, f.snapshot, value.rstrip("/"))))
    for entry in (f.env.get("LD_LIBRARY_PATH") or "").split(":"):
        toolkit = toolkit_for(toolkits, f.snapshot, entry.rstrip("/")) if entry.startswith("/") else None
        if toolkit or _PATH_VERSION.search(entry):
            picks.append(_pick("LD_LIBRARY_PATH", entry, "env:LD_LIBRARY_PATH", toolkit))
    default = next((t for t in toolkits if "/usr/local/cuda" in t.aliases or t.root == "/usr/local/cuda"), None)
    if default:
        picks.append(_pick("/usr/local/cuda", "/usr/local/cuda", "listing:/usr/local", default))
    return tuple(picks)


def default_toolkit(f: Facts) -> Optional[Toolkit]:
    """The toolkit a build uses unless told otherwise: CUDA_HOME, else nvcc's, else /usr/local/cuda,
    else the only one installed."""
    picks = f.get("cuda_picks") or ()
    for what in ("CUDA_HOME", "CUDA_PATH", "nvcc on PATH", "/usr/local/cuda"):
        found = next((p.toolkit for p in picks if p.what == what and p.toolkit), None)
        if found:
            return found
    toolkits = f.get("cuda_toolkits") or ()
    return toolkits[0] if len(toolkits) == 1 else None
