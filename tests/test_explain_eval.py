"""``gpudoctor explain`` measured on an evaluation set of real messages the catalog was not written from.

tests/data/explain_eval.jsonl holds error texts copied from public issue threads (the
``source`` of each), labelled with the family the thread's resolution points to, or
``not_env_problem`` when the cause was the user's code or data. None of them is a catalog
example (checked below by thread), but the catalog was improved while looking at them, so
the accuracy here is a regression bar, not a generalisation estimate: the first 102 cases
were gathered before the signatures were reworked, the next 28 environment cases were held
out and read only after that work (13 of 21, then 0 of 7 targeted ones, were right before
they guided a second pass), 6 program bugs were added unseen (5 of 6 right), and the last 9
(CUDA headers missing, nvcc without the GPU's architecture, WinError 1455) come from other
threads than the examples of the signatures written for those three messages; the very last
("Num GPUs: 0" from TensorFlow) was right only after that pattern was widened.
The bar is the accuracy the current catalog reaches; the failure message lists every miss
by family.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from gpudoctor.explain import catalog
from gpudoctor.explain.pipeline import explain_text
from tests.test_explain_cases import context_flags

EVAL_FILE = Path(__file__).resolve().parent / "data" / "explain_eval.jsonl"
CASES = [json.loads(line) for line in EVAL_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
NOT_ENV = "not_env_problem"
MIN_ACCURACY = 0.965           # measured: 141 of 146 (96.6%)
MIN_ENV_ACCURACY = 0.975       # environment problems with the right family first: 124 of 127
MIN_NOT_ENV_ACCURACY = 0.85    # program bugs left without a diagnosis: 17 of 19


def _outcome(case):
    result = explain_text(case["text"], flags=context_flags(case.get("environment") or {}))
    families = [d.family for d in result.diagnoses]
    if case["family"] == NOT_ENV:
        return families == [], families
    return bool(families) and families[0] == case["family"], families


def test_the_set_is_large_real_and_covers_every_family():
    families = Counter(c["family"] for c in CASES)
    assert len(CASES) >= 80
    assert set(families) - {NOT_ENV} == set(catalog.load().families)
    assert families[NOT_ENV] >= 10
    sources = [c["source"] for c in CASES]
    assert all(s.startswith("https://github.com/") for s in sources)
    assert len(set(sources)) == len(sources), "one case per issue thread"


def test_no_case_comes_from_a_thread_the_catalog_was_written_from():
    """Independence is by provenance: no case shares an issue thread with a catalog example. (A standard
    message - torch's "AssertionError: Torch not compiled with CUDA enabled" - can still read the same in
    an example from another thread.)"""
    example_sources = {ex["source"] for s in catalog.load().signatures for ex in s.examples}
    shared = [c["source"] for c in CASES if c["source"] in example_sources]
    assert shared == []


def test_accuracy_on_real_messages():
    per_family = defaultdict(lambda: [0, 0])
    misses = []
    for case in CASES:
        ok, families = _outcome(case)
        per_family[case["family"]][0] += ok
        per_family[case["family"]][1] += 1
        if not ok:
            misses.append(f"{case['family']}: got {families[:3]} for {case['source']}")
    env = [v for f, v in per_family.items() if f != NOT_ENV]
    right, total = sum(v[0] for v in per_family.values()), len(CASES)
    env_right, env_total = sum(v[0] for v in env), sum(v[1] for v in env)
    report = "\n".join([f"{right}/{total} right; misses:"] + misses)
    assert right / total >= MIN_ACCURACY, report
    assert env_right / env_total >= MIN_ENV_ACCURACY, report
    not_env = per_family[NOT_ENV]
    assert not_env[0] / not_env[1] >= MIN_NOT_ENV_ACCURACY, report
