"""How often `gpudoctor explain` names the right problem family, on sets of real error texts.

    python bench/explain_accuracy.py                       # every set below, frozen test set included
    python bench/explain_accuracy.py --sets dev eval tune  # the sets that may be tuned to
    python bench/explain_accuracy.py --misses tune         # ids of the tune set's misses (never the frozen set)
    python bench/explain_accuracy.py --sets round2-a round2-b   # a round's own hold-out (see below)

Sets: fixtures/errors-dev/cases.jsonl (dev), tests/data/explain_eval.jsonl (eval, lines of
``text``/``family``), fixtures/errors-real/tune.jsonl (tune) and
fixtures/errors-real/frozen-test-18.jsonl (frozen: never read case by case; this script prints only
aggregate figures for it, and refuses ``--misses`` on it), fixtures/errors-real/round1-frozen.jsonl
(round1: round 1's frozen set, tunable from round 2 on) and fixtures/errors-real/round2-frozen.jsonl
(round2: round 2's frozen set, frozen-test-2, measured once at 124/161 and tunable from round 3 on),
fixtures/errors-real/round3-frozen.jsonl (round3: frozen-test-3, measured once at 124/161 on round 3's
merged code, 111/161 on the code before it, tunable from round 4 on) and
fixtures/errors-real/round4-frozen.jsonl (round4: frozen-test-4, measured once at 131/162 on round 4's
merged code, 127/162 on the code before it, tunable from round 5 on),
fixtures/errors-real/round5-frozen.jsonl (round5: frozen-test-5, measured once at 129/160 on round 5's
merged code, 124/160 on the code before it, tunable from round 6 on),
fixtures/errors-real/round6-frozen.jsonl (round6: frozen-test-6, measured once at 102/127 on round 6's
merged code, 103/127 on the code before it, tunable from round 7 on),
fixtures/errors-real/round7-frozen.jsonl (round7: frozen-test-7, measured once at 107/128 on round 7's
merged code, 105/128 on the code before it, tunable from round 8 on),
fixtures/errors-real/round8-frozen.jsonl (round8: frozen-test-8, measured once at 105/130 on round 8's
merged code, 103/130 on the code before it, tunable from round 9 on),
fixtures/errors-real/round9-frozen.jsonl (round9: frozen-test-9, measured once at 95/135 on round 9's
merged code, 95/135 on the code before it, tunable from round 10 on),
fixtures/errors-real/round10-frozen.jsonl (round10: frozen-test-10, measured once at 94/127 on round 10's
code, 90/127 on the code before it, tunable from round 11 on),
fixtures/errors-real/round11-frozen.jsonl (round11: frozen-test-11, measured once at 52/71 on round 11's
code and on the code before it, tunable from round 12 on),
fixtures/errors-real/round12-frozen.jsonl (round12: frozen-test-12, measured once at 73/103 on round 12's
code and on the code before it, tunable from round 13 on),
fixtures/errors-real/round13-frozen.jsonl (round13: frozen-test-13, measured at 93/118 on round 13's code
and on the code before it, tunable from round 14 on),
fixtures/errors-real/round14-frozen.jsonl (round14: frozen-test-14, measured at 212/294 on the code before
round 14 and 214/294 on its code without two signatures a collector's report led to, tunable from round 15 on),
fixtures/errors-real/round15-frozen.jsonl (round15: frozen-test-15, measured at 261/390 on the code before round 15
and on its code before any of its results was seen, 264/390 on round 15's submitted code, tunable from round 16 on),
fixtures/errors-real/round16-frozen.jsonl (round16: frozen-test-16, measured at 214/340 on the code before round 16,
217/340 on its code before any of its results was seen and 218/340 on round 16's submitted code, tunable from
round 17 on),
fixtures/errors-real/round17-frozen.jsonl (round17: frozen-test-17, measured at 193/265 on the code before round 17,
194/265 on its code before any of its results was seen and 193/265 on round 17's submitted code, tunable from
round 18 on).
round1-a and round1-b are round1's two halves, split by thread (``sha256("round2:" + lowercased source
URL without fragment)``, even or odd); round2-a and round2-b split round2 the same way with the salt
"round3:", round3-a and round3-b split round3 with "round4:", round4-a and round4-b split round4
with "round5:", round5-a and round5-b split round5 with "round6:", round6-a and round6-b split round6
with "round7:", round7-a and round7-b split round7 with "round8:", round8-a and round8-b split round8
with "round9:", round9-a and round9-b split round9 with "round10:", round10-a and round10-b split round10 with
"round11:", round11-a and round11-b split round11 with "round12:", round12-a and round12-b split round12
with "round13:", round13-a and round13-b split round13 with "round14:", round14-a and round14-b split
round14 with "round15:", round15-a and round15-b split round15 with "round16:", round16-a and round16-b split
round16 with "round17:", round17-a and round17-b split round17 with "round18:". A round tunes to one half and holds
the other out, measuring it only at milestones.

Scoring rule (fixed before the first run):
- The input is the case's error text, run in-process through ``explain_text`` with the
  ``--context`` flags a user would give for where it ran (container / wsl / windows, read from
  the case's ``environment`` exactly as tests/test_explain_cases.py does; never the answer).
  The column "top-1 text only" repeats top-1 with no flags at all.
- A case's families are its ``categories`` (primary first) or its one ``family``.
- Environment case (primary family is not ``not_env_problem``): top-1 is right when explain's
  first diagnosis has the primary family or one of the case's listed categories; top-3 when one
  of the first three diagnoses does; "no answer" when explain gives no diagnosis at all (a note
  alone is no answer).
- Negative case (primary ``not_env_problem``): right when explain gives no diagnosis (a note -
  program bug or harmless warning - is fine); any diagnosis is a false claim. Top-1 and top-3 of a
  negative case are that same outcome.
- Overall top-1/top-3 count every case, negatives included; the table also gives environment
  cases alone.
Only aggregate numbers are printed, never case texts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NOT_ENV = "not_env_problem"
# Frozen sets retired into tuning so far: round<n>-frozen.jsonl for n = 1..RETIRED, each split into halves by the
# salt of the round that retired it ("round<n+1>:"). The current round (RETIRED + 1) holds round<RETIRED>-b out
# and measures fixtures/errors-real/frozen-test-<RETIRED + 1>.jsonl as its frozen set. A new round raises it by one.
RETIRED = 17
REAL = ROOT / "fixtures" / "errors-real"
SETS = {
    "dev": ROOT / "fixtures" / "errors-dev" / "cases.jsonl",
    "eval": ROOT / "tests" / "data" / "explain_eval.jsonl",
    "tune": REAL / "tune.jsonl",
    **{f"round{n}": REAL / f"round{n}-frozen.jsonl" for n in range(1, RETIRED + 1)},
    "frozen": REAL / f"frozen-test-{RETIRED + 1}.jsonl",
}
# Halves of a retired frozen set, split by thread with the salt of the round that split it.
HALVES = {f"round{n}-{ab}": (f"round{n}", which, f"round{n + 1}:")
          for n in range(1, RETIRED + 1) for which, ab in enumerate("ab")}
FROZEN = ("frozen",)     # never listed case by case (round1-b was, until round 2 had measured it held out)
# The current round's held-out half (and the set holding it): aggregates only, until released.
HELD_OUT = (f"round{RETIRED}", f"round{RETIRED}-b")
# What the vocabulary counts and the differential priors may be counted from: every tunable set, the newest retired
# set by its tunable half only (never the held-out half nor the frozen set).
TUNABLE = ("dev", "eval", "tune", *(f"round{n}" for n in range(1, RETIRED)), f"round{RETIRED}-a")


def half(source: str, salt: str = "round2:") -> int:
    """0 or 1: which half of a set a thread's case falls in (fixed by the thread, not by the case)."""
    key = salt + source.split("#", 1)[0].strip().lower()
    return hashlib.sha256(key.encode()).digest()[-1] % 2


def cases_of(name: str) -> List[dict]:
    if name in HALVES:
        whole, which, salt = HALVES[name]
        return [c for c in load(SETS[whole]) if half(c["source"], salt) == which]
    return load(SETS[name])


def load(path: Path) -> List[dict]:
    """Cases as {id, text, families, environment}; both file formats (cases.jsonl, text/family)."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        raw = json.loads(line)
        families = list(raw.get("categories") or [raw["family"]])
        out.append({"id": raw.get("id") or raw.get("source") or f"line {n}", "source": raw.get("source") or "",
                    "text": raw.get("error_text", raw.get("text")),
                    "families": families, "environment": raw.get("environment") or {}})
    return out


def first_right(families: List[str], first: Optional[str]) -> bool:
    """The top-1 rule for one reader's first family (None: it named none): an environment case's must be one of its
    categories; a negative's must be no environment family (none at all, or not_env_problem from a rater)."""
    if families[0] == NOT_ENV:
        return first is None or first == NOT_ENV
    return first in families


def outcome(case: dict) -> Dict[str, bool]:
    from gpudoctor.explain.pipeline import explain_text
    from tests.test_explain_cases import context_flags

    got = [d.family for d in explain_text(case["text"], flags=context_flags(case["environment"])).diagnoses]
    plain = [d.family for d in explain_text(case["text"]).diagnoses]
    wanted = set(case["families"])
    top1 = first_right(case["families"], got[0] if got else None)
    plain1 = first_right(case["families"], plain[0] if plain else None)
    if case["families"][0] == NOT_ENV:
        return {"top1": top1, "top3": top1, "plain": plain1, "claim": bool(got), "none": False, "got": got}
    return {"top1": top1, "top3": bool(wanted & set(got[:3])), "plain": plain1, "claim": False, "none": not got,
            "got": got}


def _pct(k: int, n: int) -> str:
    return f"{k:>3}/{n:<3} {100 * k / n:5.1f}%" if n else "      -      "


def table(name: str, cases: List[dict], results: List[dict]) -> str:
    rows: Dict[str, List[dict]] = defaultdict(list)
    for case, res in zip(cases, results):
        rows[case["families"][0]].append(res)
    env = [r for c, r in zip(cases, results) if c["families"][0] != NOT_ENV]
    neg = rows.get(NOT_ENV, [])
    head = f"{'family':<30} {'n':>4}  {'top-1':<13} {'top-3':<13} {'no answer':<13} {'false claims':<13}"
    out = [f"== {name}: {len(cases)} cases", head, "-" * len(head)]
    for family in sorted(rows):
        rs = rows[family]
        n = len(rs)
        if family == NOT_ENV:
            out.append(f"{family:<30} {n:>4}  {_pct(sum(r['top1'] for r in rs), n)} {'':<13} {'':<13} "
                       f"{_pct(sum(r['claim'] for r in rs), n)}")
        else:
            out.append(f"{family:<30} {n:>4}  {_pct(sum(r['top1'] for r in rs), n)} {_pct(sum(r['top3'] for r in rs), n)} "
                       f"{_pct(sum(r['none'] for r in rs), n)}")
    out.append("-" * len(head))
    n = len(results)
    out.append(f"{'environment cases':<30} {len(env):>4}  {_pct(sum(r['top1'] for r in env), len(env))} "
               f"{_pct(sum(r['top3'] for r in env), len(env))} {_pct(sum(r['none'] for r in env), len(env))}")
    out.append(f"{'negatives (not_env_problem)':<30} {len(neg):>4}  {_pct(sum(r['top1'] for r in neg), len(neg))} "
               f"{'':<13} {'':<13} {_pct(sum(r['claim'] for r in neg), len(neg))}")
    out.append(f"{'ALL':<30} {n:>4}  {_pct(sum(r['top1'] for r in results), n)} "
               f"{_pct(sum(r['top3'] for r in results), n)}")
    out.append(f"{'ALL, top-1 text only':<30} {n:>4}  {_pct(sum(r['plain'] for r in results), n)}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", choices=sorted({*SETS, *HALVES}), default=list(SETS))
    ap.add_argument("--misses", choices=sorted({*SETS, *HALVES} - set(FROZEN)),
                    help="list the ids, expected and found families of one tunable set's misses")
    ap.add_argument("--release", action="store_true",
                    help="allow --misses on the held-out half (only after its last held-out measurement)")
    args = ap.parse_args(argv)
    if args.misses in HELD_OUT and not args.release:
        ap.error(f"{args.misses} is held out this round: aggregates only (--release once it is measured)")
    if args.misses:
        cases = cases_of(args.misses)
        for case in cases:
            res = outcome(case)
            if not res["top1"]:
                print(f"{case['id']}: want {case['families']}, got {res['got'][:4]}")
        return 0
    for name in args.sets:
        path = SETS[HALVES[name][0] if name in HALVES else name]
        if not path.is_file():  # the frozen set of the next round may not be collected yet
            print(f"== {name}: {path.relative_to(ROOT)} is not there yet")
            continue
        cases = cases_of(name)
        label = f"{name} ({path.relative_to(ROOT)}{', half ' + str(HALVES[name][1]) if name in HALVES else ''})"
        print(table(label, cases, [outcome(c) for c in cases]))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
