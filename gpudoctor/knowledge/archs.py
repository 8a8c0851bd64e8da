"""Does a build's GPU code run on a device?  Rules read from ``data/arch_rules.json``.

Arch strings are accepted the way tools print them: torch's ``get_arch_list()``
("sm_80", "compute_90", "sm_90a"), TF's build info ("sm_89", "compute_90") and
TORCH_CUDA_ARCH_LIST entries ("8.0", "12.0+PTX").
"""
from __future__ import annotations

import re
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

from ._load import load, major_minor, parse_version

CC = Tuple[int, int]
_NVCC = re.compile(r"^(sm|compute)_(\d)(\d+)?([af]?)$")  # sm_90a; sm_120 -> 12.0
_DOTTED = re.compile(r"^(\d+)\.(\d)(\+ptx)?$")


class Arch(NamedTuple):
    kind: str  # "sass" or "ptx"
    cc: CC
    suffix: str = ""


def parse_compute_cap(cc: Union[str, Sequence[int]]) -> CC:
    """"8.6" or (8, 6) -> (8, 6); anything else is a ValueError."""
    if isinstance(cc, (tuple, list)) and len(cc) == 2 and all(isinstance(x, int) for x in cc):
        return int(cc[0]), int(cc[1])
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", str(cc))
    if not m:
        raise ValueError(f"not a compute capability: {cc!r} (expected e.g. '8.6')")
    return int(m.group(1)), int(m.group(2))


def parse_arch(text: str) -> List[Arch]:
    """One arch string -> the code objects it stands for ("8.0+PTX" is SASS and PTX)."""
    s = text.strip().lower()
    m = _NVCC.match(s)
    if m:
        digits = m.group(2) + (m.group(3) or "")
        if len(digits) < 2:
            raise ValueError(f"not a GPU arch: {text!r}")
        cc = (int(digits[:-1]), int(digits[-1]))
        return [Arch("sass" if m.group(1) == "sm" else "ptx", cc, m.group(4))]
    m = _DOTTED.match(s)
    if m:
        cc = (int(m.group(1)), int(m.group(2)))
        return [Arch("sass", cc)] + ([Arch("ptx", cc)] if m.group(3) else [])
    raise ValueError(f"not a GPU arch: {text!r} (expected e.g. 'sm_80', 'compute_90', '8.6')")


def _integrated() -> dict:
    return {parse_compute_cap(r["cc"]): [parse_compute_cap(c) for c in r["also_runs"]]
            for r in load("arch_rules")["integrated"]}


def _runs(arch: Arch, device: CC) -> bool:
    rules = load("arch_rules")
    match = rules["suffixes"].get(arch.suffix, {}).get("match", "plain")
    if match == "exact":
        return arch.cc == device
    if arch.kind == "ptx":
        return device >= arch.cc
    integrated = _integrated()
    if device in integrated or arch.cc in integrated:
        return arch.cc == device or arch.cc in integrated.get(device, [])
    return arch.cc[0] == device[0] and arch.cc[1] <= device[1]


def arch_covers(arch_list: Iterable[str], compute_cap: Union[str, Sequence[int]]) -> bool:
    """True if any entry of arch_list yields code that runs on a device of compute_cap."""
    device = parse_compute_cap(compute_cap)
    return any(_runs(arch, device) for text in arch_list for arch in parse_arch(text))


def toolkit_supports_cc(cuda: str, compute_cap: Union[str, Sequence[int]]) -> Optional[bool]:
    """Can this CUDA toolkit's nvcc compile for that CC? None if the CC is not in the table."""
    want = major_minor(parse_version(cuda, "CUDA version"))
    device = parse_compute_cap(compute_cap)
    for row in load("arch_rules")["toolkit_targets"]:
        if parse_compute_cap(row["cc"]) != device:
            continue
        first = row["first_cuda"] and major_minor(parse_version(row["first_cuda"], "CUDA version"))
        last = row["last_cuda"] and major_minor(parse_version(row["last_cuda"], "CUDA version"))
        return (not first or want >= first) and (not last or want <= last)
    return None
