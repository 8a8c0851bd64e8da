"""nouveau checks: the open-source driver must not hold an NVIDIA GPU the NVIDIA driver should drive."""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.facts.modprobe import module_block, parse_modprobe_conf
from gpudoctor.facts.nvidia import smi_key
from gpudoctor.findings import Evidence, fail, ok, skip, warn
from gpudoctor.recipes import recipe


def _host_only(f: Facts):
    """Containers share the host's kernel and WSL has no nouveau: the question belongs to the host."""
    wsl, container = f.get("wsl"), f.get("container")
    if wsl and wsl.inside:
        return "under WSL the GPU is driven by Windows"
    if container and container.inside:
        return "inside a container the host's kernel modules decide"
    return None


@check("NOU001", "nouveau-not-loaded", "nouveau does not hold the GPU")
def nouveau_loaded(f: Facts):
    """nouveau in /proc/modules, or lspci showing "Kernel driver in use: nouveau", blocks the NVIDIA driver."""
    modules, pci = f.get("loaded_modules"), f.get("pci_gpus")
    if modules is None and pci is None:
        return skip(f"nouveau does not hold the GPU: skipped, {f.why_missing('loaded_modules')}")
    bound = [d for d in pci or [] if d.kernel_driver == "nouveau"]
    ev = [Evidence("command:lspci", f"{d.slot} {d.description} (kernel driver in use: nouveau)") for d in bound]
    if modules and "nouveau" in modules:
        ev.insert(0, Evidence("file:/proc/modules", "nouveau is loaded"))
    if not ev:
        return ok("nouveau is not loaded" + (f"; {len(pci)} NVIDIA GPU(s) on the PCI bus" if pci else ""))
    where = f"GPU {bound[0].slot}" if bound else "the kernel"
    return fail(f"nouveau is loaded and holds {where}: the NVIDIA driver cannot take it",
                detail="nouveau bound the GPU at boot, so the nvidia kernel module cannot; CUDA and nvidia-smi "
                       "fail until nouveau is blacklisted and the machine rebooted.",
                evidence=ev, fix=recipe("nouveau_conflict", f))


def _gpu_signs(f: Facts):
    pci = f.get("pci_gpus") or ()
    if pci:
        return Evidence("command:lspci", "; ".join(f"{d.slot} {d.description}" for d in pci[:2]))
    gpus = f.get("gpus") or ()
    if gpus:
        return Evidence(f"command:{smi_key(f)}", ", ".join(g.label() for g in gpus[:2]))
    return None


@check("NOU002", "nouveau-blacklisted", "nouveau is kept off the NVIDIA GPU", needs=("nouveau_block",))
def nouveau_blacklisted(f: Facts):
    """On a machine with an NVIDIA GPU, modprobe.d or the kernel command line should keep nouveau from
    loading (blacklist, install /bin/false, options modeset=0, modprobe.blacklist=)."""
    elsewhere = _host_only(f)
    if elsewhere:
        return ok(f"not checked here: {elsewhere}")
    block = f["nouveau_block"]
    if block.blocked:
        source, line = block.by[0]
        return ok(f"nouveau is blacklisted ({source.split(':', 1)[1]}: {line})",
                  evidence=[Evidence(s, ln) for s, ln in block.by])
    gpu = _gpu_signs(f)
    if gpu is None:
        return ok("nouveau is not blacklisted, and there is no NVIDIA GPU for it to take")
    files = [c.path for c in f["modprobe_files"].read]
    ev = [gpu, Evidence("file:/proc/cmdline", f.get("kernel_cmdline") or "(not recorded)"),
          Evidence("listing:/etc/modprobe.d", "modprobe.d files read: " + (", ".join(files) or "none")
                   + "; none blacklists nouveau")]
    title = "nouveau is not blacklisted: at the next boot it can take the NVIDIA GPU before the NVIDIA driver"
    hidden = _hidden_blacklist(f)
    if hidden:
        title = f"nouveau is not blacklisted: {hidden[1]} hides {hidden[0]}, which blacklists it"
        ev.append(Evidence(f"file:{hidden[0]}", f"ignored by modprobe: {hidden[1]} has the same name"))
    return warn(title, detail="Nothing modprobe reads and nothing on the kernel command line keeps nouveau off; "
                              "NVIDIA's installers and driver packages normally add 'blacklist nouveau'. At the next "
                              "boot nouveau can take the GPU first.",
                evidence=ev, fix=recipe("nouveau_conflict", f))


def _hidden_blacklist(f: Facts):
    """A packaged file that would blacklist nouveau but is masked by a same-named file in /etc."""
    for masked in f["modprobe_files"].masked:
        if module_block(parse_modprobe_conf(masked.content, masked.path), None, "nouveau").blocked:
            return masked.path, masked.by
    return None


CHECKS = (nouveau_loaded, nouveau_blacklisted)
