"""Persistence on server GPUs: a recommendation in every report (NOD006).

NVIDIA recommends keeping the driver's state loaded on data-center GPUs (nvidia-persistenced).
Where it is off, jobs still run, so this warns; a node that must have it says so with
``--persistence`` (NOD003 in checks/node.py, the requirement the hook drains on). Which
boards are servers is data (``knowledge/data/server_boards.json``: the product brand).
"""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, ok, skip, warn
from gpudoctor.knowledge import node_health
from gpudoctor.recipes import recipe
from gpudoctor_checks.node import gpu_list


@check("NOD006", "persistence-recommended", "server GPUs keep the driver loaded between jobs (persistence)",
       needs=("smi",))
def persistence_recommended(f: Facts):
    """Persistence mode on every data-center GPU (brand "NVIDIA" or "Tesla"), on Linux."""
    if f.get("target_os") not in (None, "linux"):
        return skip(f"persistence: Linux only ({f.get('target_os')} has no persistence mode)")
    gpus = [(g.index if g.index is not None else i, g) for i, g in enumerate(f["smi"].gpus)]
    servers = [(i, g) for i, g in gpus if node_health.is_server_brand(g.product_brand)]
    if not servers:
        return skip("persistence: no data-center GPU here (it is recommended on servers)")
    off = [i for i, g in servers if (g.persistence_mode or "").lower() == "disabled"]
    ev = [Evidence(f"command:{smi_key(f)}", f"GPU {i} ({g.product_brand}): persistence {g.persistence_mode or 'not reported'}")
          for i, g in servers]
    if off:
        return warn(f"{gpu_list(off)}: persistence mode off", evidence=ev, family="persistence_mode_off",
                    symptom_of=("NOD003",),
                    detail="With persistence off the driver unloads a GPU's state whenever no program uses it: every "
                           "job pays the start-up again and settings such as application clocks are lost. "
                           + node_health.persistence_advice()["note"] + ".",
                    fix=recipe("persistence_mode_off", f, gpus=gpu_list(off)))
    if all(g.persistence_mode is None for _, g in servers):
        return skip("persistence: nvidia-smi does not report it here")
    return ok(f"persistence on for {len(servers) - sum(g.persistence_mode is None for _, g in servers)} "
              f"data-center GPU(s)", evidence=ev)


CHECKS = (persistence_recommended,)
