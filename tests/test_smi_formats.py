"""Format quirks, one test each, mostly on sections cut from the real recordings."""

import dataclasses
from pathlib import Path

import pytest

from gpudoctor.smi import (SmiGpu, SmiMigDevice, SmiParseError, SmiProcess, SmiReport, parse,
                           parse_csv, parse_list, parse_query, parse_table)
from gpudoctor.smi.values import bus_key, clean, to_mib, to_version

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
BAR = "#" * 80


def section(name: str, title: str) -> str:
    """The body under `# <title>` in a bundle recording."""
    text = (FIXTURES / "bundle" / name).read_text(encoding="utf-8")
    after = text.split("# " + title + "\n", 1)[1]
    body = after.split(BAR + "\n", 2)[1] if after.lstrip().startswith("# $") else after
    return body.split(BAR)[0]


LINUX_610 = "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.txt"
WINDOWS_610 = "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt"
H200_MIG = "linux-x86_64__nvidia-h200-mig__590.48.01.txt"


def test_610_table_header_kmd_and_umd_versions():
    report = parse_table(section(LINUX_610, "load :: nvidia-smi (default table)"))
    assert (report.driver_version, report.kmd_version, report.cuda_version) == ("610.57.04", "610.57.04", "13.3")
    assert report.gpus[0].name == "NVIDIA GeForce RTX 2080 ..."
    assert [p.name for p in report.processes] == ["/usr/bin/gnome-shell", "/usr/bin/Xwayland", "ffmpeg", "ffmpeg"]


def test_610_query_driver_version_deprecated_suffix():
    report = parse_query(section(LINUX_610, "load :: query (-q)"))
    assert (report.driver_version, report.cuda_version, report.kmd_version) == ("610.57.04", "13.3", "610.57.04")
    assert report.gpus[0].name == "NVIDIA GeForce RTX 2080 SUPER"


def test_windows_table_driver_model_and_cg_processes():
    report = parse_table(section(WINDOWS_610, "load :: nvidia-smi (default table)"))
    gpu = report.gpus[0]
    assert (gpu.driver_model, gpu.persistence_mode, gpu.memory_used_mib) == ("WDDM", None, 1366)
    assert len(report.processes) == 21
    assert report.processes[0] == SmiProcess(gpu_index=0, pid=2140, type="C+G", name=r"C:\Windows\System32\dwm.exe",
                                             used_memory_mib=None, gi_id=None, ci_id=None)


def test_mig_devices_table_with_two_compute_instances_in_one_gpu_instance():
    report = parse_table(section(H200_MIG, "load :: nvidia-smi (default table)"))
    migs = report.gpus[0].mig_devices
    assert [(m.gi_id, m.ci_id, m.mig_index) for m in migs] == [(2, 0, 0), (2, 1, 1), (3, 0, 2), (9, 0, 3), (10, 0, 4)]
    assert migs[0].memory_used_mib == 16925 and migs[0].memory_total_mib == 71424
    assert [(p.gi_id, p.ci_id) for p in report.processes] == [(2, 1)] * 3


def test_query_mig_devices_have_no_profile_list_fills_it_in_a_bundle():
    q = parse_query(section(H200_MIG, "idle :: query (-q)"))
    assert q.gpus[0].mig_mode == "Enabled"
    assert [m.profile for m in q.gpus[0].mig_devices] == [None] * 5
    merged = parse((FIXTURES / "bundle" / H200_MIG).read_text(encoding="utf-8"))
    assert [m.profile for m in merged.gpus[0].mig_devices] == [
        "1c.3g.71gb", "2c.3g.71gb", "2g.35gb", "1g.18gb", "1g.18gb"]


def test_old_windows_tcc_table_and_err_cells():
    table = """+-----------------------------------------------------------------------------+
| NVIDIA-SMI 385.54                 Driver Version: 385.54                    |
|-------------------------------+----------------------+----------------------+
| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla K80           TCC  | 00000000:05:00.0 Off |                    0 |
| N/A   34C    P8    27W / 149W |      1MiB / 11448MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
|   1  ERR!               ERR!  | 00000000:06:00.0 Off |                 ERR! |
|ERR!  ERR! ERR!    ERR! / ERR! |      0MiB / 11448MiB |    ERR!         ERR! |
+-------------------------------+----------------------+----------------------+"""
    report = parse(table)
    assert [g.driver_model for g in report.gpus] == ["TCC", None]
    assert report.gpus[0].ecc_uncorrected_volatile == 0 and report.gpus[0].power_draw_w == 27.0
    lost = report.gpus[1]
    assert (lost.name, lost.pci_bus_id, lost.temperature_c, lost.compute_mode) == (None, "00000000:06:00.0", None, None)


def test_csv_loop_keeps_the_last_sample_of_each_gpu_in_index_order():
    text = ("index, name, memory.used [MiB], memory.total [MiB]\n"
            "0, NVIDIA A100, 1 MiB, 40960 MiB\n1, NVIDIA A100, 2 MiB, 40960 MiB\n"
            "0, NVIDIA A100, 300 MiB, 40960 MiB\n1, NVIDIA A100, 400 MiB, 40960 MiB\n")
    report = parse(text)
    assert [(g.index, g.memory_used_mib) for g in report.gpus] == [(0, 300), (1, 400)]


def test_csv_nounits_noheader_with_fields_and_compute_cap():
    text = "0, NVIDIA GeForce RTX 3060, 12288, 8.6\n"
    report = parse_csv(text, fields="index,name,memory.total,compute_cap")
    gpu = report.gpus[0]
    assert (gpu.index, gpu.name, gpu.memory_total_mib, gpu.compute_cap) == (0, "NVIDIA GeForce RTX 3060", 12288, "8.6")
    assert report.warnings == ()


def test_csv_noheader_without_fields_reads_only_unmistakable_columns():
    report = parse("0, Tesla T4, GPU-d37e67a5-91dd-3774-a5cb-99096249601a, 00000000:00:1E.0, 15360 MiB\n")
    gpu = report.gpus[0]
    assert (gpu.index, gpu.name, gpu.uuid, gpu.pci_bus_id, gpu.memory_total_mib) == (
        0, "Tesla T4", "GPU-d37e67a5-91dd-3774-a5cb-99096249601a", "00000000:00:1E.0", None)
    assert any("without header" in w for w in report.warnings)


def test_csv_compute_apps_gives_processes():
    report = parse(section(H200_MIG, "load :: query-compute-apps (per-process)"))
    assert report.format == "csv" and report.gpus == ()
    assert [(p.pid, p.name, p.used_memory_mib) for p in report.processes] == [
        (12249, "/root/tools/memhog", 2194), (12250, "/root/tools/memhog", 1170), (12267, "./gpu_burn", 13526)]


def test_csv_header_after_a_prompt_and_na_cells():
    report = parse("$ nvidia-smi --query-gpu=name,fan.speed,serial --format=csv\nname, fan.speed [%], serial\n"
                   "Tesla P100-PCIE-16GB, [N/A], [Not Supported]\n")
    assert report.gpus[0].name == "Tesla P100-PCIE-16GB" and report.gpus[0].serial is None


def test_list_r450_mig_uuid_format():
    report = parse_list("GPU 0: A100-SXM4-40GB (UUID: GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f)\n"
                        "  MIG 3g.20gb Device 0: (UUID: MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/1/0)\n")
    mig = report.gpus[0].mig_devices[0]
    assert (mig.profile, mig.mig_index, mig.uuid) == ("3g.20gb", 0, "MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/1/0")


def test_bundle_takes_full_name_and_uuid_from_other_sections():
    table = section(LINUX_610, "load :: nvidia-smi (default table)")
    text = "# $ nvidia-smi\n" + table + "# $ nvidia-smi -L\nGPU 0: NVIDIA GeForce RTX 2080 SUPER (UUID: GPU-11111111-2222-3333-4444-555555555555)\n"
    report = parse(text)
    assert report.format == "bundle"
    assert (report.gpus[0].name, report.gpus[0].uuid) == ("NVIDIA GeForce RTX 2080 SUPER", "GPU-11111111-2222-3333-4444-555555555555")
    assert report.gpus[0].memory_total_mib == 8192 and len(report.processes) == 4


def test_query_without_report_is_a_parse_error():
    with pytest.raises(SmiParseError):
        parse_query("nothing here\n")
    with pytest.raises(SmiParseError):
        parse_list("no gpus\n")
    with pytest.raises(SmiParseError):
        parse_table("| just | a | table |\n")


def test_to_dict_keys_are_exactly_the_field_names_and_models_are_frozen():
    mig = SmiMigDevice(0, 1, 0, 0, "1g.10gb", "MIG-x", 9984, 9)
    gpu = SmiGpu(0, "NVIDIA H100", "GPU-x", "00000000:19:00.0", 81559, 1, "Enabled", mig_devices=(mig,))
    report = SmiReport("xml", "535.104.05", "12.2", 1, (gpu,), (SmiProcess(0, 42, "C", "python", 10),))
    data = report.to_dict()
    assert list(data) == [f.name for f in dataclasses.fields(SmiReport)]
    assert list(data["gpus"][0]) == [f.name for f in dataclasses.fields(SmiGpu)]
    assert data["gpus"][0]["mig_devices"] == [mig.to_dict()] and data["warnings"] == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.name = "other"


@pytest.mark.parametrize("text, value", [("N/A", None), ("[N/A]", None), ("[Not Supported]", None),
                                         ("Not Found", None), ("ERR!", None), (" Default ", "Default")])
def test_placeholders(text, value):
    assert clean(text) == value


def test_value_helpers():
    assert to_mib("81559 MiB") == 81559 and to_mib("81559MiB") == 81559 and to_mib("2 GiB") == 2048
    assert to_version("610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]") == "610.57.04"
    assert bus_key("0000:00:03.0") == bus_key("00000000:00:03.0")


def test_repeated_runs_in_one_file_read_the_first():
    table = (FIXTURES / "text" / "grid-k520_driver-346.46_no-processes.txt").read_text()
    other = (FIXTURES / "text" / "h100-80gb-hbm3-x8_driver-550.90.07_cuda-12.4.txt").read_text()
    report = parse(table + "\n" + other)
    assert report.driver_version == "346.46" and len(report.gpus) == 1
    assert report.warnings == ("2 nvidia-smi tables found; only the first was read",)
    q = (FIXTURES / "text" / "titan-v_driver-560.35.03_cuda-12.6_query-q.txt").read_text()
    assert len(parse(q + q).gpus) == 1


def test_xml_followed_by_a_shell_prompt():
    xml = (FIXTURES / "xml" / "tesla-t4_driver-515.105.01_cuda-11.7_processes.xml").read_text()
    report = parse("$ nvidia-smi -q -x\n" + xml + "user@host:~$ \n")
    assert report.format == "xml" and report.warnings == () and len(report.processes) == 2
