"""Every real nvidia-smi recording in fixtures/nvidia-smi/ parses to the values it holds.

The expected values live in tests/data/smi_expected.json, one entry per recording, so
adding a recording means adding a file and an entry; a file without an entry fails.
"""

import json
from pathlib import Path

import pytest

from gpudoctor.smi import parse

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "nvidia-smi"
EXPECTED = {k: v for k, v in json.loads(
    (ROOT / "tests" / "data" / "smi_expected.json").read_text(encoding="utf-8")).items() if not k.startswith("_")}
FILES = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*")
               if p.is_file() and p.name != "SOURCES.md")
MIG_FIELDS = ("gpu_index", "gi_id", "ci_id", "mig_index", "profile", "uuid",
              "memory_total_mib", "memory_used_mib")


def read(rel: str) -> str:
    return (FIXTURES / rel).read_bytes().decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def reports():
    return {}


def report_of(reports, rel):
    if rel not in reports:
        reports[rel] = parse(read(rel))
    return reports[rel]


def test_the_recordings_are_all_there():
    assert len(FILES) >= 53
    assert {f.split("/")[0] for f in FILES} == {"xml", "text", "csv", "bundle"}


@pytest.mark.parametrize("rel", FILES)
def test_every_recording_parses(rel, reports):
    report = report_of(reports, rel)
    assert report.format in ("xml", "table", "query", "list", "csv", "bundle")
    assert report.gpus, "a real recording names at least one GPU"
    json.dumps(report.to_dict())  # JSON-ready


@pytest.mark.parametrize("rel", FILES)
def test_every_recording_has_expected_values(rel):
    assert rel in EXPECTED, f"add an entry for {rel} to tests/data/smi_expected.json"


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_report_values(rel, reports):
    want, report = EXPECTED[rel], report_of(reports, rel)
    for key in ("format", "driver_version", "cuda_version", "kmd_version", "attached_gpus"):
        assert getattr(report, key) == want[key], key
    assert len(report.gpus) == want["gpu_count"]
    assert len(report.processes) == want["process_count"]
    assert list(report.warnings) == want["warnings"]
    assert list(report.errors) == want["errors"]


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_gpu_values(rel, reports):
    report = report_of(reports, rel)
    assert len(EXPECTED[rel]["gpus"]) == len(report.gpus)
    for want, gpu in zip(EXPECTED[rel]["gpus"], report.gpus):
        got = {key: list(v) if isinstance(v, tuple) else v for key, v in ((k, getattr(gpu, k)) for k in want)}
        assert got == want


@pytest.mark.parametrize("rel", sorted(k for k in EXPECTED if "mig_devices" in EXPECTED[k]))
def test_mig_devices(rel, reports):
    migs = [m for g in report_of(reports, rel).gpus for m in g.mig_devices]
    assert len(migs) == EXPECTED[rel]["mig_device_count"]
    rows = [[getattr(m, f) for f in MIG_FIELDS] for m in migs]
    for want in EXPECTED[rel]["mig_devices"]:
        assert want in rows


@pytest.mark.parametrize("rel", sorted(k for k in EXPECTED if "processes_include" in EXPECTED[k]))
def test_processes(rel, reports):
    processes = report_of(reports, rel).processes
    for want in EXPECTED[rel]["processes_include"]:
        assert any({k: getattr(p, k) for k in want} == want for p in processes), want


def test_files_without_mig_have_no_mig_devices(reports):
    for rel in FILES:
        if "mig_devices" not in EXPECTED.get(rel, {}):
            assert not any(g.mig_devices for g in report_of(reports, rel).gpus), rel
