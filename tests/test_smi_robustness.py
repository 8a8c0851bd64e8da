"""Whatever a user pastes, the parsers answer with a report or SmiParseError, nothing else."""

import random
from pathlib import Path

import pytest

from gpudoctor.smi import (SmiParseError, extract, parse, parse_csv, parse_list, parse_query,
                           parse_table, parse_xml)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "SOURCES.md")
PARSERS = (parse, parse_xml, parse_table, parse_query, parse_list, parse_csv)
TABLE = FIXTURES / "text" / "gtx-1080-ti-x8_driver-390.25_processes.txt"


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def only_report_or_parse_error(fn, text):
    try:
        return fn(text)
    except SmiParseError as exc:
        assert str(exc) and "\n" not in str(exc)
        return None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_truncated_copies_never_raise_anything_else(path):
    text = read(path)
    rng = random.Random(path.name)
    # Both ends, the middle and two points drawn per recording (seeded: the same on every run); every
    # recording, format and parser still runs, at 5 cuts instead of 8 (each cut costs a full parse).
    offsets = {1, len(text) // 2, len(text) - 1} | {rng.randrange(len(text)) for _ in range(2)}
    for cut in sorted(offsets):
        for fn in PARSERS[1:]:  # each format's own parser, on the cut-off head
            only_report_or_parse_error(fn, text[:cut])
        for piece in (text[:cut], text[cut:], text[:cut] + text[cut + 40:]):
            only_report_or_parse_error(parse, piece)
            found = extract(piece)
            assert found is None or found.format in ("table", "list")


@pytest.mark.parametrize("text, reason", [
    ("", "empty input"),
    ("  \n\t\n", "empty input"),
    ("\x00\x01\x02ELF\x00\x00", "binary data"),
    ("hello world\nthis is not nvidia-smi\n", "no nvidia-smi output recognised"),
    ("<html><body>hi</body></html>", "no nvidia-smi output recognised"),
    ("<?xml version='1.0'?><foo/>", "not nvidia-smi's <nvidia_smi_log>"),
    ("a,b,c\n1,2,3\n", "no nvidia-smi output recognised"),
])
def test_garbage_is_a_parse_error(text, reason):
    with pytest.raises(SmiParseError, match=reason):
        parse(text)


def test_random_bytes_never_raise_anything_else():
    rng = random.Random(7)
    for _ in range(200):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        for fn in PARSERS:
            only_report_or_parse_error(fn, blob.decode("utf-8", errors="replace"))


def test_xml_entities_are_refused():
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log>&a;</nvidia_smi_log>'
    with pytest.raises(SmiParseError, match="entities"):
        parse_xml(bomb)


def test_cut_off_xml_keeps_the_gpus_that_closed():
    text = read(FIXTURES / "xml" / "gtx-1070-x6_driver-384.66_dtd-v9_processes.xml")
    cut = text.index('<gpu id="00000000:09:00.0">') + 200
    report = parse(text[:cut])
    assert [g.pci_bus_id for g in report.gpus] == [
        "00000000:01:00.0", "00000000:03:00.0", "00000000:04:00.0", "00000000:08:00.0"]
    assert report.driver_version == "384.66"
    assert any("incomplete" in w for w in report.warnings)


def test_leading_shell_prompt_no_trailing_newline_and_crlf():
    text = read(TABLE)
    for variant in ("$ nvidia-smi\n" + text, "user@gpu01:~$ nvidia-smi\r\n" + text.replace("\n", "\r\n"),
                    text.rstrip("\n"), "\ufeff" + text):
        report = parse(variant)
        assert report.format == "table"
        assert report.driver_version == "390.25"
        assert len(report.gpus) == 8 and len(report.processes) == 13


def test_crlf_query_and_xml():
    q = read(FIXTURES / "text" / "titan-v_driver-560.35.03_cuda-12.6_query-q.txt").replace("\n", "\r\n")
    assert parse(q).gpus[0].name == "NVIDIA TITAN V"
    x = read(FIXTURES / "xml" / "tesla-t4_driver-515.105.01_cuda-11.7_processes.xml").replace("\n", "\r\n")
    assert parse(x).gpus[0].memory_total_mib == 15360


def test_warning_printed_before_the_table():
    text = "WARNING: infoROM is corrupted at gpu 0000:04:00.0\n" + read(TABLE)
    report = parse(text)
    assert report.warnings == ("infoROM is corrupted at gpu 0000:04:00.0",)
    assert len(report.gpus) == 8


@pytest.mark.parametrize("message", [
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.",
    "Failed to initialize NVML: Driver/library version mismatch",
    "No devices were found",
    "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error",
    "Unable to determine the device handle for gpu 0000:02:00.0: GPU is lost.  Reboot the system to recover this GPU",
    "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
])
def test_nvidia_smi_failure_messages_are_errors_not_exceptions(message):
    for text in (message + "\n", "$ nvidia-smi\n" + message, message + "\r\n\r\n"):
        report = parse(text)
        assert report.format == "error"
        assert report.gpus == () and report.processes == ()
        assert report.errors == (message,)


def test_version_mismatch_keeps_both_lines():
    report = parse("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.154\n")
    assert report.errors == ("Failed to initialize NVML: Driver/library version mismatch",
                             "NVML library version: 535.154")


def test_lost_gpu_before_a_partial_table_is_kept_with_the_table():
    text = ("Unable to determine the device handle for GPU 0000:85:00.0: Unknown Error\n" + read(TABLE))
    report = parse(text)
    assert report.format == "table" and len(report.gpus) == 8
    assert report.errors == ("Unable to determine the device handle for GPU 0000:85:00.0: Unknown Error",)


TRACEBACK = """Hi, training crashes on our box:

Traceback (most recent call last):
  File "train.py", line 12, in <module>
    x = torch.zeros(1).cuda()
RuntimeError: CUDA error: out of memory

Here is nvidia-smi:

"""


@pytest.mark.parametrize("indent", ["", "    ", "> "])
def test_extract_finds_a_table_pasted_after_a_traceback(indent):
    table = "".join(indent + line for line in read(TABLE).splitlines(True))
    report = extract(TRACEBACK + table + "\n\nAny idea? Thanks!\n")
    assert report is not None and report.format == "table"
    assert report.driver_version == "390.25"
    assert [g.index for g in report.gpus] == list(range(8))
    assert len(report.processes) == 13


def test_extract_finds_a_gpu_listing():
    listing = read(FIXTURES / "text" / "h100-80gb-hbm3-x8_mig-1g.10gb-x7_list-gpus-L.txt")
    report = extract("output of nvidia-smi -L:\n```\n" + listing + "\n```\nthat's all\n")
    assert report is not None and report.format == "list"
    assert len(report.gpus) == 8
    assert sum(len(g.mig_devices) for g in report.gpus) == 56


def test_extract_returns_none_without_nvidia_smi_output():
    assert extract(TRACEBACK) is None
    assert extract("") is None
    assert extract("| a table | but not nvidia-smi |\n") is None


def test_bytes_are_accepted_and_binary_bytes_refused():
    assert parse(TABLE.read_bytes()).driver_version == "390.25"
    with pytest.raises(SmiParseError, match="binary data"):
        parse(b"\x7fELF\x02\x01\x01\x00" * 64)
