"""explain reads nvidia-smi's and NVML's failure messages through the one table the parsers and DRV001 read
(knowledge/data/nvidia_smi_failures.json): a signature names its row, the catalog takes the row's pattern."""

from __future__ import annotations

import json
import re

import pytest

from gpudoctor.explain import catalog
from gpudoctor.explain.scan import Scanner
from gpudoctor.knowledge._load import load
from gpudoctor.knowledge.smi_failures import failure_in, failures

CAT = catalog.load()
ROWS = load("nvidia_smi_failures")["failures"]
FROM_TABLE = [s for s in CAT.signatures if s.smi_failure]


def _hits(text: str):
    scanner = Scanner(CAT)
    scanner.feed(text.encode("utf-8"))
    return scanner.finish().hits


def test_every_row_is_read_by_a_signature_of_its_family():
    used = {s.smi_failure for s in FROM_TABLE}
    assert used == {r["id"] for r in ROWS}
    family = {r["id"]: r["family"] for r in ROWS}
    for sig in FROM_TABLE:
        assert sig.family == family[sig.smi_failure], sig.id


def test_those_signatures_match_with_the_tables_pattern_and_nothing_else():
    table = {f.id: f.pattern for f in failures()}
    for sig in FROM_TABLE:
        assert [p.pattern for p in sig.patterns] == [table[sig.smi_failure].pattern], sig.id
        assert all(p.flags & re.IGNORECASE for p in sig.patterns) and sig.ignore_case, sig.id


def test_no_other_signature_matches_an_nvidia_smi_sentence_with_its_own_pattern():
    """A message nvidia-smi prints is explained through its row: the signatures that match a row's real
    examples all read the table (or are kernel-log signatures of the same family)."""
    by_id = CAT.by_id
    for row in ROWS:
        for example in row["examples"]:
            hits = _hits(example)
            mine = [sid for sid in hits if by_id[sid].smi_failure == row["id"]]
            assert mine, (row["id"], example)
            others = {by_id[sid].family for sid in hits if not by_id[sid].smi_failure and by_id[sid].kind == "diagnosis"}
            assert others <= {row["family"]}, (row["id"], example, others)


@pytest.mark.parametrize("row", [r for r in ROWS if r.get("nvml_errors")], ids=lambda r: r["id"])
def test_pynvml_raises_what_the_row_reads(row):
    """The exception line a traceback ends with, as the installed nvidia-ml-py writes it for each NVML code."""
    pynvml = pytest.importorskip("pynvml")
    for name in row["nvml_errors"]:
        err = pynvml.NVMLError(getattr(pynvml, name))
        line = f"pynvml.{type(err).__name__}: {err}"
        said = failure_in([line])
        assert said is not None and said.id == row["id"], (name, line)
        assert any(CAT.by_id[s].smi_failure == row["id"] for s in _hits(line)), line


@pytest.mark.parametrize("text,family,title", [
    ("Failed to initialize NVML: Driver/Library version mismatch", "driver_library_mismatch",
     "The NVIDIA kernel module and user-space driver are different versions"),
    ("$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.183",
     "driver_library_mismatch", "The NVIDIA kernel module and user-space driver are different versions "
                                "(NVML library 535.183)"),
    ("NVIDIA-SMI has failed because it couldn\u2019t communicate with the NVIDIA driver.", "driver_not_loaded",
     "nvidia-smi cannot reach the NVIDIA driver: no NVIDIA kernel module is loaded"),
    ("  File \"/opt/venv/lib/python3.10/site-packages/pynvml.py\", line 2248, in nvmlInit\n"
     "pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded", "driver_not_loaded",
     "NVML finds no loaded NVIDIA kernel module (Driver Not Loaded)"),
    ("nvitop: Failed to initialize NVML: Driver Not Loaded", "driver_not_loaded",
     "NVML cannot initialise: Driver Not Loaded"),
    ("Unable to determine the device handle for GPU0000:81:00.0: Unknown Error", "xid_or_hardware",
     "nvidia-smi cannot reach GPU 0000:81:00.0: Unknown Error"),
    ("$ nvidia-smi\nNo devices were found", "driver_not_loaded",
     "nvidia-smi finds no GPU: the NVIDIA driver is loaded but brought up no GPU"),
])
def test_nvidia_smi_sentences_in_other_cases_and_quotes(text, family, title):
    from gpudoctor.explain.pipeline import explain_text

    d = explain_text(text).diagnoses
    assert d and d[0].family == family and d[0].title == title
    assert len({x.family for x in d}) == len(d)


def test_a_specific_nvml_reason_silences_the_generic_one():
    from gpudoctor.explain.pipeline import explain_text

    for reason, family in [("Unknown Error", "no_device_in_container"), ("Insufficient Permissions", "no_device_in_container"),
                           ("GPU access blocked by the operating system", "wsl_specific")]:
        d = explain_text(f"Failed to initialize NVML: {reason}").diagnoses
        assert d[0].family == family and "nvml_init_failed" not in {x.id for x in d}, reason
        assert "nvml_init_failed" in {x.id for x in explain_text(f"Failed to initialize NVML: {reason[::-1]}").diagnoses}


def test_a_signature_cannot_both_name_a_row_and_bring_its_own_pattern():
    meta = json.dumps({"families": ["driver_not_loaded"], "gates": ["NVIDIA"]})
    both = json.dumps({"family": "driver_not_loaded", "signatures": [
        {"id": "x", "anchors": ["NVIDIA"], "smi_failure": "cannot_communicate", "patterns": ["NVIDIA"]}]})
    with pytest.raises(catalog.CatalogError, match=r"d\.json: x: takes its pattern from smi_failure"):
        catalog.build([("_catalog.json", meta), ("d.json", both)])
    unknown = json.dumps({"family": "driver_not_loaded", "signatures": [
        {"id": "y", "anchors": ["NVIDIA"], "smi_failure": "no_such_row"}]})
    with pytest.raises(catalog.CatalogError, match="'no_such_row' is not a row"):
        catalog.build([("_catalog.json", meta), ("d.json", unknown)])
