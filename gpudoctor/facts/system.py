"""Facts about the operating system: OS release, kernel modules, container, WSL."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Optional, Tuple

from gpudoctor.facts import Facts, Missing, command_result, fact


@dataclass(frozen=True)
class OsRelease:
    """The /etc/os-release fields gpudoctor uses."""

    id: Optional[str]            # ID: "ubuntu", "rocky"
    id_like: Tuple[str, ...]     # ID_LIKE: distributions this one derives from, ("rhel", "centos", "fedora")
    version_id: Optional[str]    # VERSION_ID: "22.04"
    pretty_name: Optional[str]   # PRETTY_NAME: "Ubuntu 22.04.4 LTS"


@dataclass(frozen=True)
class Container:
    """Whether gpudoctor runs inside a container."""

    inside: bool
    kind: Optional[str]   # "docker", "podman", "kubernetes", "lxc", "containerd"...; None outside one


@dataclass(frozen=True)
class Wsl:
    """Whether this is Windows Subsystem for Linux."""

    inside: bool
    wsl2: bool
    wsl_libs: Tuple[str, ...]   # names in /usr/lib/wsl/lib, where Windows mounts its driver's libraries


@fact("env")
def env(f: Facts) -> Dict[str, str]:
    """The allow-listed environment variables (always present, possibly empty)."""
    return f.snapshot.env


@fact("os_release")
def os_release(f: Facts) -> OsRelease:
    """/etc/os-release: the distribution (ID, ID_LIKE, VERSION_ID, PRETTY_NAME)."""
    rec = f.snapshot.file("/etc/os-release")
    if not rec.exists:
        raise Missing(f"/etc/os-release could not be read ({rec.error})")
    out: Dict[str, str] = {}
    for line in rec.content.splitlines():
        m = re.match(r'^([A-Z_][A-Z0-9_]*)=(.*)$', line.strip())
        if m:
            out[m.group(1)] = m.group(2).strip().strip('"').strip("'")
    return OsRelease(out.get("ID"), tuple(out.get("ID_LIKE", "").split()), out.get("VERSION_ID"),
                     out.get("PRETTY_NAME"))


@fact("loaded_modules")
def loaded_modules(f: Facts) -> FrozenSet[str]:
    """Names of the loaded kernel modules, from /proc/modules."""
    rec = f.snapshot.file("/proc/modules")
    if not rec.exists:
        raise Missing(f"/proc/modules could not be read ({rec.error}); inside a container it is often hidden")
    return frozenset(line.split()[0] for line in rec.content.splitlines() if line.strip())


@fact("kernel_cmdline")
def kernel_cmdline(f: Facts) -> str:
    """The kernel command line, from /proc/cmdline."""
    rec = f.snapshot.file("/proc/cmdline")
    if not rec.exists:
        raise Missing(f"/proc/cmdline could not be read ({rec.error})")
    return rec.content.strip()


@fact("container")
def container(f: Facts) -> Container:
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
    return Container(kind is not None, kind)


@fact("wsl")
def wsl(f: Facts) -> Wsl:
    """Whether this is WSL (1 or 2), from /proc/version and /usr/lib/wsl/lib."""
    version = (f.snapshot.text("/proc/version") or "").lower()
    libs = f.snapshot.listing("/usr/lib/wsl/lib")
    is_wsl = "microsoft" in version or "wsl" in version or libs is not None
    return Wsl(is_wsl, is_wsl and ("wsl2" in version or f.snapshot.listing("/dev/dxg") is not None), tuple(libs or ()))


@fact("kernel_release")
def kernel_release(f: Facts) -> str:
    """The running kernel (uname -r)."""
    return command_result(f, "uname_r").stdout.strip()


@fact("dev_nodes")
def dev_nodes(f: Facts) -> Tuple[str, ...]:
    """The NVIDIA device nodes in /dev: ("nvidia0", "nvidiactl", ...), () when there are none.

    The probe lists nvidia* names only; missing when /dev was not listed at all."""
    names = f.snapshot.listing("/dev")
    if names is None:
        raise Missing("/dev was not listed in this snapshot")
    return tuple(names)


@fact("python_path")
def python_path(f: Facts) -> str:
    """The interpreter the frameworks were probed in (and that fix commands name): "/opt/venv/bin/python"."""
    path = f.snapshot.meta.get("python")
    if not path:
        raise Missing("the snapshot does not say which Python interpreter was probed")
    return path
