"""`gpudoctor parse-smi FILE [--json]`, driven through click's CliRunner."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from click import ClickException

from gpudoctor.commands.parse_smi import MAX_BYTES, command, load_report

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
XML = FIXTURES / "xml" / "a100-sxm4-80gb_driver-535.54.03_cuda-12.2_mig.xml"
TABLE = FIXTURES / "text" / "rtx-2070+gtx-750-ti_driver-450.57_cuda-11.0_processes.txt"


def run(*args, **kwargs):
    return CliRunner().invoke(command, [str(a) for a in args], **kwargs)


def one_line_error(result, path, reason):
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gpudoctor: {path}: ")
    assert reason in lines[0]


def test_json_output_values():
    result = run(XML, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"format", "driver_version", "cuda_version", "gpus", "processes", "warnings", "errors"} <= set(data)
    assert (data["format"], data["driver_version"], data["cuda_version"]) == ("xml", "535.54.03", "12.2")
    gpu = data["gpus"][0]
    assert gpu["name"] == "NVIDIA A100-SXM4-80GB" and gpu["uuid"] == "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    assert (gpu["pci_bus_id"], gpu["memory_total_mib"], gpu["memory_used_mib"], gpu["mig_mode"]) == (
        "00000000:01:00.0", 81920, 50, "Enabled")
    assert len(gpu["mig_devices"]) == 4 and gpu["mig_devices"][0]["gi_id"] == 3


def test_text_output_lists_gpus_and_processes():
    result = run(TABLE)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "driver:  450.57" in out and "CUDA:    11.0" in out
    assert "GeForce RTX 2070" in out and "00000000:04:00.0" in out and "871 / 2002" in out
    assert "Processes:" in out and "...matlab94/bin/glnxa64/MATLAB" in out


def test_stdin_and_warnings():
    text = (FIXTURES / "text" / "tesla-v100-sxm2-32gb-x8_driver-460.32.03_cuda-11.2_inforom-corrupted-warning.txt").read_text()
    result = run("-", input=text)
    assert result.exit_code == 0
    assert "warning: infoROM is corrupted at gpu 0008:00:00.0" in result.output


def test_nvidia_smi_failure_is_reported_with_exit_1():
    result = run("-", "--json", input="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["format"] == "error" and data["gpus"] == [] and len(data["errors"]) == 1


def test_missing_file(tmp_path):
    path = tmp_path / "nope.txt"
    one_line_error(run(path), path, "no such file")


def test_directory(tmp_path):
    one_line_error(run(tmp_path), tmp_path, "is a directory")


def test_binary_file(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" * 50)
    one_line_error(run(path), path, "binary data")


@pytest.mark.parametrize("content, reason", [
    (b"", "empty input"),
    (b"just some notes\nnothing to see\n", "no nvidia-smi output recognised"),
    (b"\xff\xfe\xfa\xfb" * 200, "binary data"),
])
def test_unreadable_text(tmp_path, content, reason):
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    one_line_error(run(path, "--json"), path, reason)


def test_too_large_input_is_refused(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(TABLE.read_bytes())
    assert MAX_BYTES == 64 * 1024 * 1024
    with pytest.raises(ClickException, match=r"big.txt: larger than 1000 bytes, not nvidia-smi output"):
        load_report(str(path), max_bytes=1000)

