"""Driver checks: is an NVIDIA driver installed, loaded and answering?"""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.nvidia import recorded_smi_key, smi_failure, smi_key
from gpudoctor.findings import Evidence, fail, ok, warn
from gpudoctor.recipes import recipe


def _gpu_evidence(f: Facts):
    """Signs that an NVIDIA GPU is present even though the driver did not answer."""
    ev = []
    for dev in f.get("pci_gpus") or []:
        ev.append(Evidence("command:lspci", f"{dev.slot} {dev.description}"
                           + (f" (kernel driver in use: {dev.kernel_driver})" if dev.kernel_driver else "")))
    nodes = f.snapshot.listing("/dev") or []
    if nodes:
        ev.append(Evidence("listing:/dev", " ".join(f"/dev/{n}" for n in nodes)))
    if f.has("kernel_module"):
        ev.append(Evidence(f["kernel_module"]["source"], f["kernel_module"]["line"]))
    return ev


@check("DRV001", "driver-answers", "NVIDIA driver answers", needs=("smi_result",))
def driver_answers(f: Facts):
    """nvidia-smi (and NVML) must answer; a hang, a crash or 'couldn't communicate' is a failure."""
    res = f["smi_result"]
    if f.has("smi") and f["smi"].gpus:
        report = f["smi"]
        return ok(f"driver {report.driver_version} answers, {len(report.gpus)} GPU(s) visible",
                  evidence=[Evidence(f"command:{smi_key(f)}", f"driver {report.driver_version}, "
                                     f"CUDA {report.cuda_version or 'unknown'}")])
    signs = _gpu_evidence(f)
    cmd_ev = Evidence(f"command:{recorded_smi_key(f)}", smi_failure(res) if not res.ok else (f.why_missing("smi") or ""))
    if res.timed_out:
        return fail(f"nvidia-smi did not answer within {res.duration_s:.0f}s",
                    detail="A hung nvidia-smi usually means a GPU or the driver is stuck; jobs will hang too.",
                    evidence=[cmd_ev] + signs, fix=recipe("driver_hung", f))
    if res.error == "not found" and not signs:
        return warn("no NVIDIA GPU or driver found: GPU work will run on the CPU",
                    detail="nvidia-smi is not installed, no NVIDIA device is on the PCI bus or in /dev, "
                           "and no NVIDIA kernel module is loaded.",
                    evidence=[cmd_ev], fix=recipe("no_nvidia_gpu", f))
    if res.error == "not found":
        return fail("an NVIDIA GPU is present but the NVIDIA driver is not installed",
                    evidence=[cmd_ev] + signs, fix=recipe("driver_not_installed", f))
    text = (res.stdout + res.stderr).lower()
    if "version mismatch" in text:
        return fail("the NVIDIA kernel module and user-space driver have different versions",
                    evidence=[cmd_ev] + signs, fix=recipe("driver_library_mismatch", f))
    if "couldn't communicate" in text or res.returncode == 9:
        return fail("nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded",
                    evidence=[cmd_ev] + signs, fix=recipe("driver_not_loaded", f))
    if "no devices were found" in text:
        return fail("the NVIDIA driver is loaded but finds no GPU",
                    evidence=[cmd_ev] + signs, fix=recipe("driver_not_loaded", f))
    return fail("nvidia-smi failed", evidence=[cmd_ev] + signs, fix=recipe("driver_not_loaded", f))


CHECKS = (driver_answers,)
