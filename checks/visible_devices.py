"""Device selection checks: CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER.

Whether a container was given GPUs at all (NVIDIA_VISIBLE_DEVICES, --gpus) is CTR001's job;
here NVIDIA_VISIBLE_DEVICES only explains the renumbering inside a container.
"""

from __future__ import annotations

from collections import Counter
from typing import List, Optional

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, fail, ok, skip, warn
from gpudoctor.recipes import recipe
from gpudoctor.visible_devices import Mapping, mixed_models

ENV = "env:CUDA_VISIBLE_DEVICES"
# Problems that only make the value fragile; the rest cost the user GPUs.
HARMLESS = ("lenient", "spaces", "bad_order")


def mapping_lines(m: Mapping) -> List[str]:
    """One line per device a CUDA program sees: "cuda:0 -> GPU 2 NVIDIA A100 (00000000:41:00.0, GPU-...)"."""
    lines = []
    for v in m.visible:
        g = v.gpu
        what = f"MIG {v.mig.profile or ''} {v.mig.uuid or ''} on ".replace("  ", " ") if v.mig is not None else ""
        ids = ", ".join(x for x in (g.pci_bus_id, g.uuid) if x)
        lines.append(f"cuda:{v.cuda_index} -> {what}GPU {g.index} {g.name or '?'}" + (f" ({ids})" if ids else ""))
    note = ORDER_NOTE.get(m.order_source)
    if note and (len(m.visible) > 1 or m.spec.mode == "index"):
        lines.append(note)
    return lines


# How sure the CUDA order is when it is not PCI order (visible_devices.cuda_order).
ORDER_NOTE = {
    "observed": "(CUDA's order as torch saw it: fastest first, not nvidia-smi's)",
    "compute_capability": "(CUDA numbers these GPUs fastest first; gpudoctor ranked them by compute capability, "
                          "set CUDA_DEVICE_ORDER=PCI_BUS_ID to be sure)",
    "unknown": "(CUDA numbers these GPUs fastest first, and two models share a compute capability: which comes "
               "first cannot be told from what was recorded; set CUDA_DEVICE_ORDER=PCI_BUS_ID)",
}


def _suggest(m: Mapping) -> str:
    """The GPUs the value seems to mean, by UUID: every entry that names an existing GPU, once; by
    nvidia-smi index where a GPU has no UUID."""
    meant = []
    for entry in m.spec.entries + m.spec.ignored:
        gpu = m.gpu_for(entry) if entry.strip() else None
        if gpu is not None and gpu not in meant:
            meant.append(gpu)
    if meant and all(g.uuid for g in meant):
        return ",".join(g.uuid for g in meant)
    value = ",".join(str(g.index) for g in meant) or "0"
    # These are nvidia-smi's indices, in PCI order; on mixed models CUDA counts fastest first unless
    # told otherwise, so the value says so ("export A=1 B=2" sets both).
    return value if m.order_source == "pci_order" else f"{value} CUDA_DEVICE_ORDER=PCI_BUS_ID"


def _intentional_cpu_only(raw: str) -> bool:
    return raw.strip() in ("", "-1")


@check("CVD001", "cuda-visible-devices", "CUDA_VISIBLE_DEVICES selects existing GPUs",
       needs=("visible_devices_spec",))
def cuda_visible_devices(f: Facts):
    """CUDA_VISIBLE_DEVICES parsed as CUDA does: hidden GPUs, entries CUDA silently drops, the mapping."""
    spec = f["visible_devices_spec"]
    m = f.get("visible_devices")
    if not spec.is_set:
        if m is None:  # no GPU inventory: nothing to select from, so say no more than the fact
            return ok("CUDA_VISIBLE_DEVICES is not set")
        return ok(f"CUDA_VISIBLE_DEVICES is not set: CUDA programs see every GPU ({m.physical_count})",
                  evidence=[Evidence(f"command:{smi_key(f)}", line) for line in mapping_lines(m)])
    gpu = f.get("nvidia_gpu_present")
    if m is None and gpu is not None and not gpu.present:
        return ok(f"CUDA_VISIBLE_DEVICES={spec.raw!r} is set, but there is no NVIDIA GPU to select")
    problems = m.problems if m else spec.problems
    ev = [Evidence(ENV, f"CUDA_VISIBLE_DEVICES={spec.raw!r}")]
    if m is not None:
        ev += [Evidence(f"command:{smi_key(f)}", line) for line in mapping_lines(m)]
    detail = " ".join(_sentence(p.message) for p in problems) or None
    hidden_all = any(p.hides_all for p in problems) or (m is not None and m.hides_all)
    costly = [p for p in problems if p.code not in HARMLESS]
    if hidden_all:
        n = f"all {m.physical_count} GPU(s)" if m else "every GPU"
        title = f"CUDA_VISIBLE_DEVICES={spec.raw!r} hides {n}: CUDA programs see none"
        if _intentional_cpu_only(spec.raw):
            return warn(title, detail=f"{detail} Fine for CPU-only runs; otherwise torch raises \"No CUDA GPUs are "
                                      "available\" and TensorFlow silently uses the CPU.",
                        evidence=ev, fix=_fix(f, m, "no GPU is visible"))
        return fail(title, detail=_join(detail, _container_note(f)), evidence=ev,
                    fix=_fix(f, m, "no GPU is visible"))
    if m is None:
        return skip(f"CUDA_VISIBLE_DEVICES={spec.raw!r} is set, but the GPUs are not known to map it "
                    f"({f.why_missing('visible_devices')})")
    title = (f"CUDA_VISIBLE_DEVICES={spec.raw!r}: CUDA sees {len(m.visible)} of {m.physical_count} GPU(s) "
             f"({_short(m)})")
    if costly:
        dropped = [x for x in spec.ignored if x] or [costly[0].message]
        return fail(f"{title}; {', '.join(dropped)} silently dropped", detail=_join(detail, _container_note(f)),
                    evidence=ev, fix=_fix(f, m, f"CUDA sees {len(m.visible)} GPU(s) and drops the rest of the list"))
    if problems:
        return warn(f"{title}, but the value is fragile", detail=detail, evidence=ev,
                    fix=_fix(f, m, "the value works but is fragile"))
    return ok(title, evidence=ev)


def _short(m: Mapping) -> str:
    """"cuda:0 = GPU 2, cuda:1 = GPU 3" (the first four)."""
    parts = [f"cuda:{v.cuda_index} = GPU {v.gpu.index}" for v in m.visible[:4]]
    return ", ".join(parts) + (", ..." if len(m.visible) > 4 else "")


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _join(*parts) -> str:
    return " ".join(p for p in parts if p)


def _fix(f: Facts, m, effect: str):
    return recipe("cuda_visible_devices", f, effect=effect, suggested=_suggest(m) if m else "0")


def _container_note(f: Facts) -> Optional[str]:
    nvd = f.env.get("NVIDIA_VISIBLE_DEVICES")
    container = f.get("container")
    if container and container.inside and nvd and nvd not in ("all", "void", "none"):
        return (f"Inside this container (NVIDIA_VISIBLE_DEVICES={nvd}) the GPUs it was given are numbered from 0: "
                "use 0, 1, ... here, not the host's numbers.")
    return None


def _models(gpus) -> str:
    counts = Counter(g.name or "unknown GPU" for g in gpus)
    return " and ".join(f"{n} x {name}" for name, n in counts.items())


@check("CVD002", "cuda-device-order", "CUDA numbers GPUs like nvidia-smi", needs=("gpus",))
def cuda_device_order(f: Facts):
    """On a machine with different GPU models, CUDA's default fastest-first order differs from PCI order."""
    gpus = f["gpus"]
    raw = f.env.get("CUDA_DEVICE_ORDER")
    ev = [Evidence("env:CUDA_DEVICE_ORDER", f"CUDA_DEVICE_ORDER={raw!r}" if raw is not None else "not set")]
    if raw not in (None, "", "FASTEST_FIRST", "PCI_BUS_ID"):
        return warn(f"CUDA_DEVICE_ORDER={raw!r} is not a value CUDA knows (FASTEST_FIRST or PCI_BUS_ID)",
                    detail="CUDA ignores it and numbers the fastest GPU first.", evidence=ev,
                    fix=recipe("cuda_device_order", f, gpu_models=_models(gpus)))
    if len(gpus) < 2:
        return ok(f"one GPU ({gpus[0].name}): nothing to number differently")
    if not mixed_models(gpus):
        return ok(f"{_models(gpus)}: identical GPUs, CUDA and nvidia-smi number them the same")
    if raw == "PCI_BUS_ID":
        return ok(f"CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA numbers {_models(gpus)} like nvidia-smi", evidence=ev)
    ev += [Evidence(f"command:{smi_key(f)}", f"{g.label()}: {g.pci_bus_id or '?'}, compute {g.compute_cap or '?'}")
           for g in gpus]
    m = f.get("visible_devices")
    return warn(_order_title(gpus, m), evidence=ev, fix=recipe("cuda_device_order", f, gpu_models=_models(gpus)),
                detail="CUDA numbers GPUs fastest first by default, nvidia-smi by PCI bus: CUDA_VISIBLE_DEVICES=0 "
                       "or cuda:0 can select another card than the one nvidia-smi calls GPU 0."
                       + ("" if m is None or m.order_source not in ORDER_NOTE else
                          " " + _sentence(ORDER_NOTE[m.order_source].strip("()"))))


def _order_title(gpus, m: Optional[Mapping]) -> str:
    """Say which GPU cuda:0 is, as surely as the facts allow."""
    lead = f"{_models(gpus)}, and CUDA_DEVICE_ORDER is not PCI_BUS_ID"
    first = m.cuda_order[0] if m is not None and m.cuda_order else None
    if m is None or first is None or m.order_source == "unknown":
        return f"{lead}: cuda:0 may not be nvidia-smi's GPU 0"
    sure = "is" if m.certain else "is most likely"
    if first is gpus[0]:
        return f"{lead}: CUDA's device 0 {sure} nvidia-smi's GPU 0 ({first.name}) too, by luck of the slots"
    return f"{lead}: CUDA's device 0 {sure} nvidia-smi's GPU {first.index} ({first.name}), not GPU 0 ({gpus[0].name})"


CHECKS = (cuda_visible_devices, cuda_device_order)
