"""Node health from nvidia-smi: PCIe links, clock slowdowns, row remapping failure, persistence on servers.

Verdicts over real recordings (fixtures/nvidia-smi), a few values edited where a recording with that
state does not exist (said at each test), and the hook's view of the same rules.
"""

from __future__ import annotations

import json

import pytest

from gpudoctor.cli import main
from gpudoctor.hook.config import ConfigError, merge
from gpudoctor.report import build_report
from gpudoctor.requirements import Requirements
from gpudoctor.snapshot_folder import load
from tests import hook_snapshots as hs

TEXT = hs.ROOT / "fixtures" / "nvidia-smi" / "text"


def findings(path, check_id, **req):
    report = build_report(load(str(path)), requirements=Requirements(**req) if req else None)
    return [f for f in report.findings if f.check_id == check_id]


def hook(capsys, path, *args):
    with pytest.raises(SystemExit) as exc:
        main(["hook", "--snapshot", str(path), "--json", *args])
    return exc.value.code, json.loads(capsys.readouterr().out)


# --- PCIe links -------------------------------------------------------------------------------

def test_x1_risers_under_load_are_named_with_their_width(tmp_path):
    """Six GTX 1070s on x1 risers at 100% (a real mining-rig recording): the width is the problem."""
    [f] = findings(hs.recording(tmp_path / "s", hs.SIX_GPUS), "PCI001")
    assert (f.status.value, f.title) == ("warn", "GPUs 0-5: PCIe link x1 of x16")
    assert f.detail == "GPU 0 (GeForce GTX 1070) moves host<->GPU data at most at 1.0 GB/s per direction instead of 15.8 GB/s."
    assert f.fix.kb_id == "pcie_link_degraded"


def test_a_lower_generation_counts_only_under_load(tmp_path):
    # The RTX 4090 recording is idle at Gen1 of Gen3: power saving, not a fault ...
    idle = hs.recording(tmp_path / "idle", hs.HEALTHY)
    [f] = findings(idle, "PCI001")
    assert (f.status.value, f.title) == ("ok", "1 GPU(s) at full PCIe width; GPU 0 idle at a lower generation "
                                               "(power saving, not judged)")
    # ... the same GPU at 95% utilisation (value edited) and still at Gen1 trained down.
    busy = hs.answered(tmp_path / "busy", hs.xml(hs.HEALTHY, gpu_util="95 %"))
    [f] = findings(busy, "PCI001")
    assert (f.status.value, f.title) == ("warn", "GPU 0: PCIe link Gen1 of Gen3 at 95% load")
    # The requirement judges the width only: before a job the GPUs are idle by design.
    [f] = findings(busy, "PCI002", pcie_width=True)
    assert (f.status.value, f.title) == ("ok", "1 GPU(s) at full PCIe width")


def test_a_geforce_in_an_x8_slot_is_noted_a_riser_and_a_server_board_are_judged(tmp_path):
    """The RTX 4090 recording with its width edited: x8 of x16 on a GeForce is the slot's wiring (noted,
    ok); x1 of x16 is a riser (warn); the same x8 on a data-center brand is a fault (warn)."""
    x8 = hs.answered(tmp_path / "x8", hs.xml(hs.HEALTHY, current_link_width="8x"))
    [f] = findings(x8, "PCI001")
    assert f.status.value == "ok" and f.fix is None
    assert f.title.startswith("GPU 0 narrower than the GPU allows (the slot's wiring on a non-server board")
    x4 = hs.answered(tmp_path / "x4", hs.xml(hs.HEALTHY, current_link_width="4x"))  # a chipset slot: the floor
    assert [f.status.value for f in findings(x4, "PCI001")] == ["ok"]
    x2 = hs.answered(tmp_path / "x2", hs.xml(hs.HEALTHY, current_link_width="2x"))
    assert [f.status.value for f in findings(x2, "PCI001")] == ["warn"]
    x1 = hs.answered(tmp_path / "x1", hs.xml(hs.HEALTHY, current_link_width="1x"))
    [f] = findings(x1, "PCI001")
    assert (f.status.value, f.title) == ("warn", "GPU 0: PCIe link x1 of x16")
    server = hs.answered(tmp_path / "srv", hs.xml(hs.HEALTHY, current_link_width="8x", product_brand="NVIDIA"))
    [f] = findings(server, "PCI001")
    assert (f.status.value, f.title) == ("warn", "GPU 0: PCIe link x8 of x16")
    # The requirement does not care about the board.
    [f] = findings(x8, "PCI002", pcie_width=True)
    assert (f.status.value, f.title) == ("fail", "GPU 0: PCIe link x8 of x16")


def test_pcie_width_requirement_fails_and_the_hook_drains(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.T4_PROCS)
    code, data = hook(capsys, snap, "--pcie-width")
    assert code == 1 and data["reason"] == "gpudoctor: GPU 0: PCIe link x8 of x16"
    code, data = hook(capsys, snap)
    assert code == 0 and "PCI002" not in [c["check"] for c in data["checks"]]


def test_pcie_requirement_cannot_tell_without_link_fields(tmp_path, capsys):
    """The 384-era GT 730 prints no link widths: the hook says unknown, not ok."""
    code, data = hook(capsys, hs.recording(tmp_path / "s", hs.NO_TEMP), "--pcie-width")
    assert code == 2 and data["reason"] == "gpudoctor: cannot tell: GPU 0: PCIe link width not reported"


# --- clock event reasons ----------------------------------------------------------------------

def query_snapshot(tmp_path, name):
    from gpudoctor.runner import CommandResult
    from gpudoctor.snapshot import Snapshot

    snap = Snapshot(meta={"hostname": "n1"})
    snap.commands["nvidia_smi"] = CommandResult(("nvidia-smi", "-q"), 0, (TEXT / name).read_text(), "", 2.0)
    snap.save(str(tmp_path / "q"))
    return tmp_path / "q"


def test_power_brake_on_every_gpu_is_one_finding(tmp_path):
    path = query_snapshot(tmp_path, "h100-80gb-hbm3-x8_driver-535.161.08_cuda-12.2_query-q.txt")
    [f] = findings(path, "CLK002", no_slowdown=True)
    assert (f.status.value, f.title) == ("fail", "GPUs 0-7: HW Slowdown, HW Power Brake Slowdown active")
    assert f.fix.kb_id == "gpu_clocks_slowdown"
    assert any(c.startswith("sudo ipmitool sel elist") for c in f.fix.commands)
    [w] = findings(path, "CLK001")
    assert w.status.value == "warn" and w.title == f.title


def test_idle_application_clocks_and_power_cap_are_benign(tmp_path):
    """K80s at 99% capped by application clocks, an idle GPU, a 2080 Ti at its power cap: no slowdown."""
    for name in (hs.HEALTHY, "tesla-k80-x4_driver-430.26_cuda-not-found_processes.xml",
                 "rtx-2080-ti-x2_driver-410.73_cuda-10.0_ecc-na.xml"):
        [f] = findings(hs.recording(tmp_path / name, name), "CLK002", no_slowdown=True)
        assert f.status.value == "ok", (name, f.title)


def test_thermal_slowdown_in_xml(tmp_path):
    """No real XML recording shows an active thermal slowdown; the 4090's value (535: clocks_event_reasons) is
    edited to one."""
    snap = hs.answered(tmp_path / "s", hs.xml(hs.HEALTHY, clocks_event_reason_sw_thermal_slowdown="Active"))
    [f] = findings(snap, "CLK001")
    assert (f.status.value, f.title) == ("warn", "GPU 0: SW Thermal Slowdown active")
    assert "hotter than its maximum operating temperature" in f.detail


# --- row remapping failure --------------------------------------------------------------------

def test_row_remap_failure_needs_the_board_replaced_and_always_drains(tmp_path, capsys):
    """No public recording shows a remapping failure: the A10G recording's flag is edited to Yes."""
    text = hs.xml("a10g_driver-515.105.01_cuda-11.7_processes.xml", remapped_row_failure="Yes")
    snap = hs.answered(tmp_path / "s", text)
    [f] = findings(snap, "DRV006")
    assert (f.status.value, f.title) == ("fail", "GPU 0 (NVIDIA A10G): row remapping failed, no spare memory rows left")
    assert f.fix.kb_id == "gpu_replace_board" and "sudo nvidia-bug-report.sh    # attach it to the RMA request" \
        in f.fix.commands
    code, data = hook(capsys, snap, "--ignore-pending-retirement")  # no requirement asks for it: always judged
    assert code == 1 and data["reason"].startswith("gpudoctor: GPU 0 (NVIDIA A10G): row remapping failed")


def test_row_remap_failure_from_query_text(tmp_path):
    text = (TEXT / "a100-sxm4-40gb-x8_driver-460.32.03_cuda-11.2_query-q.txt").read_text()
    edited = text.replace("Remapping Failure Occurred        : No", "Remapping Failure Occurred        : Yes", 1)
    from gpudoctor import smi

    gpus = smi.parse(edited).gpus
    assert [g.remapped_rows_failure for g in gpus] == [True] + [False] * 7


# --- persistence on servers -------------------------------------------------------------------

@pytest.mark.parametrize("name,status,title", [
    (hs.T4_PROCS, "warn", "GPU 0: persistence mode off"),                        # brand NVIDIA, Disabled
    (hs.RETIRED, "ok", "persistence on for 1 data-center GPU(s)"),               # brand Tesla, Enabled
    (hs.HEALTHY, "skip", "persistence: no data-center GPU here (it is recommended on servers)"),  # GeForce
])
def test_persistence_is_recommended_on_data_center_boards_only(tmp_path, name, status, title):
    [f] = findings(hs.recording(tmp_path / "s", name), "NOD006")
    assert (f.status.value, f.title) == (status, title)


def test_required_persistence_explains_the_recommendation(tmp_path):
    report = build_report(load(str(hs.recording(tmp_path / "s", hs.T4_PROCS))),
                          requirements=Requirements(persistence=True))
    [d] = [d for d in report.diagnoses if d.cause.check_id == "NOD003"]
    assert [s.check_id for s in d.symptoms] == ["NOD006"]


def test_windows_has_no_persistence_mode(tmp_path):
    snap = hs.recording(tmp_path / "s", hs.T4_PROCS, meta={"platform": {"system": "Windows"}})
    [f] = findings(snap, "NOD006")
    assert f.title == "persistence: Linux only (windows has no persistence mode)"


# --- configuration --------------------------------------------------------------------------

def test_config_keys_and_the_longer_default_timeout_for_active_tests():
    s = merge({"pcie_width": "yes", "no_slowdown": True, "dcgm": 2, "smoke": "true"}, {})
    assert (s.requirements.pcie_width, s.requirements.no_slowdown, s.requirements.dcgm, s.requirements.smoke) == \
        (True, True, 2, True)
    assert s.timeout == 610.0  # DCGM level 2 is allowed 600 s (knowledge/data/dcgm_errors.json) + the hook's 10
    assert merge({"smoke": True}, {}).timeout == 190.0
    assert merge({"smoke": True, "timeout": 30}, {}).timeout == 30.0  # a timeout given is kept
    assert merge({}, {}).timeout == 10.0
    with pytest.raises(ConfigError, match="dcgm: expected a whole number from 1 to 4, got 5"):
        merge({"dcgm": 5}, {})
