"""Time `gpudoctor fleet` over 10,000 realistic node reports (target: under 5 s).

    python bench/fleet_bench.py [--nodes N] [--keep DIR]

The reports are real `gpudoctor check` reports of the recorded core scenarios (an 8x H100
server, an A100 in MIG mode, a workstation whose driver is not loaded) plus a hung
nvidia-smi, built by the report builder and then varied per node the way a real fleet
varies: an older driver on some nodes, a GPU fallen off the bus, an older torch. They are
written one pretty-printed file per node (as `srun -o reports/%N.json gpudoctor check --json`
does) and as one JSON-lines stream (`check --jsonl`); both are timed end to end as a user
runs them (a fresh `gpudoctor fleet` process), and the summary is checked against what was
planted. Exit 1 if the target is missed or the summary is wrong.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCENARIOS = ROOT / "fixtures" / "scenarios"
TARGET_S = 5.0


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
        host = f"gpu{i:05d}"
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


def write(reports, kinds, out: Path):
    """One pretty file per node, and one JSON-lines file; hostnames substituted into templates."""
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
            (per_node / f"{host}.json").write_text(pretty[kind].replace("@@HOST@@", host), encoding="utf-8")
            stream.write(lines[kind].replace("@@HOST@@", host))
    return per_node, out / "all.jsonl"


def run_fleet(args, stdin_path=None):
    start = time.perf_counter()
    with open(stdin_path, "rb") if stdin_path else open("/dev/null", "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "gpudoctor", "fleet", "--json", *args], stdin=stdin,
                              capture_output=True, timeout=300)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"gpudoctor fleet failed ({proc.returncode}): {proc.stderr.decode()}")
    return elapsed, json.loads(proc.stdout)


def verify(summary, kinds):
    counts = {k: sum(1 for v in kinds.values() if v == k) for k in set(kinds.values())}
    outliers = {(o["attribute"], o["value"]) for o in summary["outliers"]}
    per_attr = {a: sum(1 for o in summary["outliers"] if o["attribute"] == a) for a in ("driver", "gpus", "torch")}
    fails = counts.get("not_loaded", 0) + counts.get("hung", 0)
    checks = [
        ("every node summarised", summary["nodes"] == len(kinds)),
        (f"{fails} failing nodes", summary["status"]["fail"] == fails),
        ("older drivers are outliers", per_attr["driver"] == counts["old_driver"] and ("driver", "535.161.08") in outliers),
        ("7-GPU nodes are outliers", per_attr["gpus"] == counts["seven_gpus"]),
        ("older torch is an outlier", ("torch", "2.3.1+cu121") in outliers),
    ]
    return checks


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--keep", help="write the reports here and keep them")
    args = ap.parse_args()
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gpudoctor-fleet-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        kinds = plan(args.nodes)
        per_node, jsonl = write(base_reports(), kinds, out)
        size = sum(p.stat().st_size for p in per_node.iterdir())
        print(f"generated {len(kinds)} reports in {time.perf_counter() - t0:.1f}s: {size / 2**20:.0f} MiB as "
              f"pretty files, {jsonl.stat().st_size / 2**20:.0f} MiB as JSON lines")
        t_dir, s_dir = run_fleet([str(per_node)])
        t_lines, s_lines = run_fleet(["-"], jsonl)
        print(f"gpudoctor fleet DIR  ({len(kinds)} files):      {t_dir:.2f}s")
        print(f"gpudoctor fleet - < all.jsonl (one stream): {t_lines:.2f}s")
        print(f"summary: {s_dir['nodes']} nodes, status {s_dir['status']}, {len(s_dir['problems'])} problem "
              f"groups, {len(s_dir['outliers'])} outliers")
        checks = verify(s_dir, kinds) + [("file and stream inputs agree", s_dir["outliers"] == s_lines["outliers"]),
                                         (f"under {TARGET_S:.0f}s", max(t_dir, t_lines) < TARGET_S)]
        for label, ok in checks:
            print(f"  {'PASS' if ok else 'FAIL'}  {label}")
        return 0 if all(ok for _, ok in checks) else 1
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
