"""clues.apply: rules about the whole machine reorder a message's readings (unit level, made-up proposals)."""

from __future__ import annotations

from dataclasses import dataclass

from gpudoctor.explain import clues


@dataclass
class P:
    family: str
    score: int
    via: str = "signature"
    hit: str = "hit"
    recipe: str = "r"


def new(family, recipe, score, hit, explanation):
    return P(family, score, "clue:" + explanation[0], hit, recipe)


LIFT = {"requires": ["a"], "excludes": ["b"], "family": "x", "recipe": "rx", "lift": 5, "over": ["y", "z"],
        "explanation": ["why"]}


def test_a_held_rule_adds_its_family_above_the_best_reading_it_outranks():
    got = clues.apply([LIFT], {"a"}, [P("y", 60, hit="h1"), P("z", 70, hit="h2"), P("w", 90)], new)
    assert got[-1] == P("x", 75, "clue:why", "h2", "rx")
    assert len(got) == 4


def test_the_messages_own_reading_of_the_family_is_lifted_instead():
    own = P("x", 20, "alternative", "h3", "own")
    got = clues.apply([LIFT], {"a"}, [P("y", 60), own], new)
    assert got[-1] == P("x", 65, "alternative", "h3", "own") and got[1] is own


def test_a_rule_whose_flags_do_not_hold_or_that_finds_nothing_to_outrank_changes_nothing():
    props = [P("y", 60)]
    assert clues.apply([LIFT], set(), props, new) == props
    assert clues.apply([LIFT], {"a", "b"}, props, new) == props
    assert clues.apply([LIFT], {"a"}, [P("w", 60)], new) == [P("w", 60)]


def test_rules_out_drops_only_the_readings_another_clue_lifted():
    rule = {"requires": ["h"], "rules_out": "c", "explanation": ["host"]}
    props = [P("c", 88, "alternative"), P("c", 50, "signature"), P("d", 62)]
    assert clues.apply([rule], {"h"}, props, new) == [P("c", 50, "signature"), P("d", 62)]
