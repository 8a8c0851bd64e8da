"""bench/explain_ceiling.py: a blind expert's readings beside explain's, scored by the accuracy rule."""

from __future__ import annotations

import json

import pytest

from tests.explain_support import bench_module

ceiling = bench_module("explain_ceiling")
accuracy = bench_module("explain_accuracy")


def test_the_rule_is_the_accuracy_rule():
    assert ceiling.right(["oom"], "oom") and ceiling.right(["oom", "tf_memory_growth"], "tf_memory_growth")
    assert not ceiling.right(["oom"], "arch_unsupported") and not ceiling.right(["oom"], None)
    # a negative is right when nothing (or not_env_problem) is said, wrong on any environment family
    assert ceiling.right(["not_env_problem"], None) and ceiling.right(["not_env_problem"], "not_env_problem")
    assert not ceiling.right(["not_env_problem"], "oom")


def _case(cid, text, families):
    return {"id": cid, "source": "", "text": text, "families": families, "environment": {}}


def test_compare_counts_each_side_and_both():
    cases = [
        _case("a", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", ["oom"]),
        _case("b", "AssertionError: Torch not compiled with CUDA enabled", ["torch_cpu_build"]),
        _case("c", "hello world, nothing is wrong", ["no_nvidia_gpu"]),
        _case("d", "RuntimeError: shape '[2, 3]' is invalid for input of size 5", ["not_env_problem"]),
    ]
    rated = {"a": ["oom"], "b": ["no_nvidia_gpu", "torch_cpu_build"], "c": ["no_nvidia_gpu"], "d": ["oom"]}
    t = ceiling.compare(cases, rated)
    env, neg = t["environment"], t["negatives"]
    assert (env["n"], env["expert"], env["explain"], env["both"], env["expert_only"], env["explain_only"]) == \
        (3, 2, 2, 1, 1, 1)
    assert env["expert_top3"] == 3                       # b's second reading is its family
    assert (neg["n"], neg["expert"], neg["explain"], neg["explain_only"]) == (1, 0, 1, 1)
    assert t["oom"]["both"] == 1 and t["torch_cpu_build"]["explain_only"] == 1
    with pytest.raises(SystemExit) as e:
        ceiling.compare(cases, {"a": ["oom"]})           # a case without a rating is an error, not a skip
    assert str(e.value) == "3 of 4 cases have no rating"   # how many, never which (an id names the label)


def test_the_rule_agrees_with_the_accuracy_scripts_top1_on_real_cases():
    # one rule: the ceiling scores with explain_accuracy's own, and on every case of a tunable set explain's first
    # family scored by it is outcome()["top1"]
    assert (ceiling.right.__module__, ceiling.right.__name__) == ("bench.explain_accuracy", "first_right")
    for case in accuracy.cases_of("tune"):
        res = accuracy.outcome(case)
        assert ceiling.right(case["families"], res["got"][0] if res["got"] else None) == res["top1"], case["id"]


@pytest.mark.parametrize("path", sorted(ceiling.RATINGS.glob("*-blind*.jsonl")), ids=lambda p: p.name)
def test_each_stored_rating_file_rates_exactly_its_set_with_known_families(path):
    stem = path.name.rsplit("-blind", 1)[0]
    name = next(n for n, p in accuracy.SETS.items() if p.stem == stem)
    ids = {c["id"] for c in accuracy.cases_of(name)}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert {r["id"] for r in rows} == ids and len(rows) == len(ids)
    from gpudoctor.explain.catalog import load

    known = set(load().families) | {"not_env_problem"}
    assert all(1 <= len(r["ranked"]) <= 3 and set(r["ranked"]) <= known for r in rows)


@pytest.mark.parametrize("name", ["frozen", accuracy.HELD_OUT[0], accuracy.HELD_OUT[1]])
def test_per_family_rows_and_other_ratings_are_refused_where_a_set_is_held_out(name, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        ceiling.main([name, "--families"])
    assert e.value.code == 2 and "aggregates only" in capsys.readouterr().err
    made_up = tmp_path / "all-oom.jsonl"
    made_up.write_text("", encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        ceiling.main([name, "--ratings", str(made_up)])
    assert e.value.code == 2 and "only its stored ratings" in capsys.readouterr().err


def test_agreement_counts_two_raters_on_the_same_cases():
    cases = [_case("a", "x", ["oom"]), _case("b", "y", ["torch_cpu_build"]), _case("c", "z", ["not_env_problem"])]
    first = {"a": ["oom"], "b": ["no_nvidia_gpu"], "c": ["not_env_problem"]}
    second = {"a": ["oom"], "b": ["torch_cpu_build"], "c": ["oom"]}
    out = ceiling.agreement("t", cases, first, second, ("r1", "r2")).splitlines()
    assert out[1].split()[-2:] == ["1/3", "33.3%"]                  # only a's first families agree
    assert out[2].split()[1:] == ["2/3", "66.7%"] and out[3].split()[1:] == ["2/3", "66.7%"]
    assert out[4].split()[-2:] == ["1/3", "33.3%"] and out[5].split()[-2:] == ["3/3", "100.0%"]
    with pytest.raises(SystemExit):
        ceiling.agreement("t", cases, first, {"a": ["oom"]})


def test_prepare_gives_the_raters_text_and_flags_only_and_assemble_maps_them_back(tmp_path):
    cases = [_case("oom-x-1", "CUDA out of memory", ["oom"]),
             {**_case("no_device_in_container-y-2", "no CUDA-capable device", ["no_device_in_container"]),
              "environment": {"summary": "Docker container"}},
             _case("torch_cpu_build-z-3", "Torch not compiled with CUDA enabled", ["torch_cpu_build"])]
    folder, key = tmp_path / "rate", tmp_path / "key.jsonl"
    ceiling.prepare(cases, folder, key, 2, 7)
    inputs = [json.loads(line) for k in (1, 2) for line in (folder / f"input{k}.jsonl").read_text().splitlines()]
    assert len(inputs) == 3 and all(set(row) == {"n", "context", "error_text"} for row in inputs)
    assert not any("oom" in json.dumps(row) for row in inputs if row["error_text"] != "CUDA out of memory")
    assert ["container"] in [row["context"] for row in inputs]
    brief = (folder / "brief1.md").read_text()
    assert str(folder / "input1.jsonl") in brief and str(folder / "out1.jsonl") in brief and "{input}" not in brief
    # the raters answer; an unknown family is dropped, a case without a usable answer is an error
    names = {json.loads(line)["id"]: json.loads(line)["n"] for line in key.read_text().splitlines()}
    answers = {"oom-x-1": ["oom", "made_up"], "no_device_in_container-y-2": ["made_up", "no_device_in_container"],
               "torch_cpu_build-z-3": ["torch_cpu_build"]}
    (folder / "out1.jsonl").write_text("".join(json.dumps({"n": names[c], "ranked": r}) + "\n"
                                               for c, r in answers.items()))
    rows = ceiling.assemble(cases, folder, key)
    assert rows == [{"id": "no_device_in_container-y-2", "ranked": ["no_device_in_container"]},
                    {"id": "oom-x-1", "ranked": ["oom"]}, {"id": "torch_cpu_build-z-3", "ranked": ["torch_cpu_build"]}]
    (folder / "out1.jsonl").write_text(json.dumps({"n": names["oom-x-1"], "ranked": ["oom"]}) + "\n")
    with pytest.raises(SystemExit) as e:
        ceiling.assemble(cases, folder, key)
    assert str(e.value) == "2 of 3 cases have no usable rating"


def test_the_key_is_never_written_where_the_raters_read(tmp_path):
    with pytest.raises(SystemExit):
        ceiling.prepare([_case("a", "x", ["oom"])], tmp_path / "rate", tmp_path / "rate" / "key.jsonl", 1, 1)


def test_bad_key_or_ratings_files_give_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        ceiling.main(["dev", "--assemble", str(tmp_path / "rate"), "--key", str(tmp_path / "missing.jsonl")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and "missing.jsonl" in err
    key = tmp_path / "key.jsonl"
    key.write_text('{"n": "1-000"}\n')                     # a key row without its case id
    with pytest.raises(SystemExit) as e:
        ceiling.main(["dev", "--assemble", str(tmp_path), "--key", str(key)])
    assert e.value.code == 2 and "KeyError" in capsys.readouterr().err


def test_a_raters_broken_lines_count_as_unrated(tmp_path):
    cases = [_case("oom-x-1", "CUDA out of memory", ["oom"]), _case("oom-x-2", "CUDA out of memory", ["oom"])]
    key = tmp_path / "key.jsonl"
    key.write_text('{"n": "1-000", "id": "oom-x-1"}\n{"n": "1-001", "id": "oom-x-2"}\n')
    (tmp_path / "out1.jsonl").write_text('{"n": "1-000", "ranked": ["oom"]}\nnot json\n{"n": "1-001", "ranked": 3}\n')
    with pytest.raises(SystemExit) as e:
        ceiling.assemble(cases, tmp_path, key)
    assert str(e.value) == "1 of 2 cases have no usable rating"
