"""Facts from the kernel log: which log was read, its NVIDIA events (kernlog), and the GPU faults they mean."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from gpudoctor import kernlog
from gpudoctor.facts import Facts, Missing, NotApplicable, fact
from gpudoctor.probes.kernel_log import KMSG

# What a user without the rights can do, in the skip reason of every kernel-log check.
GRANT = ("run gpudoctor as root, or let it read the log: `sudo sysctl kernel.dmesg_restrict=0` (dmesg, /dev/kmsg) "
         "or `sudo usermod -aG systemd-journal $USER` (journalctl; the adm group on Debian/Ubuntu)")


@dataclass(frozen=True)
class KernelLog:
    """The NVIDIA lines of the kernel log since boot, from the best source that could be read."""

    source: str                # evidence source: "command:kernel_journal", "file:/dev/kmsg", "command:kernel_dmesg"
    name: str                  # what a person calls it: "journalctl -k", "/dev/kmsg", "dmesg"
    lines: Tuple[str, ...]     # the log's first line, then its NVIDIA lines, oldest first
    from_boot: bool            # it reaches back to the boot (it holds the kernel's "Linux version" line)


def _command_text(f: Facts, key: str, name: str) -> Tuple[Optional[str], Optional[str]]:
    """(text, None) when the command was read, (None, why) when it could not be, (None, None) if not recorded."""
    res = f.snapshot.command(key)
    if res is None:
        return None, None
    said = next((ln.strip() for ln in (res.stderr + "\n" + res.stdout).splitlines() if ln.strip()), "")
    if not res.ok:
        return None, f"{res.describe()}" + (f": {said}" if said and res.ran and not res.timed_out else "")
    lines = [ln for ln in res.stdout.splitlines() if ln.strip() and not ln.startswith("--")]
    if not lines:
        return None, f"{name} printed no kernel message of this boot" + (f" ({said})" if said else "")
    return "\n".join(lines), None


def _kmsg_text(f: Facts) -> Tuple[Optional[str], Optional[str]]:
    rec = f.snapshot.file(KMSG)
    if rec.exists:
        return rec.content, None
    return None, (None if rec.error == "not recorded" else f"{KMSG}: {rec.error}")


def _sources(f: Facts):
    yield "command:kernel_journal", "journalctl -k", _command_text(f, "kernel_journal", "journalctl -k -b")
    yield f"file:{KMSG}", KMSG, _kmsg_text(f)
    yield "command:kernel_dmesg", "dmesg", _command_text(f, "kernel_dmesg", "dmesg")


@fact("kernel_log")
def kernel_log(f: Facts) -> KernelLog:
    """The NVIDIA kernel messages since boot (KernelLog): the journal, /dev/kmsg or dmesg, whichever was read."""
    logs, unread = [], []
    for source, name, (text, why) in _sources(f):
        if text is not None:
            lines = tuple(text.splitlines())
            logs.append(KernelLog(source, name, lines, any(kernlog.BOOT.search(ln) for ln in lines)))
        elif why:
            unread.append(why)
    log = next((x for x in logs if x.from_boot), logs[0]) if logs else None
    if log is not None and len(log.lines) > 1:  # NVIDIA lines beyond the first: they speak for themselves
        return log
    presence = f.get("nvidia_gpu_present")
    if presence is not None and not presence.present:
        raise NotApplicable("no NVIDIA GPU on this machine, so no NVIDIA kernel messages to judge")
    if log is not None:
        return log
    if not unread:
        raise Missing("the kernel log was not recorded in this snapshot")
    raise Missing(f"the kernel log could not be read ({'; '.join(unread)}): {GRANT}")


@fact("kernel_events")
def kernel_events(f: Facts) -> Tuple[kernlog.KernelEvent, ...]:
    """The NVIDIA events in the kernel log (Xid, SXid, lost GPUs, driver loads), oldest first."""
    return tuple(kernlog.parse(f["kernel_log"].lines))
