"""Facts about the NVIDIA driver's pieces: Secure Boot, the module on disk, the user-space libraries."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from gpudoctor.facts import Facts, Missing, command_result, fact
from gpudoctor.facts.nvidia import SMI_KEYS, first_line

LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/powerpc64le-linux-gnu",
            "/usr/lib64", "/usr/lib")
_VERSIONED_LIB = re.compile(r"^(libnvidia-ml|libcuda)\.so\.(\d{3}\.\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class SecureBoot:
    """What `mokutil --sb-state` said."""

    enabled: bool    # firmware Secure Boot is on
    enforced: bool   # and the kernel checks module signatures (off under "SecureBoot validation is disabled")
    line: str        # mokutil's line, for evidence


@dataclass(frozen=True)
class NvidiaModuleFile:
    """The nvidia module on disk for the running kernel, as `modinfo nvidia` describes it."""

    found: bool                      # False: "modinfo: ERROR: Module nvidia not found."
    line: str                        # the line to quote as evidence
    filename: Optional[str] = None   # "/lib/modules/6.5.0-35-generic/updates/dkms/nvidia.ko.zst"
    version: Optional[str] = None    # "550.54.15"
    signer: Optional[str] = None     # who signed it; None: unsigned
    vermagic: Optional[str] = None   # the kernel it was built for


@dataclass(frozen=True)
class DriverLib:
    """A versioned driver library file: libnvidia-ml.so.550.54.15, libcuda.so.550.54.15."""

    lib: str       # "libnvidia-ml" or "libcuda"
    version: str   # "550.54.15"
    path: str
    source: str    # "listing:/usr/lib/x86_64-linux-gnu"


@dataclass(frozen=True)
class UserspaceDriver:
    """The user-space driver version and every version whose libraries are installed."""

    version: str
    source: str                 # evidence source: "command:nvidia_smi_xml", "listing:/usr/lib/x86_64-linux-gnu"...
    line: str                   # the evidence line ("" when nvidia-smi or NVML answered)
    versions: Tuple[str, ...]   # every version seen, sorted


@dataclass(frozen=True)
class DriverForCuda:
    """The driver version CUDA code meets, and the OS column of NVIDIA's tables it belongs to."""

    version: str
    source: str
    os: str   # "linux", or "wsl" (WSL runs the Windows driver)


@fact("secure_boot")
def secure_boot(f: Facts) -> SecureBoot:
    """Secure Boot state from `mokutil --sb-state` ("SecureBoot enabled" / "disabled" / not EFI)."""
    res = f.snapshot.command("mokutil_sb_state")
    if res is None:
        raise Missing("mokutil --sb-state was not recorded")
    if not res.ran or res.timed_out:
        raise Missing(f"{res.describe()}: Secure Boot state unknown")
    text = f"{res.stdout}\n{res.stderr}"
    line = next((ln.strip() for ln in text.splitlines() if "secureboot" in ln.lower().replace(" ", "")),
                first_line(text))
    low = text.lower()
    if "secureboot enabled" in low:
        enabled = True
    elif "secureboot disabled" in low or "doesn't support secure boot" in low or "not supported" in low:
        enabled = False  # disabled, or a BIOS / non-EFI boot ("EFI variables are not supported")
    else:
        raise Missing(f"`mokutil --sb-state` said nothing readable: {first_line(text) or 'no output'}")
    # "SecureBoot validation is disabled in shim": firmware Secure Boot on, module checks off.
    enforced = enabled and "validation is disabled" not in low
    return SecureBoot(enabled, enforced, line)


@fact("nvidia_module_file")
def nvidia_module_file(f: Facts) -> NvidiaModuleFile:
    """The nvidia module built for the running kernel (`modinfo nvidia`): version, signer, or not found."""
    res = command_result(f, "modinfo_nvidia", require_ok=False)
    text = f"{res.stdout}\n{res.stderr}"
    if "not found" in text.lower() and not res.ok:
        # "modinfo: ERROR: Module nvidia not found." - nothing built for this kernel
        return NvidiaModuleFile(False, first_line(res.stderr) or first_line(res.stdout))
    fields: Dict[str, str] = {}
    for line in res.stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t")):
            fields.setdefault(key.strip(), value.strip())
    if not fields.get("filename"):
        raise Missing(f"`modinfo nvidia` printed no module: {first_line(text) or res.describe()}")
    return NvidiaModuleFile(True, f"filename: {fields['filename']}", fields["filename"], fields.get("version"),
                            fields.get("signer"), fields.get("vermagic"))


def versioned_driver_libs(f: Facts) -> Tuple[DriverLib, ...]:
    """libnvidia-ml.so.<version> / libcuda.so.<version> files in the system library directories."""
    out = []
    for d in LIB_DIRS:
        for name in f.snapshot.listing(d) or []:
            m = _VERSIONED_LIB.match(name)
            if m:
                out.append(DriverLib(m.group(1), m.group(2), f"{d}/{name}", f"listing:{d}"))
    return tuple(out)


def _nvml_library_line(f: Facts) -> Optional[Tuple[str, str, str]]:
    """(version, source, line): nvidia-smi 535+ prints "NVML library version: 550.54" under a version mismatch."""
    for key in SMI_KEYS:
        res = f.snapshot.command(key)
        m = re.search(r"NVML library version:\s*([\d.]+)", (res.stdout + res.stderr) if res else "")
        if m:
            return m.group(1), f"command:{key}", m.group(0)
    return None


@fact("userspace_driver")
def userspace_driver(f: Facts) -> UserspaceDriver:
    """The user-space driver version: nvidia-smi/NVML when they answer, else what they and the
    installed library file names (libnvidia-ml.so.550.54.15) say; ``versions`` lists every one seen."""
    answered = f.get("driver_version")
    if answered:
        return UserspaceDriver(answered.version, answered.source, "", (answered.version,))
    said = _nvml_library_line(f)
    libs = versioned_driver_libs(f)
    versions = tuple(sorted({lib.version for lib in libs}))
    if said:
        version, source, line = said
        full = [v for v in versions if v == version or v.startswith(version + ".")]
        return UserspaceDriver(full[0] if len(full) == 1 else version, source, line, versions or (version,))
    if libs:
        lib = libs[0]
        return UserspaceDriver(lib.version, lib.source, lib.path, versions)
    raise Missing(f.why_missing("driver_version") or "no user-space NVIDIA driver version was recorded")


@fact("driver_for_cuda")
def driver_for_cuda(f: Facts) -> DriverForCuda:
    """The driver version CUDA code meets here (nvidia-smi/NVML, else the loaded kernel module),
    and the OS column of NVIDIA's tables it belongs to (WSL runs the Windows driver)."""
    wsl = f.get("wsl")
    inside = wsl is not None and wsl.inside
    answered = f.get("driver_version")
    module = f.get("kernel_module")
    if answered:
        version, source = answered.version, answered.source
    elif module and not inside:
        version, source = module.version, module.source
    else:
        raise Missing(f.why_missing("driver_version") or "no NVIDIA driver version is known")
    return DriverForCuda(version, source, "wsl" if inside else "linux")


@dataclass(frozen=True)
class DriverInstall:
    """How the NVIDIA driver was installed, which decides how to replace or rebuild it."""

    method: str      # "runfile" (NVIDIA's .run installer) | "package" (the distribution's, DKMS/akmods)
    evidence: str    # what says so


# Files NVIDIA's .run installer leaves behind (its uninstaller, its log, the nouveau blacklist it writes).
RUNFILE_SIGNS = (("/usr/bin", "nvidia-uninstall"), ("/var/log", "nvidia-installer.log"))
RUNFILE_CONF = "/etc/modprobe.d/nvidia-installer-disable-nouveau.conf"


@fact("driver_install")
def driver_install(f: Facts) -> DriverInstall:
    """NVIDIA's .run installer or the distribution's packages, from the files each leaves."""
    for directory, name in RUNFILE_SIGNS:
        if name in (f.snapshot.listing(directory) or ()):
            return DriverInstall("runfile", f"{directory}/{name} exists (left by NVIDIA's .run installer)")
    if f.snapshot.file(RUNFILE_CONF).exists:
        return DriverInstall("runfile", f"{RUNFILE_CONF} exists (written by NVIDIA's .run installer)")
    if f.snapshot.listing("/usr/bin") is None:
        raise Missing("/usr/bin was not listed in this snapshot: cannot tell how the driver was installed")
    module = f.get("nvidia_module_file")
    if module is None or not module.found:
        raise Missing("no nvidia module and no .run installer files: no driver is installed to tell about")
    return DriverInstall("package", f"{module.filename} and no nvidia-uninstall (a distribution package)")
