"""The commands gpudoctor records, as argv lists keyed by a stable name.

Keys are what snapshots and checks use (``commands/<key>.out`` in a snapshot folder).
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from gpudoctor import runner
from gpudoctor.probes import kernel_log

# nvidia-smi -q -x is the primary source; the table and -L are what users know and paste.
COMMANDS: Dict[str, Tuple[str, ...]] = {
    "nvidia_smi_xml": ("nvidia-smi", "-q", "-x"),
    "nvidia_smi": ("nvidia-smi",),
    "nvidia_smi_L": ("nvidia-smi", "-L"),
    "nvidia_smi_query": ("nvidia-smi",
                         "--query-gpu=index,name,uuid,pci.bus_id,compute_cap,memory.total,memory.used",
                         "--format=csv"),
    "nvcc_version": ("nvcc", "--version"),
    # nvcc's default host compiler: each CUDA release accepts gcc only up to a version (crt/host_config.h).
    "gcc_version": ("gcc", "--version"),
    # -k adds "Kernel driver in use" (nouveau vs nvidia); vendor 10de is NVIDIA.
    "lspci": ("lspci", "-nnk", "-d", "10de:"),
    "uname_r": ("uname", "-r"),
    "mokutil_sb_state": ("mokutil", "--sb-state"),
    "ldconfig_p": ("ldconfig", "-p"),
    # The nvidia module on disk for the running kernel: its version (vs the loaded one), its
    # signer (Secure Boot), or "Module nvidia not found" when DKMS did not build it.
    "modinfo_nvidia": ("modinfo", "nvidia"),
    # The kernel log since boot, for Xid/SXid events: the journal keeps the whole boot where the ring
    # buffer behind /dev/kmsg and dmesg may have wrapped; only NVIDIA lines are kept (probes.kernel_log).
    "kernel_journal": ("journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager", "-n", "50000"),
    "kernel_dmesg": ("dmesg",),
    # NVLink state per link, and its error counters read twice (DELAYED) to see the ones growing now.
    "nvidia_smi_nvlink_s": ("nvidia-smi", "nvlink", "-s"),
    "nvidia_smi_nvlink_e": ("nvidia-smi", "nvlink", "-e"),
    "nvidia_smi_nvlink_e_later": ("nvidia-smi", "nvlink", "-e"),
    # NVSwitch systems: the fabric manager service and its version, which must equal the driver's.
    "fabricmanager_active": ("systemctl", "is-active", "nvidia-fabricmanager"),
    "fabricmanager_version": ("nv-fabricmanager", "--version"),
}

# Output kept per stream, a few times what each command prints on a large machine (`nvidia-smi
# -q -x` is ~40-75 KB per GPU with its processes, the table ~1 KB per GPU plus a line per process,
# `ldconfig -p` a few hundred KB, the journal's kernel log 50,000 lines of ~100-300 bytes, dmesg
# the ring buffer, read up to 32 MiB as /dev/kmsg is, before their NVIDIA lines are kept). A
# command printing more is cut (and stopped, see runner), so a flood costs the parsers and the
# bundle's redaction (about 1 s per MiB) little. Others: 1 MiB.
MAX_BYTES: Dict[str, int] = {
    "nvidia_smi_xml": 2 << 20, "nvidia_smi": 256 << 10, "nvidia_smi_L": 64 << 10, "nvidia_smi_query": 64 << 10,
    "nvcc_version": 64 << 10, "gcc_version": 64 << 10, "lspci": 256 << 10, "uname_r": 4 << 10,
    "mokutil_sb_state": 4 << 10, "ldconfig_p": 4 << 20, "modinfo_nvidia": 256 << 10,
    "kernel_journal": 16 << 20, "kernel_dmesg": 32 << 20, "nvidia_smi_nvlink_s": 256 << 10,
    "fabricmanager_active": 4 << 10, "fabricmanager_version": 64 << 10,
}
# A second reading of counters, to compare with the first: its key -> (the reading it repeats, seconds
# between the two starts). run_series runs the pair in one thread, one after the other, so the gap holds
# however late a loaded machine starts the first; a first reading slower than the gap makes it longer
# (``reading_gap_s`` gives the gap a recording shows).
DELAYED: Dict[str, Tuple[str, float]] = {"nvidia_smi_nvlink_e_later": ("nvidia_smi_nvlink_e", 1.0)}

# Tools like lspci, ldconfig and mokutil live in sbin, which a user's PATH often lacks.
_FALLBACK_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin")

DEFAULT_TIMEOUT_S = 10.0


def resolve(program: str, path_var: Optional[str]) -> Optional[str]:
    """Find ``program`` on the given PATH, then in the usual system directories."""
    found = runner.which(program, path=path_var) if path_var else None
    if found:
        return found
    return runner.which(program, path=os.pathsep.join(_FALLBACK_DIRS))


def run_command(key: str, env: Mapping[str, str], timeout: float) -> runner.CommandResult:
    argv = COMMANDS[key]
    exe = resolve(argv[0], env.get("PATH"))
    if exe is None:
        return runner.CommandResult(argv, error="not found")
    result = runner.run((exe,) + argv[1:], timeout=timeout, env=_child_env(env),
                        max_bytes=MAX_BYTES.get(key, 1 << 20))
    # Record the argv as the user would type it; the resolved path goes into the error text only.
    result = dataclasses.replace(result, argv=argv)
    return kernel_log.trimmed(result) if key in kernel_log.COMMAND_KEYS else result


def series(keys: Sequence[str]) -> List[Tuple[str, ...]]:
    """The keys grouped into runs of one thread each: a delayed second reading after the reading it repeats."""
    wanted = set(keys)
    out = []
    for key in keys:
        if key in DELAYED and DELAYED[key][0] in wanted:
            continue  # runs in its first reading's series
        out.append((key,) + tuple(k for k in keys if DELAYED.get(k, ("",))[0] == key))
    return out


def run_series(keys: Sequence[str], env: Mapping[str, str], remaining: Callable[[], float],
               results: Optional[Dict[str, runner.CommandResult]] = None) -> Dict[str, runner.CommandResult]:
    """Run ``keys`` one after another; a delayed key starts its gap after the previous command started.

    ``remaining()`` gives the seconds left for the whole series; a wait never takes more than half of them.
    Each result goes into ``results`` as it comes, so a caller that stops waiting keeps the ones done.
    """
    results = {} if results is None else results
    started = time.monotonic()
    for key in keys:
        delay = DELAYED[key][1] if key in DELAYED else 0.0
        wait = min(started + delay - time.monotonic(), remaining() / 2)
        if wait > 0:
            time.sleep(wait)
        started = time.monotonic()
        results[key] = run_command(key, env, max(0.05, remaining()))
    return results


def reading_gap_s(first: runner.CommandResult, key: str) -> float:
    """About the seconds between the starts of ``first`` and the delayed reading ``key`` that followed it."""
    return max(DELAYED[key][1], first.duration_s)


def _child_env(env: Mapping[str, str]) -> Dict[str, str]:
    child = dict(env)
    child.setdefault("LC_ALL", "C")  # stable, parseable output
    return child
