"""Re-run issue 15's "bounded in time and memory" attacks and count what still breaks.

    python bench/campaign_bounds.py [--fuzz N] [--cli N] [--fleet-nodes N] [--quick]

Categories (every input generated here, from seeds: a re-run sees the same inputs):

* parsers:<format>  fuzzed nvidia-smi outputs (XML, table, -q, -L, CSV, multi-command
  captures, failure messages) and explain texts: real recordings mutated (slices cut,
  repeated, replaced), runs of blanks, digits and blank lines, deep indentation and
  nesting, 400- and 5,000-digit numbers, thousands of GPUs and warnings. Run in a worker
  process that reports each input; one that takes over PARSE_BOUND_S is a hang (the worker
  is killed and restarted after it). A crash is any exception but the documented parse error.
* cli:<format>      a sample of the same inputs through `gpudoctor parse-smi` / `explain`
  as a user runs them: a crash is exit 3 or a traceback.
* live:<command>:<attack>  check, snapshot, bundle, devices and explain --here on a machine
  whose nvidia-smi floods /dev/zero, double-forks a setsid grandchild that holds the pipe,
  hangs, or prints huge numbers / deep XML / the 59-second table, and whose
  $CUDA_HOME/version.json is a FIFO or a link to /dev/zero. Bound: --timeout + LIVE_SLACK_S.
  Leftovers: processes the stubs started (they record their pids) or that carry the run's
  GPUDOCTOR_RUN_ID, still alive after the command returned.
* explain:*         a 3 MB gzip of 3 GB of repeated OOM lines, 5,000-digit values.
* recordings        a snapshot.json nested 100,000 levels deep.
* fleet:*           /dev/zero, stdin from /dev/zero, cut, glued, wrong-typed and deeply
  nested reports, and a big fleet with 1% corrupt lines.

Prints one row per category: inputs, crashes, hangs, peak RSS (largest process), leftover
processes. Exit 1 if anything crashed, hung or was left behind.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "fixtures" / "nvidia-smi"
CASES = Path("/work/shared/errors-dev/cases.jsonl")
PARSE_BOUND_S = 10.0
MEM_LIMIT = 3 << 30      # a command past this is stopped and counted as over its bound
LIVE_TIMEOUT_S, LIVE_SLACK_S = 4, 11
FORMATS = ("xml", "table", "query", "list", "csv", "bundle", "error", "explain")


# --- generated inputs ---------------------------------------------------------------------------
def _real(fmt: str):
    if fmt == "explain":
        texts = [json.loads(l)["error_text"] for l in CASES.read_text().splitlines()] if CASES.exists() else []
        return texts or ["RuntimeError: CUDA error: out of memory"]
    folder = {"xml": "xml", "csv": "csv", "bundle": "bundle"}.get(fmt, "text")
    texts = [p.read_text(errors="replace") for p in sorted((FIXTURES / folder).glob("*")) if p.stat().st_size < 400_000]
    keep = {"table": lambda t: "NVIDIA-SMI" in t and "NVSMI LOG" not in t, "query": lambda t: "NVSMI LOG" in t,
            "list": lambda t: "(UUID: GPU-" in t and "NVIDIA-SMI" not in t and "NVSMI" not in t}
    texts = [t for t in texts if keep.get(fmt, lambda t: True)(t)] or texts
    return texts if fmt != "error" else ["NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                         "driver.\n", "Failed to initialize NVML: Driver/library version mismatch\n"]


ATTACKS = (
    lambda r: " " * r.choice((500, 5000, 50000)),
    lambda r: "9" * r.choice((30, 400, 4400, 6000)),
    lambda r: "\n" * r.choice((1000, 100000)),
    lambda r: "".join(" " * i + f"K{i} : v\n" for i in range(r.choice((200, 1500)))),
    lambda r: "<a>" * r.choice((1000, 100000)),
    lambda r: "".join(f"WARNING: thing {i}\n" for i in range(r.choice((100, 20000)))),
    lambda r: "".join(f"GPU {i}: Tesla T4 (UUID: GPU-{i:08d})\n" for i in range(r.choice((10, 20000)))),
    lambda r: "|   0  N/A  N/A  1234  C  " + " " * r.choice((500, 4000)) + "x\n",
    lambda r: "sm_" + "9" * r.choice((5, 5000)) + " is not compatible with the current PyTorch installation",
    lambda r: "found version " + "9" * r.choice((5, 400, 5000)) + ")",
    lambda r: "".join(chr(r.randrange(1, 0x3000)) for _ in range(r.randrange(1, 300))),
    lambda r: "\x00" * r.randrange(1, 10),
)


def make_input(fmt: str, seed: int) -> str:
    r = random.Random(f"{fmt}-{seed}")
    text = r.choice(_real(fmt))
    for _ in range(r.randrange(1, 4)):
        a = r.randrange(len(text) + 1)
        b = min(len(text), a + r.randrange(0, 600))
        how = r.randrange(4)
        insert = "" if how == 0 else text[a:b] * r.randrange(2, 50) if how == 1 else r.choice(ATTACKS)(r)
        text = text[:a] + insert + text[b:] if how != 3 else text[:a] + r.choice(ATTACKS)(r) + text[a:]
    return text


def _run_one(fmt: str, text: str) -> str:
    from gpudoctor import smi
    try:  # explain's entry points moved to explain.pipeline; older trees export them from the package
        from gpudoctor.explain.pipeline import BadInput, explain_text
    except ImportError:
        from gpudoctor.explain import BadInput, explain_text

    try:
        if fmt == "explain":
            explain_text(text)
        else:
            for fn in (smi.parse, smi.parse_xml, smi.parse_table, smi.parse_query, smi.parse_list, smi.parse_csv):
                try:
                    fn(text)
                except smi.SmiParseError:
                    pass
            smi.extract(text)
    except BadInput:
        pass
    except Exception as exc:  # the finding: anything but the documented error
        return f"crash:{type(exc).__name__}"
    return "ok"


def worker(fmt: str, start: int, count: int) -> None:
    import resource

    for seed in range(start, start + count):
        text = make_input(fmt, seed)
        t = time.perf_counter()
        status = _run_one(fmt, text)
        print(json.dumps([seed, status, round(time.perf_counter() - t, 3)]), flush=True)
    print(json.dumps(["rss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024]), flush=True)


def _row(inputs=0) -> dict:
    return {"inputs": inputs, "crashes": 0, "hangs": 0, "rss": 0, "leftovers": 0, "notes": []}


def fuzz_parsers(fmt: str, count: int) -> dict:
    """Run the inputs in a worker; an input that takes over PARSE_BOUND_S is a hang, one that
    kills the worker (MemoryError, a segfault) a crash: the worker restarts after it."""
    row = _row(count)
    seed = 0
    while seed < count:
        proc = subprocess.Popen([sys.executable, __file__, "--worker", fmt, str(seed), str(count - seed)],
                                stdout=subprocess.PIPE, text=True, cwd=str(ROOT))
        seed = _drain(proc, seed, count, row)
    return row


def _drain(proc: subprocess.Popen, seed: int, count: int, row: dict) -> int:
    """Read one worker's reports; returns the next seed to run."""
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], PARSE_BOUND_S)
        if not ready:
            proc.kill()
            proc.wait()
            row["hangs"] += 1
            row["notes"].append(f"seed {seed}: over {PARSE_BOUND_S:g} s")
            return seed + 1
        line = proc.stdout.readline()
        if not line:
            if proc.wait() != 0 and seed < count:
                row["crashes"] += 1
                row["notes"].append(f"seed {seed}: the worker died (exit {proc.returncode})")
                return seed + 1
            return count
        item = json.loads(line)
        if item[0] == "rss":
            row["rss"] = max(row["rss"], item[1])
            continue
        seed = item[0] + 1
        if item[1] != "ok":
            row["crashes"] += 1
            row["notes"].append(f"seed {item[0]}: {item[1]}")


# --- measured child processes -----------------------------------------------------------------
def measured(argv, env=None, stdin=None, timeout=600, cwd=None) -> dict:
    """Run argv; wall time, exit code, stderr, peak RSS of its largest process, and the
    processes it left carrying its run id (GPUDOCTOR_RUN_ID=<its pid>.*)."""
    code = f"MEM_LIMIT = {MEM_LIMIT}\n" + textwrap.dedent("""
        import json, resource, subprocess, sys, time
        argv, env, stdin, timeout, cwd = json.loads(sys.argv[1])
        import threading
        t = time.perf_counter()
        over = []
        def guard(p):  # the campaign must not take the machine down: past MEM_LIMIT the run is stopped
            while p.poll() is None:
                try:
                    rss = int(open(f"/proc/{p.pid}/statm").read().split()[1]) * 4096
                except (OSError, IndexError, ValueError):
                    return
                if rss > MEM_LIMIT:
                    over.append(rss); p.kill(); return
                time.sleep(0.05)
        with open(stdin or "/dev/null", "rb") as fh:
            p = subprocess.Popen(argv, env=env, stdin=fh, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
            threading.Thread(target=guard, args=(p,), daemon=True).start()
            try:
                out, err = p.communicate(timeout=timeout)
                hung = False
            except subprocess.TimeoutExpired:
                p.kill(); out, err = p.communicate(); hung = True
        if over:
            err += b"\\n(campaign: stopped at %d MiB of memory)" % (over[0] >> 20)
        try:
            from gpudoctor import proctree  # absent before issue 15: then only the stubs' own pid files count
            left = [pid for pid, _ in proctree.marked_processes(f"{p.pid}.")]
        except ImportError:
            left = []
        print(json.dumps({"s": time.perf_counter() - t, "rc": p.returncode, "hung": hung or bool(over), "left": left,
                          "rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
                          "err": err.decode(errors="replace")[-3000:], "out_len": len(out)}))
    """)
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    res = subprocess.run([sys.executable, "-c", code, json.dumps([argv, full_env, str(stdin or ""), timeout,
                                                                  cwd or str(ROOT)])],
                         capture_output=True, text=True, env=full_env, cwd=str(ROOT))
    return json.loads(res.stdout)


def alive(pids) -> list:
    """The pids still running (a zombie is gone)."""
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X"):
                    out.append(pid)
        except (OSError, IndexError):
            continue
    return out


def judge(row: dict, m: dict, bound: float, ok_codes=(0, 1, 2), pids=(), label="") -> None:
    row["inputs"] += 1
    crashed = m["rc"] not in ok_codes or "Traceback" in m["err"]
    row["crashes"] += crashed
    row["hangs"] += m["hung"] or m["s"] > bound
    row["rss"] = max(row["rss"], m["rss"])
    left = set(m["left"]) | set(alive(pids))
    row["leftovers"] += len(left)
    for pid in left:
        try:
            os.kill(pid, 9)  # the campaign cleans up what gpudoctor did not
        except OSError:
            pass
    if crashed or m["hung"] or m["s"] > bound or left:
        row["notes"].append(f"{label}: rc {m['rc']}, {m['s']:.1f} s, {len(left)} left; {m['err'][-200:].strip()}")


# --- the live machine's attacks -----------------------------------------------------------------
HOLDER = """#!{py}
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open({pids!r}, "a") as fh:
            fh.write("%d\\n" % os.getpid())
        time.sleep(300)
    os._exit(0)
print("holding", flush=True)
time.sleep({main})
"""


def smi_stubs(tmp: Path, pids: Path) -> dict:
    py = sys.executable
    xml = ("<?xml version='1.0'?><nvidia_smi_log><driver_version>" + "9" * 5000 + "</driver_version><gpu id='0'>"
           "<fb_memory_usage><total>" + "9" * 400 + " MiB</total></fb_memory_usage></gpu></nvidia_smi_log>")
    deep = "<nvidia_smi_log>" + "<a>" * 300000
    table = ("| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
             "|   0  N/A  N/A  1234  C  " + " " * 4400 + "x\n")
    prints = {"huge-numbers": xml, "deep-xml": deep, "backtracking-table": table}
    stubs = {"flood": "#!/bin/sh\nexec cat /dev/zero\n", "text-flood": "#!/bin/sh\nexec yes nvidia\n",
             "setsid-holder": HOLDER.format(py=py, pids=str(pids), main=0),
             "setsid-timeout": HOLDER.format(py=py, pids=str(pids), main=300),
             "hang": "#!/bin/sh\nexec sleep 300\n"}
    for name, text in prints.items():
        (tmp / f"{name}.out").write_text(text)
        stubs[name] = f"#!/bin/sh\nexec cat {tmp / (name + '.out')}\n"
    return stubs


def live(tmp: Path, quick: bool) -> dict:
    rows = {}
    pids = tmp / "pids"
    stubs = smi_stubs(tmp, pids)
    home = tmp / "cuda-fifo"
    home.mkdir()
    os.mkfifo(home / "version.json")
    zero = tmp / "cuda-zero"
    zero.mkdir()
    (zero / "version.json").symlink_to("/dev/zero")
    attacks = [(name, script, None) for name, script in stubs.items()]
    attacks += [("fifo-version-json", None, home), ("dev-zero-version-json", None, zero)]
    commands = {"check": ["check", "--no-frameworks", "--json"], "snapshot": ["snapshot", "--no-frameworks", "--out"],
                "bundle": ["bundle", "--no-frameworks", "-o"], "devices": ["devices", "--json"],
                "explain-here": ["explain", "--here", "--json", "CUDA error: out of memory"]}
    for cmd, argv in commands.items():
        row = rows.setdefault(f"live:{cmd}", _row())
        for name, script, cuda_home in attacks:
            if cmd != "check" and quick and name not in ("flood", "setsid-holder", "fifo-version-json"):
                continue
            bindir = tmp / f"bin-{cmd}-{name}"
            bindir.mkdir()
            for tool in ("nvidia-smi", "nvcc"):
                if script:
                    (bindir / tool).write_text(script)
                    (bindir / tool).chmod(0o755)
            env = {"PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
            if cuda_home:
                env["CUDA_HOME"] = str(cuda_home)
            extra = [str(tmp / f"out-{cmd}-{name}")] if cmd in ("snapshot", "bundle") else []
            if pids.exists():
                pids.unlink()
            m = measured([sys.executable, "-m", "gpudoctor", *argv, *extra, "--timeout", str(LIVE_TIMEOUT_S)], env,
                         timeout=LIVE_TIMEOUT_S + 120)
            time.sleep(0.2)
            started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
            judge(row, m, LIVE_TIMEOUT_S + LIVE_SLACK_S, pids=started, label=name)
    return rows


# --- explain, recordings, fleet -----------------------------------------------------------------
def explain_attacks(tmp: Path) -> dict:
    row = _row()
    line = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity "
            "of 23.65 GiB of which 3.06 MiB is free. Process 1234 has 23.64 GiB memory in use.\n").encode()
    member = gzip.compress(line * ((8 << 20) // len(line)), 9)  # 8 MiB of lines in ~8 KB of gzip
    bomb = tmp / "oom.log.gz"
    with open(bomb, "wb") as fh:
        while fh.tell() < 3 << 20:
            fh.write(member)
    judge(row, measured([sys.executable, "-m", "gpudoctor", "explain", "--json", str(bomb)], timeout=180),
          60 + 15, ok_codes=(0, 1), label="3 MB gzip of repeated OOM lines")
    for text in ("NVIDIA GeForce RTX 5080 with CUDA capability sm_" + "9" * 5000 + " is not compatible with the "
                 "current PyTorch installation.", "The NVIDIA driver on your system is too old (found version "
                 + "9" * 5000 + ")", "Tried to allocate " + "9" * 400 + ".00 GiB"):
        judge(row, measured([sys.executable, "-m", "gpudoctor", "explain", text]), 30, ok_codes=(0, 1),
              label=text[:40])
    return {"explain": row}


def recordings(tmp: Path) -> dict:
    row = _row()
    folder = tmp / "deep-snapshot"
    folder.mkdir()
    (folder / "snapshot.json").write_text('{"schema": "gpudoctor.snapshot/1", "meta": ' + "[" * 100000
                                          + "]" * 100000 + "}")
    for cmd in (["check"], ["devices"], ["explain", "x"]):
        judge(row, measured([sys.executable, "-m", "gpudoctor", *cmd, "--snapshot", str(folder)]), 30,
              ok_codes=(2,), label=f"{cmd[0]} of a deep snapshot.json")
    return {"recordings": row}


def _report(host: str) -> dict:
    return {"schema": "gpudoctor.report/1", "machine": {"hostname": host, "driver_version": "550.90.07",
            "gpus": [{"name": "NVIDIA H100 80GB HBM3"}] * 8}, "findings": [{"check_id": "DRV001", "status": "ok"}]}


def fleet(tmp: Path, nodes: int) -> dict:
    rows = {"fleet:hostile": _row(), "fleet:big": _row()}
    g = [sys.executable, "-m", "gpudoctor", "fleet", "--json"]
    judge(rows["fleet:hostile"], measured(g + ["/dev/zero"]), 10, ok_codes=(2,), label="fleet /dev/zero")
    judge(rows["fleet:hostile"], measured(g + ["-"], stdin="/dev/zero"), 20, ok_codes=(2,), label="fleet - < /dev/zero")
    bad = [json.dumps(_report("a"))[:300] + json.dumps(_report("b")), '{"schema": "gpudoctor.report/1", "machine": '
           + "[" * 100000 + "]" * 100000 + "}", json.dumps({**_report("c"), "machine": []}),
           json.dumps({**_report("d"), "findings": [{"status": "fail", "title": {"x": 1}}]}),
           json.dumps(_report("e")).replace('"550.90.07"', "9" * 5000)]
    path = tmp / "hostile.jsonl"
    path.write_text("\n".join(bad + [json.dumps(_report("ok"))]) + "\n")
    judge(rows["fleet:hostile"], measured(g + [str(path)]), 10, ok_codes=(0, 1), label="hostile reports")
    big = tmp / "big.jsonl"
    with open(big, "w") as fh:
        for i in range(nodes):
            fh.write(("srun: error: gpu%06d: task 0\n" % i) if i % 100 == 7 else json.dumps(_report(f"gpu{i:06d}")) + "\n")
    judge(rows["fleet:big"], measured(g + ["-"], stdin=big), 30, ok_codes=(0, 1), label=f"{nodes} reports")
    return rows


# --- main -----------------------------------------------------------------------------------------
def cli_sample(tmp: Path, fmt: str, count: int) -> dict:
    row = _row()
    for seed in range(count):
        path = tmp / f"{fmt}-{seed}.txt"
        path.write_text(make_input(fmt, 10_000 + seed), errors="replace")
        cmd = ["explain", "--json", str(path)] if fmt == "explain" else ["parse-smi", "--json", str(path)]
        judge(row, measured([sys.executable, "-m", "gpudoctor", *cmd], timeout=120), PARSE_BOUND_S + 5,
              label=f"seed {10_000 + seed}")
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fuzz", type=int, default=400, help="fuzzed inputs per format, run in-process")
    ap.add_argument("--cli", type=int, default=6, help="fuzzed inputs per format run through the CLI")
    ap.add_argument("--fleet-nodes", type=int, default=20000)
    ap.add_argument("--quick", action="store_true", help="fewer live attacks for the commands other than check")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), int(args.worker[2]))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="gpudoctor-campaign-bounds-"))
    rows, start = {}, time.monotonic()
    print(f"{'category':<24}{'inputs':>8}{'crashes':>9}{'hangs':>7}{'peak RSS':>10}{'leftovers':>11}", flush=True)

    def add(new: dict) -> None:  # each row as soon as it is known: a stopped run still tells
        rows.update(new)
        for name, r in new.items():
            print(f"{name:<24}{r['inputs']:>8}{r['crashes']:>9}{r['hangs']:>7}{r['rss'] / 2**20:>8.0f}MB"
                  f"{r['leftovers']:>11}", flush=True)
    try:
        for fmt in FORMATS:
            add({f"parsers:{fmt}": fuzz_parsers(fmt, args.fuzz), f"cli:{fmt}": cli_sample(tmp, fmt, args.cli)})
        add(live(tmp, args.quick))
        add(explain_attacks(tmp))
        add(recordings(tmp))
        add(fleet(tmp, args.fleet_nodes))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    total = {k: sum(r[k] for r in rows.values()) for k in ("inputs", "crashes", "hangs", "leftovers")}
    print(f"{'total':<24}{total['inputs']:>8}{total['crashes']:>9}{total['hangs']:>7}{'':>10}{total['leftovers']:>11}"
          f"   ({time.monotonic() - start:.0f} s)")
    for name, r in rows.items():
        for note in r["notes"][:5]:
            print(f"  {name}: {note}")
    return 1 if total["crashes"] or total["hangs"] or total["leftovers"] else 0


if __name__ == "__main__":
    sys.exit(main())
