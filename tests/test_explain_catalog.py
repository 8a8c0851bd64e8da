"""The signature catalog is well-formed data, and every signature matches its own real examples."""

from __future__ import annotations

import json

import pytest

from gpudoctor import recipes
from gpudoctor.explain import catalog
from gpudoctor.explain.context import Context, read_text
from gpudoctor.explain.scan import Scanner
from gpudoctor.explain.values import convert, display

CAT = catalog.load()
SIGS = list(CAT.signatures)
EXAMPLES = [(s, i, ex) for s in SIGS for i, ex in enumerate(s.examples)]


def _ids(items):
    return [f"{s.id}#{i}" for s, i, _ in items]


def test_catalog_size_and_family_coverage():
    diagnosis = [s for s in SIGS if s.kind == "diagnosis"]
    assert len(diagnosis) >= 60
    assert len(CAT.families) == 23
    assert {s.family for s in diagnosis} == set(CAT.families)
    assert all(s.family in CAT.families for s in diagnosis)


def test_every_signature_has_real_examples_and_sources():
    for sig in SIGS:
        assert sig.examples, f"{sig.id} has no example"
        assert sig.sources and all(u.startswith("https://") for u in sig.sources), sig.id
        for ex in sig.examples:
            assert ex["source"].startswith("https://"), sig.id
            assert ex["text"].strip(), sig.id


def test_recipes_and_alternatives_exist():
    known = set(recipes.all_recipes())
    for sig in SIGS:
        if sig.kind == "diagnosis":
            assert sig.recipe in known, f"{sig.id}: recipe {sig.recipe} missing"
        for alt in sig.alternatives:
            assert alt.recipe in known and alt.family in CAT.families, sig.id


def test_flags_used_are_declared():
    declared = set(CAT.flags)
    for sig in SIGS:
        used = set(sig.requires) | set(sig.excludes) | set(sig.boost) | {f for a in sig.alternatives for f in a.requires}
        assert used <= declared, f"{sig.id} uses undeclared flags {used - declared}"
        if sig.kind == "context":
            assert sig.flag in declared


def test_named_groups_are_typed_and_examples_only_name_them():
    for sig in SIGS:
        groups = {g for p in sig.patterns for g in p.groupindex}
        assert groups <= set(sig.values), f"{sig.id}: untyped groups {groups - set(sig.values)}"
        for ex in sig.examples:
            assert set(ex.get("values", {})) <= groups, sig.id


def test_streamed_signatures_have_anchors_inside_their_examples():
    for sig in SIGS:
        if sig.kind in catalog.STREAMED:
            for ex in sig.examples:
                assert any(sig.has_anchor(line) for line in ex["text"].splitlines()), \
                    f"{sig.id}: no anchor in {ex['text'][:60]!r}"


def test_every_anchor_is_covered_by_a_gate():
    for sig in SIGS:
        if sig.kind in catalog.STREAMED:
            for anchor in sig.anchors:
                assert any(g.decode() in anchor for g in CAT.gates), (sig.id, anchor)


@pytest.mark.parametrize("sig,i,ex", EXAMPLES, ids=_ids(EXAMPLES))
def test_signature_matches_its_example(sig, i, ex):
    if sig.kind in ("fact", "context"):
        ctx = Context()
        read_text(ctx, ex["text"], CAT)
        if sig.kind == "context":
            assert sig.flag in ctx.flags
        got = {k: display(v) for k, v in ctx.values.items()}
    else:
        scanner = Scanner(CAT)
        scanner.feed(ex["text"].encode("utf-8"))
        hits = scanner.finish().hits
        assert sig.id in hits, f"{sig.id} did not match its example"
        got = {k: display(convert(sig.values.get(k, "str"), v)) for k, v in hits[sig.id].values.items()}
    for name, want in ex.get("values", {}).items():
        assert got.get(name) == want, f"{sig.id}: {name} = {got.get(name)!r}, expected {want!r}"


def test_catalog_errors_name_the_file_and_signature():
    good = json.dumps({"family": "oom", "signatures": [{"id": "x", "anchors": ["CUDA"], "patterns": ["(unclosed"]}]})
    with pytest.raises(catalog.CatalogError, match=r"bad\.json: x: bad pattern"):
        catalog.build([("bad.json", good)])
    dup = json.dumps({"family": "oom", "signatures": [{"id": "y", "anchors": ["CUDA"], "patterns": ["a"]}] * 2})
    with pytest.raises(catalog.CatalogError, match="duplicate signature ids: y"):
        catalog.build([("dup.json", dup)])
    untyped = json.dumps({"family": "oom", "signatures": [{"id": "z", "anchors": ["CUDA"], "patterns": ["a"],
                                                           "values": {"n": "float"}}]})
    with pytest.raises(catalog.CatalogError, match="unknown type 'float'"):
        catalog.build([("t.json", untyped)])


def test_an_anchor_without_a_gate_becomes_its_own_gate():
    meta = json.dumps({"families": ["oom"], "gates": ["CUDA"]})
    sig = json.dumps({"family": "oom", "signatures": [{"id": "w", "anchors": ["Tried to allocate"], "patterns": ["x"]}]})
    cat = catalog.build([("_catalog.json", meta), ("oom.json", sig)])
    assert cat.gates == (b"CUDA", b"Tried to allocate")
    assert [s.id for s in cat.for_gates([b"Tried to allocate"])] == ["w"]
    assert cat.for_gates([b"CUDA"]) == ()


def test_catalog_is_loaded_once():
    assert catalog.load() is CAT


def test_clue_rules_name_declared_flags_families_recipes_and_a_real_source():
    rules = CAT.data["clue_families"]
    known = set(recipes.all_recipes())
    assert len(rules) == 6
    for rule in rules:
        assert set(rule["requires"]) | set(rule.get("excludes", ())) <= set(CAT.flags), rule
        assert rule["source"].startswith("https://github.com/") and rule["explanation"], rule
        if "rules_out" in rule:
            assert rule["rules_out"] in CAT.families
        else:
            assert rule["family"] in CAT.families and rule["recipe"] in known and rule["lift"] > 0, rule
            assert set(rule["over"]) <= set(CAT.families) and rule["family"] not in rule["over"], rule
