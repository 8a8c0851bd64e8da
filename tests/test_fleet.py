"""`gpudoctor fleet`: reading many reports, grouping problems, version spread, outliers, speed."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from gpudoctor.fleet import summary as fleet
from tests.conftest import invoke, run_gpudoctor

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
H100 = "NVIDIA H100 80GB HBM3"


def report(host, driver="550.90.07", cuda="12.4", gpus=8, model=H100, torch="2.4.0+cu121", findings=()):
    """A report shaped like `gpudoctor check --json` (schema gpudoctor.report/2), machine and findings."""
    return {"schema": "gpudoctor.report/2", "source": "live", "snapshot": {"hostname": host},
            "machine": {"hostname": host, "driver_version": driver, "cuda_driver_max": cuda,
                        "gpus": [{"index": i, "name": model} for i in range(gpus)],
                        "frameworks": {"torch": {"installed": torch is not None, "version": torch}}},
            "findings": [{"check_id": "DRV001", "status": "ok", "title": f"driver {driver} answers"}]
                        + [{"check_id": c, "status": s, "title": t} for c, s, t in findings]}


def summary_of(docs):
    nodes, dupes, bad = {}, Counter(), []
    fleet.read_text("\n".join(json.dumps(d) for d in docs), "test", nodes, dupes, bad)
    return fleet.summarise(nodes, bad, dupes)


# --- reading ------------------------------------------------------------------------------

def test_reads_pretty_documents_json_lines_and_skips_other_lines():
    a, b, c = report("gpu01"), report("gpu02"), report("gpu03")
    text = (json.dumps(a, indent=2) + "\n" + json.dumps(b, indent=2)
            + "\nsrun: error: gpu04: task 3: Exited with exit code 1\n" + json.dumps(c) + "\n")
    docs = list(fleet.documents(text))
    assert [d["machine"]["hostname"] if d else None for d in docs] == ["gpu01", "gpu02", None, "gpu03"]


def test_the_last_report_of_a_host_counts_and_duplicates_are_listed():
    s = summary_of([report("gpu01", driver="535.161.08"), report("gpu01"), report("gpu02")])
    assert s["nodes"] == 2 and s["duplicates"] == ["gpu01"]
    assert s["spread"]["driver_version"] == {"550.90.07": 2}


def test_not_a_report_is_counted_as_unreadable():
    s = summary_of([report("gpu01"), {"schema": "something/else"}])
    assert s["nodes"] == 1 and s["unreadable"] == [{"source": "test", "line": 2, "reason": "not a gpudoctor report"}]
    assert s["unreadable_count"] == 1


# --- grouping ------------------------------------------------------------------------------

def test_problems_group_by_check_and_title_pattern():
    hung = [report(f"gpu{i:03d}", findings=[("DRV001", "fail", f"nvidia-smi did not answer within {s}s")])
            for i, s in ((1, 10), (2, 10), (3, 12), (7, 10))]
    warn = [report("gpu005", findings=[("CVD001", "warn", "CUDA_VISIBLE_DEVICES=1,2 hides 6 of 8 GPUs")])]
    s = summary_of(hung + warn + [report("gpu004")])
    assert s["status"] == {"ok": 1, "warn": 1, "error": 0, "fail": 4}
    first, second = s["problems"]
    assert (first["check_id"], first["status"], first["count"], first["hosts"]) == (
        "DRV001", "fail", 4, "gpu[001-003,007]")
    assert first["pattern"] == "nvidia-smi did not answer within #s"
    assert (first["example"], first["variants"]) == ("nvidia-smi did not answer within 10s", 2)
    assert (second["check_id"], second["hostnames"]) == ("CVD001", ["gpu005"])


def test_outliers_differ_from_the_majority_of_their_peers():
    nodes = [report(f"gpu{i:02d}") for i in range(1, 8)]
    nodes[2] = report("gpu03", driver="535.161.08", cuda="12.2")
    nodes[4] = report("gpu05", gpus=7)
    nodes[5] = report("gpu06", torch=None)
    a100 = [report(f"a100-{i}", model="NVIDIA A100-SXM4-80GB", driver="535.54.03", cuda="12.2") for i in (1, 2)]
    s = summary_of(nodes + a100)
    got = [(o["host"], o["attribute"], o["value"], o["majority"], o["majority_count"], o["peers"])
           for o in s["outliers"]]
    assert got == [("gpu03", "driver", "535.161.08", "550.90.07", 6, 7),
                   ("gpu03", "cuda", "12.2", "12.4", 6, 7),
                   ("gpu05", "gpus", 7, 8, 6, 7),
                   ("gpu06", "torch", None, "2.4.0+cu121", 6, 7)]
    assert s["spread"]["gpu_model"] == {H100: 7, "NVIDIA A100-SXM4-80GB": 2}
    assert s["spread"]["driver_version"] == {"550.90.07": 6, "535.54.03": 2, "535.161.08": 1}


def test_no_outliers_without_a_strict_majority():
    s = summary_of([report("a", driver="550.90.07"), report("b", driver="535.161.08")])
    assert s["outliers"] == []


@pytest.mark.parametrize("hosts, expected", [
    (["gpu001", "gpu002", "gpu003", "gpu010"], "gpu[001-003,010]"),
    (["node7"], "node7"),
    (["login", "gpu-a-01", "gpu-a-02", "gpu-b-01"], "login,gpu-a-[01-02],gpu-b-01"),
    (["n9", "n10", "n11"], "n9,n[10-11]"),
])
def test_hostlist(hosts, expected):
    assert fleet.hostlist(hosts) == expected


# --- the command over real reports -----------------------------------------------------------

@pytest.fixture(scope="module")
def scenario_reports(tmp_path_factory):
    names = ["core-8gpu-server", "core-a100-mig", "core-driver-not-loaded", "core-gpu-less",
             "core-healthy-workstation"]
    if not all((SCENARIOS / n).is_dir() for n in names):
        pytest.skip("core scenarios are not in this checkout")
    out = tmp_path_factory.mktemp("reports")
    for n in names:
        proc = invoke("check", "--snapshot", str(SCENARIOS / n), "--jsonl")
        (out / f"{n}.jsonl").write_text(proc.stdout)
    return out


def test_fleet_table_over_real_reports(scenario_reports):
    proc = invoke("fleet", str(scenario_reports), "--no-color")
    assert proc.returncode == 1, proc.stderr  # the driver-not-loaded node fails
    lines = proc.stdout.splitlines()
    # warnings: the GPU-less machine (DRV001, CTR001) and persistence off on the MIG A100 (NOD006)
    assert lines[0] == "5 nodes: 2 ok, 2 warn, 0 error, 1 fail"
    problem = next(ln for ln in lines if "DRV001" in ln and ("[x]" in ln or "[✗]" in ln))
    assert "nvidia-smi cannot talk to the NVIDIA driver" in problem and problem.rstrip().endswith(
        "1  ws-after-kernel-update")
    assert "  driver          none (2)" in proc.stdout
    assert "GPUs per node   1 (2)  0 (2)  8 (1)" in proc.stdout


def test_fleet_reads_stdin_in_both_forms(scenario_reports):
    jsonl = "".join(p.read_text() for p in sorted(scenario_reports.iterdir()))
    pretty = "".join(json.dumps(json.loads(line), indent=2) + "\n" for line in jsonl.splitlines())
    a = invoke("fleet", "-", "--json", input=jsonl)
    b = invoke("fleet", "-", "--json", input="srun: job 42 queued\n" + pretty)
    sa, sb = json.loads(a.stdout), json.loads(b.stdout)
    assert sa["nodes"] == sb["nodes"] == 5
    assert sa["problems"] == sb["problems"] and sa["spread"] == sb["spread"]
    assert sb["unreadable"] == [{"source": "<stdin>", "line": 1, "reason": "not JSON"}]
    assert sa["schema"] == "gpudoctor.fleet/2"


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    missing = invoke("fleet", str(tmp_path / "nope.json"))
    assert missing.returncode == 2
    assert missing.stderr == f"gpudoctor: {tmp_path / 'nope.json'}: cannot read (No such file or directory)\n"
    (tmp_path / "junk.txt").write_text("hello\n")
    junk = invoke("fleet", str(tmp_path))
    assert junk.returncode == 2 and junk.stderr.startswith("gpudoctor: no gpudoctor report found")


def test_healthy_fleet_exits_0(tmp_path):
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(report(f"g{i}")) + "\n" for i in range(3)))
    proc = invoke("fleet", str(tmp_path / "r.jsonl"), "--no-color")
    assert proc.returncode == 0 and proc.stdout.startswith("3 nodes: 3 ok, 0 warn, 0 error, 0 fail\n")


def test_ten_thousand_reports_in_under_five_seconds():
    docs = []
    for i in range(10000):
        if i % 500 == 7:
            docs.append(report(f"gpu{i:05d}", driver=None, cuda=None, gpus=0, torch="2.4.0+cu121",
                               findings=[("DRV001", "fail", "nvidia-smi did not answer within 10s")]))
        elif i % 97 == 3:
            docs.append(report(f"gpu{i:05d}", driver="535.161.08", cuda="12.2"))
        else:
            docs.append(report(f"gpu{i:05d}"))
    text = "\n".join(json.dumps(d) for d in docs)
    start = time.process_time()  # CPU seconds: a loaded runner's waits are not the reader's cost
    nodes, dupes, bad = {}, Counter(), []
    fleet.read_text(text, "bench", nodes, dupes, bad)
    s = fleet.summarise(nodes, bad, dupes)
    elapsed = time.process_time() - start
    assert elapsed < 5.0
    assert s["nodes"] == 10000 and s["status"]["fail"] == 20
    assert s["problems"][0]["count"] == 20
    drivers = [o for o in s["outliers"] if o["attribute"] == "driver"]
    assert len(drivers) == sum(1 for i in range(10000) if i % 97 == 3 and i % 500 != 7)


def test_outliers_as_text_are_grouped_with_host_lists(tmp_path):
    docs = [report(f"gpu{i:02d}") for i in range(1, 7)]
    docs[2] = report("gpu03", driver="535.161.08")
    docs[3] = report("gpu04", driver="535.161.08")
    docs.append(report("gpu99", driver=None, cuda=None, gpus=0, torch="2.1.0",
                       findings=[("DRV001", "fail", "nvidia-smi did not answer within 10s")]))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    proc = invoke("fleet", str(tmp_path / "r.jsonl"), "--no-color")
    tail = proc.stdout.split("Outliers")[1].splitlines()[1:]
    # gpu99 shows no GPU: it has no peers, its failure is listed under Problems instead.
    assert tail == ["  driver 535.161.08 on 2 node(s): gpu[03-04]  "
                    f"(most {H100} nodes: 550.90.07, 4 of 6)"]


# --- hostile and damaged input (issue 15) ---------------------------------------------------

import io  # noqa: E402

from gpudoctor.fleet import jobs as fleet_jobs  # noqa: E402
from gpudoctor.fleet import plan as fleet_plan  # noqa: E402
from gpudoctor.fleet import readahead as fleet_readahead  # noqa: E402
from gpudoctor.fleet import read as fleet_read  # noqa: E402
from gpudoctor.fleet import split as fleet_split  # noqa: E402


def _tally(text: bytes, source="t"):
    tally = fleet_read.Tally()
    fleet_read.read_stream(io.BytesIO(text), source, tally)
    return tally


def test_a_report_cut_without_its_newline_does_not_swallow_the_next_one():
    a, b, c = (json.dumps(report(h), sort_keys=True) for h in ("gpu01", "gpu02", "gpu03"))
    text = (a + "\n" + b[: len(b) // 2] + c + "\n").encode()
    t = _tally(text)
    assert sorted(t.nodes) == ["gpu01", "gpu03"]
    assert t.bad == [{"source": "t", "line": 2, "reason": "a report cut off (another one follows on the same line)"}]


def test_a_cut_pretty_document_is_named_and_the_next_one_read():
    a, b = json.dumps(report("gpu01"), indent=2), json.dumps(report("gpu02"), indent=2)
    cut = "\n".join(a.splitlines()[:9])
    t = _tally((cut + "\n" + b + "\n" + cut + "\n").encode())
    assert sorted(t.nodes) == ["gpu02"]
    assert [(e["line"], e["reason"]) for e in t.bad] == [
        (1, "a report cut off (its closing brace never came)"),
        (10 + len(b.splitlines()), "a report cut off at the end of the input")]


@pytest.mark.parametrize("damage, reason", [
    ({"machine": []}, "a damaged gpudoctor report (machine is not an object)"),
    ({"machine": {"hostname": {"a": 1}}}, "a damaged gpudoctor report (machine.hostname is not text)"),
    ({"findings": [1, 2]}, "a damaged gpudoctor report (findings[] is not an object)"),
    ({"findings": [{"status": "fail", "title": ["x"]}]}, "a damaged gpudoctor report (title is not text)"),
    ({"machine": {"hostname": "h", "gpus": 5}}, "a damaged gpudoctor report (machine.gpus is not a list)"),
    ({"machine": {"hostname": "h", "driver_version": [1]}}, "a damaged gpudoctor report (driver_version is not text)"),
])
def test_wrong_typed_reports_are_named_never_a_crash(damage, reason):
    bad = {**report("gpu09"), **damage}
    t = _tally((json.dumps(report("gpu01")) + "\n" + json.dumps(bad) + "\n").encode())
    assert list(t.nodes) == ["gpu01"] and t.bad == [{"source": "t", "line": 2, "reason": reason}]


def test_deep_nesting_huge_numbers_and_long_lines_are_data(monkeypatch):
    monkeypatch.setattr(fleet_split, "MAX_LINE", 4096)
    deep = '{"schema": "gpudoctor.report/1", "machine": ' + "[" * 100000 + "]" * 100000 + "}"
    huge = json.dumps(report("gpu02")).replace('"550.90.07"', "9" * 5000)
    text = "\n".join([json.dumps(report("gpu01")), deep, "x" * 10000, huge]).encode() + b"\n"
    t = _tally(text)
    assert [(e["line"], e["reason"]) for e in t.bad] == [(2, "a line over 4096 bytes"), (3, "a line over 4096 bytes"),
                                                         (4, "a line over 4096 bytes")]
    monkeypatch.setattr(fleet_split, "MAX_LINE", 64 << 20)
    t = _tally(text)
    assert [(e["line"], e["reason"]) for e in t.bad] == [(2, "JSON nested too deeply"), (3, "not JSON"),
                                                         (4, "a number too long to read")]


def test_dev_zero_is_refused_and_nul_bytes_end_an_input(tmp_path):
    proc = run_gpudoctor("fleet", "/dev/zero")
    assert proc.returncode == 2
    assert proc.stderr == "gpudoctor: /dev/zero: cannot read (not a regular file or a pipe)\n"
    (tmp_path / "r.jsonl").write_bytes(json.dumps(report("gpu01")).encode() + b"\n\0\0\0\n" +
                                       json.dumps(report("gpu02")).encode() + b"\n")
    out = json.loads(run_gpudoctor("fleet", "--json", str(tmp_path / "r.jsonl")).stdout)
    assert out["nodes"] == 1 and out["unreadable"] == [
        {"source": str(tmp_path / "r.jsonl"), "line": 2,
         "reason": "binary data (NUL bytes); the rest of this input was not read"}]


def test_worker_processes_give_the_same_summary_and_line_numbers(tmp_path, monkeypatch):
    lines = []
    for i in range(3000):
        lines.append(json.dumps(report(f"gpu{i % 2500:04d}", driver="535.161.08" if i % 7 == 0 else "550.90.07")))
        if i % 250 == 3:
            lines.append(f"srun: error: node {i}")
    (tmp_path / "all.jsonl").write_text("\n".join(lines) + "\n")
    pretty = tmp_path / "pretty"
    pretty.mkdir()
    for i in range(40):
        (pretty / f"n{i:02d}.json").write_text(json.dumps(report(f"p{i:02d}"), indent=2) + "\n")
    sources = [str(tmp_path / "all.jsonl"), str(pretty)]
    one = fleet_jobs.read_all(sources)
    monkeypatch.setattr(fleet_jobs, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(fleet_plan, "MIN_JOB_BYTES", 16 << 10)
    monkeypatch.setattr(fleet_jobs, "cores", lambda: 3)
    jobs = fleet_jobs.balance(fleet_jobs.plan(sources, False), 3)
    assert sum(1 for j in jobs if j.stop is not None) > 3  # the big file really was cut into ranges
    many = fleet_jobs.read_all(sources)
    assert list(many.nodes) == list(one.nodes) and many.dupes == one.dupes == Counter({f"gpu{i:04d}": 1 for i in range(500)})
    assert many.bad == one.bad and len(one.bad) == 12
    assert one.bad[1] == {"source": str(tmp_path / "all.jsonl"), "line": 256, "reason": "not JSON"}
    assert fleet.summarise(many.nodes, many.bad, many.dupes) == fleet.summarise(one.nodes, one.bad, one.dupes)


def test_the_fast_path_agrees_with_the_full_decoder_or_steps_aside(scenario_reports):
    from gpudoctor.fleet.fast import fast

    lines = [ln for p in sorted(scenario_reports.iterdir()) for ln in p.read_text().splitlines()]
    for line in lines:
        doc = json.loads(line)
        full = fleet.node_from_report(doc, "x")
        for raw in (line.encode(), (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()):
            assert fleet.node_from_report(fast(raw), "x") == full  # gpudoctor's own layouts take the fast path
        glued = (line[: len(line) // 2] + line).encode()
        assert fast(glued) is None and fast(line[:-1].encode()) is None  # a cut report never does
        assert fast(line.replace('"machine":', '"machine": [1],"x":', 1).encode()) is None


@pytest.mark.parametrize("gpus, model", [
    ([{"name": "A"}] * 3, "A"),
    ([{"name": "A"}, {"name": "B"}, {"name": "B"}], "B"),
    ([{"name": "A"}, {"name": "B"}], "A"),                          # the first of equals
    ([{"name": ""}, {"name": "B"}], "B"), ([{"name": ""}] * 2, None),
    ([5, {"name": "A"}, "x"], "A"), ([{}, {"name": "A"}], "A"), ([{}, {}], None), ([], None),
    ([{"name": 7}] * 2, "7"), ([{"name": "A" * 600}] * 2, "A" * 500),
])
def test_the_gpu_model_is_the_most_common_name(gpus, model):
    from gpudoctor.fleet.node import _model

    assert _model(gpus) == model


def test_a_gpu_name_that_is_not_text_is_damage():
    from gpudoctor.fleet.node import Damaged, _model

    with pytest.raises(Damaged):
        _model([{"name": "A"}, {"name": ["A"]}])


def test_a_large_range_is_read_ahead_in_a_window(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(fleet_readahead.os, "posix_fadvise", lambda fd, at, size, how: asked.append((at, size)), raising=False)
    monkeypatch.setattr(fleet_readahead, "AHEAD_BYTES", 3 << 20)
    monkeypatch.setattr(fleet_readahead, "PREFETCH_BYTES", 1 << 20)
    path = tmp_path / "big"
    path.write_bytes(b"x" * (10 << 20))
    with open(path, "rb", buffering=0) as fh:
        fh.seek(1 << 20)
        ahead = fleet_readahead.ReadAhead.of(fh, 1 << 20, (8 << 20) + 5)
        assert asked == [(1 << 20, 1 << 20), (2 << 20, 1 << 20), (3 << 20, 1 << 20)]  # the window only
        fh.read(2 << 20)
        ahead()
        assert asked[3:] == [(4 << 20, 1 << 20), (5 << 20, 1 << 20)]
        fh.read(10 << 20)
        ahead()
        assert asked[5:] == [(6 << 20, 1 << 20), (7 << 20, 1 << 20), (8 << 20, 5)]  # up to the range's end, no further
        ahead()
        assert len(asked) == 8
        assert fleet_readahead.ReadAhead.of(fh, 0, 1000) is None  # a small range: nothing to ask for
