"""Facts about system cuDNN installs: version headers and the libcudnn.so.N the loader finds."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from gpudoctor.facts import Facts, Missing, NotApplicable, fact
from gpudoctor.facts.cuda import real_path
from gpudoctor.facts.libraries import CachedLib, libs_named

HEADER_GLOBS = ("/usr/include/cudnn_version.h", "/usr/include/*-linux-gnu/cudnn_version*.h",
                "/usr/include/cudnn_version_v*.h", "*/include/cudnn_version.h")


def parse_cudnn_version_h(text: str) -> Optional[str]:
    """cudnn_version.h (cuDNN 8+): ``#define CUDNN_MAJOR 8`` / ``CUDNN_MINOR 9`` / ``CUDNN_PATCHLEVEL 7``."""
    parts = {}
    for key in ("MAJOR", "MINOR", "PATCHLEVEL"):
        m = re.search(rf"^\s*#\s*define\s+CUDNN_{key}\s+(\d+)", text or "", re.M)
        if not m:
            return None if key != "PATCHLEVEL" else f"{parts['MAJOR']}.{parts['MINOR']}"
        parts[key] = m.group(1)
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCHLEVEL']}"


@dataclass(frozen=True)
class CudnnHeader:
    version: str   # "8.9.7"
    path: str      # "/usr/local/cuda-12.2/include/cudnn_version.h"

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


def cudnn_headers(f: Facts) -> List[CudnnHeader]:
    """Each distinct cudnn_version.h recorded (an alternatives symlink and its target count once)."""
    seen: Dict[str, CudnnHeader] = {}
    for pattern in HEADER_GLOBS:
        for rec in f.snapshot.glob(pattern):
            version = parse_cudnn_version_h(rec.content)
            real = real_path(f.snapshot, rec.path)
            if version and real not in seen:
                seen[real] = CudnnHeader(version, rec.path)
    out, system_versions = [], set()
    for h in seen.values():  # without link records, identical /usr/include headers are one install
        if h.path.startswith("/usr/include/"):
            if h.version in system_versions:
                continue
            system_versions.add(h.version)
        out.append(h)
    return out


@dataclass(frozen=True)
class Cudnn:
    """System cuDNN installs: version headers and the libcudnn.so.N the loader finds."""

    headers: Tuple[CudnnHeader, ...]   # each distinct cudnn_version.h
    libs: Tuple[CachedLib, ...]        # libcudnn.so* entries of `ldconfig -p`
    lib_majors: Tuple[int, ...]        # the majors of those libraries (libcudnn.so.8 -> 8), sorted
    ldconfig_recorded: bool            # False: `ldconfig -p` was not recorded, so ``libs`` says nothing


@fact("cudnn")
def cudnn(f: Facts) -> Cudnn:
    """System cuDNN: version headers (CUDNN_MAJOR/MINOR/PATCHLEVEL) and libcudnn.so.N in `ldconfig -p`."""
    headers = cudnn_headers(f)
    cache = f.get("ldconfig")
    libs = tuple(libs_named(cache, "libcudnn.so")) if cache is not None else ()
    if not headers and not libs:
        why = "" if cache is not None else f" ({f.why_missing('ldconfig')})"
        raise NotApplicable("no system cuDNN found (no cudnn_version.h, no libcudnn.so.N in the loader cache"
                      f"{why}); pip wheels of torch and TensorFlow bring their own")
    majors = sorted({int(m.group(1)) for lib in libs for m in [re.match(r"libcudnn\.so\.(\d+)", lib.name)] if m})
    return Cudnn(tuple(headers), libs, tuple(majors), cache is not None)
