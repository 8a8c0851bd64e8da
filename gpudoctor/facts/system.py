"""Facts about the operating system: OS release, kernel modules, container, WSL."""

from __future__ import annotations

import re
from typing import Dict, Set

from gpudoctor.facts import Facts, Missing, command_result, fact


@fact("env")
def env(f: Facts) -> Dict[str, str]:
    """The allow-listed environment variables (always present, possibly empty)."""
    return f.snapshot.env


@fact("os_release")
def os_release(f: Facts) -> Dict[str, str]:
    """/etc/os-release as a dict (ID, ID_LIKE, VERSION_ID, PRETTY_NAME)."""
    rec = f.snapshot.file("/etc/os-release")
    if not rec.exists:
        raise Missing(f"/etc/os-release could not be read ({rec.error})")
    out = {}
    for line in rec.content.splitlines():
        m = re.match(r'^([A-Z_][A-Z0-9_]*)=(.*)$', line.strip())
        if m:
            out[m.group(1)] = m.group(2).strip().strip('"').strip("'")
    return out


@fact("loaded_modules")
def loaded_modules(f: Facts) -> Set[str]:
    """Names of the loaded kernel modules, from /proc/modules."""
    rec = f.snapshot.file("/proc/modules")
    if not rec.exists:
        raise Missing(f"/proc/modules could not be read ({rec.error}); inside a container it is often hidden")
    return {line.split()[0] for line in rec.content.splitlines() if line.strip()}


@fact("kernel_cmdline")
def kernel_cmdline(f: Facts) -> str:
    """The kernel command line, from /proc/cmdline."""
    rec = f.snapshot.file("/proc/cmdline")
    if not rec.exists:
        raise Missing(f"/proc/cmdline could not be read ({rec.error})")
    return rec.content.strip()


@fact("container")
def container(f: Facts) -> Dict:
    """Whether we run inside a container, and which kind (docker, podman, kubernetes, lxc)."""
    snap = f.snapshot
    kind = None
    if snap.file("/.dockerenv").exists:
        kind = "docker"
    elif snap.file("/run/.containerenv").exists:
        kind = "podman"
    cgroup = snap.text("/proc/1/cgroup") or ""
    if kind is None:
        for marker in ("docker", "kubepods", "containerd", "lxc", "libpod"):
            if marker in cgroup:
                kind = {"kubepods": "kubernetes", "libpod": "podman"}.get(marker, marker)
                break
    if kind is None and snap.env.get("container"):
        kind = snap.env["container"]
    if "KUBERNETES_SERVICE_HOST" in snap.env:
        kind = "kubernetes" if kind in (None, "docker", "containerd") else kind
    return {"inside": kind is not None, "kind": kind}


@fact("wsl")
def wsl(f: Facts) -> Dict:
    """Whether this is WSL (1 or 2), from /proc/version and /usr/lib/wsl/lib."""
    version = (f.snapshot.text("/proc/version") or "").lower()
    libs = f.snapshot.listing("/usr/lib/wsl/lib")
    is_wsl = "microsoft" in version or "wsl" in version or libs is not None
    return {"inside": is_wsl, "wsl2": is_wsl and ("wsl2" in version or f.snapshot.listing("/dev/dxg") is not None),
            "wsl_libs": libs or []}


@fact("kernel_release")
def kernel_release(f: Facts) -> str:
    """The running kernel (uname -r)."""
    return command_result(f, "uname_r").stdout.strip()
