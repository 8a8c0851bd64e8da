"""The NVIDIA errors of this boot in the kernel log, one check per kind of action NVIDIA's Xid catalog names.

A fault fails when its action is one the node drains on (``drain_xid_actions``, by default RESET_GPU,
RESTART_BM and CONTACT_SUPPORT), so ``check`` and the hook say the same; otherwise it warns
(informational ones pass). A fault a later event cleared (the driver loaded again, the GPU reset
with no recovery action left) passes and says why. Titles name the Xid, the device and the action:
a failing one is the hook's one-line drain reason.
"""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, fail, ok, warn
from gpudoctor.knowledge import xid as catalog
from gpudoctor.recipes import recipe

RECIPES = {"reset": "xid_reset_gpu", "reboot": "xid_reboot", "service": "xid_service",
           "application": "xid_application", "informational": "xid_application", "sxid": "nvswitch_sxid"}
FAMILIES = {"application": "xid_application", "informational": "xid_application"}
# The NVSwitch links to a GPU that fell off the bus go down with it (SXid 20034 "link down").
SYMPTOM_OF = {"sxid": ("XID002",)}


def _scope(f: Facts) -> str:
    log = f["kernel_log"]
    return f"since boot ({log.name})" if log.from_boot else f"in the part of this boot {log.name} still holds"


def _detail(fault) -> str:
    if fault.what.startswith("SXid"):
        return catalog.sxid_why(fault.name.split()[0]) + "."
    info = catalog.xid(fault.code) if fault.what.startswith("Xid") else None
    said = (f"NVIDIA's Xid catalog: {info.mnemonic}, immediate action {info.immediate or 'none listed'}, "
            f"investigatory action {info.investigatory or 'none listed'}"
            + (f", listed for {', '.join(info.applies_to)}" if info.applies_to else "") + ". ") if info else ""
    means = catalog.bucket(fault.bucket).means
    return f"{said}{fault.bucket}: {means}."


def _finding(f: Facts, fault, kind: str):
    times = f" ({fault.count} times)" if fault.count > 1 else ""
    title = f"{fault.what} on {fault.device}: {fault.name}; action {fault.bucket}{times}"
    evidence = [Evidence(f["kernel_log"].source, line) for line in fault.lines]
    if fault.cleared:
        return ok(f"{title}; cleared: {fault.cleared}", subject=fault.device, evidence=evidence)
    if fault.bucket in f.requirements.drain_xid_actions:
        make = fail
    else:
        make = ok if fault.klass == "informational" else warn
    gpu_id = fault.gpu_index if fault.gpu_index is not None else (f"{fault.pci}.0" if fault.pci else None)
    fix = recipe(RECIPES[kind], f, xid=fault.what, gpu=fault.device, gpu_id=gpu_id, action=fault.bucket)
    return make(title, subject=fault.device, detail=_detail(fault), evidence=evidence, fix=fix,
                family=FAMILIES.get(fault.klass, "xid_or_hardware"), symptom_of=SYMPTOM_OF.get(kind, ()))


def _judge(f: Facts, classes, nothing: str):
    faults = [x for x in f["gpu_faults"] if x.klass in classes and not x.what.startswith("SXid")]
    if not faults:
        log = f["kernel_log"]
        return ok(f"{nothing} {_scope(f)}", evidence=[Evidence(log.source, line) for line in log.lines[:1]])
    return [_finding(f, x, x.klass) for x in faults]


@check("XID001", "xid-gpu-reset", "no Xid errors that need a GPU reset", needs=("gpu_faults",))
def xid_reset(f: Facts):
    """Xids NVIDIA's catalog answers with RESET_GPU (48, 62, 64, 74, 95, 109, 119, 120, 140 ...)."""
    return _judge(f, ("reset",), "no Xid that needs a GPU reset")


@check("XID002", "xid-reboot", "no GPU fell off the bus or needs a reboot", needs=("gpu_faults",))
def xid_reboot(f: Facts):
    """Xid 79 and the driver's "fallen off the bus" / "has failed to respond" lines (RESTART_BM), RESTART_VM."""
    return _judge(f, ("reboot",), "no GPU fell off the bus and no Xid needs a reboot")


@check("XID003", "xid-service", "no Xid errors that need a person", needs=("gpu_faults",))
def xid_service(f: Facts):
    """Xids whose action is CONTACT_SUPPORT, CHECK_MECHANICALS, UPDATE_SWFW, RESTART_FM ..., or that
    NVIDIA's catalog (as gpudoctor has it) does not list."""
    return _judge(f, ("service",), "no Xid that needs support, hardware or software work")


@check("XID004", "xid-application", "no application faults on the GPUs", needs=("gpu_faults",))
def xid_application(f: Facts):
    """Xids of programs (RESTART_APP: 13, 31, 43, 94 ...) and ones NVIDIA says to ignore (IGNORE: 63, 92 ...)."""
    return _judge(f, ("application", "informational"), "no Xid of an application")


@check("SXID001", "nvswitch-sxid", "no fatal NVSwitch errors", needs=("gpu_faults",))
def nvswitch_sxid(f: Facts):
    """SXid events of the NVSwitches: a Fatal one stops NVLink traffic through that switch."""
    faults = [x for x in f["gpu_faults"] if x.what.startswith("SXid")]
    if not faults:
        return ok(f"no NVSwitch SXid error {_scope(f)}")
    return [_finding(f, x, "sxid") for x in faults]


CHECKS = (xid_reset, xid_reboot, xid_service, xid_application, nvswitch_sxid)
