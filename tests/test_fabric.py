"""NVLink and the NVSwitch fabric: the nvlink parsers on real outputs, NVL001, NVL002 and FAB001.

Sources: fixtures/nvidia-smi/text/tesla-v100-sxm2-32gb-x8_nvlink-s_inactive-links.txt (Azure azhpc-diagnostics),
the H100 bundle's `nvlink -s`, `nvlink -e` of an H100 as stas00/ml-engineering prints it (below), the H100 HGX
`nvidia-smi -q` with its Fabric section, and fixtures/kernel-log/SOURCES.md for the fabric manager's formats.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from gpudoctor.engine import run_one
from gpudoctor.facts import Facts
from gpudoctor.findings import Status
from gpudoctor.probes import commands
from gpudoctor.smi import gpu_state, nvlink
from gpudoctor_checks import fabric
from tests.builders import ran, snap

SMI = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
V100_S = (SMI / "text" / "tesla-v100-sxm2-32gb-x8_nvlink-s_inactive-links.txt").read_text()
H100_Q = (SMI / "text" / "h100-80gb-hbm3-x8_driver-535.161.08_cuda-12.2_query-q.txt").read_text()
BUNDLE = (SMI / "bundle" / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt").read_text()
H100_S = BUNDLE.split("# $ nvidia-smi nvlink -s\n", 1)[1].split("\n", 1)[1].split("\n\n\n", 1)[0] + "\n"

# `nvidia-smi nvlink -e` on an H100, verbatim from stas00/ml-engineering (network/README.md), its "[...]" included.
H100_E = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)
         Link 0: Replay Errors: 0
         Link 0: Recovery Errors: 0
         Link 0: CRC Errors: 0

         Link 1: Replay Errors: 0
         Link 1: Recovery Errors: 0
         Link 1: CRC Errors: 0

         [...]

         Link 17: Replay Errors: 0
         Link 17: Recovery Errors: 0
         Link 17: CRC Errors: 0
"""


def one(chk, s):
    (finding,) = run_one(chk, Facts(s))
    return finding


def smi_q(text=H100_Q):
    return ran(["nvidia-smi", "-q"], text)


# --- parsers ------------------------------------------------------------------------------------

def test_nvlink_s_names_the_inactive_links_of_a_v100_sxm2_node():
    gpus = nvlink.parse_status(V100_S)
    assert len(gpus) == 7 and gpus[0].name == "Tesla V100-SXM2-32GB"  # the upstream file lists GPUs 0-6
    assert {g.index: g.down for g in gpus if g.down} == {3: (3, 5), 4: (1,), 5: (0, 4), 6: (1,)}
    assert all(len(g.links) == 6 for g in gpus)


def test_nvlink_s_of_an_h100_lists_18_links_at_their_speed():
    (gpu,) = nvlink.parse_status(H100_S)
    assert (gpu.index, gpu.name, gpu.uuid) == (0, "NVIDIA H100 80GB HBM3", "GPU-00000000-0000-0000-0000-000000000000")
    assert gpu.links == tuple((n, 26.562) for n in range(18)) and gpu.down == ()


def test_nvlink_s_keeps_what_nvidia_smi_printed_instead_of_links():
    (gpu,) = nvlink.parse_status("GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-1)\n"
                                 "NVML: Unable to retrieve Nvlink information as all links are inActive\n")
    assert gpu.links == () and gpu.note == "NVML: Unable to retrieve Nvlink information as all links are inActive"


def test_nvlink_e_reads_each_counter_of_each_link():
    counters = nvlink.parse_errors(H100_E)
    assert len(counters) == 9
    assert counters[0] == nvlink.NvlinkCounter(0, 0, "Replay Errors", 0)
    assert {(c.link, c.name) for c in counters} >= {(17, "CRC Errors"), (1, "Recovery Errors")}


# --- NVL001 -------------------------------------------------------------------------------------

def test_nvl001_fails_on_a_wired_sxm2_link_that_is_down():
    f = one(fabric.nvlink_up, snap(commands={"nvidia_smi_nvlink_s": ran(["nvidia-smi", "nvlink", "-s"], V100_S)}))
    assert f.status is Status.FAIL
    assert f.title == "NVLink down: GPU 3: links 3,5 down; GPU 4: link 1 down; GPU 5: links 0,4 down; GPU 6: link 1 down"


def test_nvl001_only_warns_on_a_pcie_card_whose_bridge_may_be_missing():
    # The V100 output's format, on a PCIe card's name: composed, to show the PCIe rule.
    text = "GPU 0: NVIDIA RTX A6000 (UUID: GPU-1)\n\t Link 0: 14.062 GB/s\n\t Link 1: <inactive>\n"
    f = one(fabric.nvlink_up, snap(commands={"nvidia_smi_nvlink_s": ran(["nvidia-smi", "nvlink", "-s"], text)}))
    assert (f.status, f.title) == (Status.WARN, "NVLink down: GPU 0: link 1 down")


def test_nvl001_ok_and_skip():
    ok = one(fabric.nvlink_up, snap(commands={"nvidia_smi_nvlink_s": ran(["nvidia-smi", "nvlink", "-s"], H100_S)}))
    assert (ok.status, ok.title) == (Status.OK, "1 GPU(s), 18 NVLinks, all up (26.562 GB/s)")
    none = one(fabric.nvlink_up, snap(commands={"nvidia_smi_nvlink_s": ran(["nvidia-smi", "nvlink", "-s"], "")}))
    assert none.status is Status.SKIP


# --- NVL002 -------------------------------------------------------------------------------------

def _errors(first, later=None):
    commands = {"nvidia_smi_nvlink_e": ran(["nvidia-smi", "nvlink", "-e"], first)}
    if later is not None:
        commands["nvidia_smi_nvlink_e_later"] = ran(["nvidia-smi", "nvlink", "-e"], later)
    return one(fabric.nvlink_errors, snap(commands=commands))


def test_nvl002_two_equal_readings_are_ok():
    f = _errors(H100_E, H100_E)
    assert (f.status, f.title) == (Status.OK, "3 NVLinks, no recovery errors, no counter growing")
    assert _errors(H100_E).title == "3 NVLinks, no recovery errors, no counter growing; read once, growth not measured"


def test_nvl002_fails_on_a_counter_growing_between_the_readings():
    # The real format with one counter changed: composed (no public recording of growing counters was found).
    grown = H100_E.replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 12")
    before = H100_E.replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 3")
    f = _errors(before, grown)
    assert (f.status, f.title, f.subject) == (Status.FAIL, "NVLink errors growing: GPU 0 link 1 CRC Errors 3 -> 12",
                                              "GPU 0")
    assert "within about 1s" in f.detail


def test_nvl002_warns_on_recovery_errors_that_are_not_growing():
    text = H100_E.replace("Link 17: Recovery Errors: 0", "Link 17: Recovery Errors: 2")
    f = _errors(text, text)
    assert (f.status, f.title) == (Status.WARN, "NVLink recovery errors since the driver loaded: GPU 0 link 17 2")


def test_nvl002_names_the_gap_a_slow_first_reading_made():
    grown = H100_E.replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 12")
    slow = dataclasses.replace(ran(["nvidia-smi", "nvlink", "-e"], H100_E), duration_s=2.5)
    commands = {"nvidia_smi_nvlink_e": slow, "nvidia_smi_nvlink_e_later": ran(["nvidia-smi", "nvlink", "-e"], grown)}
    f = one(fabric.nvlink_errors, snap(commands=commands))
    assert f.status is Status.FAIL and "within about 2.5s" in f.detail


def test_a_second_reading_runs_in_its_first_readings_series():
    keys = ["nvidia_smi_nvlink_s", "nvidia_smi_nvlink_e_later", "nvidia_smi_nvlink_e", "lspci"]
    assert commands.series(keys) == [("nvidia_smi_nvlink_s",), ("nvidia_smi_nvlink_e", "nvidia_smi_nvlink_e_later"),
                                     ("lspci",)]
    assert commands.series(["nvidia_smi_nvlink_e_later"]) == [("nvidia_smi_nvlink_e_later",)]


@pytest.mark.parametrize("first_takes", [0.0, 0.3, 1.4])
def test_the_second_reading_starts_a_gap_after_the_first_however_late_that_started(monkeypatch, first_takes):
    starts = []

    def fake(key, env, timeout):
        starts.append((key, time.monotonic(), timeout))
        time.sleep(first_takes if key == "nvidia_smi_nvlink_e" else 0)
        return ran(["nvidia-smi", "nvlink", "-e"], key)

    monkeypatch.setattr(commands, "run_command", fake)
    time.sleep(0.2)  # a late start: the gap counts from the first reading, not from the series' call
    into = {}
    out = commands.run_series(("nvidia_smi_nvlink_e", "nvidia_smi_nvlink_e_later"), {}, lambda: 9.0, into)
    assert out is into and [k for k, _, _ in starts] == list(into) == ["nvidia_smi_nvlink_e", "nvidia_smi_nvlink_e_later"]
    gap = starts[1][1] - starts[0][1]
    assert max(1.0, first_takes) - 0.01 <= gap < max(1.0, first_takes) + 0.3
    assert commands.reading_gap_s(dataclasses.replace(into["nvidia_smi_nvlink_e"], duration_s=first_takes),
                                  "nvidia_smi_nvlink_e_later") == max(1.0, first_takes)


def test_the_wait_between_readings_takes_at_most_half_of_what_is_left(monkeypatch):
    starts = []
    monkeypatch.setattr(commands, "run_command", lambda key, env, timeout: starts.append(time.monotonic()) or ran([key]))
    commands.run_series(("nvidia_smi_nvlink_e", "nvidia_smi_nvlink_e_later"), {}, lambda: 0.4)
    assert 0.15 <= starts[1] - starts[0] < 0.4


# --- FAB001 -------------------------------------------------------------------------------------

def _fm(state=None, rc=0, version=None, q=H100_Q, dev=("nvidia0", "nvidia-nvswitch0", "nvidiactl")):
    commands = {"nvidia_smi": smi_q(q)}
    if state is not None:
        commands["fabricmanager_active"] = ran(["systemctl", "is-active", "nvidia-fabricmanager"], state + "\n", rc)
    if version is not None:
        commands["fabricmanager_version"] = ran(["nv-fabricmanager", "--version"],
                                                f"Fabric Manager version is : {version}\n")
    return one(fabric.fabric_manager, snap(commands=commands, listings={"/dev": list(dev)}))


def test_the_h100_fabric_state_is_read_from_nvidia_smi_q():
    states = gpu_state.gpu_states(H100_Q)
    assert len(states) == 8 and {(s.fabric_state, s.fabric_status) for s in states} == {("Completed", "Success")}


def test_fab001_active_at_the_drivers_version_is_ok():
    f = _fm("active", 0, "535.161.08")  # the version line as gpud's Test_parseFabricManagerVersion has it
    assert (f.status, f.title) == (Status.OK, "nvidia-fabricmanager active, version 535.161.08")


def test_fab001_fails_on_a_version_other_than_the_drivers():
    # gpu-operator#544: "fabric manager NVIDIA GPU driver interface version 530.30.02 don't match with driver
    # version 530.41.03"; here the same pair, the driver's version moved into the recorded nvidia-smi -q.
    q = H100_Q.replace("535.161.08", "530.41.03")
    f = _fm("active", 0, "530.30.02", q=q)
    assert (f.status, f.title) == (Status.FAIL, "fabric manager 530.30.02 does not match driver 530.41.03")
    assert f.fix.kb_id == "fabric_manager_missing" and any("nv-fabricmanager --version" in c for c in f.fix.commands)


def test_fab001_inactive_warns_while_the_gpus_are_still_registered():
    f = _fm("inactive", 3, "535.161.08")
    assert f.status is Status.WARN
    assert f.title.startswith("nvidia-fabricmanager is inactive: the GPUs are still registered")


def test_fab001_fails_while_gpus_wait_for_the_fabric():
    # The real -q with its Fabric State moved to "In Progress" (composed): CUDA answers 802 meanwhile.
    q = H100_Q.replace("State                             : Completed", "State                             : In Progress")
    f = _fm("active", 0, "535.161.08", q=q)
    assert (f.status, f.title) == (Status.FAIL, "8 GPU(s) not registered with the NVLink fabric (state In Progress): "
                                                "CUDA fails with error 802")


def test_fab001_cannot_tell_without_the_service_state():
    f = _fm()
    assert (f.status, f.cannot_tell, f.title) == (Status.SKIP, True, "fabric manager state unknown: the fabric manager state was not "
                                                   "recorded in this snapshot")


def test_fab001_does_not_apply_to_a_gpu_outside_a_fabric():
    q = (SMI / "text" / "a10_driver-535.129.03_cuda-12.2_query-q.txt").read_text()
    f = _fm("inactive", 3, q=q, dev=("nvidia0", "nvidiactl"))
    assert f.status is Status.SKIP


@pytest.mark.parametrize("word, state", [("active", "active"), ("failed", "failed"), ("activating", "activating")])
def test_systemctl_is_active_words(word, state):
    s = snap(commands={"fabricmanager_active": ran(["systemctl"], word + "\n", 0 if word == "active" else 3)})
    assert Facts(s)["fabric_manager"].state == state
