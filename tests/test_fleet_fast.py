"""`fleet`'s fast reader against the full JSON decoder, and its lazy line numbers (issue 15).

The property: reading a document with the fast path gives exactly what reading it with the
full decoder alone gives (the same node, or the same named stretch), for real reports in
both of gpudoctor's layouts and for every way a fleet's reports get damaged.
"""

from __future__ import annotations

import io
import json
import random
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudoctor.fleet import read as fleet_read
from gpudoctor.fleet import split as fleet_split
from gpudoctor.fleet.fast import fast

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
NAMES = ("core-8gpu-server", "core-driver-not-loaded", "core-a100-mig")


@lru_cache(maxsize=None)
def _reports():
    """Real report/2 reports of recorded scenarios, through the real report builder."""
    if not all((SCENARIOS / n).is_dir() for n in NAMES):
        pytest.skip("core scenarios are not in this checkout")
    from gpudoctor.report import build_report
    from gpudoctor.snapshot_folder import load

    return tuple(json.dumps(build_report(load(str(SCENARIOS / n / "snapshot"))).to_dict()) for n in NAMES)


def report(i: int) -> dict:
    return json.loads(_reports()[i % len(NAMES)])


def dump(doc: dict, pretty: bool) -> bytes:
    """As `check --json` (pretty) or `check --jsonl` writes it."""
    if pretty:
        return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def both(raw: bytes, monkeypatch):
    """(nodes, bad) of a stream read with the fast path, and with the full decoder alone."""
    out = []
    for take_fast in (True, False):
        if not take_fast:
            monkeypatch.setattr(fleet_read, "fast", lambda raw: None)
        tally = fleet_read.Tally()
        fleet_read.read_stream(io.BytesIO(raw + b"\n"), "s", tally)
        out.append((tally.order, tally.bad))
    monkeypatch.undo()
    return out


def test_gpudoctor_layouts_take_the_fast_path_and_agree(monkeypatch):
    for i in range(len(NAMES)):
        for pretty in (False, True):
            doc = report(i)
            doc["machine"]["hostname"] = doc["snapshot"]["hostname"] = "nœud-ü-東京-01"  # ensure_ascii=False
            raw = dump(doc, pretty)
            assert fast(raw) is not None, (NAMES[i], pretty)
            with_fast, full = both(raw, monkeypatch)
            assert with_fast == full and len(full[0]) == 1 and full[0][0].host == "nœud-ü-東京-01"
    assert both(dump(report(1), False), monkeypatch)[1][0][0].status == "fail"  # a problem is read, not skipped


# --- edits that keep a report valid JSON: the fast path reads it or steps aside ---------------

def _huge(doc, rnd):
    """A 5,000-digit integer somewhere: the decoder refuses the whole report."""
    where = rnd.choice(["check", "finding", "gpu", "summary", "version"])
    marker = f"@@HUGE{rnd.randrange(10**6)}@@"
    if where == "check":
        doc["checks"][rnd.randrange(len(doc["checks"]))]["params"] = [marker]
    elif where == "finding":
        doc["findings"][rnd.randrange(len(doc["findings"]))]["detail"] = marker
    elif where == "gpu" and doc["machine"]["gpus"]:
        doc["machine"]["gpus"][0]["memory_total_mib"] = marker
    elif where == "summary":
        doc["summary"]["ok"] = marker
    else:
        doc["gpudoctor_version"] = marker
    return marker


def _edit(doc, how, rnd):
    findings = doc["findings"]
    if how == "status":  # a problem the summary does not count
        rnd.choice(findings)["status"] = rnd.choice(["fail", "warn", "error", "unknown"])
    elif how == "summary":
        doc["summary"][rnd.choice(list(doc["summary"]))] += rnd.choice([-1, 1])
    elif how == "escape":  # "f\u0061il" is "fail" to a decoder
        rnd.choice(findings)["status"] = "@@ESCAPED@@"
    elif how == "nested":  # keys the fast path looks for, nested deeper
        doc["snapshot"]["machine"] = {"hostname": "impostor"}
        doc["checks"][0]["findings"] = [{"check_id": "X", "status": "fail", "title": "t"}]
    elif how == "types":
        key, value = rnd.choice([("findings", [1, 2]), ("findings", {}), ("machine", []), ("summary", [])])
        doc[key] = value
    elif how == "title":
        rnd.choice(findings)["title"] = "".join(rnd.choice('aé"\\\n\t東{}[],:') for _ in range(12))
    elif how == "zeroed":  # damage the summary does not count: a decoder names it
        doc["findings"] = rnd.choice([[1, 2], [{"status": "ok"}, 5], {}, [[]]])
        doc["summary"] = {key: 0 for key in doc["summary"]}
    elif how == "gpus":
        doc["machine"]["gpus"] = "eight"
    elif how == "extra":  # keys another writer adds, after summary and between the ones read
        doc["zz"] = {"findings": [], "machine": {}}
        doc["gpudoctor_version"] = 'v"1'


EDITS = ["none", "status", "summary", "escape", "nested", "types", "zeroed", "title", "gpus", "extra", "huge"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.integers(0, 2), pretty=st.booleans(), how=st.sampled_from(EDITS), seed=st.integers(0, 2**32),
       sort=st.booleans())
def test_the_fast_path_agrees_with_the_full_decoder_on_edited_reports(base, pretty, how, seed, sort, monkeypatch):
    rnd = random.Random(seed)
    doc = report(base)
    marker = _huge(doc, rnd) if how == "huge" else None
    _edit(doc, how, rnd)
    if not sort:  # reordered keys: another writer's layout
        doc = dict(rnd.sample(list(doc.items()), len(doc)))
        raw = (json.dumps(doc, indent=2 if pretty else None, ensure_ascii=False) + "\n").encode()
    else:
        raw = dump(doc, pretty)
    if marker:
        raw = raw.replace(f'"{marker}"'.encode(), b"9" * 5000)
    raw = raw.replace(b'"@@ESCAPED@@"', rnd.choice([b'"f\\u0061il"', b'"\\u006fk"', b'"w\\u0061rn"']))
    with_fast, full = both(raw, monkeypatch)
    assert with_fast == full
    if how == "none" and sort:
        assert fast(raw) is not None  # the test bites: the fast path really was taken


# --- damage at byte level: cut, glued, interleaved ------------------------------------------
# (Not a byte flipped inside the checks or findings: only a full decode would see it, and the
# fast path exists not to do one; see fleet/fast.py.)

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.integers(0, 2), other=st.integers(0, 2), pretty=st.booleans(), where=st.floats(0, 1),
       how=st.sampled_from(["cut", "glued", "glued-into", "line", "twice", "dupe", "spaced"]))
def test_the_fast_path_agrees_with_the_full_decoder_on_damaged_bytes(base, other, pretty, where, how, monkeypatch):
    raw, next_one = dump(report(base), pretty), dump(report(other), pretty)
    at = int(where * (len(raw) - 1))
    damaged = {
        "cut": raw[:at],
        "glued": raw[:at] + next_one,                       # cut without its newline, the next report after it
        "glued-into": raw[:at] + next_one + raw[at:],       # another report inside this one
        "line": raw[:at] + b"\nsrun: error: gpu01: task 0: Exited\n" + raw[at:],
        "twice": raw + raw,
        # a second top-level "findings" after machine: a decoder keeps the last one
        # a problem status written with blanks around its colon (valid JSON, not gpudoctor's layout)
        "spaced": raw.replace(b'"status":"ok"', b'"status" : "fail"', 1).replace(b'"status": "ok"', b'"status" :"warn"', 1),
        "dupe": raw.replace(b'"summary":', b'"findings":[{"check_id":"X","status":"fail","title":"t"}],"summary":'),
    }[how]
    with_fast, full = both(damaged, monkeypatch)
    assert with_fast == full
    if how in ("cut", "glued") and 0 < at < len(raw) - 2:
        assert fast(damaged) is None  # a cut report never takes the fast path


# --- line numbers are counted only when asked, and always right ------------------------------

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(["line", "pretty", "srun", "blank", "cut-pretty", "glued"]), max_size=14),
       block=st.sampled_from([5, 64, 1000, 1 << 20]))
def test_stretches_are_named_with_their_line_whatever_the_block_size(kinds, block, monkeypatch):
    monkeypatch.setattr(fleet_split, "BLOCK", block)  # blocks end anywhere: inside documents, lines, newlines
    small = {"checks": [], "findings": [], "machine": {"hostname": "h", "gpus": []}, "schema": "gpudoctor.report/2",
             "summary": {"ok": 0}}
    text, expected = "", []
    for i, kind in enumerate(kinds):
        line = text.count("\n") + 1
        doc = dict(small, machine={"hostname": f"h{i}", "gpus": []})
        if kind == "line":
            text += json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n"
        elif kind == "pretty":
            text += json.dumps(doc, indent=2, sort_keys=True) + "\n"
        elif kind == "srun":
            text += f"srun: error: node {i}\n"
            expected.append((line, "not JSON"))
        elif kind == "blank":
            text += "\n\n"
        elif kind == "cut-pretty":  # named when the next line at column 0 comes, or the input ends
            text += "\n".join(json.dumps(doc, indent=2, sort_keys=True).splitlines()[:4]) + "\n"
            last = all(k == "blank" for k in kinds[i + 1:])
            expected.append((line, "a report cut off at the end of the input" if last
                             else "a report cut off (its closing brace never came)"))
        else:
            whole = json.dumps(doc, separators=(",", ":"), sort_keys=True)
            text += whole[:20] + whole + "\n"
            expected.append((line, "a report cut off (another one follows on the same line)"))
    tally = fleet_read.Tally()
    split = fleet_read.read_stream(io.BytesIO(text.encode()), "s", tally)
    assert [(e["line"], e["reason"]) for e in tally.bad] == expected
    assert [n.host for n in tally.order] == [f"h{i}" for i, k in enumerate(kinds) if k in ("line", "pretty", "glued")]
    assert split.lines() == text.count("\n")


class _Pipe(io.BytesIO):
    """A stream that cannot seek, as a pipe: what a block leaves over is copied, not read again."""

    def seekable(self):
        return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(["line", "pretty", "srun", "cut-pretty", "glued", "nul"]), max_size=10),
       block=st.sampled_from([5, 64, 1000]), stop=st.floats(0, 1.2))
def test_a_file_read_again_from_a_seek_and_a_pipe_read_once_agree(kinds, block, stop, monkeypatch):
    """A seekable stream reads what a block leaves over again with the next block; a pipe
    copies it. The same nodes, stretches, line numbers and line count, with a byte range's stop
    anywhere (a stop is the stream cut there)."""
    monkeypatch.setattr(fleet_split, "BLOCK", block)
    text = ""
    for i, kind in enumerate(kinds):
        doc = {"checks": [], "findings": [], "machine": {"hostname": f"h{i}", "gpus": []},
               "schema": "gpudoctor.report/2", "summary": {"ok": 0}}
        whole = json.dumps(doc, separators=(",", ":"), sort_keys=True)
        text += {"line": whole + "\n", "pretty": json.dumps(doc, indent=2, sort_keys=True) + "\n",
                 "srun": f"srun: error: node {i}\n", "glued": whole[:20] + whole + "\n", "nul": "x\0y\n",
                 "cut-pretty": "\n".join(json.dumps(doc, indent=2).splitlines()[:4]) + "\n"}[kind]
    raw = text.encode()
    at = int(stop * len(raw))
    out = []
    for stream, limit in ((io.BytesIO(raw), at), (_Pipe(raw[:at]), None)):
        tally = fleet_read.Tally()
        split = fleet_read.read_stream(stream, "s", tally, limit)
        out.append(([tuple(n) for n in tally.order], tally.bad, tally.bad_count, split.lines()))
    assert out[0] == out[1]


def test_a_document_over_the_cap_is_named_and_the_next_one_read(monkeypatch):
    monkeypatch.setattr(fleet_split, "MAX_LINE", 200)
    small = {"checks": [], "findings": [], "machine": {"hostname": "after", "gpus": []},
             "schema": "gpudoctor.report/2", "summary": {"ok": 0}}
    big = json.dumps({"checks": ["x" * 50] * 10}, indent=2).splitlines()[:-1]  # over the cap, never closed
    text = "\n".join(big) + "\n" + json.dumps(small, indent=2, sort_keys=True) + "\n"
    tally = fleet_read.Tally()
    fleet_read.read_stream(io.BytesIO(text.encode()), "s", tally)
    assert tally.bad == [{"source": "s", "line": 1, "reason": "a document over 200 bytes"}]
    assert [n.host for n in tally.order] == ["after"]
