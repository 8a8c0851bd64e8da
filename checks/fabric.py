"""NVLink and the NVSwitch fabric: links down, error counters growing, the fabric manager.

On an NVSwitch system (HGX/DGX A100, H100, H200, B200) every GPU must register with the NVLink
fabric through nvidia-fabricmanager, whose version must equal the driver's; until then CUDA
fails with error 802 "system not yet initialized" while nvidia-smi looks healthy.
"""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, fail, ok, skip, unknown, warn
from gpudoctor.knowledge import nvswitch as switches
from gpudoctor.recipes import recipe

REGISTERING = ("In Progress", "Not Started")
WHY_802 = ("On NVSwitch systems CUDA may use a GPU only once the fabric manager has registered it with the NVLink "
           "fabric; until then every CUDA program fails with cudaErrorSystemNotReady (802).")


def _links(numbers) -> str:
    return ("link " if len(numbers) == 1 else "links ") + ",".join(str(n) for n in numbers)


@check("NVL001", "nvlink-links-up", "every NVLink is up", needs=("nvlink_status",))
def nvlink_up(f: Facts):
    """`nvidia-smi nvlink -s`: a link shown <inactive>. On SXM/HGX GPUs every link is wired and must be
    up (a failure); on PCIe cards a bridge may be missing (a warning)."""
    gpus = f["nvlink_status"]
    fabric = f.get("nvswitch") is not None
    down = [g for g in gpus if g.down or (fabric and not g.links and "inActive" in (g.note or ""))]
    used = [g for g in gpus if g.links]
    if not down and not used:
        return skip(f"no GPU here uses NVLink ({gpus[0].note if gpus and gpus[0].note else 'no links listed'})")
    if not down:
        speeds = sorted({s for g in used for _, s in g.links})
        return ok(f"{len(used)} GPU(s), {_nvlinks(sum(len(g.links) for g in used))}, all up ({speeds[0]:g} GB/s)")
    parts = [f"GPU {g.index}: {_links(g.down) if g.down else 'all links'} down" for g in down]
    wired = fabric or any(switches.is_baseboard_gpu(g.name) for g in down)
    ev = [Evidence("command:nvidia_smi_nvlink_s", f"GPU {g.index}: {g.name} {_links(g.down) or g.note}") for g in down]
    make = fail if wired else warn
    return make(f"NVLink down: {'; '.join(parts)}", subject=f"GPU {down[0].index}", evidence=ev,
                detail="Traffic between these GPUs falls back to slower paths or fails (NCCL errors, hangs)."
                       + ("" if wired else " On PCIe cards check that every NVLink bridge is seated."),
                fix=recipe("nvlink_down", f, gpu=f"GPU {down[0].index}"))


def _growing(e) -> list:
    before = {(c.gpu, c.link, c.name): c.value for c in e.first}
    return [(c, before[(c.gpu, c.link, c.name)]) for c in e.later or ()
            if (c.gpu, c.link, c.name) in before and c.value > before[(c.gpu, c.link, c.name)]]


@check("NVL002", "nvlink-errors", "no NVLink error counter is growing", needs=("nvlink_errors",))
def nvlink_errors(f: Facts):
    """`nvidia-smi nvlink -e` read twice about a second apart: a counter growing on an idle node is a link
    failing now; recovery errors since the driver loaded are a warning."""
    e = f["nvlink_errors"]
    if not e.first:
        return skip("`nvidia-smi nvlink -e` lists no NVLink counters here")
    ev = "command:nvidia_smi_nvlink_e"
    grew = _growing(e)
    if grew:
        said = "; ".join(f"GPU {c.gpu} link {c.link} {c.name} {old} -> {c.value}" for c, old in grew[:4])
        return fail(f"NVLink errors growing: {said}", subject=f"GPU {grew[0][0].gpu}",
                    evidence=[Evidence(ev, said)], fix=recipe("nvlink_down", f, gpu=f"GPU {grew[0][0].gpu}"),
                    detail=f"The counters grew within about {e.gap_s or 1:g}s: the link is failing now.")
    recovered = [c for c in e.first if "Recovery" in c.name and c.value]
    measured = "" if e.later is not None else "; read once, growth not measured"
    if recovered:
        said = ", ".join(f"GPU {c.gpu} link {c.link} {c.value}" for c in recovered[:4])
        return warn(f"NVLink recovery errors since the driver loaded: {said}{measured}", evidence=[Evidence(ev, said)],
                    detail="Each one is a link that had to retrain; not growing now.",
                    fix=recipe("nvlink_down", f, gpu=f"GPU {recovered[0].gpu}"))
    links = {(c.gpu, c.link) for c in e.first}
    return ok(f"{_nvlinks(len(links))}, no recovery errors, no counter growing{measured}")


def _unregistered(f: Facts) -> list:
    return [s for s in f.get("gpu_states") or ()
            if s.fabric_state in REGISTERING or (s.fabric_state == "Completed" and s.fabric_status != "Success")]


@check("FAB001", "fabric-manager", "the NVSwitch fabric manager runs at the driver's version", needs=("nvswitch",))
def fabric_manager(f: Facts):
    """On NVSwitch systems: the GPUs' fabric state (H100+), `systemctl is-active nvidia-fabricmanager`,
    and `nv-fabricmanager --version` against the driver."""
    system, fm, driver = f["nvswitch"], f.get("fabric_manager"), f.get("driver_version")
    ev = [Evidence(system.source, system.evidence)] + ([Evidence("command:fabricmanager_active", fm.state_said),
                                                        Evidence("command:fabricmanager_version", fm.version_said)]
                                                       if fm else [])
    fix = recipe("fabric_manager_missing", f)
    stuck = _unregistered(f)
    if stuck:
        return fail(f"{len(stuck)} GPU(s) not registered with the NVLink fabric (state {stuck[0].fabric_state}): "
                    "CUDA fails with error 802", evidence=ev, fix=fix, detail=WHY_802)
    if fm is None or fm.state is None:
        said = fm.state_said if fm else f.why_missing("fabric_manager")
        return unknown(f"fabric manager state unknown: {said}", evidence=ev)
    if fm.state != "active":
        registered = bool(f.get("gpu_states")) and all(s.fabric_state == "Completed" for s in f["gpu_states"])
        make = warn if registered else fail
        said = "the GPUs are still registered, but the next GPU reset or reboot leaves them without a fabric" \
            if registered else "CUDA fails with error 802 'system not yet initialized'"
        return make(f"nvidia-fabricmanager is {fm.state}: {said}", evidence=ev, fix=fix, detail=WHY_802)
    if fm.version and driver and fm.version != driver.version:
        return fail(f"fabric manager {fm.version} does not match driver {driver.version}", evidence=ev, fix=fix,
                    detail="The fabric manager refuses to start at another version than the driver's.")
    return ok(f"nvidia-fabricmanager active" + (f", version {fm.version}" if fm.version else ""), evidence=ev)


CHECKS = (nvlink_up, nvlink_errors, fabric_manager)


def _nvlinks(n: int) -> str:
    return f"{n} NVLink" + ("" if n == 1 else "s")
