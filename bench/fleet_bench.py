"""Time `gpudoctor fleet` over 100,000 realistic node reports with 1,000 corrupt lines
(target: under 5 s and under 500 MB, every corrupt stretch counted and named, no node lost).

    python bench/fleet_bench.py [--nodes N] [--corrupt N] [--keep DIR] [--compare REV] [--floor]

The reports are real `gpudoctor check` reports of the recorded core scenarios (an 8x H100
server, an A100 in MIG mode, a workstation whose driver is not loaded) plus a hung
nvidia-smi, built by the report builder and then varied per node the way a real fleet
varies: an older driver on some nodes, a GPU fallen off the bus, an older torch. They are
written as one JSON-lines stream (`check --jsonl`) and one pretty-printed file per node
(as `srun -o reports/%N.json gpudoctor check --json` does), and corrupted the ways a cluster
corrupts them: `srun: error` lines, a report cut short by a dying node, and a report cut
without its newline so that the next node's report continues on the same line.

Method (the one behind the issue's figure of 360 s and 3.5 GB for 100,000 reports with 1,000
corrupt lines): a fresh `gpudoctor fleet --json` process per input, wall time end to end,
peak memory as the largest single process (getrusage of the children) and as the whole
process tree (parent plus workers, sampled every 20 ms), CPU seconds of the process and its
workers, and the load average when it started (the VM is shared: wall time alone misleads). `--compare REV` runs the fleet code
of a git revision (e.g. the commit before the streaming reader) the same way, side by side.
Exit 1 if a target is missed or the summary is wrong.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCENARIOS = ROOT / "fixtures" / "scenarios"
TARGET_S, TARGET_MB = 5.0, 500
CAMPAIGN = "issue 15's campaign: 360 s, 3.5 GB"


def base_reports():
    """name -> report dict, from recorded snapshots through the real report builder."""
    from gpudoctor.report import build_report
    from gpudoctor.runner import CommandResult
    from gpudoctor.snapshot_folder import load

    h100 = load(str(SCENARIOS / "core-8gpu-server" / "snapshot"))
    hung = copy.deepcopy(h100)
    hung.commands = {k: v for k, v in h100.commands.items() if not k.startswith("nvidia_smi")}
    hung.commands["nvidia_smi_xml"] = CommandResult(("nvidia-smi", "-q", "-x"), None, "", "", 10.0, timed_out=True)
    reports = {
        "h100": build_report(h100).to_dict(),
        "hung": build_report(hung).to_dict(),
        "mig": build_report(load(str(SCENARIOS / "core-a100-mig" / "snapshot"))).to_dict(),
        "not_loaded": build_report(load(str(SCENARIOS / "core-driver-not-loaded" / "snapshot"))).to_dict(),
    }
    old = copy.deepcopy(reports["h100"])
    old["machine"].update(driver_version="535.161.08", kernel_module_version="535.161.08", cuda_driver_max="12.2")
    reports["old_driver"] = old
    seven = copy.deepcopy(reports["h100"])
    seven["machine"]["gpus"] = seven["machine"]["gpus"][:7]
    reports["seven_gpus"] = seven
    torch = copy.deepcopy(reports["h100"])
    torch["machine"]["frameworks"]["torch"]["version"] = "2.3.1+cu121"
    reports["old_torch"] = torch
    return reports


def plan(n):
    """host -> variant, with the planted counts."""
    kinds = {}
    for i in range(n):
        host = f"gpu{i:06d}"
        if i >= n - n // 10:
            kinds[host] = "mig"
        elif i % 331 == 5:
            kinds[host] = "not_loaded"
        elif i % 409 == 11:
            kinds[host] = "hung"
        elif i % 67 == 3:
            kinds[host] = "old_driver"
        elif i % 503 == 17:
            kinds[host] = "seven_gpus"
        elif i % 97 == 41:
            kinds[host] = "old_torch"
        else:
            kinds[host] = "h100"
    return kinds


def damage(kinds, corrupt):
    """host -> how its report is damaged: "srun" (an srun line before it), "cut" (cut short,
    newline kept), "glued" (cut, and the next report continues on the same line). Only
    healthy H100 nodes are damaged, so the planted problems and outliers stay countable."""
    healthy = [h for h, k in kinds.items() if k == "h100"]
    chosen = random.Random(15).sample(healthy[:-1], corrupt)
    return {h: ("srun", "cut", "glued")[i % 3] for i, h in enumerate(chosen)}


def write(reports, kinds, damaged, out: Path):
    """One JSON-lines stream and one pretty file per node, both damaged the same way."""
    pretty, lines = {}, {}
    for name, rep in reports.items():
        rep = copy.deepcopy(rep)
        rep["machine"]["hostname"] = "@@HOST@@"
        rep["snapshot"]["hostname"] = "@@HOST@@"
        pretty[name] = json.dumps(rep, indent=2, sort_keys=True) + "\n"
        lines[name] = json.dumps(rep, sort_keys=True, separators=(",", ":")) + "\n"
    per_node = out / "reports"
    per_node.mkdir()
    with open(out / "all.jsonl", "w", encoding="utf-8") as stream:
        for host, kind in kinds.items():
            line, doc = lines[kind].replace("@@HOST@@", host), pretty[kind].replace("@@HOST@@", host)
            how = damaged.get(host)
            if how == "srun":
                srun = f"srun: error: {host}: task 0: Exited with exit code 1\n"
                line, doc = srun + line, srun + doc
            elif how == "cut":
                line, doc = line[: len(line) // 2] + "\n", doc[: len(doc) // 2]
            elif how == "glued":
                line, doc = line[: len(line) // 2], doc[: len(doc) // 2]
            stream.write(line)
            (per_node / f"{host}.json").write_text(doc, encoding="utf-8")
    return per_node, out / "all.jsonl"


_MEASURE = r"""
import json, os, resource, subprocess, sys, time
import psutil
argv, stdin_path, timeout = json.loads(sys.argv[1])
load = os.getloadavg()[0]  # the machine is shared: a figure means little without it
start = time.perf_counter()
with open(stdin_path or "/dev/null", "rb") as stdin:
    proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    import threading
    out = {}
    reader = threading.Thread(target=lambda: out.update(o=proc.stdout.read(), e=proc.stderr.read()))
    reader.start()
    tree_peak, timed_out = 0, False
    me = psutil.Process(proc.pid)
    while proc.poll() is None:
        if time.perf_counter() - start > timeout:
            proc.kill(); timed_out = True; break
        try:
            tree = sum(p.memory_info().rss for p in [me] + me.children(recursive=True))
            tree_peak = max(tree_peak, tree)
        except psutil.Error:
            pass
        time.sleep(0.02)
    proc.wait(); reader.join()
elapsed = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the fleet process and its workers, all waited for
largest = usage.ru_maxrss * 1024
print(json.dumps({"s": elapsed, "cpu": usage.ru_utime + usage.ru_stime, "load": load,
                  "largest": largest, "tree": max(tree_peak, largest), "rc": proc.returncode,
                  "timed_out": timed_out, "out": out["o"].decode(), "err": out["e"].decode()[-2000:]}))
"""


def run_fleet(args, stdin_path=None, pythonpath=None, timeout=600):
    """Wall time, peak memory and summary of one fresh `gpudoctor fleet --json` process."""
    env = dict(os.environ, PYTHONPATH=pythonpath or str(ROOT))
    argv = [sys.executable, "-m", "gpudoctor", "fleet", "--json", *args]
    raw = subprocess.run([sys.executable, "-c", _MEASURE, json.dumps([argv, str(stdin_path or ""), timeout])], env=env,
                         capture_output=True, text=True, cwd=pythonpath or str(ROOT), check=True).stdout
    r = json.loads(raw)
    if r["timed_out"]:
        return r["s"], r, None
    if r["rc"] not in (0, 1):
        raise SystemExit(f"gpudoctor fleet failed ({r['rc']}): {r['err']}")
    return r["s"], r, json.loads(r["out"])


def verify(summary, kinds, damaged):
    counts = {k: sum(1 for v in kinds.values() if v == k) for k in set(kinds.values())}
    lost = sum(1 for how in damaged.values() if how in ("cut", "glued"))
    outliers = {(o["attribute"], o["value"]) for o in summary["outliers"]}
    per_attr = {a: sum(1 for o in summary["outliers"] if o["attribute"] == a) for a in ("driver", "gpus", "torch")}
    fails = counts.get("not_loaded", 0) + counts.get("hung", 0)
    named = {(e.get("reason") or "")[:20] for e in summary["unreadable"]}
    return [
        (f"{len(kinds) - lost} nodes summarised (the {lost} cut reports are not nodes)", summary["nodes"] == len(kinds) - lost),
        (f"{len(damaged)} corrupt stretches counted", summary.get("unreadable_count", len(summary["unreadable"])) == len(damaged)),
        ("corrupt stretches named with their line", all("line" in e for e in summary["unreadable"]) and len(named) >= 2),
        (f"{fails} failing nodes", summary["status"]["fail"] == fails),
        ("older drivers are outliers", per_attr["driver"] == counts["old_driver"] and ("driver", "535.161.08") in outliers),
        ("7-GPU nodes are outliers", per_attr["gpus"] == counts["seven_gpus"]),
        ("older torch is an outlier", ("torch", "2.3.1+cu121") in outliers),
    ]


def _old_tree(rev: str) -> str:
    """The gpudoctor package of git revision ``rev``, unpacked into a temporary folder."""
    folder = tempfile.mkdtemp(prefix="gpudoctor-fleet-old-")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "gpudoctor"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
    return folder


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def _row(label, seconds, r):
    if r.get("timed_out"):
        return f"  {label:<44} over {seconds:.0f} s (stopped)"
    return (f"  {label:<34} {seconds:6.2f} s wall  {r['cpu']:6.2f} s CPU (load {r['load']:4.1f})  "
            f"largest process {r['largest'] / 2**20:4.0f} MiB  process tree {r['tree'] / 2**20:4.0f} MiB")


def floor(jsonl: Path, per_node: Path):
    """CPU seconds of the work no reader can skip, measured here: reading the stream in 1 MiB
    blocks, one substring scan over all of it (what finding one key in every report costs),
    and opening and reading every per-node file."""
    def cpu(fn):
        start = time.process_time()
        fn()
        return time.process_time() - start

    def read(scan):
        with open(jsonl, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                if scan:
                    block.find(b'"not-there"')

    def files():
        for entry in os.scandir(per_node):
            with open(entry.path, "rb") as fh:
                fh.read()
    t_read = cpu(lambda: read(False))
    t_scan = cpu(lambda: read(True)) - t_read
    size = jsonl.stat().st_size / 1e9
    return (f"floor here (one process): reading the stream {t_read:.2f} s CPU ({size / max(t_read, 1e-9):.1f} GB/s), "
            f"one substring scan over it {t_scan:.2f} s ({size / max(t_scan, 1e-9):.1f} GB/s), "
            f"opening and reading the files {cpu(files):.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--corrupt", type=int, default=1000)
    ap.add_argument("--keep", help="write the reports here and keep them (and reuse them on the next run)")
    ap.add_argument("--compare", metavar="REV", help="also run the fleet code of this git revision")
    ap.add_argument("--compare-timeout", type=float, default=900)
    ap.add_argument("--floor", action="store_true", help="also measure the reading and scanning no reader can skip")
    args = ap.parse_args()
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gpudoctor-fleet-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    old = None
    try:
        t0 = time.perf_counter()
        kinds = plan(args.nodes)
        damaged = damage(kinds, args.corrupt)
        if args.keep and (out / "all.jsonl").exists():  # the same plan: what --keep wrote before
            per_node, jsonl = out / "reports", out / "all.jsonl"
        else:
            per_node, jsonl = write(base_reports(), kinds, damaged, out)
        size = sum(p.stat().st_size for p in per_node.iterdir())
        print(f"generated {len(kinds)} reports ({len(damaged)} damaged) in {time.perf_counter() - t0:.0f}s: "
              f"{size / 2**20:.0f} MiB as pretty files, {jsonl.stat().st_size / 2**20:.0f} MiB as JSON lines")
        t_lines, r_lines, s_lines = run_fleet(["-"], jsonl)
        t_dir, r_dir, s_dir = run_fleet([str(per_node)])
        print(f"gpudoctor fleet, {len(kinds)} reports, {len(damaged)} corrupt ({CAMPAIGN}):")
        print(_row("- < all.jsonl (one stream)", t_lines, r_lines))
        print(_row(f"DIR ({len(kinds)} pretty files)", t_dir, r_dir))
        if args.compare:
            old = _old_tree(args.compare)
            t_old, r_old, _ = run_fleet(["-"], jsonl, pythonpath=old, timeout=args.compare_timeout)
            print(_row(f"{args.compare[:12]}: - < all.jsonl", t_old, r_old))
            t_old, r_old, _ = run_fleet([str(per_node)], pythonpath=old, timeout=args.compare_timeout)
            print(_row(f"{args.compare[:12]}: DIR", t_old, r_old))
        print(f"  CPU per report: {r_lines['cpu'] / len(kinds) * 1e6:.0f} us from the stream, "
              f"{r_dir['cpu'] / len(kinds) * 1e6:.0f} us from files; {_cores()} cores")
        if args.floor:
            print("  " + floor(jsonl, per_node))
        print(f"summary: {s_lines['nodes']} nodes, status {s_lines['status']}, {len(s_lines['problems'])} problem "
              f"groups, {len(s_lines['outliers'])} outliers, {s_lines.get('unreadable_count')} unreadable")
        checks = verify(s_lines, kinds, damaged) + [
            ("file and stream inputs agree", s_dir["outliers"] == s_lines["outliers"] and s_dir["nodes"] == s_lines["nodes"]),
            (f"under {TARGET_S:.0f}s", max(t_dir, t_lines) < TARGET_S),
            (f"under {TARGET_MB} MB (process tree)", max(r_dir["tree"], r_lines["tree"]) < TARGET_MB * 1e6)]
        for label, ok in checks:
            print(f"  {'PASS' if ok else 'FAIL'}  {label}")
        return 0 if all(ok for _, ok in checks) else 1
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
        if old:
            shutil.rmtree(old, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
