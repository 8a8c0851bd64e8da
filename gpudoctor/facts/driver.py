"""Facts about the NVIDIA driver's pieces: Secure Boot, the module on disk, the user-space libraries."""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from gpudoctor.facts import Facts, Missing, command_result, fact
from gpudoctor.facts.nvidia import SMI_KEYS, first_line

LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/powerpc64le-linux-gnu",
            "/usr/lib64", "/usr/lib")
_VERSIONED_LIB = re.compile(r"^(libnvidia-ml|libcuda)\.so\.(\d{3}\.\d+(?:\.\d+)?)$")


@fact("secure_boot")
def secure_boot(f: Facts) -> Dict:
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
    return {"enabled": enabled, "enforced": enforced, "line": line}


@fact("nvidia_module_file")
def nvidia_module_file(f: Facts) -> Dict:
    """The nvidia module built for the running kernel (`modinfo nvidia`): version, signer, or not found."""
    res = command_result(f, "modinfo_nvidia", require_ok=False)
    text = f"{res.stdout}\n{res.stderr}"
    if "not found" in text.lower() and not res.ok:
        # "modinfo: ERROR: Module nvidia not found." - nothing built for this kernel
        return {"found": False, "line": first_line(res.stderr) or first_line(res.stdout)}
    fields: Dict[str, str] = {}
    for line in res.stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t")):
            fields.setdefault(key.strip(), value.strip())
    if not fields.get("filename"):
        raise Missing(f"`modinfo nvidia` printed no module: {first_line(text) or res.describe()}")
    return {"found": True, "filename": fields["filename"], "version": fields.get("version"),
            "signer": fields.get("signer"), "vermagic": fields.get("vermagic"),
            "line": f"filename: {fields['filename']}"}


def versioned_driver_libs(f: Facts) -> List[Dict[str, str]]:
    """libnvidia-ml.so.<version> / libcuda.so.<version> files in the system library directories."""
    out = []
    for d in LIB_DIRS:
        for name in f.snapshot.listing(d) or []:
            m = _VERSIONED_LIB.match(name)
            if m:
                out.append({"lib": m.group(1), "version": m.group(2), "path": f"{d}/{name}", "source": f"listing:{d}"})
    return out


def _nvml_library_line(f: Facts) -> Optional[Dict[str, str]]:
    """nvidia-smi 535+ prints "NVML library version: 550.54" under a version mismatch."""
    for key in SMI_KEYS:
        res = f.snapshot.command(key)
        m = re.search(r"NVML library version:\s*([\d.]+)", (res.stdout + res.stderr) if res else "")
        if m:
            return {"version": m.group(1), "source": f"command:{key}", "line": m.group(0)}
    return None


@fact("userspace_driver")
def userspace_driver(f: Facts) -> Dict:
    """The user-space driver version: nvidia-smi/NVML when they answer, else what they and the
    installed library file names (libnvidia-ml.so.550.54.15) say; ``versions`` lists every one seen."""
    answered = f.get("driver_version")
    if answered:
        return {"version": answered["version"], "source": answered["source"], "line": "",
                "versions": [answered["version"]]}
    said = _nvml_library_line(f)
    libs = versioned_driver_libs(f)
    versions = sorted({lib["version"] for lib in libs})
    if said:
        full = [v for v in versions if v == said["version"] or v.startswith(said["version"] + ".")]
        return {**said, "version": full[0] if len(full) == 1 else said["version"],
                "versions": versions or [said["version"]]}
    if libs:
        lib = libs[0]
        return {"version": lib["version"], "source": lib["source"], "line": lib["path"], "versions": versions}
    raise Missing(f.why_missing("driver_version") or "no user-space NVIDIA driver version was recorded")


@fact("driver_for_cuda")
def driver_for_cuda(f: Facts) -> Dict:
    """The driver version CUDA code meets here (nvidia-smi/NVML, else the loaded kernel module),
    and the OS column of NVIDIA's tables it belongs to (WSL runs the Windows driver)."""
    wsl = (f.get("wsl") or {}).get("inside")
    answered = f.get("driver_version")
    module = f.get("kernel_module")
    if answered:
        version, source = answered["version"], answered["source"]
    elif module and not wsl:
        version, source = module["version"], module["source"]
    else:
        raise Missing(f.why_missing("driver_version") or "no NVIDIA driver version is known")
    return {"version": version, "source": source, "os": "wsl" if wsl else "linux"}
