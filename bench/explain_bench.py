"""Benchmark `gpudoctor explain` against `grep -c -E` over the same signatures, on the same log.

    python bench/explain_bench.py                 # 1 GiB training log in /tmp, errors scattered through it
    python bench/explain_bench.py --size-mib 256  # a quicker run
    python bench/explain_bench.py --long-line     # also: a 1 GiB file that is one line without a newline
    python bench/explain_bench.py --size-mib 256 --code /tmp/old   # also time another checkout on the same log

The grep patterns are the catalog's own regular expressions converted to POSIX ERE (named
groups dropped, \\d/\\s/\\w spelled as classes, case-insensitive signatures spelled [cC]...).
Every command runs in a fresh helper process that reports its wall time and the peak RSS
of the command (resource.getrusage(RUSAGE_CHILDREN).ru_maxrss: the largest process of the
command, worker processes included) and its CPU seconds (user + system, children included: on a loaded
machine the wall time says little). The page cache is warmed first so both read from memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TEMPLATES = [
    "{ts} - INFO - trainer.py:{ln} - epoch {ep} step {st}/{tot} loss={loss:.4f} lr={lr:.2e} grad_norm={gn:.3f} "
    "throughput={tp:.1f} samples/s",
    "{ts} - INFO - trainer.py:{ln} - [rank{r}] step {st}: data_time={dt:.3f}s batch_time={bt:.3f}s mem_alloc={mem}MiB",
    "Epoch {ep}:  {pct}%|{bar}| {st}/{tot} [{mm:02d}:{ss:02d}<{mm2:02d}:{ss:02d}, {it:.2f}it/s, loss={loss:.3f}, v_num=7]",
    "{ts} - INFO - eval.py:{ln} - validation epoch={ep} top1={acc:.4f} top5={acc5:.4f} val_loss={loss:.4f}",
    "{ts} - INFO - checkpoint.py:{ln} - saved checkpoint to /scratch/run-{r}/ckpt-{st}.pt ({mb} MB) in {bt:.2f}s",
    "{ts} - WARNING - dataloader.py:{ln} - worker {r} slow: batch {st} took {bt:.2f}s (prefetch_factor=2)",
    "[I {hh:02d}:{mm:02d}:{ss:02d}.{us:06d} {pid} logger.py:{ln}] {st}: loss {loss:.5f} acc {acc:.4f} samples/sec {tp:.1f}",
]


def _line(rng: random.Random) -> str:
    t = rng.choice(TEMPLATES)
    pct = rng.randint(0, 100)
    return t.format(
        ts=f"2025-03-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d},"
           f"{rng.randint(0, 999):03d}", ln=rng.randint(10, 900), ep=rng.randint(0, 99), st=rng.randint(0, 99999),
        tot=100000, loss=rng.random() * 3, lr=rng.random() / 1000, gn=rng.random() * 10, tp=rng.random() * 2000,
        r=rng.randint(0, 7), dt=rng.random(), bt=rng.random() * 2, mem=rng.randint(1000, 80000), pct=pct,
        bar="█" * (pct // 10) + " " * (10 - pct // 10), mm=rng.randint(0, 59), ss=rng.randint(0, 59),
        mm2=rng.randint(0, 59), it=rng.random() * 20, acc=rng.random(), acc5=rng.random(), mb=rng.randint(100, 9000),
        hh=rng.randint(0, 23), us=rng.randint(0, 999999), pid=rng.randint(1000, 99999))


def generate(path: Path, size: int, seed: int = 7) -> int:
    """A training log of ``size`` bytes with one real catalog error message every ~4 MiB; returns how many."""
    from gpudoctor.explain import catalog

    rng = random.Random(seed)
    errors = [ex["text"] for s in catalog.load().signatures if s.kind == "diagnosis" for ex in s.examples]
    pool = [_line(rng) for _ in range(20000)]
    written, inserted = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < size:
            block = "\n".join(rng.choices(pool, k=40000)) + "\n"       # ~4 MiB of ordinary lines
            block += rng.choice(errors) + "\n"
            f.write(block)
            written += len(block.encode("utf-8"))
            inserted += 1
    return inserted


def generate_long_line(path: Path, size: int) -> None:
    piece = ("0123456789abcdef" * 65536).encode()           # 1 MiB, no newline
    with open(path, "wb") as f:
        for i in range(size // len(piece)):
            f.write(piece if i != size // len(piece) // 2 else
                    piece[:1000] + b" RuntimeError: CUDA error: uncorrectable ECC error encountered " + piece[1063:])


_CLASS_IN = {"d": "0-9", "s": "[:space:]", "w": "[:alnum:]_", "n": ""}
_CLASS_OUT = {"d": "[0-9]", "s": "[[:space:]]", "w": "[[:alnum:]_]", "S": "[^[:space:]]", "D": "[^0-9]",
              "W": "[^[:alnum:]_]", "n": "", "b": ""}


def to_ere(pattern: str, ignore_case: bool) -> str:
    """Python regex (the catalog's subset) -> POSIX ERE for grep -E."""
    p, out, i, inclass, opened = pattern.replace("[^\\n]", "."), [], 0, False, 0
    while i < len(p):
        ch = p[i]
        if ch == "\\" and i + 1 < len(p):
            nx = p[i + 1]
            out.append(_CLASS_IN.get(nx, nx) if inclass else _CLASS_OUT.get(nx, "\\" + nx))
            i += 2
            continue
        if inclass:
            if ch == "]" and "".join(out[opened:]):       # a "]" first in the class is a literal
                inclass = False
            elif ignore_case and ch.isalpha():
                ch = ch.lower() + ch.upper()
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            inclass = True
            out.append("[^" if p[i + 1:i + 2] == "^" else "[")
            opened = len(out)
            i += 2 if p[i + 1:i + 2] == "^" else 1
            continue
        if ch == "(" and p[i + 1:i + 2] == "?":
            i = p.index(">", i) + 1 if p[i + 2:i + 3] == "P" else i + 3
            out.append("(")
            continue
        if ch in "*+?}" and p[i + 1:i + 2] == "?":
            out.append(ch)
            i += 2
            continue
        out.append(f"[{ch.lower()}{ch.upper()}]" if ignore_case and ch.isalpha() else ch)
        i += 1
    return "".join(out)


def grep_patterns(path: Path) -> int:
    from gpudoctor.explain import catalog

    import re

    pats = [to_ere(p.pattern, bool(p.flags & re.IGNORECASE))
            for s in catalog.load().signatures if s.kind in catalog.STREAMED for p in s.patterns]
    path.write_text("\n".join(pats) + "\n")
    return len(pats)


def measure(cmd, stdout=subprocess.DEVNULL) -> dict:
    """Run ``cmd`` in a fresh helper process; wall time and the command's peak RSS."""
    helper = [sys.executable, __file__, "--measure", json.dumps(cmd)]
    out = subprocess.run(helper, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _measure_child(cmd) -> None:
    t = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss = usage.ru_maxrss
    print(json.dumps({"wall_s": wall, "peak_rss_mib": rss / 1024, "rc": proc.returncode,
                      "cpu_s": usage.ru_utime + usage.ru_stime,
                      "stdout_tail": proc.stdout[-4000:].decode("utf-8", "replace")}))


def row(name: str, m: dict, size: int) -> str:
    return (f"{name:<34} {m['wall_s']:8.2f} s  {size / 2**20 / m['wall_s']:8.1f} MiB/s  {m['peak_rss_mib']:8.1f} MiB"
            f"  {m['cpu_s']:8.2f} s CPU")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--long-line", action="store_true", help="also scan a file that is one 1 GiB line")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--code", help="another gpudoctor checkout to time on the same log (one process)")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        _measure_child(json.loads(args.measure))
        return
    size = args.size_mib << 20
    log, pats = Path(args.dir) / "gpudoctor-bench.log", Path(args.dir) / "gpudoctor-bench.ere"
    t = time.perf_counter()
    inserted = generate(log, size)
    npat = grep_patterns(pats)
    real = log.stat().st_size
    print(f"log: {log} ({real / 2**20:.0f} MiB, {inserted} real error messages scattered), generated in "
          f"{time.perf_counter() - t:.0f} s; {npat} signature patterns")
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)          # warm the page cache
    gpudoctor = [sys.executable, "-m", "gpudoctor", "explain", "--json"]
    grep = measure(["grep", "-c", "-E", "-f", str(pats), str(log)])
    grep_c = measure(["env", "LC_ALL=C", "grep", "-c", "-E", "-f", str(pats), str(log)])
    par = measure(gpudoctor + [str(log)])
    one = measure(gpudoctor + ["--jobs", "1", str(log)])
    other = measure(["env", f"PYTHONPATH={args.code}", sys.executable, "-m", "gpudoctor", "explain", "--json",
                     "--jobs", "1", str(log)]) if args.code else None
    print(f"{'command':<34} {'wall':>10}  {'throughput':>14}  {'peak RSS':>12}  {'CPU':>12}")
    print(row("grep -c -E -f <patterns>", grep, real) + f"   ({grep['stdout_tail'].strip()} matching lines)")
    print(row("LC_ALL=C grep -c -E -f <patterns>", grep_c, real))
    print(row(f"gpudoctor explain (workers: {os.cpu_count()})", par, real) + f"   exit {par['rc']}")
    print(row("gpudoctor explain --jobs 1", one, real) + f"   exit {one['rc']}")
    if other is not None:
        print(row(f"{args.code} explain --jobs 1", other, real) + f"   exit {other['rc']}")
    print(f"ratio explain/grep: {par['wall_s'] / grep['wall_s']:.2f} (one process: {one['wall_s'] / grep['wall_s']:.2f}); "
          f"vs LC_ALL=C grep: {par['wall_s'] / grep_c['wall_s']:.2f}")
    print(f"CPU seconds explain --jobs 1 / grep: {one['cpu_s'] / grep['cpu_s']:.2f}; "
          f"/ LC_ALL=C grep: {one['cpu_s'] / grep_c['cpu_s']:.2f}"
          + (f"; {args.code}: {other['cpu_s'] / grep['cpu_s']:.2f}" if other else ""))
    if args.long_line:
        big = Path(args.dir) / "gpudoctor-bench-oneline.log"
        generate_long_line(big, size)
        m = measure(gpudoctor + [str(big)])
        print(row("explain, one 1 GiB line", m, big.stat().st_size) + f"   exit {m['rc']}")
        if not args.keep:
            big.unlink()
    if not args.keep:
        log.unlink()
        pats.unlink()


if __name__ == "__main__":
    main()
