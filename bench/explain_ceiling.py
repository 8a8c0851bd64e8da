"""How far the text alone decides: a blind expert's readings of a set beside gpudoctor's, aggregates only.

    python bench/explain_ceiling.py round15      # ratings of round15-frozen.jsonl: ratings/round15-frozen-blind.jsonl
    python bench/explain_ceiling.py frozen       # ratings/frozen-test-18-blind.jsonl (aggregates only)
    python bench/explain_ceiling.py frozen --rater blind2          # a second rater's file, -blind2.jsonl
    python bench/explain_ceiling.py frozen --agree blind blind2    # how often two raters agree, and are right
    python bench/explain_ceiling.py frozen --prepare /work/rate --key /tmp/rate-key.jsonl --parts 2
        # writes /work/rate/input<k>.jsonl (text and --context flags only) and brief<k>.md (bench/briefs/blind-rater.md
        # with its paths) for k raters run as sub-agents, and the key (which case each line is) outside that folder
    python bench/explain_ceiling.py frozen --assemble /work/rate --key /tmp/rate-key.jsonl --rater blind2
        # reads /work/rate/out<k>.jsonl back into ratings/<set file>-blind2.jsonl

A rater who knows GPU set-ups well (a model run as a sub-agent, with no search, no tool code and no thread)
read each case as explain does: its error text and the --context flags its environment gives (container, wsl,
windows), never the thread, the fix or the label, and ranked up to three families. Their first family is
scored by the rule of bench/explain_accuracy.py (right when it is one of the case's categories; on a negative,
right when it says not_env_problem). Where the rater is right and explain is not, the text held what was
needed and explain did not read it; where both are wrong, the text most likely did not decide (the label came
from the thread). The figure bounds what any reader of the text alone reaches on that set, and so the issue's
90% goal: a figure explain cannot pass without reading the thread.

Only aggregate numbers are printed, so that a frozen set can be rated without being read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.explain_accuracy import FROZEN, HALVES, HELD_OUT, NOT_ENV, SETS, _pct, cases_of, outcome  # noqa: E402
from bench.explain_accuracy import first_right as right  # noqa: E402  (the scoring rule lives in one place)

RATINGS = ROOT / "fixtures" / "errors-real" / "ratings"


def stored(whole: str, rater: str) -> Path:
    """Where a whole set's ratings by ``rater`` are kept: ratings/<the set's file name>-<rater>.jsonl."""
    return RATINGS / f"{SETS[whole].stem}-{rater}.jsonl"

BRIEF = ROOT / "bench" / "briefs" / "blind-rater.md"


def prepare(cases: List[dict], folder: Path, key: Path, parts: int, seed: int) -> None:
    """The raters' inputs (error text and --context flags, never the label, the thread or the id) in ``parts``
    files with a brief each, and the key that maps their line names back to cases, kept outside ``folder``."""
    import random

    from tests.test_explain_cases import context_flags

    if key.resolve().parent == folder.resolve() or folder.resolve() in key.resolve().parents:
        raise SystemExit("the key must not be in the raters' folder")
    order = list(cases)
    random.Random(seed).shuffle(order)
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(order) // parts)
    keys = []
    for k in range(parts):
        chunk = order[k * size:(k + 1) * size]
        lines = []
        for i, case in enumerate(chunk):
            name = f"{k + 1}-{i:03d}"
            keys.append({"n": name, "id": case["id"]})
            lines.append(json.dumps({"n": name, "context": sorted(context_flags(case["environment"])),
                                     "error_text": case["text"]}, ensure_ascii=False))
        (folder / f"input{k + 1}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        brief = BRIEF.read_text(encoding="utf-8").replace("{input}", str(folder / f"input{k + 1}.jsonl"))
        (folder / f"brief{k + 1}.md").write_text(brief.replace("{output}", str(folder / f"out{k + 1}.jsonl")),
                                                encoding="utf-8")
    key.write_text("".join(json.dumps(r) + "\n" for r in keys), encoding="utf-8")


def assemble(cases: List[dict], folder: Path, key: Path) -> List[dict]:
    """The raters' outputs mapped back to case ids, one row per case, checked for coverage and known families."""
    from gpudoctor.explain.catalog import load

    known = set(load().families) | {NOT_ENV}
    names = {}
    for line in key.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            names[row["n"]] = row["id"]
    rows = {}
    for out in sorted(folder.glob("out*.jsonl")):
        for line in out.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:             # a rater's broken line: that case counts as unrated
                continue
            if not isinstance(row, dict) or not isinstance(row.get("ranked"), list):
                continue
            ranked = [f for f in row["ranked"] if f in known][:3]
            if row.get("n") in names and ranked:
                rows[names[row["n"]]] = ranked
    missing = sum(case["id"] not in rows for case in cases)
    if missing:
        raise SystemExit(f"{missing} of {len(cases)} cases have no usable rating")
    return [{"id": cid, "ranked": rows[cid]} for cid in sorted(rows)]


def ratings(path: Path) -> Dict[str, List[str]]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["id"]] = list(row["ranked"])
    return out


def compare(cases: List[dict], rated: Dict[str, List[str]]) -> Dict[str, Dict[str, int]]:
    """Per group (environment cases, negatives, and each family): counts of rater/explain right and wrong."""
    missing = sum(case["id"] not in rated for case in cases)
    if missing:          # how many, never which: a case's id names its family and its thread
        raise SystemExit(f"{missing} of {len(cases)} cases have no rating")
    tally: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for case in cases:
        ranked = rated[case["id"]]
        got = outcome(case)["got"]
        expert = right(case["families"], ranked[0] if ranked else None)
        tool = right(case["families"], got[0] if got else None)
        expert3 = any(right(case["families"], f) for f in ranked[:3]) if case["families"][0] != NOT_ENV else expert
        group = "negatives" if case["families"][0] == NOT_ENV else "environment"
        for key in (group, case["families"][0]):
            t = tally[key]
            t["n"] += 1
            t["expert"] += expert
            t["expert_top3"] += expert3
            t["explain"] += tool
            t["both"] += expert and tool
            t["expert_only"] += expert and not tool
            t["explain_only"] += tool and not expert
    return tally


def agreement(name: str, cases: List[dict], first: Dict[str, List[str]], second: Dict[str, List[str]],
              names=("first", "second")) -> str:
    """Two raters of one set: how often their first families agree, and how often each and both are right."""
    n = agree = right_a = right_b = both = 0
    for case in cases:
        ra, rb = first.get(case["id"]), second.get(case["id"])
        if ra is None or rb is None:
            raise SystemExit(f"{name}: a case has no rating in one of the two files")
        a = right(case["families"], ra[0] if ra else None)
        b = right(case["families"], rb[0] if rb else None)
        n += 1
        agree += (ra[:1] == rb[:1])
        right_a += a
        right_b += b
        both += a and b
    return (f"== {name}: {names[0]} and {names[1]}, {n} cases\n"
            f"first families agree   {_pct(agree, n)}\n"
            f"{names[0]:<22} {_pct(right_a, n)}\n{names[1]:<22} {_pct(right_b, n)}\n"
            f"both right             {_pct(both, n)}\neither right           {_pct(right_a + right_b - both, n)}")


def report(name: str, tally) -> str:
    head = (f"{'group':<28} {'n':>4}  {'expert top-1':<13} {'expert top-3':<13} {'explain top-1':<13} "
            f"{'both':>5} {'expert only':>11} {'explain only':>12} {'neither':>8}")
    out = [f"== {name}", head, "-" * len(head)]
    order = ["environment", "negatives"] + sorted(k for k in tally if k not in ("environment", "negatives"))
    for key in order:
        t = tally[key]
        n = t["n"]
        neither = n - t["both"] - t["expert_only"] - t["explain_only"]
        out.append(f"{key:<28} {n:>4}  {_pct(t['expert'], n)} {_pct(t['expert_top3'], n)} {_pct(t['explain'], n)} "
                   f"{t['both']:>5} {t['expert_only']:>11} {t['explain_only']:>12} {neither:>8}")
        if key == "negatives" and len(order) > 2:
            out.append("-" * len(head))
    env, neg = tally["environment"], tally["negatives"]
    n = env["n"] + neg["n"]
    out.append("-" * len(head))
    out.append(f"{'ALL':<28} {n:>4}  {_pct(env['expert'] + neg['expert'], n)} {'':<13} "
               f"{_pct(env['explain'] + neg['explain'], n)}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    try:
        return _main(ap, argv)
    except (OSError, ValueError, KeyError, TypeError) as e:     # a missing or malformed ratings or key file
        ap.exit(2, f"{ap.prog}: error: {type(e).__name__}: {e}\n")


def _main(ap: argparse.ArgumentParser, argv) -> int:
    ap.add_argument("set", choices=sorted({*SETS, *HALVES}))
    ap.add_argument("--ratings", type=Path, help="a ratings file (default: ratings/<the set's file name>-blind.jsonl)")
    ap.add_argument("--rater", default="blind", help="which stored ratings: ratings/<set file>-<rater>.jsonl")
    ap.add_argument("--agree", nargs=2, metavar="RATER", help="two stored raters: how often their first families "
                    "agree, and how often each and both are right (aggregates)")
    ap.add_argument("--prepare", type=Path, metavar="DIR", help="write the raters' inputs and briefs to DIR")
    ap.add_argument("--assemble", type=Path, metavar="DIR", help="read DIR/out*.jsonl into a stored ratings file")
    ap.add_argument("--key", type=Path, help="the key file of --prepare/--assemble (keep it out of DIR)")
    ap.add_argument("--parts", type=int, default=2, help="how many raters share the set (--prepare)")
    ap.add_argument("--seed", type=int, default=16, help="the order the cases are shuffled in (--prepare)")
    ap.add_argument("--families", action="store_true", help="print the per-family rows too (refused on the frozen set "
                    "and the held-out half while their round lasts)")
    args = ap.parse_args(argv)
    held = args.set in FROZEN or args.set in HELD_OUT
    if args.families and held:
        ap.error(f"{args.set} is held out this round: aggregates only")
    if args.ratings and held:      # made-up ratings would read its labels out of the aggregates
        ap.error(f"{args.set} is held out this round: only its stored ratings are scored")
    whole = HALVES[args.set][0] if args.set in HALVES else args.set
    if args.prepare or args.assemble:
        if not args.key:
            ap.error("--prepare and --assemble need --key")
        if args.set in HALVES:
            ap.error("rate a whole set; its halves are scored from the same file")
        cases = cases_of(args.set)
        if args.prepare:
            prepare(cases, args.prepare, args.key, args.parts, args.seed)
            print(f"{len(cases)} cases in {args.parts} part(s) under {args.prepare}; key in {args.key}")
            return 0
        out = stored(whole, args.rater)
        if held and out.exists():        # a held-out set's ratings are written once, by its raters
            ap.error(f"{out.name} exists and {args.set} is held out: its ratings are not rewritten")
        rows = assemble(cases, args.assemble, args.key)
        out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)}")
        return 0
    if args.agree:
        a, b = (stored(whole, r) for r in args.agree)
        for path in (a, b):
            if not path.is_file():
                ap.error(f"no ratings at {path}")
        print(agreement(args.set, cases_of(args.set), ratings(a), ratings(b), args.agree))
        return 0
    path = args.ratings or stored(whole, args.rater)
    if not path.is_file():
        ap.error(f"no ratings at {path}")
    tally = compare(cases_of(args.set), ratings(path))
    if not args.families:
        tally = {k: v for k, v in tally.items() if k in ("environment", "negatives")}
        tally = defaultdict(lambda: defaultdict(int), tally)
    print(report(f"{args.set}: blind expert vs explain ({path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})",
                 tally))
    return 0


if __name__ == "__main__":
    sys.exit(main())
