"""``--live``: where the memory of each GPU is now: per process, not attributed, free.

nvidia-smi's "used" for a GPU is the sum of what its processes hold (each process's figure
includes its own CUDA context) plus what no listed process accounts for: the driver's own
reservation, processes in other containers or PID namespaces, and contexts nvidia-smi
cannot see (Windows WDDM prints N/A per process). Built from ``machine.Machine`` values,
so a replayed snapshot gives the same view (owners and command lines are only read live).
"""

from __future__ import annotations

from typing import Dict, List, Optional

from gpudoctor.memory.machine import Machine
from gpudoctor.memory.units import MIB, fmt_bytes

CONTEXT_WORDS = ("Each process's figure includes its own CUDA context: about 300-400 MiB with CUDA 11.7+ "
                 "(lazy kernel loading), often over 1 GiB before.")


def _process(p, owners: Dict[int, Dict]) -> Dict:
    who = owners.get(p.pid, {})
    return {"pid": p.pid, "type": p.type, "name": p.name, "used_bytes": None if p.used_mib is None else p.used_mib * MIB,
            "user": who.get("user"), "command": who.get("command") or p.name, "unreadable": who.get("error")}


def _gpu(g, machine: Machine, owners: Dict[int, Dict]) -> Dict:
    procs = [_process(p, owners) for p in machine.processes if p.gpu_index == g.index]
    total = None if g.total_mib is None else g.total_mib * MIB
    used = None if g.used_mib is None else g.used_mib * MIB
    counted = sum(p["used_bytes"] or 0 for p in procs)
    unattributed = None if used is None or not machine.processes_known else max(0, used - counted)
    return {"index": g.index, "name": g.name, "total_bytes": total, "used_bytes": used,
            "free_bytes": None if total is None or used is None else total - used, "mig_mode": g.mig_mode,
            "processes": procs, "processes_bytes": counted, "unattributed_bytes": unattributed}


def build(machine: Machine, owners: Optional[Dict[int, Dict]] = None) -> Dict:
    owners = owners or {}
    return {"source": machine.source, "why_no_gpus": machine.why_no_gpus,
            "processes_known": machine.processes_known,
            "gpus": [_gpu(g, machine, owners) for g in machine.gpus]}


def render(view: Dict) -> List[str]:
    if not view["gpus"]:
        return [f"No GPU to look at: {view['why_no_gpus']}"]
    out: List[str] = []
    for indexes, g in _groups(view["gpus"]):
        out += ["", _gpu_line(g, indexes)] + _process_lines(g, view["processes_known"])
    owners = [] if view["source"] == "live" else ["Owners and command lines are read only live; a snapshot "
                                                  "keeps nvidia-smi's process names."]
    return out[1:] + ["", CONTEXT_WORDS] + owners


def _groups(gpus: List[Dict]):
    """Idle GPUs that look the same share one paragraph (an 8-GPU node is one line, not eight)."""
    out: List = []
    for g in gpus:
        same = {k: v for k, v in g.items() if k != "index"}
        if out and not g["processes"] and out[-1][2] == same:
            out[-1][0].append(g["index"])
        else:
            out.append(([g["index"]], g, same))
    return [(indexes, g) for indexes, g, _ in out]


def _gpu_line(g: Dict, indexes: List[int]) -> str:
    from gpudoctor.memory.render import group_label

    sizes = [f"{fmt_bytes(g[k])} {w}" for k, w in (("total_bytes", "total"), ("used_bytes", "used"),
                                                   ("free_bytes", "free")) if g[k] is not None]
    mig = "; MIG enabled: memory is split between MIG instances" if g["mig_mode"] == "Enabled" else ""
    each = " each" if len(indexes) > 1 else ""
    return f"{group_label(indexes, g['name'] or 'unknown GPU')}: " + ", ".join(sizes) + each + mig


def _process_lines(g: Dict, known: bool) -> List[str]:
    if not known:
        return ["  (the recorded nvidia-smi output has no process list)"]
    rows = [["pid", "type", "user", "used", "command"]]
    for p in sorted(g["processes"], key=lambda p: -(p["used_bytes"] or 0)):
        used = "N/A" if p["used_bytes"] is None else fmt_bytes(p["used_bytes"])
        rows.append([str(p["pid"]), p["type"] or "-", p["user"] or "-", used, p["command"] or p["unreadable"] or "?"])
    lines = _rows(rows) if len(rows) > 1 else ["  no process holds memory on it"]
    if g["unattributed_bytes"]:
        lines.append(f"  not attributed to a listed process: {fmt_bytes(g['unattributed_bytes'])} (the driver's "
                     "reservation, processes in other containers, contexts nvidia-smi cannot list)")
    return lines


def _rows(rows: List[List[str]]) -> List[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows]
