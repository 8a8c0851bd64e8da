"""The one place ``gpudoctor memory`` reads the facts layer (the same facts ``check`` reads).

``read_machine(facts)`` turns the ``gpus``, ``gpu_processes`` and ``torch_build`` facts and the
recorded environment of a Snapshot (live via ``gpudoctor.probes`` or replayed via
``--snapshot``) into plain frozen values. Everything else in ``gpudoctor.memory`` works on
those values, so a change in how facts are typed is adapted here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class ProcessUse:
    gpu_index: Optional[int]
    pid: Optional[int]
    name: Optional[str]            # nvidia-smi's process name (the executable's path, often cut)
    type: Optional[str]            # "C" compute, "G" graphics, "C+G"
    used_mib: Optional[int]        # None under Windows WDDM


@dataclass(frozen=True)
class MachineGpu:
    index: int
    name: Optional[str]
    total_mib: Optional[int]
    used_mib: Optional[int]
    compute_cap: Optional[str]
    mig_mode: Optional[str]


@dataclass(frozen=True)
class Machine:
    gpus: Tuple[MachineGpu, ...]
    processes: Tuple[ProcessUse, ...]
    processes_known: bool          # False: the recorded nvidia-smi output has no process list
    why_no_gpus: Optional[str]     # the facts layer's reason when there is no inventory
    torch_version: Optional[str]
    torch_cuda: Optional[str]      # torch.version.cuda of the probed build
    module_loading: Optional[str]  # CUDA_MODULE_LOADING as recorded (LAZY / EAGER / unset)
    source: str                    # "live" or the snapshot's path

    def lazy_loading(self) -> Tuple[bool, str]:
        """Whether CUDA loads kernels lazily (CUDA >= 11.7 and not EAGER), and why gpudoctor thinks so."""
        if (self.module_loading or "").upper() == "EAGER":
            return False, "CUDA_MODULE_LOADING=EAGER"
        if self.torch_cuda:
            try:
                lazy = Version(self.torch_cuda) >= Version("11.7")
            except InvalidVersion:
                lazy = True
            return lazy, f"torch {self.torch_version} (CUDA {self.torch_cuda})"
        return True, "a current PyTorch build (assumed)"


def read_machine(facts) -> Machine:
    gpus = facts.get("gpus") or []
    procs = facts.get("gpu_processes")
    procs = _nvml_processes(facts) if procs is None else procs
    torch = facts.get("torch_build") if "torch" in facts.snapshot.frameworks else None
    return Machine(
        tuple(MachineGpu(g.index, g.name, g.memory_total_mib, g.memory_used_mib, g.compute_cap, g.mig_mode)
              for g in gpus),
        tuple(p if isinstance(p, ProcessUse) else ProcessUse(p.gpu_index, p.pid, p.name, p.type, p.used_memory_mib)
              for p in procs or ()),
        procs is not None,
        None if gpus else (facts.why_missing("gpus") or "no GPU inventory was recorded"),
        getattr(torch, "version", None), getattr(torch, "cuda", None),
        facts.env.get("CUDA_MODULE_LOADING"),
        facts.snapshot.source or "live")


def _nvml_processes(facts) -> Optional[list]:
    """NVML's compute processes (pid and memory, no name) when nvidia-smi gave no process list."""
    devices = (facts.snapshot.nvml or {}).get("devices") or []
    out, known = [], False
    for d in devices:
        entry = d.get("processes")
        if isinstance(entry, dict) and "value" in entry:
            known = True
            out += [ProcessUse(d.get("index"), p.get("pid"), None, "C", p.get("used_mib")) for p in entry["value"]]
    return out if known else None
