"""The check engine: registration errors, selection by id/name/prefix, and what run_one reports for a check
that skips, crashes, says nothing or says several things."""

from __future__ import annotations

import pytest

from gpudoctor.engine import Check, InvalidCheck, asked, check, run_checks, run_one, select, validate
from gpudoctor.facts import Facts
from gpudoctor.findings import Status, ok, warn
from gpudoctor.requirements import Requirements
from gpudoctor.snapshot import Snapshot


@check("TST010", "says-nothing", "says nothing", needs=())
def says_nothing(f):
    """  Returns None: the engine reports the check's title as OK.  """
    return None


@check("TST011", "says-two", "says two things")
def says_two(f):
    return [warn("first"), ok("second")]


@check("TSTB012", "hot", "GPUs below the temperature bound", params=("max_temp",))
def hot(f):
    return ok("cool enough")


def test_a_check_that_says_nothing_is_ok_with_its_own_title():
    (finding,) = run_one(says_nothing, Facts(Snapshot()))
    assert (finding.check_id, finding.status, finding.title) == ("TST010", Status.OK, "says nothing")
    assert says_nothing.description == "Returns None: the engine reports the check's title as OK."


def test_every_finding_of_a_check_carries_its_id():
    got = run_one(says_two, Facts(Snapshot()))
    assert [(f.check_id, f.status, f.title) for f in got] == [("TST011", Status.WARN, "first"),
                                                              ("TST011", Status.OK, "second")]


def test_a_crash_is_an_error_naming_the_exception_and_keeping_the_traceback():
    @check("TST013", "crashes", "crashes")
    def crashes(f):
        raise RuntimeError("boom")

    (finding,) = run_one(crashes, Facts(Snapshot()))
    assert (finding.check_id, finding.status, finding.title) == (
        "TST013", Status.ERROR, "crashes: the check crashed (RuntimeError: boom)")
    assert finding.traceback.startswith("Traceback") and "RuntimeError: boom" in finding.traceback


def test_a_fact_that_cannot_be_computed_is_an_error_not_a_crash_of_the_run():
    class Broken:
        def __getitem__(self, name):
            raise OSError("unreadable")

    @check("TST014", "reads-smi", "reads nvidia-smi", needs=("smi",))
    def reads(f):
        raise AssertionError("must not be called")

    (finding,) = run_one(reads, Broken())
    assert (finding.check_id, finding.status, finding.title) == (
        "TST014", Status.ERROR, "reads nvidia-smi: gpudoctor could not read the fact 'smi'")
    assert "OSError: unreadable" in finding.traceback


def test_a_fact_that_could_not_be_read_outranks_one_that_does_not_apply():
    @check("TST015", "both", "needs both", needs=("wsl_gpu", "dev_nodes"))
    def both(f):
        raise AssertionError("must not be called")

    (finding,) = run_one(both, Facts(Snapshot()))
    assert (finding.status, finding.title) == (Status.SKIP, "needs both: skipped, /dev was not listed in this snapshot")
    assert finding.cannot_tell is True

    @check("TST016", "wsl-only", "WSL only", needs=("wsl_gpu",))
    def wsl_only(f):
        raise AssertionError("must not be called")

    (finding,) = run_one(wsl_only, Facts(Snapshot()))
    assert (finding.title, finding.cannot_tell) == ("WSL only: skipped, not running under WSL", False)


def test_a_check_with_params_runs_only_when_one_was_asked_for():
    nothing, asked_for = Facts(Snapshot()), Facts(Snapshot(), Requirements(max_temp=85))
    assert (asked(hot, nothing), asked(hot, asked_for), asked(says_two, nothing)) == (False, True, True)
    assert [f.check_id for f in run_checks(Snapshot(), [says_nothing, hot])] == ["TST010"]
    assert [f.check_id for f in run_checks(Snapshot(), [says_nothing, hot], requirements=Requirements(max_temp=85))] \
        == ["TST010", "TSTB012"]
    assert [f.check_id for f in run_checks(Snapshot(), [says_nothing, says_two], only=["TST011"])] == ["TST011",
                                                                                                    "TST011"]


@pytest.mark.parametrize("only, ids", [
    (None, ["TST010", "TST011", "TSTB012"]), ([], ["TST010", "TST011", "TSTB012"]),
    (["tst011"], ["TST011"]), (["says-nothing"], ["TST010"]), (["TST"], ["TST010", "TST011"]),
    (["tstb"], ["TSTB012"]), ([" hot ", ""], ["TSTB012"]), (["TST01"], []), (["Says-Nothing"], []), (["TS"], []),
])
def test_select_by_id_name_or_family(only, ids):
    """A family is all of the id's letters: TST is not TSTB (as TF is not TFM), and TS is neither."""
    assert [c.id for c in select([says_nothing, says_two, hot], only)] == ids


def test_info_lists_what_a_check_declares():
    assert hot.info() == {"id": "TSTB012", "name": "hot", "title": "GPUs below the temperature bound", "needs": [],
                          "params": ["max_temp"], "description": "", "origin": "builtin"}


@pytest.mark.parametrize("chk, message", [
    ("nope", "'nope' is not a gpudoctor Check (use @gpudoctor.engine.check)"),
    (Check("T1", "short", "t", says_nothing.run), "check 'T1' (short): id must look like ABC123"),
    (Check("TST020", "needy", "t", says_nothing.run, needs=("smi", "weather", "tides")),
     "check TST020 (needy) needs unknown facts: weather, tides"),
    (Check("TST021", "params", "t", says_nothing.run, params=("max_fan", "max_temp", "min_fan")),
     "check TST021 (params) has unknown params: max_fan, min_fan"),
    (Check("TST022", "inert", "t", "not callable"), "check TST022 (inert): run is not callable"),
])
def test_validation_says_what_is_wrong_with_which_check(chk, message):
    with pytest.raises(InvalidCheck) as e:
        validate(chk, {})
    assert str(e.value) == message


def test_a_duplicate_id_names_both_origins():
    other = Check("TST010", "other", "t", says_nothing.run, origin="plugin acme")
    with pytest.raises(InvalidCheck) as e:
        validate(other, {"TST010": says_nothing})
    assert str(e.value) == "check 'TST010' from plugin acme duplicates one from builtin"
    assert validate(says_two, {"TST010": says_nothing}) is says_two


def test_the_tf_family_is_not_the_tf_memory_family():
    from gpudoctor.plugins import load_checks

    builtin, _ = load_checks()
    tf = [c.id for c in select(builtin, ["TF"])]
    assert tf and all(i.startswith("TF0") for i in tf)
    assert [c.id for c in select(builtin, ["tfm"])] and all(c.id.startswith("TFM") for c in select(builtin, ["tfm"]))
