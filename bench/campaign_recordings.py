"""Re-run issue 15's attacks on recordings and secrets against a gpudoctor tree; print the counts.

    python bench/campaign_recordings.py [--src DIR] [--kills N] [--quick]

``--src`` is the tree attacked (default: this one); give an export of an older commit
(``git archive <commit> | tar -x -C /tmp/old``) to compare. Sections:

* hostile snapshot folders (links to host files and folders, 2 GB sparse files, FIFOs,
  devices, deep and wide trees, odd names, damaged JSON), each replayed by ``check`` and ``hook``;
* hostile bundles ('.' and long-name bombs, manifests naming host files, links, truncation);
* every secret format of gpudoctor/bundle/data/secret_formats.json planted in every place a
  bundle reads, with and without --anonymize;
* kills (SIGKILL, SIGTERM, SIGINT) at random moments of ``snapshot --out``, a bundle replay
  and ``bundle``, each followed by a normal run;
* a full disk: a small tmpfs where one can be mounted (root), else a file-size limit.

Counts: inputs, crashes (exit 3, a traceback, an undocumented exit), hangs (past the time
limit), host files read (a marker from a host file in the output), leaks (planted secrets
found in a bundle), partial results and leftovers, peak memory of one run. Exit 1 if any
count but inputs is non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import campaign_inputs as ci  # noqa: E402
from tests import bundle_support as bs  # noqa: E402

OK_EXITS = {"check": {0, 1, 2}, "hook": {0, 1, 2}, "snapshot": {0, 2}, "bundle": {0, 2}}


@dataclass
class Run:
    rc: int
    out: str
    err: str
    peak_mib: float
    hung: bool
    seconds: float


def run(src: Path, args, env=None, timeout: float = 60, kill_after: float = None, sig=signal.SIGKILL, preexec=None) -> Run:
    """``python -m gpudoctor args`` from ``src``: exit, output, peak RSS (wait4), whether it hung."""
    env = dict(env or os.environ)
    env["PYTHONPATH"] = str(src)
    start = time.monotonic()
    # cwd "/": `python -m` puts the working directory first on sys.path, which must not be a gpudoctor tree.
    p = subprocess.Popen([sys.executable, "-m", "gpudoctor", *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd="/", start_new_session=True, preexec_fn=preexec)
    chunks = {1: [], 2: []}
    readers = [threading.Thread(target=lambda f, k: chunks[k].append(f.read()), args=(f, k), daemon=True)
               for f, k in ((p.stdout, 1), (p.stderr, 2))]
    for t in readers:
        t.start()
    fired = []

    def fire(s=signal.SIGKILL, mark=True):
        if mark:
            fired.append(s)
        try:
            os.kill(p.pid, s)
        except ProcessLookupError:
            pass

    timers = [threading.Timer(timeout, fire)]
    if kill_after is not None:
        timers.append(threading.Timer(kill_after, fire, (sig, False)))
    for t in timers:
        t.start()
    _, status, usage = os.wait4(p.pid, 0)
    for t in timers:
        t.cancel()
    try:
        os.killpg(p.pid, signal.SIGKILL)  # what it left running (a stub nvidia-smi) goes too
    except (ProcessLookupError, PermissionError):
        pass
    p.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join(5)
    text = {k: b"".join(v).decode("utf-8", "replace") for k, v in chunks.items()}
    return Run(p.returncode, text[1], text[2], usage.ru_maxrss / 1024, bool(fired), time.monotonic() - start)


def crash_kind(*runs: Run) -> dict:
    """Tracebacks of killed runs: a KeyboardInterrupt raised while Python was still importing gpudoctor
    (before any handler of ours exists: the CLI entry point's business) is counted apart."""
    early = sum(1 for r in runs if "Traceback" in r.err and r.err.rstrip().endswith("KeyboardInterrupt")
                and "gpudoctor/commands/" not in r.err)
    other = sum(1 for r in runs if r.rc == 3 or ("Traceback" in r.err and not r.err.rstrip().endswith("KeyboardInterrupt"))
                or ("Traceback" in r.err and "gpudoctor/commands/" in r.err))
    return {"crashes": other, "startup_interrupts": early}


class Tally:
    def __init__(self):
        self.rows = {}
        self.peaks = {}  # section -> the input of its peak memory

    def add(self, section: str, **counts) -> None:
        self.rows.setdefault(section, Counter()).update(counts)

    def peak(self, section: str, mib: float, label: str = "") -> None:
        c = self.rows.setdefault(section, Counter())
        if int(mib) > c["peak_mib"]:
            c["peak_mib"] = int(mib)
            self.peaks[section] = label


def judge(t: Tally, section: str, cmd: str, r: Run, note=None, label: str = "") -> None:
    crashed = r.rc == 3 or "Traceback" in r.err or (r.rc not in OK_EXITS[cmd] and not r.hung)
    host = ci.MARKER in r.out + r.err
    t.add(section, runs=1, crashes=int(crashed), hangs=int(r.hung), host_reads=int(host))
    t.peak(section, r.peak_mib, f"{label} {cmd}".strip())
    if (crashed or r.hung or host) and note is not None:
        note.append(f"{section}: {label} {cmd} exit {r.rc}{' hung' if r.hung else ''}{' HOST FILE READ' if host else ''}: "
                    f"{(r.err.strip().splitlines() or [''])[-1][:150]}")


# --- sections ----------------------------------------------------------------------------------

def folders(src, base, t, notes):
    host = ci.host_dir(base)
    targets = [(n, ci.folder_attack(base, host, n)) for n in ci.FOLDER_ATTACKS]
    targets.append(("link-snapshot-subfolder", ci.linked_snapshot_subfolder(base, host)))
    for name, folder in targets:
        t.add("snapshot folders", inputs=1)
        for cmd in (["check", "--snapshot", folder, "--json"], ["hook", "--snapshot", folder]):
            judge(t, "snapshot folders", cmd[0], run(src, cmd, timeout=60), notes, name)


def bundles(src, base, t, notes, quick):
    folder = base / "bundles"
    folder.mkdir()
    escape = Path("/tmp/gpudoctor-campaign-escape")
    for name, data in ci.bundle_attacks(base, quick).items():
        path = folder / f"{name}.tar.gz"
        path.write_bytes(data)
        scratch = base / f"scratch-{name}"
        scratch.mkdir()
        r = run(src, ["check", "--snapshot", path, "--json"], env=dict(os.environ, TMPDIR=str(scratch)), timeout=60)
        t.add("bundles", inputs=1)
        judge(t, "bundles", "check", r, notes, name)
        probed = name in ("manifest-absolute-etc-passwd", "manifest-dotdot") and r.rc in (0, 1)
        t.add("bundles", host_reads=int(probed), leftovers=len(os.listdir(scratch)), escapes=int(escape.exists()))
        if probed:
            notes.append(f"bundles: {name} replayed: the manifest probed a host file")
        if os.listdir(scratch):
            notes.append(f"bundles: {name} left {os.listdir(scratch)} in TMPDIR")
        shutil.rmtree(scratch, ignore_errors=True)
        escape.unlink(missing_ok=True)


def secrets(src, base, t, notes):
    data = json.loads((ci.ROOT / "gpudoctor" / "bundle" / "data" / "secret_formats.json").read_text())
    rows = data["formats"] + data["rules"]
    planted = sorted({r.get("secret", r["example"]) for r in rows} | {"k7Secr3"})
    for mode in ((), ("--anonymize",)):
        section = "secrets" + (" --anonymize" if mode else "")
        tmp = base / f"secrets{len(mode)}"
        tmp.mkdir()
        r, out = _planted_bundle(src, tmp, rows, mode)
        t.add(section, inputs=len(planted))
        judge(t, section, "bundle", r, notes)
        if r.rc != 0 or not out.exists():
            continue
        texts = {n: d.decode("utf-8", "replace") for n, d in bs.members(out).items()}
        texts["<tar stream>"] = bs.raw_tar(out).decode("utf-8", "replace")
        leaked = {s for s in planted for text in texts.values() if s in text}
        t.add(section, leaks=len(leaked), leak_places=sum(1 for s in planted for x in texts.values() if s in x))
        notes.extend(f"{section}: leaked {s[:50]!r}" for s in sorted(leaked)[:12])


def _planted_bundle(src, tmp, rows, mode):
    examples = [r["example"] for r in rows]
    one_line = [e for e in examples if "\n" not in e]
    bindir = tmp / "bin"
    bs.make_stubs(bindir)
    (bindir / "planted.txt").write_text("\n".join(examples) + "\n")
    _exe(bindir / "nvcc", f'#!/bin/sh\necho "Cuda compilation tools, release 12.4"\ncat "{bindir}/planted.txt"\n'
                          f'cat "{bindir}/planted.txt" >&2\n')
    (bindir / "kernel.txt").write_text("".join(f"Mar 01 12:00:01 node kernel: NVRM: {e}\n" for e in one_line))
    _exe(bindir / "journalctl", f'#!/bin/sh\ncat "{bindir}/kernel.txt"\n')
    (bindir / "conda.json").write_text(json.dumps([{"name": "x", "version": "1", "channel": e} for e in examples]))
    _exe(bindir / "conda", f'#!/bin/sh\ncat "{bindir}/conda.json"\n')
    root = bs.make_root(tmp / "root")
    (root / "etc" / "modprobe.d" / "planted.conf").write_text("\n".join(examples) + "\n")
    (root / "proc" / "cmdline").write_text("ro luks.key=ExampleLuksKey0 api-key=ExampleCmdlineKey quiet\n")
    scratch = tmp / "scratch"
    scratch.mkdir()
    env = bs.planted_env(bindir, scratch)
    env.update({"MY_SHORT_TOKEN": "k7Secr3", "LD_LIBRARY_PATH": "/opt/k7Secr3/lib", "XLA_FLAGS": "\n".join(examples),
                "NCCL_SOCKET_IFNAME": " ".join(one_line), "HTTPS_PROXY": "alice:ExampleProxyPass0123@proxy.example.com:3128",
                "PIP_INDEX_URL": "https://alice:Ex/ample@Pass0123@pypi.example.com/simple"})
    out = tmp / "planted.tar.gz"
    r = run(src, ["bundle", "--no-frameworks", "--root", root, "-o", out, *mode], env=env, timeout=300)
    return r, out


def _exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _slow_env(tmp: Path, delay: float) -> dict:
    bindir = tmp / "slowbin"
    bs.make_stubs(bindir)
    _exe(bindir / "nvidia-smi", f'#!/bin/sh\nsleep {delay}\ncat "{bs.A100_XML}"\n')
    scratch = tmp / "scratch"
    scratch.mkdir(exist_ok=True)
    return bs.planted_env(bindir, scratch)


def kills(src, base, t, notes, n, rng):
    tmp = base / "kills"
    tmp.mkdir()
    env = _slow_env(tmp, 0.3)
    scratch = Path(env["TMPDIR"])
    parent = tmp / "snaps"
    parent.mkdir()
    full = run(src, ["snapshot", "--no-frameworks", "--out", parent / "probe"], env=env, timeout=120).seconds
    shutil.rmtree(parent / "probe", ignore_errors=True)
    for i in range(n):
        _kill_snapshot(src, parent, env, t, notes, rng, full, i)
    big = tmp / "big.tar.gz"
    big.write_bytes(ci.good_bundle(extra=[("b/snapshot/files/etc/big.conf", os.urandom(60 * 1024 * 1024))]))
    good = tmp / "good.tar.gz"
    good.write_bytes(ci.good_bundle())
    replay = run(src, ["check", "--snapshot", big], env=env, timeout=120).seconds
    out = tmp / "bundles"
    out.mkdir()
    writing = run(src, ["bundle", "--no-frameworks", "-o", out], env=env, timeout=120).seconds
    for f in os.listdir(out):
        os.unlink(out / f)
    for i in range(n):
        sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
        r = run(src, ["check", "--snapshot", big], env=env, kill_after=rng.uniform(0.05, replay), sig=sig)
        left = len(os.listdir(scratch))
        after = run(src, ["check", "--snapshot", good], env=env)
        t.add("kill: bundle replay", inputs=1, **crash_kind(r, after),
              leftovers_after_kill=left, leftovers_after_next_run=len(os.listdir(scratch)))
        _clear(scratch)
    watchdog = run(src, ["hook", "--snapshot", big, "--timeout", "0.01"], env=env)
    after = run(src, ["check", "--snapshot", good], env=env)
    t.add("kill: bundle replay", inputs=1, crashes=int(watchdog.rc == 3 or after.rc == 3),
          leftovers_after_next_run=len(os.listdir(scratch)))
    _clear(scratch)
    for i in range(n):
        sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
        r = run(src, ["bundle", "--no-frameworks", "-o", out], env=env, kill_after=rng.uniform(0.05, writing), sig=sig)
        left = len(os.listdir(scratch)) + len([f for f in os.listdir(out) if not f.endswith(".tar.gz")])
        run(src, ["bundle", "--no-frameworks", "-o", out], env=env, timeout=120)
        stale = len(os.listdir(scratch)) + len([f for f in os.listdir(out) if not f.endswith(".tar.gz")])
        t.add("kill: bundle writing", inputs=1, **crash_kind(r), leftovers_after_kill=left,
              leftovers_after_next_run=stale)
        _clear(scratch)
        _clear(out)


def _kill_snapshot(src, parent, env, t, notes, rng, full, i):
    target = parent / f"node{i}"
    sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
    r = run(src, ["snapshot", "--no-frameworks", "--out", target], env=env, kill_after=rng.uniform(0.05, full), sig=sig)
    partial = target.exists() and not _complete(target)
    left = [n for n in os.listdir(parent) if not n.startswith("node")]
    again = run(src, ["snapshot", "--no-frameworks", "--out", target], env=env, timeout=120)
    blocked = partial and again.rc != 0
    stale = [n for n in os.listdir(parent) if not n.startswith("node")]
    t.add("kill: snapshot --out", inputs=1, **crash_kind(r, again), partial=int(partial),
          blocked_reruns=int(blocked), leftovers_after_kill=len(left), leftovers_after_next_run=len(stale))
    if partial or stale:
        notes.append(f"kill: snapshot --out after {sig.name}: partial={partial} leftovers={stale}")
    _clear(parent)


def _complete(folder: Path) -> bool:
    try:
        data = json.loads((folder / "snapshot.json").read_text())
    except (OSError, ValueError):
        return False
    return all((folder / "commands" / f"{k}.out").exists() for k in data.get("commands", {}))


def _clear(folder: Path) -> None:
    for name in os.listdir(folder):
        p = folder / name
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() and not p.is_symlink() else p.unlink()


def full_disk(src, base, t, notes):
    tmp = base / "disk"
    tmp.mkdir()
    env = _slow_env(tmp, 0)
    for size in ("16k", "64k", "512k"):
        mnt = tmp / f"mnt{size}"
        mnt.mkdir()
        mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                                                       capture_output=True).returncode == 0
        limit = {"16k": 16384, "64k": 65536, "512k": 524288}[size]
        preexec = None if mounted else (lambda n=limit: resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)))
        section = "full disk" + (" (tmpfs)" if mounted else " (simulated: RLIMIT_FSIZE)")
        try:
            for cmd, kind in ((["snapshot", "--no-frameworks", "--out", mnt / "snap"], "snapshot"),
                              (["bundle", "--no-frameworks", "-o", mnt], "bundle")):
                r = run(src, cmd, env=env, timeout=120, preexec=preexec)
                t.add(section, inputs=1)
                judge(t, section, kind, r, notes)
                left = os.listdir(mnt)
                t.add(section, partial=int(r.rc != 0 and bool(left)))
                if r.rc != 0 and left:
                    notes.append(f"{section} {size}: {kind} exit {r.rc} left {left}")
                _clear(mnt)
        finally:
            if mounted:
                subprocess.run(["umount", str(mnt)], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=str(ci.ROOT), help="the gpudoctor tree to attack (default: this one)")
    ap.add_argument("--kills", type=int, default=30, help="kills per kind (snapshot --out, replay, bundle)")
    ap.add_argument("--quick", action="store_true", help="smaller bombs (1/8 GiB), for a fast look")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--only", default="folders,bundles,secrets,kills,disk")
    a = ap.parse_args()
    t, notes = Tally(), []
    rng = random.Random(a.seed)
    base = Path(tempfile.mkdtemp(prefix="campaign-"))
    started = time.monotonic()
    try:
        only = a.only.split(",")
        for name, fn in (("folders", lambda: folders(a.src, base, t, notes)),
                         ("bundles", lambda: bundles(a.src, base, t, notes, a.quick)),
                         ("secrets", lambda: secrets(a.src, base, t, notes)),
                         ("kills", lambda: kills(a.src, base, t, notes, a.kills, rng)),
                         ("disk", lambda: full_disk(a.src, base, t, notes))):
            if name in only:
                fn()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return report(t, notes, a.src, time.monotonic() - started)


COLUMNS = {"inputs": "inputs", "runs": "runs", "crashes": "crash", "hangs": "hang", "host_reads": "host-read",
           "escapes": "escape", "leaks": "leaks", "leak_places": "leak@", "partial": "partial",
           "blocked_reruns": "blocked", "leftovers_after_kill": "left@kill", "leftovers": "left",
           "leftovers_after_next_run": "left@next", "startup_interrupts": "^C@import", "peak_mib": "peak-MiB"}


def report(t: Tally, notes, src, seconds) -> int:
    used = [c for c in COLUMNS if any(c in row for row in t.rows.values())]
    print(f"campaign against {src} ({seconds:.0f}s)")
    print(f"{'section':30}" + "".join(f"{COLUMNS[c]:>10}" for c in used))
    for section, row in t.rows.items():
        print(f"{section:30}" + "".join(f"{row.get(c, 0):>10}" for c in used))
    print("left@kill: what a kill left at once (SIGKILL skips every cleanup); left@next: what the next run "
          "did not remove; ^C@import: a SIGINT traceback before gpudoctor's handlers exist (cli.py's entry point)")
    for section, label in t.peaks.items():
        print(f"  peak memory of {section}: {label}")
    for line in notes[:60]:
        print("  " + line)
    bad = {"crashes", "hangs", "host_reads", "escapes", "leaks", "partial", "blocked_reruns", "leftovers",
           "leftovers_after_next_run"}
    return int(any(row.get(c, 0) for row in t.rows.values() for c in bad))


if __name__ == "__main__":
    sys.exit(main())
