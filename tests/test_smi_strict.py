"""Output that is not nvidia-smi's is never a GPU: not for parse-smi, check or the hook.

The campaign's stub printed `hello, I am not nvidia-smi` and `hook --gpus 1` passed ("driver
None answers, 1 GPU(s)"): the CSV guess took any line with a comma and a GPU-ish word. Each
near miss below resembles one of the formats; none of them may yield a report.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudoctor.cli import run
from gpudoctor.smi import SmiParseError, parse
from gpudoctor.smi.shapes import PRODUCT, is_value

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "nvidia-smi"
LISTING = "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f)\n"


@pytest.mark.parametrize("text, reason", [
    ("hello, I am not nvidia-smi\n", "no nvidia-smi output recognised"),
    ("NVIDIA rocks, yes\n", "no nvidia-smi output recognised"),
    ("GeForce is nice, 3 %\n", "no nvidia-smi output recognised"),
    ("0, P0, 15360 MiB\n", "no nvidia-smi output recognised"),  # a P-state is not a product name
    ("name, foo\nbar, baz\n", "no nvidia-smi output recognised"),  # "foo" is no field nvidia-smi has
    ("name, memory.foo\nbar, 1\n", "CSV row 1 is not nvidia-smi's (name='bar')"),
    ("0, Tesla T4, 15360 MiB\n", "no nvidia-smi output recognised"),  # no header, no UUID or bus id
    ("Tesla, 0\n", "no nvidia-smi output recognised"),
    ("index, name\n0, hello\n", "CSV row 1 is not nvidia-smi's (name='hello')"),
    ("uuid, memory.total [MiB]\nGPU-1, 80 MiB\n", "CSV row 1 is not nvidia-smi's (uuid='GPU-1')"),
    ("index, name, memory.used [MiB]\nzero, NVIDIA A100, 1 MiB\n", "CSV row 1 is not nvidia-smi's (index='zero')"),
    ("<nvidia_smi_log></nvidia_smi_log>\n", "nothing nvidia-smi prints was found"),
    ("<nvidia_smi_log><gpu/></nvidia_smi_log>\n", "a GPU without bus id, UUID or name"),
    ("GPU 0: x (UUID: GPU-1)\n", "no nvidia-smi output recognised"),
])
def test_near_misses_are_refused(text, reason):
    with pytest.raises(SmiParseError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse(text)


def test_a_command_that_printed_another_format_is_refused():
    # `nvidia-smi -q -x` answering with an -L listing is a stub or a wrapper, not nvidia-smi.
    assert len(parse(LISTING).gpus) == 1
    with pytest.raises(SmiParseError, match="expected nvidia-smi's xml output, found something that looks like list"):
        parse(LISTING, expect="xml")
    failed = parse("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", expect="xml")
    assert (failed.format, failed.gpus) == ("error", ())


def test_a_csv_row_cut_off_mid_cell_is_dropped_not_refused():
    report = parse("index, name, memory.used [MiB]\n0, NVIDIA A100, 1 MiB\n1, NVIDIA A100, 1 Mi")
    assert [(g.index, g.memory_used_mib) for g in report.gpus] == [(0, 1)]
    assert report.warnings == ("CSV ends in the middle of a row (output cut off); that row was ignored",)


def test_every_recorded_gpu_name_has_the_product_shape():
    names = set()
    for path in FIXTURES.rglob("*"):
        if path.is_file() and path.name != "SOURCES.md":
            names |= {g.name for g in parse(path.read_bytes().decode("utf-8", "replace")).gpus if g.name}
    assert len(names) >= 30
    assert sorted(n for n in names if not PRODUCT.match(n)) == []


def test_every_cell_of_the_recorded_all_fields_csv_has_an_nvidia_smi_shape():
    rows = (FIXTURES / "csv" / "rtx-2080-super_driver-471.11_windows-wddm_query-gpu-allfields.csv").read_text()
    cells = [c.strip() for c in rows.splitlines()[1].split(",")]
    assert len(cells) > 100
    assert [c for c in cells if not is_value(c)] == []
    assert not is_value("hello") and not is_value("I am not nvidia-smi")


# --- through the commands ------------------------------------------------------------------------

def _stub(stub_bin, monkeypatch, text):
    stub_bin("nvidia-smi", f"cat <<'EOF'\n{text}EOF")
    monkeypatch.setenv("PATH", f"{stub_bin.dir}:{os.environ['PATH']}")


@pytest.mark.parametrize("text", ["hello, I am not nvidia-smi\n", LISTING])
def test_the_hook_cannot_tell_from_a_stub_and_never_passes(stub_bin, monkeypatch, capsys, text):
    _stub(stub_bin, monkeypatch, text)
    assert run(["hook", "--gpus", "1"]) == 2
    err = capsys.readouterr().err
    assert err == "gpudoctor: cannot tell: nvidia-smi printed something gpudoctor cannot read\n"


def test_check_says_it_cannot_tell_what_nvidia_smi_printed(stub_bin, monkeypatch, capsys):
    # The same judgment as the hook's: cannot tell (never a GPU, never a drain for a format gpudoctor does
    # not know); check shows it with its fix, and --strict counts it.
    _stub(stub_bin, monkeypatch, "hello, I am not nvidia-smi\n")
    assert run(["check", "--only", "DRV001", "--no-frameworks", "--json"]) == 0
    import json

    finding = json.loads(capsys.readouterr().out)["findings"][0]
    assert (finding["check_id"], finding["status"], finding["title"], finding["cannot_tell"]) == (
        "DRV001", "skip", "nvidia-smi printed something gpudoctor cannot read", True)
    assert finding["evidence"][0]["excerpt"] == "hello, I am not nvidia-smi"
    assert finding["fix"]["kb_id"] == "smi_unreadable"
    assert run(["check", "--only", "DRV001", "--no-frameworks", "--strict"]) == 1
    text = capsys.readouterr().out
    assert "Could not tell:" in text and "nvidia-smi printed something gpudoctor cannot read" in text


def test_parse_smi_refuses_the_stubs_output(tmp_path, capsys):
    path = tmp_path / "out.txt"
    path.write_text("hello, I am not nvidia-smi\n")
    assert run(["parse-smi", str(path)]) == 2
    assert capsys.readouterr().err == (f"gpudoctor: {path}: no nvidia-smi output recognised "
                                       "(not XML, table, -q, -L or CSV)\n")


@pytest.mark.parametrize("argv, fmt", [
    (("nvidia-smi", "-q", "-x"), "xml"), (("nvidia-smi", "-q"), "query"), (("nvidia-smi", "-L"), "list"),
    (("nvidia-smi", "--query-gpu=index,name,uuid", "--format=csv"), "csv"), (("nvidia-smi",), "table"),
])
def test_the_expected_format_follows_the_recorded_command_line(argv, fmt):
    from gpudoctor.facts.nvidia import expected_format
    from gpudoctor.probes.commands import COMMANDS

    assert expected_format(argv) == fmt
    # Every nvidia-smi command gpudoctor records maps to the parser that reads what it prints.
    assert expected_format(COMMANDS["nvidia_smi_query"]) == "csv"
