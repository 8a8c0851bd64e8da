"""`gpudoctor devices`: the CUDA index -> physical GPU table, live (stub nvidia-smi) and replayed."""

from __future__ import annotations

import json
import os

from tests.conftest import ROOT, invoke
from tests.scenarios import SCENARIOS

UUID_PREFIX = SCENARIOS / "fw-cvd-uuid-prefix"       # 2 x RTX 2080 Ti, CUDA_VISIBLE_DEVICES=GPU-ef1d
TRUNCATES = SCENARIOS / "fw-cvd-invalid-truncates"   # 6 x GTX 1070, CUDA_VISIBLE_DEVICES=2,3,,4,5
MIXED = SCENARIOS / "fw-cvd-mixed-gpus-no-order"     # RTX 2070 + GTX 750 Ti, CUDA_VISIBLE_DEVICES=1
XML_2080TI = ROOT / "fixtures/nvidia-smi/xml/rtx-2080-ti-x2_driver-410.73_cuda-10.0_ecc-na.xml"


def test_replay_shows_the_selected_gpu():
    proc = invoke("devices", "--snapshot", UUID_PREFIX, "--no-color")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == ("CUDA_VISIBLE_DEVICES='GPU-ef1d'; CUDA_DEVICE_ORDER not set (FASTEST_FIRST); "
                        "CUDA sees 1 of 2 GPU(s)")
    row = next(line for line in lines if line.startswith("cuda:0"))
    assert row.split() == ["cuda:0", "GPU", "1", "GeForce", "RTX", "2080", "Ti", "00000000:03:00.0",
                           "GPU-ef1d0068-5bfd-f1e4-7e79-ff35d71d44b8"]
    assert "hidden from CUDA: GPU 0 GeForce RTX 2080 Ti (00000000:02:00.0)" in lines


def test_truncated_list_exits_1_and_names_the_dropped_entries():
    proc = invoke("devices", "--snapshot", TRUNCATES, "--json")
    assert proc.returncode == 1
    view = json.loads(proc.stdout)
    assert view["schema"] == "gpudoctor.devices/2"
    assert [(d["cuda_index"], d["nvidia_smi_index"]) for d in view["devices"]] == [(0, 2), (1, 3)]
    assert [g["nvidia_smi_index"] for g in view["hidden"]] == [0, 1, 4, 5]
    assert [p["code"] for p in view["problems"]] == ["invalid"]
    assert "4, 5 after it are ignored too" in view["problems"][0]["message"]


def test_visible_override_tries_a_value_without_exporting_it():
    proc = invoke("devices", "--snapshot", TRUNCATES, "--visible", "5,GPU-e511", "--json")
    view = json.loads(proc.stdout)
    assert proc.returncode == 1   # an index list stops at the UUID entry
    assert view["cuda_visible_devices"] == "5,GPU-e511"
    assert [d["nvidia_smi_index"] for d in view["devices"]] == [5]
    proc = invoke("devices", "--snapshot", TRUNCATES, "--visible", "GPU-d2c1,GPU-e511", "--json")
    assert proc.returncode == 0
    assert [d["nvidia_smi_index"] for d in json.loads(proc.stdout)["devices"]] == [5, 0]


def test_mixed_gpus_say_how_sure_the_order_is_in_checks_words():
    proc = invoke("devices", "--snapshot", MIXED, "--no-color")
    assert proc.returncode == 0
    # CVD002's own title, the same words `check` prints: one judgment.
    assert ("note: 1 x GeForce RTX 2070 and 1 x GeForce GTX 750 Ti, and CUDA_DEVICE_ORDER is not PCI_BUS_ID: "
            "CUDA's device 0 is most likely nvidia-smi's GPU 0 (GeForce RTX 2070) too") in proc.stdout
    data = json.loads(invoke("devices", "--snapshot", MIXED, "--json").stdout)
    assert (data["order_source"], data["order_known"]) == ("compute_capability", False)
    assert {"check": "CVD002", "status": "warn"}.items() <= data["verdicts"][1].items()
    fixed = invoke("devices", "--snapshot", MIXED, "--order", "PCI_BUS_ID", "--json")
    assert json.loads(fixed.stdout)["order_known"] is True


def test_live_with_a_stub_nvidia_smi(stub_bin):
    stub_bin("nvidia-smi", f'if [ "$1" = "-q" ]; then cat "{XML_2080TI}"; else exit 0; fi')
    env = {"PATH": f"{stub_bin.dir}{os.pathsep}{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": "1,0"}
    proc = invoke("devices", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    assert view["source"] == "live" and view["cuda_visible_devices"] == "1,0"
    assert [(d["cuda_index"], d["uuid"][:12]) for d in view["devices"]] == [(0, "GPU-ef1d0068"), (1, "GPU-57567e11")]


def test_colour_only_when_asked_or_on_a_terminal():
    plain = invoke("devices", "--snapshot", TRUNCATES)
    assert "\x1b[" not in plain.stdout   # not a terminal
    forced = invoke("devices", "--snapshot", TRUNCATES, "--color")
    assert "\x1b[33mproblem:\x1b[0m" in forced.stdout


def test_no_gpu_inventory_says_why():
    proc = invoke("devices", "--snapshot", SCENARIOS / "core-gpu-less", "--no-color")
    assert proc.returncode == 1
    assert "no GPU inventory: `nvidia-smi -q -x`: not found" in proc.stdout


def test_bad_input_is_one_line_and_exit_2():
    for args in (("--snapshot", "/nonexistent/snap"), ("--snapshot", UUID_PREFIX, "--torch"),
                 ("--order", "SLOWEST_FIRST")):
        proc = invoke("devices", *args)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr
    proc = invoke("devices", "--snapshot", UUID_PREFIX, "--torch")
    assert proc.stderr.strip() == "gpudoctor: --torch asks torch on this machine; it cannot be combined with --snapshot"


def test_readme_example_is_the_real_output():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    cmd = "$ gpudoctor devices --snapshot fixtures/scenarios/fw-cvd-invalid-truncates\n"
    shown = readme.split(cmd, 1)[1].split("\n$ ", 1)[0] + "\n"
    proc = invoke("devices", "--snapshot", TRUNCATES)
    assert proc.stdout == shown


def test_torch_column_only_for_the_recorded_setting():
    scenario = SCENARIOS / "core-8gpu-server"
    recorded = invoke("devices", "--snapshot", scenario)
    assert "torch sees" in recorded.stdout
    guessed = invoke("devices", "--snapshot", scenario, "--visible", "7,2", "--json")
    view = json.loads(guessed.stdout)
    assert [d["cuda_index"] for d in view["devices"]] == [0, 1]
    assert all("torch" not in d for d in view["devices"])  # torch was probed with every GPU visible
