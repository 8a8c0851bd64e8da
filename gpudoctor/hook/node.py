"""What the hook's requirements read: a small view of one node, built from a snapshot's facts.

The same view comes from a live hook run (a snapshot holding one ``nvidia-smi -q -x`` and
framework facts read from files) and from a replayed snapshot folder, so the requirements
never know which one they judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

from gpudoctor.facts import Facts
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import Snapshot


@dataclass(frozen=True)
class Framework:
    name: str
    version: Optional[str]
    cuda: Optional[str]  # the CUDA the build targets; None for a CPU-only build


@dataclass(frozen=True)
class NodeView:
    hostname: Optional[str] = None
    smi_result: Optional[CommandResult] = None  # how nvidia-smi ended (None: not recorded)
    smi: Optional[object] = None                # gpudoctor.smi.SmiReport when it parsed
    smi_missing: Optional[str] = None           # why ``smi`` is None
    driver_version: Optional[str] = None
    cuda_driver_max: Optional[str] = None       # nvidia-smi's "CUDA Version"
    frameworks: Dict[str, Framework] = field(default_factory=dict)  # installed ones only
    frameworks_unknown: Dict[str, str] = field(default_factory=dict)  # name -> why it could not be read
    owners: Mapping[int, str] = field(default_factory=dict)  # pid -> user name, when known

    @property
    def gpus(self) -> Tuple:
        return tuple(self.smi.gpus) if self.smi is not None else ()

    @property
    def processes(self) -> Tuple:
        return tuple(self.smi.processes) if self.smi is not None else ()


def _framework(f: Facts, name: str):
    """(Framework, None), (None, None) when not installed, or (None, why) when unknown."""
    raw = f.snapshot.frameworks.get(name)
    if raw is None:  # a snapshot recorded without frameworks cannot tell; one that probed others can
        return None, None if f.snapshot.frameworks else "frameworks were not probed"
    if raw.get("installed") is False:
        return None, None
    fw = f.get(name)
    if fw is None:
        return None, f.why_missing(name)
    if name == "torch":
        if not fw.build_known:
            err = fw.import_error.message if fw.import_error else None
            return None, f"torch build unknown ({err or 'no version facts recorded'})"
        return Framework(name, fw.version, fw.cuda), None
    if not fw.build_known:
        return None, "tensorflow build unknown (no build_info recorded)"
    cuda = fw.cuda if fw.cuda_build else None
    return Framework(name, fw.version, str(cuda) if cuda else None), None


def from_snapshot(snapshot: Snapshot, owners: Optional[Mapping[int, str]] = None,
                  frameworks: Tuple[str, ...] = ("torch", "tensorflow")) -> NodeView:
    f = Facts(snapshot)
    driver = f.get("driver_version")
    installed: Dict[str, Framework] = {}
    unknown: Dict[str, str] = {}
    for name in frameworks:
        fw, why = _framework(f, name)
        if fw is not None:
            installed[name] = fw
        elif why is not None and why not in unknown.values():
            unknown[name] = why
    # The smi fact already keeps a report printed with a non-zero exit (14: infoROM corrupted).
    result, smi = f.get("smi_result"), f.get("smi")
    return NodeView(
        hostname=snapshot.meta.get("hostname"),
        smi_result=result,
        smi=smi,
        smi_missing=f.why_missing("smi"),
        driver_version=driver.version if driver else getattr(smi, "driver_version", None),
        cuda_driver_max=f.get("cuda_driver_max") or getattr(smi, "cuda_version", None),
        frameworks=installed,
        frameworks_unknown=unknown,
        owners=dict(owners or {}),
    )
