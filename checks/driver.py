"""Driver checks: is an NVIDIA driver installed, loaded and answering?"""

from __future__ import annotations

import re

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import expected_format, first_line, recorded_smi_key, smi_failure
from gpudoctor.findings import Evidence, fail, ok, unknown, warn
from gpudoctor.knowledge.smi_codes import smi_exit_code
from gpudoctor.knowledge.smi_failures import classify
from gpudoctor.recipes import recipe
from gpudoctor_checks.kernel_module import secure_boot_fix


def seconds(s: float) -> str:
    """"10s", "1.5s": a hook's sub-second deadlines stay readable."""
    return f"{s:.0f}s" if s >= 10 or float(s).is_integer() else f"{s:.1f}s"


def _gpu_evidence(f: Facts):
    """Signs that an NVIDIA GPU is present even though the driver did not answer."""
    ev = []
    for dev in f.get("pci_gpus") or ():
        ev.append(Evidence("command:lspci", f"{dev.slot} {dev.description}"
                           + (f" (kernel driver in use: {dev.kernel_driver})" if dev.kernel_driver else "")))
    nodes = f.get("dev_nodes") or ()
    if nodes:
        ev.append(Evidence("listing:/dev", " ".join(f"/dev/{n}" for n in nodes)))
    module = f.get("kernel_module")
    if module:
        ev.append(Evidence(module.source, module.line))
    return ev


@check("DRV001", "driver-answers", "NVIDIA driver answers", needs=("smi_result",))
def driver_answers(f: Facts):
    """nvidia-smi (and NVML) must answer; a hang, a crash or 'couldn't communicate' is a failure."""
    res = f["smi_result"]
    if f.has("smi") and f["smi"].gpus:
        return _answers(f)
    signs = _gpu_evidence(f)
    cmd_ev = Evidence(f"command:{recorded_smi_key(f)}", smi_failure(res) if not res.ok else (f.why_missing("smi") or ""))
    if res.timed_out:
        return fail(f"nvidia-smi did not answer within {seconds(res.duration_s)}",
                    detail="A hung nvidia-smi usually means a GPU or the driver is stuck; jobs will hang too.",
                    evidence=[cmd_ev] + signs, fix=recipe("driver_hung", f))
    if res.error == "not found" and not signs:
        return warn("no NVIDIA GPU or driver found: GPU work will run on the CPU",
                    detail="nvidia-smi is not installed, no NVIDIA device is on the PCI bus or in /dev, "
                           "and no NVIDIA kernel module is loaded.",
                    evidence=[cmd_ev], fix=recipe("no_nvidia_gpu", f))
    if res.error == "not found":
        return _not_installed(f, cmd_ev, signs)
    if res.ok and _unreadable(f, res):
        # gpudoctor cannot tell what the GPUs are doing: a format it does not know must never drain a fleet,
        # and garbage must never pass for a GPU. The hook answers "unknown"; check shows it as such.
        return unknown("nvidia-smi printed something gpudoctor cannot read",
                       detail="It exited 0 without an NVIDIA report or failure message; no GPU is taken from it.",
                       evidence=[Evidence(f"command:{recorded_smi_key(f)}", first_line(res.stdout) or "(no output)"),
                                 cmd_ev] + signs, fix=recipe("smi_unreadable", f))
    return _failure(f, res, cmd_ev, signs)


def _unreadable(f: Facts, res) -> bool:
    """nvidia-smi exited 0, yet its output is not one of its reports nor one of its failure messages."""
    from gpudoctor import smi

    try:
        smi.parse(res.stdout, expect=expected_format(res.argv))
    except smi.SmiParseError:
        return True
    return False


def _failure(f: Facts, res, cmd_ev: Evidence, signs):
    """nvidia-smi ran and failed: its words first, then its exit code (NVML's return code), both read
    through the one table of nvidia-smi failures that explain uses too."""
    said = classify(res.stdout, res.stderr, res.returncode)
    code = smi_exit_code(res.returncode)
    if said is not None and said.id == "version_mismatch":
        # DRV002 names both versions and gives the fix when it can read them; say it once.
        known = f.has("kernel_module") and f.has("userspace_driver")
        return fail(said.title, detail="DRV002 has both versions and the fix." if known else None,
                    evidence=[cmd_ev] + signs, fix=None if known else recipe(said.recipe, f),
                    family=said.family, symptom_of=("DRV002",))
    if said is not None and said.id == "cannot_communicate":
        title, fix = _not_loaded(f)
        return fail(title, evidence=[cmd_ev] + signs, fix=fix)
    if said is not None:
        # A lost GPU's Xid 79 in the kernel log (XID002) names the GPU and NVIDIA's action: it leads.
        return fail(said.title, evidence=[cmd_ev] + signs, fix=recipe(said.recipe, f), family=said.family,
                    symptom_of=("XID002",) if said.recipe == "driver_gpu_lost" else ())
    if code:
        fix = recipe(code.recipe, f, exit_code=code.code, meaning=code.meaning) if code.recipe else None
        return fail(f"nvidia-smi exited {code.code}: {code.meaning}", evidence=[cmd_ev] + signs, fix=fix)
    return fail("nvidia-smi failed", evidence=[cmd_ev] + signs, fix=recipe("driver_not_loaded", f))


def _not_installed(f: Facts, cmd_ev: Evidence, signs):
    """No nvidia-smi although a GPU shows: on a host the driver is missing; in a container the runtime
    passed in neither the GPU nor the driver's tools."""
    inside = f.get("container")
    if not (inside and inside.inside):
        return fail("an NVIDIA GPU is present but the NVIDIA driver is not installed",
                    evidence=[cmd_ev] + signs, fix=recipe("driver_not_installed", f))
    kind = inside.kind or "container"
    if not any(re.fullmatch(r"nvidia\d+", n) for n in f.get("dev_nodes") or ()):
        return fail(f"the host has an NVIDIA driver, but no GPU and no nvidia-smi were passed into this {kind} "
                    "container", evidence=[cmd_ev] + signs,
                    fix=recipe("no_device_in_container", f, container_kind=kind,
                               visible_note=f"NVIDIA_VISIBLE_DEVICES={f.env.get('NVIDIA_VISIBLE_DEVICES')}"))
    caps = f.env.get("NVIDIA_DRIVER_CAPABILITIES") or "(unset)"
    return warn(f"the GPU was passed into this {kind} container but nvidia-smi was not: the 'utility' driver "
                "capability is missing", evidence=[cmd_ev] + signs,
                fix=recipe("container_driver_capabilities", f, capabilities=caps, missing="utility",
                           consequence="nvidia-smi and NVML are missing"))


def _not_loaded(f: Facts):
    """'couldn't communicate': a missing module on a host, no device in a container, the wrong driver in WSL."""
    wsl = f.get("wsl")
    if wsl and wsl.inside:
        return ("nvidia-smi cannot talk to the NVIDIA driver: under WSL the driver comes from Windows "
                "(/usr/lib/wsl/lib)", recipe("wsl_specific", f))
    inside = f.get("container")
    if inside and inside.inside and not any(n.startswith("nvidia") for n in f.get("dev_nodes") or ()):
        return (f"nvidia-smi cannot talk to the NVIDIA driver: no GPU device was passed into this "
                f"{inside.kind or 'container'}", recipe("no_device_in_container", f))
    pci = f.get("pci_gpus") or ()
    if any(d.kernel_driver == "nouveau" for d in pci) or "nouveau" in (f.get("loaded_modules") or frozenset()):
        return ("nvidia-smi cannot talk to the NVIDIA driver: nouveau holds the GPU", recipe("nouveau_conflict", f))
    module = f.get("nvidia_module_file")
    secure_boot = f.get("secure_boot")
    if module and module.found and secure_boot and secure_boot.enforced:
        how = "unsigned modules" if not module.signer else "modules signed with an unenrolled key"
        return ("nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded, and Secure Boot "
                f"refuses {how}", secure_boot_fix(f))
    if module and not module.found:
        return ("nvidia-smi cannot talk to the NVIDIA driver: no nvidia module is built for this kernel",
                recipe("driver_not_loaded", f))
    return ("nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded",
            recipe("driver_not_loaded", f))


def _answers(f: Facts):
    """The driver answers. A report printed with a non-zero exit (14: infoROM corrupted) is still an
    answer; the warning itself is judged by the check that owns it (DRV004)."""
    parsed = f["smi_parsed"]
    key, report, used = parsed.key, parsed.report, parsed.result
    note = ""
    if used.returncode:
        code = smi_exit_code(used.returncode)
        note = f" (nvidia-smi exited {used.returncode}" + (f": {code.meaning})" if code else ")")
    evidence = [Evidence(f"command:{key}", f"driver {report.driver_version}, CUDA {report.cuda_version or 'unknown'}")]
    evidence += [Evidence(f"command:{key}", w) for w in report.warnings[:3]]
    return ok(f"driver {report.driver_version} answers, {len(report.gpus)} GPU(s) visible{note}", evidence=evidence)


CHECKS = (driver_answers,)
