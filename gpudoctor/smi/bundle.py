"""Multi-command captures: one file holding several nvidia-smi outputs under `#` headers.

Capturing scripts (nvidia_gpu_exporter's captures, support scripts) write each command
under a `# $ nvidia-smi -q` style header, often twice (idle, then under load). The
sections are merged into one report by one rule:

* the GPUs come from the FIRST section of the richest format (XML, then `-q`, then the
  table, CSV, `-L`) - for a capture that is the idle phase;
* every other section, richest first, only fills values still missing on the GPU it
  matches (by UUID, then bus id, then index) - e.g. MIG profile names and MIG UUIDs from
  `-L`, `compute_cap` from CSV, the full name behind a table's `NVIDIA GeForce RTX 2080 ...`;
* processes come from that same first section; warnings and errors from all sections.
"""

import re
from dataclasses import fields, replace
from typing import Dict, List, Optional, Sequence, Tuple

from .model import SmiGpu, SmiMigDevice, SmiReport
from .values import bus_key, to_version

MAX_SAME_INDEX = 16
RANK = {"xml": 0, "query": 1, "table": 2, "csv": 3, "list": 4, "error": 5}
_GPU_FIELDS = [f.name for f in fields(SmiGpu) if f.name not in ("mig_devices", "name")]
_MIG_FIELDS = [f.name for f in fields(SmiMigDevice)]


def split_sections(text: str) -> List[Tuple[str, str]]:
    """(header, body) pairs; a header is a run of lines starting with `#`."""
    sections: List[Tuple[str, str]] = []
    header: List[str] = []
    body: List[str] = []
    for line in text.splitlines():
        if line.startswith("#"):
            if body:
                sections.append(("\n".join(header), "\n".join(body) + "\n"))
                header, body = [], []
            header.append(line)
        else:
            body.append(line)
    if body:
        sections.append(("\n".join(header), "\n".join(body) + "\n"))
    return [(h, b) for h, b in sections if b.strip()]


def versions(text: str) -> Dict[str, Optional[str]]:
    """`nvidia-smi --version`: `DRIVER version : 590.48.01`, `CUDA Version : 13.1`;
    610 prints `DRIVER version : Deprecated, see "KMD version" instead`."""
    found = {}
    for key, label in (("driver_version", "DRIVER version"), ("cuda_version", "CUDA version"),
                       ("kmd_version", "KMD version"), ("umd", "CUDA UMD version")):
        match = re.search(r"^%s\s*:\s*(.+)$" % label, text, re.MULTILINE | re.IGNORECASE)
        found[key] = to_version(match.group(1)) if match else None
    return found


class _Index:
    """Where each GPU of the merged list is, by UUID, bus id and index: matching a section's
    GPU is a lookup, not a scan (two `-L` sections of 5,000 GPUs took 50 s)."""

    def __init__(self):
        self.uuid: Dict[str, int] = {}
        self.bus: Dict[str, int] = {}
        self.index: Dict[int, List[int]] = {}

    def add(self, at: int, gpu: SmiGpu) -> None:
        uuid, bus, index = _keys(gpu)
        for table, key in ((self.uuid, uuid), (self.bus, bus)):
            if key is not None:
                table[key] = min(at, table.get(key, at))  # the first GPU in list order wins
        if index is not None and at not in self.index.setdefault(index, []):
            self.index[index].append(at)
            self.index[index].sort()

    def match(self, gpus: List[SmiGpu], gpu: SmiGpu) -> Optional[int]:
        uuid, bus, index = _keys(gpu)
        for table, key in ((self.uuid, uuid), (self.bus, bus)):
            if key is not None and key in table:
                return table[key]
        # An index matches only where the UUIDs do not contradict it; a few candidates are
        # looked at (real captures repeat an index once per section, not thousands of times).
        for at in self.index.get(index, [])[:MAX_SAME_INDEX]:
            if not (gpus[at].uuid and gpu.uuid and gpus[at].uuid != gpu.uuid):
                return at
        return None


def _keys(gpu: SmiGpu) -> Tuple[Optional[str], Optional[str], Optional[int]]:
    return gpu.uuid, bus_key(gpu.pci_bus_id), gpu.index


def _fill(base, extra, names: Sequence[str]):
    missing = {n: getattr(extra, n) for n in names
               if getattr(base, n) is None and getattr(extra, n) is not None}
    return replace(base, **missing) if missing else base


def _merge_migs(base: Tuple[SmiMigDevice, ...], extra: Tuple[SmiMigDevice, ...]) -> Tuple[SmiMigDevice, ...]:
    if not base:
        return extra
    by_index = {m.mig_index: m for m in extra if m.mig_index is not None}
    return tuple(_fill(m, by_index[m.mig_index], _MIG_FIELDS) if m.mig_index in by_index else m
                 for m in base)


def _merge_gpu(base: SmiGpu, extra: SmiGpu) -> SmiGpu:
    merged = _fill(base, extra, _GPU_FIELDS)
    name = merged.name
    if extra.name and (name is None or (name.endswith("...") and extra.name.startswith(name[:-3].rstrip()))):
        name = extra.name  # tables cut long names: "NVIDIA GeForce RTX 2080 ..."
    return replace(merged, name=name, mig_devices=_merge_migs(base.mig_devices, extra.mig_devices))


def merge(reports: Sequence[SmiReport], version_text: str = "") -> SmiReport:
    """One report from the sections' reports (in file order), by the rule above."""
    ordered = sorted(reports, key=lambda r: RANK.get(r.format, 9))  # stable: file order kept
    gpus, index = [], _Index()
    for gpu in ordered[0].gpus:
        index.add(len(gpus), gpu)
        gpus.append(gpu)
    for report in ordered[1:]:
        for gpu in report.gpus:
            at = index.match(gpus, gpu)
            if at is None:
                index.add(len(gpus), gpu)
                gpus.append(gpu)
            else:
                gpus[at] = _merge_gpu(gpus[at], gpu)
                index.add(at, gpus[at])  # the merged GPU may now have a UUID or bus id to match by
    top = versions(version_text)
    top["cuda_version"] = top.pop("umd") or top["cuda_version"]
    top["driver_version"] = top["kmd_version"] or top["driver_version"]

    def first(name: str):
        return next((getattr(r, name) for r in ordered if getattr(r, name) is not None), top.get(name))

    return SmiReport(
        format="bundle", driver_version=first("driver_version"), cuda_version=first("cuda_version"),
        attached_gpus=first("attached_gpus"), gpus=tuple(gpus), processes=ordered[0].processes,
        warnings=_union(r.warnings for r in reports), errors=_union(r.errors for r in reports),
        kmd_version=first("kmd_version"))


def _union(groups) -> Tuple[str, ...]:
    seen: Dict[str, None] = {}  # ordered set
    for group in groups:
        seen.update(dict.fromkeys(group))
    return tuple(seen)
