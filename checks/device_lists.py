"""Do nvidia-smi, NVML, torch and TensorFlow agree on the GPUs?  If not, name the setting that explains it."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, fail, ok, skip, warn
from gpudoctor.framework_fixes import driver_older_than, knowledge_os, min_driver
from gpudoctor.recipes import recipe


def _norm_uuid(u: Optional[str]) -> str:
    return (u or "").lower().replace("gpu-", "")


def _nvml_view(f: Facts) -> Optional[Tuple[int, List[str]]]:
    nv = f.get("nvml")
    if nv is None or nv.device_count is None:
        return None
    return nv.device_count, [str(d.uuid or "") for d in nv.devices]


def _exclusive_busy(f: Facts, visible) -> List[str]:
    """GPUs in Exclusive_Process mode that another process already holds: CUDA cannot open them."""
    report = f.get("smi")
    procs = f.get("gpu_processes") or ()
    out = []
    for v in visible:
        smi_gpu = next((g for g in (report.gpus if report else ()) if g.index == v.gpu.index), None)
        holders = [p for p in procs if p.gpu_index == v.gpu.index and (p.type or "").startswith("C")]
        if smi_gpu is not None and (smi_gpu.compute_mode or "").startswith("Exclusive") and holders:
            out.append(f"GPU {v.gpu.index} is in {smi_gpu.compute_mode} mode and PID {holders[0].pid} "
                       f"({holders[0].name or '?'}) holds it")
    return out


def _ignored_reason(line: str) -> str:
    """TensorFlow's "Ignoring visible gpu device (device: 1, name: X, ...) with core count: 5. The minimum
    required count is 8. ..." as one clause naming the setting behind it."""
    # A sentence ends at ". " or the line's end, never inside "6.0".
    m = re.search(r"name: ([^,]+),.*?\) (?:with |whose )(.+?)\.(?:\s|$)(?:(The minimum required .+?)\.(?=\s|$))?", line)
    if not m:
        return f"TensorFlow ignored a GPU ({line.split('] ', 1)[-1][:160]})"
    minimum = f"; {m.group(3)[0].lower()}{m.group(3)[1:]}" if m.group(3) else ""
    setting = ", set by TF_MIN_GPU_MULTIPROCESSOR_COUNT" if "TF_MIN_GPU_MULTIPROCESSOR_COUNT" in line else ""
    return f"TensorFlow ignores the {m.group(1)} ({m.group(2)}{minimum}{setting})"


def _driver_too_old(f: Facts, cuda: Optional[str]) -> bool:
    driver = f.get("driver_version")
    return driver_older_than(driver.version if driver else None, min_driver(cuda, knowledge_os(f.get("target_os"))))


def _torch_view(f: Facts):
    tb = f.get("torch_build")
    if tb is None or not tb.cuda:
        return None
    seen = tb.device_count if tb.available else 0
    reason = None
    if not tb.available:
        reason = ("the driver is too old for torch's CUDA (TRC002)" if _driver_too_old(f, tb.cuda)
                  else "torch cannot initialise CUDA (TRC004)")
    return "torch", seen or 0, [d.uuid for d in tb.devices], reason


def _tf_view(f: Facts):
    tf = f.get("tf_info")
    if tf is None:
        return None
    log = f.get("tf_log")
    reason = None
    if not tf.cuda_build:
        reason = "TensorFlow is a CPU build (TF001)"
    elif log and (log.failed or log.skipped_gpus):
        reason = "TensorFlow could not load its CUDA libraries (TF002)"
    elif log and log.ignored_gpus:
        reason = _ignored_reason(log.ignored_gpus[0])
    elif log and log.cuinit:  # the line's message, without the log prefix before "failed call to cuInit:"
        reason = f"TensorFlow's cuInit failed: {log.cuinit.split('failed call to cuInit:', 1)[-1].strip()}"
    elif _driver_too_old(f, tf.cuda):
        reason = f"the driver is too old for TensorFlow's CUDA {tf.cuda} (TF003)"
    return "TensorFlow", len(tf.gpus), [], reason


@check("VIS001", "device-lists-agree", "nvidia-smi, NVML, torch and TensorFlow see the same GPUs",
       needs=("gpus", "visible_devices"))
def device_lists_agree(f: Facts):
    """Compare the GPU counts and identities each layer reports with what CUDA_VISIBLE_DEVICES leaves visible."""
    gpus = f["gpus"]
    m = f["visible_devices"]
    expected = len(m.visible)
    src = f"command:{smi_key(f)}" if f.has("smi") else "nvml:devices"
    ev = [Evidence(src, f"nvidia-smi: {len(gpus)} GPU(s)")]
    if m.spec.is_set:
        ev.append(Evidence("env:CUDA_VISIBLE_DEVICES", f"CUDA_VISIBLE_DEVICES={m.spec.raw!r} leaves {expected} "
                                                       f"visible to CUDA"))
    unexplained, explained = [], []
    compared = ["nvidia-smi"]
    nv = _nvml_view(f)
    if nv is not None:
        compared.append("NVML")
        ev.append(Evidence("nvml:device_count", f"NVML: {nv[0]} GPU(s)"))
        if nv[0] != len(gpus):
            unexplained.append(f"NVML counts {nv[0]} GPU(s), nvidia-smi {len(gpus)}")
    mig = [g for g in gpus if g.mig_mode == "Enabled" and any(v.gpu is g for v in m.visible)]
    busy = _exclusive_busy(f, m.visible)
    for view in filter(None, (_torch_view(f), _tf_view(f))):
        name, seen, uuids, reason = view
        compared.append(name)
        ev.append(Evidence(f"framework:{name.lower()}", f"{name}: {seen} GPU(s)"))
        if name == "TensorFlow" and f.get("tf_log") and f["tf_log"].ignored_gpus and seen != expected:
            ev += [Evidence("framework:tensorflow", line) for line in f["tf_log"].ignored_gpus]
        if seen == expected:
            if not mig:
                _check_identity(name, uuids, m, explained, unexplained)
            continue
        why = _why(name, seen, expected, reason, mig, busy)
        (explained if reason else unexplained).append(why)
    if len(compared) == 1:
        return skip("only nvidia-smi listed GPUs: no NVML reading and no framework to compare with")
    title_counts = f"{len(gpus)} GPU(s)" + (f", {expected} visible to CUDA" if expected != len(gpus) else "")
    # The checks a reason names ("(TRC002)") explain this disagreement when they report a problem.
    named = tuple(dict.fromkeys(re.findall(r"\(([A-Z]{2,5}\d{3})\)", " ".join(unexplained + explained))))
    if unexplained:
        return fail(f"the GPU lists disagree: {unexplained[0]}", evidence=ev,
                    detail="; ".join(unexplained[1:] + explained) or None, symptom_of=named,
                    fix=recipe("visible_devices_disagree", f, summary="; ".join(unexplained + explained)))
    if explained:
        return warn(f"the GPU lists disagree: {explained[0]}", evidence=ev, detail="; ".join(explained[1:]) or None,
                    symptom_of=named, fix=recipe("visible_devices_disagree", f, summary="; ".join(explained)))
    return ok(f"{_and(compared)} agree: {title_counts}", evidence=ev)


def _and(names: List[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _why(name: str, seen: int, expected: int, reason: Optional[str], mig, busy) -> str:
    base = f"{name} sees {seen} GPU(s) where CUDA should see {expected}"
    causes = [reason] if reason else []
    if mig:
        causes.append(f"MIG is enabled on {', '.join(g.label() for g in mig)}: CUDA sees MIG instances, not the "
                      "GPU, and one process uses a single instance; name one with CUDA_VISIBLE_DEVICES=MIG-<uuid>")
    causes += busy
    return base + (f": {'; '.join(causes)}" if causes else "")


def _check_identity(name: str, uuids, m, explained: List[str], unexplained: List[str]) -> None:
    """Same count, but are they the GPUs the mapping says, in the same order?"""
    want = [_norm_uuid(v.gpu.uuid) for v in m.visible]
    got = [_norm_uuid(u) for u in uuids]
    if not all(got) or not all(want) or len(got) != len(want) or got == want:
        return
    if sorted(got) == sorted(want):
        explained.append(f"{name} numbers the GPUs in another order than nvidia-smi: CUDA_DEVICE_ORDER is not "
                         "PCI_BUS_ID (CVD002)")
    else:
        unexplained.append(f"{name}'s GPUs are not the ones CUDA_VISIBLE_DEVICES selects")


CHECKS = (device_lists_agree,)
