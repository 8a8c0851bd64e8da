"""Real error messages from public issue threads (fixtures/errors-dev/cases.jsonl): the primary
family comes first, and text whose cause is the program itself gets no environment diagnosis."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpudoctor.explain.pipeline import explain_text

# A copy of ../shared/errors-dev/cases.jsonl: real messages from public issue threads (see its README).
CASES_FILE = Path(__file__).resolve().parent.parent / "fixtures" / "errors-dev" / "cases.jsonl"
CASES = [json.loads(line) for line in CASES_FILE.read_text().splitlines() if line.strip()] if CASES_FILE.exists() else []


def context_flags(environment: dict) -> list:
    """What the reporter said about where it ran, as `--context` flags (never the answer itself)."""
    flags = []
    text = json.dumps(environment).lower()
    # A collector may give the environment as one sentence ({"summary": ...}): read it as the user's
    # own words, the way they would pass --context (Windows, a container they named).
    summary = str(environment.get("summary", "")).lower()
    if environment.get("container") or re.search(r"\b(docker|container|singularity|podman|kubernetes)\b", summary):
        flags.append("container")
    if "wsl" in text:
        flags.append("wsl")
    if "windows" in str(environment.get("os", "")).lower() or "windows" in summary:
        flags.append("windows")
    # A Mac without an NVIDIA GPU is where it ran, not the answer (the answer may still be a CPU-only build or a
    # bug): the Macs of macOS 10.13 and before that carried a GeForce are not such a Mac, and neither is one whose
    # reporter names an NVIDIA GPU.
    where = str(environment.get("os", "")).lower() + " " + summary + " " + str(environment.get("platform", "")).lower()
    if (re.search(r"\bmac ?os\b|\bmacbook|\bimac\b|\bapple (?:m[1-9]|silicon)|\bdarwin\b|\bmac m[1-9]\b|"
                  r"\bm[1-9] (?:mac|pro|max)\b", where)
            and not re.search(r"\bmac ?os (?:x )?10\.(?:[0-9]|1[0-3])\b", where)
            and not re.search(r"(?<!no )(?<!without )(?<!without an )nvidia|geforce|quadro|tesla|\bgtx\b|\brtx\b", text)):
        flags.append("macos")
    return flags


def test_the_case_file_is_there():
    assert len(CASES) == 52


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_primary_family_comes_first(case):
    result = explain_text(case["error_text"], flags=context_flags(case.get("environment") or {}))
    families = [d.family for d in result.diagnoses]
    primary = case["categories"][0]
    if primary == "not_env_problem":
        assert families == [], f"diagnosed {families} for a program bug / harmless warning"
        assert result.notes or "oom" not in case["categories"], "the reason should be said"
        assert result.exit_code == 1
    else:
        assert families, "nothing diagnosed"
        if families[0] != primary:
            # A case labelled with two causes of one message (error 804: a driver too old, or cuda-compat on a
            # GeForce) may get the other first when more real threads had that cause; the primary must then be
            # a ranked cause of the same diagnosis, with its command to tell them apart.
            first = result.diagnoses[0]
            ranked = [c.family for c in first.differential.candidates] if first.differential else []
            assert families[0] in case["categories"] and primary in ranked, f"got {families}, ranked {ranked}"
        assert result.exit_code == 0


@pytest.mark.parametrize("case", [c for c in CASES if len(c["categories"]) > 1 and c["categories"][0] != "not_env_problem"],
                         ids=lambda c: c["id"])
def test_secondary_family_is_listed_when_the_text_shows_it(case):
    result = explain_text(case["error_text"], flags=context_flags(case.get("environment") or {}))
    # named as a diagnosis, or as a ranked cause in a diagnosis's differential
    families = [d.family for d in result.diagnoses] + [c.family for d in result.diagnoses if d.differential
                                                       for c in d.differential.candidates]
    if case["id"] == "arch_unsupported-direct3ds2-32-two-problems":
        pytest.skip("the second problem (extensions) is only in the thread, not in the error text")
    assert set(case["categories"][1:]) & set(families), f"{case['categories']} vs {families}"


def test_container_cases_without_context_still_name_the_message_family():
    by_id = {c["id"]: c for c in CASES}
    result = explain_text(by_id["container-nvidiadocker-400-insufficient-masquerade"]["error_text"])
    assert [d.family for d in result.diagnoses] == ["driver_too_old"]
    result = explain_text(by_id["container-nvidiadocker-400-insufficient-masquerade"]["error_text"], flags=["container"])
    assert [d.family for d in result.diagnoses] == ["no_device_in_container", "driver_too_old"]


def test_absurd_allocation_is_called_a_program_bug():
    case = next(c for c in CASES if c["id"] == "neg-stylegaussian-11-absurd-alloc")
    result = explain_text(case["error_text"])
    assert result.diagnoses == []
    assert [n.kind for n in result.notes] == ["program_bug"]
    assert "130674.91 GiB" in result.notes[0].explanation[0] and "79.15 GiB" in result.notes[0].explanation[0]
    assert "bug in the program" in result.notes[0].explanation[0]
