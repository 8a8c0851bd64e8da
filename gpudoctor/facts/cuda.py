"""Facts about CUDA toolkits and cuDNN installed on the machine."""

from __future__ import annotations

import re
from typing import Dict

from gpudoctor.facts import Facts, Missing, fact


@fact("nvcc")
def nvcc(f: Facts) -> Dict[str, str]:
    """The nvcc on PATH and its CUDA release (nvcc --version)."""
    res = f.snapshot.command("nvcc_version")
    if res is None:
        raise Missing("nvcc --version was not recorded")
    if not res.ok:
        raise Missing(res.describe())
    m = re.search(r"release (\d+\.\d+), V([\d.]+)", res.stdout)
    if not m:
        raise Missing("nvcc --version printed no release number")
    return {"release": m.group(1), "version": m.group(2)}
