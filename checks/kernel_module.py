"""Kernel module checks: does the loaded nvidia module match the user-space driver, and may it load?"""

from __future__ import annotations

from gpudoctor.engine import check
from gpudoctor.facts import Facts
from gpudoctor.findings import Evidence, fail, ok, warn
from gpudoctor.recipes import recipe


def _same_version(module: str, userspace: str) -> bool:
    """"550.54" (nvidia-smi's "NVML library version") matches module 550.54.15; full versions must be equal."""
    a, b = module.split("."), userspace.split(".")
    n = min(len(a), len(b))
    return a[:n] == b[:n]


@check("DRV002", "module-matches-library", "kernel module matches the user-space driver",
       needs=("kernel_module", "userspace_driver"))
def module_matches(f: Facts):
    """The loaded kernel module (/proc/driver/nvidia/version) and the user-space libraries (NVML,
    nvidia-smi, libnvidia-ml.so.<version>) must be the same driver release."""
    module, user = f["kernel_module"], f["userspace_driver"]
    mod_ev = Evidence(module.source, module.line)
    user_ev = Evidence(user.source, user.line or f"driver {user.version}")
    ev = [mod_ev, user_ev]
    if any(_same_version(module.version, v) for v in user.versions):
        return ok(f"kernel module {module.version} matches the user-space driver {user.version}",
                  evidence=[mod_ev, user_ev])
    others = ", ".join(v for v in user.versions if v != user.version)
    on_disk = f.get("nvidia_module_file")
    if on_disk and on_disk.version:
        ev.append(Evidence("command:modinfo_nvidia", f"module on disk for this kernel: {on_disk.version} "
                           f"({on_disk.filename})"))
    return fail(f"kernel module {module.version}, user-space driver {user.version}"
                + (f" (also installed: {others})" if others else ""),
                detail="The driver packages were upgraded (or downgraded) but the old kernel module is still "
                       "loaded: NVML and CUDA refuse to start ('Driver/library version mismatch').",
                evidence=ev,
                fix=recipe("driver_library_mismatch", f, userspace_driver_version=user.version))


def _module_loaded(f: Facts) -> bool:
    return f.has("kernel_module") or "nvidia" in (f.get("loaded_modules") or frozenset())


def _wants_nvidia_module(f: Facts) -> bool:
    """An NVIDIA GPU on the PCI bus, or an nvidia module built for this kernel."""
    module = f.get("nvidia_module_file")
    return bool(f.get("pci_gpus")) or bool(module and module.found)


def secure_boot_fix(f: Facts):
    """The fix for a module Secure Boot refuses: sign it when it is unsigned, else enrol the key that
    signed it. DRV001 uses the same, so both checks name one cause with one fix."""
    module = f.get("nvidia_module_file")
    if module is not None and module.found and not module.signer:
        return recipe("secure_boot_sign_module", f)
    return recipe("secure_boot_module_unsigned", f)


@check("SEC001", "secure-boot-module", "Secure Boot lets the nvidia module load", needs=("secure_boot",))
def secure_boot_module(f: Facts):
    """With Secure Boot on, an nvidia module signed with a key the firmware does not know is refused."""
    sb = f["secure_boot"]
    sb_ev = Evidence("command:mokutil_sb_state", sb.line)
    if not sb.enforced:
        state = "off" if not sb.enabled else "on, but shim does not validate modules"
        return ok(f"Secure Boot is {state}: the kernel does not check module signatures", evidence=[sb_ev])
    if _module_loaded(f):
        return ok("Secure Boot is on and the nvidia module is loaded: it is signed with a trusted key",
                  evidence=[sb_ev])
    if not _wants_nvidia_module(f):
        return ok("Secure Boot is on; no NVIDIA GPU or nvidia module needs loading", evidence=[sb_ev])
    ev = [sb_ev, Evidence("file:/proc/modules" if f.has("loaded_modules") else "file:/proc/driver/nvidia/version",
                          "no nvidia module is loaded")]
    ev += [Evidence("command:lspci", f"{d.slot} {d.description}") for d in (f.get("pci_gpus") or ())[:2]]
    module = f.get("nvidia_module_file")
    if module and not module.found:
        return warn("Secure Boot is on and no nvidia module is built for this kernel: once built, it must be "
                    "signed with an enrolled key", evidence=ev + [Evidence("command:modinfo_nvidia", module.line)],
                    fix=recipe("secure_boot_module_unsigned", f))
    if module:
        ev.append(Evidence("command:modinfo_nvidia", f"{module.filename}: "
                           + (f"signer: {module.signer}" if module.signer else "no signature")))
    if module is None:
        how = "it is probably not signed with an enrolled key"
    elif not module.signer:
        how = "it is not signed"
    else:
        how = f"it is signed by '{module.signer}', a key the firmware does not trust yet"
    return fail(f"Secure Boot is on and the nvidia module is not loaded: {how}",
                detail=("With Secure Boot the kernel refuses unsigned modules ('Key was rejected by service'): "
                        "enrolling a key cannot help until the module is signed."
                        if module is not None and not module.signer else
                        "With Secure Boot the kernel refuses modules whose signing key is not enrolled "
                        "('Key was rejected by service'); DKMS signs with a Machine Owner Key that must be "
                        "enrolled once through MOK Manager."),
                evidence=ev, fix=secure_boot_fix(f))


CHECKS = (module_matches, secure_boot_module)
