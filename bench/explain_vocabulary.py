"""Count the vocabulary fallback's words over the real tuning cases, check or write them, cross-validate.

    python bench/explain_vocabulary.py            # exit 1 and say so, if the stored counts are stale
    python bench/explain_vocabulary.py --write    # store them in gpudoctor/knowledge/data/error_vocabulary.json
    python bench/explain_vocabulary.py --cv 5     # k-fold cross-validation by thread (figures only)

The counts of a word (a term of error_vocabulary.json, an error code of error_codes.json) are how
many cases of the tuning sets hold it, by the case's primary family: dev, eval, tune, round1,
round2, round3, round4, round5, round6, round7, round8, round9, round10, round11, round12, round13, round14, round15,
round16 (whole: rounds 3 to 17 held their halves round2-b to round16-b out and measured them) and round17-a. round17-b
(round 18's held-out half) and the
frozen sets are never read. The cross-validation splits those cases by thread into k folds, counts the words on
k-1 of them and measures the other: the fallback alone (on every case: does its first family hit,
does it speak on texts that are not environment problems) and explain as a whole (the fallback
speaks only where no signature did), so that the figure says how well the words generalise to
threads they were not counted from.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.explain_accuracy import TUNABLE  # noqa: E402  (after the path insert)

TUNING = TUNABLE   # bench/explain_accuracy.py: every tunable set, never the held-out half
DATA = ROOT / "gpudoctor" / "knowledge" / "data" / "error_vocabulary.json"
NOT_ENV = "not_env_problem"


def cases() -> List[dict]:
    from bench.explain_accuracy import cases_of
    from tests.test_explain_cases import context_flags

    out = []
    for name in TUNING:
        for case in cases_of(name):
            out.append({**case, "flags": context_flags(case["environment"])})
    return out


def _features(case: dict) -> Dict:
    from gpudoctor.explain import words
    from gpudoctor.explain.normalize import normalize

    return words.features(normalize(case["text"]), flags=case["flags"])


def count(rows: List[dict]) -> Dict[str, Dict[str, int]]:
    out: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for case in rows:
        for fid in case["features"]:
            out[fid][case["families"][0]] += 1
    return {fid: dict(sorted(fams.items())) for fid, fams in sorted(out.items())}


def fold(case: dict, k: int) -> int:
    key = "vocabulary-cv:" + (case["source"] or case["id"]).split("#", 1)[0].strip().lower()
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[-4:], "big") % k


def cross_validate(rows: List[dict], k: int) -> Dict[str, List[int]]:
    """[right, of] per figure, summed over the k folds."""
    from gpudoctor.explain import fallback

    tally = {n: [0, 0] for n in ("signatures top-1 (env)", "signatures no answer (env)",
                                 "alone top-1 (env)", "alone speaks (env)", "alone false claims (neg)",
                                 "explain top-1 (env)", "explain no answer (env)", "explain false claims (neg)")}
    for i in range(k):
        counts = count([c for c in rows if fold(c, k) != i])
        for case in (c for c in rows if fold(c, k) == i):
            ranked = fallback.rank(case["features"], counts)
            said = fallback.speaks(case["features"], ranked)
            first = ranked[0][0] if said else None
            final = case["signature_first"] if case["signature_first"] is not None else (
                None if case["blocked"] else first)
            _tally(tally, case, first, said, final)
    return tally


def _tally(tally, case, first, said, final) -> None:
    wanted = set(case["families"])
    if case["families"][0] == NOT_ENV:
        for name, hit in (("alone false claims (neg)", said), ("explain false claims (neg)", final is not None)):
            tally[name][0] += hit
            tally[name][1] += 1
        return
    for name, hit in (("signatures top-1 (env)", case["signature_first"] in wanted),
                      ("signatures no answer (env)", case["signature_first"] is None),
                      ("alone top-1 (env)", first in wanted), ("alone speaks (env)", said),
                      ("explain top-1 (env)", final in wanted), ("explain no answer (env)", final is None)):
        tally[name][0] += hit
        tally[name][1] += 1


def _with_signatures(rows: List[dict]) -> None:
    """What the signatures alone say of each case: their first family, or a note that keeps the fallback quiet."""
    from gpudoctor.explain.pipeline import explain_text

    for case in rows:
        res = explain_text(case["text"], flags=case["flags"], vocabulary=False)
        case["signature_first"] = res.diagnoses[0].family if res.diagnoses else None
        case["blocked"] = bool(res.notes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--cv", type=int, metavar="K")
    args = ap.parse_args(argv)
    rows = cases()
    for case in rows:
        case["features"] = _features(case)
    if args.cv:
        _with_signatures(rows)
        for name, (right, of) in cross_validate(rows, args.cv).items():
            print(f"{name:<28} {right:>4}/{of:<4} {100 * right / of:5.1f}%")
        return 0
    counts = count(rows)
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    if args.write:
        doc["counts"] = counts
        sys.path.insert(0, str(ROOT / "bench"))
        DATA.write_text(_dump(doc), encoding="utf-8")
        print(f"wrote the counts of {len(counts)} words from {len(rows)} cases")
        return 0
    if doc.get("counts") != counts:
        print("error_vocabulary.json: the stored counts are stale; run bench/explain_vocabulary.py --write")
        return 1
    print(f"counts of {len(counts)} words from {len(rows)} cases are current")
    return 0


def _dump(doc: dict) -> str:
    """One row per line, as the knowledge files are written."""
    parts = []
    for key, value in doc.items():
        if isinstance(value, list):
            rows = ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in value)
            parts.append(f" {json.dumps(key)}: [\n{rows}\n ]")
        elif key == "counts":
            rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in value.items())
            parts.append(f" {json.dumps(key)}: {{\n{rows}\n }}")
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


if __name__ == "__main__":
    sys.exit(main())
