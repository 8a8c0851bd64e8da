"""Time `gpudoctor hook` beside `gpudoctor hook --smoke`, the full `gpudoctor check`, PyTorch's
collect_env and a bare `nvidia-smi -q -x`, on this machine, in one run; print the figures and the ratios.

    python bench/hook_bench.py [--runs N] [--xml FILE]

Where there is no NVIDIA driver (CI, a laptop), nvidia-smi is a stub script that prints a
real recorded `nvidia-smi -q -x` XML from fixtures/nvidia-smi/xml/; the output says so.
Targets: the hook takes at most 0.3 s and is at least 10x faster than collect_env; the full
check takes no longer than its slowest single framework probe plus 1 s. Exit 1 if missed.
`hook --smoke` (the active smoke test in a child of this interpreter) is shown for scale, not
held to a target: it imports torch and, on a GPU node, runs kernels, copies and an all-reduce.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_XML = ROOT / "fixtures" / "nvidia-smi" / "xml" / "rtx-4090_driver-535.86.05_cuda-12.2.xml"
HOOK_TARGET_S = 0.3
HOOK_SPEEDUP = 10.0
CHECK_SLACK_S = 1.0


def _once(argv, env):
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    return time.perf_counter() - start


def _probe_once(name, python, env):
    """One framework probe alone, as `gpudoctor check` runs it (a child of the interpreter)."""
    from gpudoctor.probes import frameworks

    return frameworks.probe(name, python, env, 120)["probe"]["duration_s"]


def interleaved(commands, probes, python, env, runs):
    """Median seconds per command and per framework probe, measured round-robin so that a
    busy machine (other jobs come and go) slows every figure alike."""
    samples = {name: [] for name in list(commands) + [f"probe:{p}" for p in probes]}
    for _ in range(runs):
        for name, (argv, repeat) in commands.items():
            samples[name].extend(_once(argv, env) for _ in range(repeat))
        for p in probes:
            samples[f"probe:{p}"].append(_probe_once(p, python, env))
    return {name: statistics.median(vals) for name, vals in samples.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5,
                    help="rounds; each round runs every command once (hook and nvidia-smi 4 times)")
    ap.add_argument("--xml", default=str(DEFAULT_XML), help="recorded nvidia-smi -q -x output for the stub")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="gpudoctor-bench-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache"), "NO_COLOR": "1"}
    real = shutil.which("nvidia-smi")
    if real:
        note = f"nvidia-smi: the real one ({real})"
    else:
        stub = tmp / "bin" / "nvidia-smi"
        stub.parent.mkdir()
        stub.write_text(f"#!/bin/sh\nexec cat '{args.xml}'\n")
        stub.chmod(0o755)
        env["PATH"] = f"{stub.parent}{os.pathsep}{env.get('PATH', '')}"
        note = f"nvidia-smi: a STUB that cats {Path(args.xml).relative_to(ROOT)} (no NVIDIA driver here)"
    py = sys.executable
    gd = [py, "-m", "gpudoctor"]
    hook = gd + ["hook", "--gpus", "1", "--min-driver", "525.60.13", "--max-temp", "90", "--cuda", "12.1"]

    print(f"gpudoctor hook benchmark on {os.uname().nodename}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(note)
    sys.path.insert(0, str(ROOT))
    from gpudoctor.probes.frameworks import FRAMEWORKS

    cold = _once(hook, env)  # empty framework-fact cache
    medians = interleaved({
        "nvidia-smi -q -x": (["nvidia-smi", "-q", "-x"], 4),
        "gpudoctor hook": (hook, 4),
        "gpudoctor hook --smoke": (hook + ["--smoke", "--timeout", "300"], 1),
        "gpudoctor check --json": (gd + ["check", "--json"], 1),
        "python -m torch.utils.collect_env": ([py, "-m", "torch.utils.collect_env"], 1),
    }, FRAMEWORKS, py, env, args.runs)
    rows = {"nvidia-smi -q -x": medians["nvidia-smi -q -x"], "gpudoctor hook (cold cache, 1 run)": cold}
    rows.update((k, v) for k, v in medians.items() if not k.startswith("probe:") and k not in rows)
    probes = {p: medians[f"probe:{p}"] for p in FRAMEWORKS}
    shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n{'command':<36} {'median s':>9}")
    for name, secs in rows.items():
        print(f"{name:<36} {secs:>9.3f}")
    print("framework probes alone (median): " + ", ".join(f"{n} {s:.2f}s" for n, s in probes.items()))

    h, c, ce, smi = rows["gpudoctor hook"], rows["gpudoctor check --json"], rows[
        "python -m torch.utils.collect_env"], rows["nvidia-smi -q -x"]
    slowest = max(probes.values())
    print(f"\nratios: collect_env / hook = {ce / h:.1f}x   hook --smoke / hook = {rows['gpudoctor hook --smoke'] / h:.1f}x"
          f"   check / hook = {c / h:.1f}x   "
          f"hook / nvidia-smi = {h / smi:.1f}x   check - slowest probe = {c - slowest:+.2f}s")
    checks = [
        (f"hook <= {HOOK_TARGET_S}s", h <= HOOK_TARGET_S),
        (f"hook >= {HOOK_SPEEDUP:.0f}x faster than collect_env", ce / h >= HOOK_SPEEDUP),
        (f"check <= slowest framework probe ({slowest:.2f}s) + {CHECK_SLACK_S:.0f}s", c <= slowest + CHECK_SLACK_S),
    ]
    for label, ok in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
