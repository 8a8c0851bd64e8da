"""Every fact of every recorded scenario, pinned: the value a provider reads from a real machine's
recording, or the reason it cannot (a check that needs it shows that reason as its skip).

The findings goldens (test_scenarios) see a fact only through the checks that read it; a provider
can go wrong in a field no check of these scenarios happens to show. Here each fact is compared
whole. GPUDOCTOR_UPDATE_GOLDENS=1 rewrites expected-facts.json, for a change that means to alter a
fact; review the diff before committing it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os

import pytest

from gpudoctor.facts import Facts, Missing, NotApplicable, known_facts
from gpudoctor.snapshot_folder import load
from tests.scenarios import scenario_dirs

pytestmark = pytest.mark.usefixtures("smi_parse_memo")  # the recordings are parsed once (conftest)

DIRS = scenario_dirs()
UPDATE = os.environ.get("GPUDOCTOR_UPDATE_GOLDENS") == "1"


def plain(value):
    """A fact's value as JSON: dataclasses by field, tuples as lists, sets sorted, enums by value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"_type": type(value).__name__,
                **{fl.name: plain(getattr(value, fl.name)) for fl in dataclasses.fields(value)}}
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return f"<{type(value).__name__}> {value}"


def facts_of(path) -> dict:
    f = Facts(load(str(path / "snapshot")))
    out = {}
    for name in sorted(known_facts()):
        try:
            out[name] = {"value": plain(f[name])}
        except NotApplicable as exc:
            out[name] = {"not_applicable": str(exc)}
        except Missing as exc:
            out[name] = {"missing": str(exc)}
    return out


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_scenario_facts_golden(path):
    got = facts_of(path)
    golden = path / "expected-facts.json"
    if UPDATE:
        golden.write_text(json.dumps(got, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    assert golden.is_file(), f"{golden} is missing (GPUDOCTOR_UPDATE_GOLDENS=1 writes it)"
    want = json.loads(golden.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(want), "facts added or removed: rewrite the golden"
    for name in want:
        assert got[name] == want[name], f"fact {name} of {path.name}"


def test_the_goldens_pin_values_and_reasons_not_just_names():
    """The pinned facts must say something: most facts of the 8-GPU server have a value, and a
    scenario without nvidia-smi pins why its GPU facts are missing."""
    server = json.loads((DIRS[0].parent / "core-8gpu-server" / "expected-facts.json").read_text(encoding="utf-8"))
    assert len(server["gpus"]["value"]) == 8
    assert sum("value" in v for v in server.values()) > len(server) // 2
    gpu_less = json.loads((DIRS[0].parent / "core-gpu-less" / "expected-facts.json").read_text(encoding="utf-8"))
    assert any("missing" in v or "not_applicable" in v for v in gpu_less.values())
