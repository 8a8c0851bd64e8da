"""Count the priors of explain's differential diagnoses from real cases, and check or write them.

    python bench/explain_priors.py            # exit 1 and say which, if a stored count is stale
    python bench/explain_priors.py --write    # store the counts in gpudoctor/knowledge/signatures/*.json

A signature with a differential (``tell_apart`` on itself and on its alternatives) ranks the
causes of its message by how often each was the cause in real threads. The count of a
candidate family is the number of cases of the tunable sets of bench/explain_accuracy.py - dev,
tune, round1 (round 1's frozen set, tunable from round 2 on), eval, round2 (frozen-test-2, tunable
from round 3 on), round3 (frozen-test-3, whole from round 5 on), round4 (frozen-test-4, whole from
round 6 on), round5 (frozen-test-5, whole from round 7 on), round6 (frozen-test-6, whole from round 8 on),
round7 (frozen-test-7, whole from round 9 on), round8 (frozen-test-8, whole from round 10 on), round9
(frozen-test-9, whole from round 11 on), round10 (frozen-test-10, whole from round 12 on), round11 (frozen-test-11, whole from
round 13 on), round12 (frozen-test-12, whole from round 14 on), round13 (frozen-test-13, whole from round 15 on),
round14 (frozen-test-14, whole from round 16 on), round15 (frozen-test-15, whole from round 17 on), round16
(frozen-test-16, whole from round 18 on) and round17-a (the tunable half of frozen-test-17; round 18 holds
round17-b out) -
whose text the signature matches and whose primary family is that candidate; ``threads`` lists
their issue threads, and the signature's ``prior_of`` is how many of those cases it matched in all
(causes that are no candidate included). The held-out half and the frozen test set are never read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.explain_accuracy import TUNABLE  # noqa: E402  (after the path insert)

SETS = TUNABLE   # bench/explain_accuracy.py: every tunable set, never the held-out half
FOLDER = ROOT / "gpudoctor" / "knowledge" / "signatures"


def cases() -> List[Tuple[str, str, str]]:
    """(text, primary family, thread) of every case the priors may be counted from."""
    from bench.explain_accuracy import cases_of

    return [(c["text"], c["families"][0], c["source"]) for name in SETS for c in cases_of(name)]


def count() -> Dict[str, Dict]:
    """signature id -> {"of": matched cases, "threads": {family: [thread, ...]}} for differential signatures."""
    from gpudoctor.explain import catalog
    from gpudoctor.explain.scan import Scanner

    cat = catalog.load()
    wanted = {s.id for s in cat.signatures if s.differential}
    out: Dict[str, Dict] = {sid: {"of": 0, "threads": defaultdict(list)} for sid in wanted}
    for text, family, thread in cases():
        scanner = Scanner(cat)
        scanner.feed(text.encode("utf-8"))
        for sid in set(scanner.finish().hits) & wanted:
            out[sid]["of"] += 1
            out[sid]["threads"][family].append(thread)
    return out


def _prior(counts: Dict, family: str) -> Dict:
    threads = sorted(counts["threads"].get(family, []))
    return {"count": len(threads), "threads": threads}


def update(doc: Dict, counts: Dict[str, Dict]) -> bool:
    """Store the counts in one signature file's document; True when something changed."""
    before = json.dumps(doc, sort_keys=True)
    for raw in doc.get("signatures", ()):
        got = counts.get(raw["id"])
        if got is None:
            continue
        raw["prior_of"] = got["of"]
        raw["prior"] = _prior(got, raw.get("family", doc.get("family")))
        for alt in raw.get("alternatives") or ():
            if "tell_apart" in alt:
                alt["prior"] = _prior(got, alt["family"])
    return json.dumps(doc, sort_keys=True) != before


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store the counts in the signature files")
    args = ap.parse_args(argv)
    counts = count()
    stale = []
    for path in sorted(FOLDER.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if update(doc, counts):
            stale.append(path.name)
            if args.write:
                path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for sid, got in sorted(counts.items()):
        shown = ", ".join(f"{f} {len(t)}" for f, t in sorted(got["threads"].items(), key=lambda x: -len(x[1])))
        print(f"{sid}: {got['of']} cases: {shown}")
    if stale and not args.write:
        print(f"stale priors in {', '.join(stale)}: run with --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
