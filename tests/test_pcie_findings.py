"""PCI001/PCI002 findings in full: the evidence line per GPU, the subject and the fix aimed at the first
degraded GPU, and the rate the detail names (recordings as in tests/test_node_health.py)."""

from __future__ import annotations

from tests import hook_snapshots as hs
from tests.test_node_health import findings

LSPCI = "sudo lspci -vv -s {}    # LnkCap is what the device can do, LnkSta what it runs at ('downgraded')"


def test_risers_name_every_gpus_link_and_the_first_ones_bus(tmp_path):
    [f] = findings(hs.recording(tmp_path / "s", hs.SIX_GPUS), "PCI001")
    assert f.subject == "00000000:01:00.0" and len(f.evidence) == 6
    assert [e.excerpt for e in f.evidence[:2]] == ["GPU 0 00000000:01:00.0: Gen3 of Gen3, x1 of x16, 100% busy",
                                                   "GPU 1 00000000:03:00.0: Gen2 of Gen2, x1 of x16, 100% busy"]
    assert f.fix.commands[1] == LSPCI.format("00000000:01:00.0")


def test_a_link_trained_down_under_load_is_rated_at_its_current_generation(tmp_path):
    busy = hs.answered(tmp_path / "busy", hs.xml(hs.HEALTHY, gpu_util="95 %"))
    [f] = findings(busy, "PCI001")
    assert [e.excerpt for e in f.evidence] == ["GPU 0 00000000:84:00.0: Gen1 of Gen3, x16 of x16, 95% busy"]
    assert f.detail == ("GPU 0 (NVIDIA GeForce RTX 4090) moves host<->GPU data at most at 4.0 GB/s per direction "
                        "instead of 15.8 GB/s.")
    assert f.subject == "00000000:84:00.0" and f.fix.commands[1] == LSPCI.format("00000000:84:00.0")


def test_a_narrow_idle_link_is_rated_at_the_generation_it_can_reach(tmp_path):
    x1 = hs.answered(tmp_path / "x1", hs.xml(hs.HEALTHY, current_link_width="1x"))  # idle at Gen1 of Gen3
    [f] = findings(x1, "PCI001")
    assert f.detail == ("GPU 0 (NVIDIA GeForce RTX 4090) moves host<->GPU data at most at 1.0 GB/s per direction "
                        "instead of 15.8 GB/s.")


def test_two_kinds_of_narrow_link_are_two_groups_and_the_first_gpu_is_the_subject(tmp_path):
    text = hs.xml("rtx-2080-ti-x2_driver-410.73_cuda-10.0_ecc-na.xml", current_link_width="1x")
    head, sep, tail = text.partition("</gpu>")
    text = head + sep + tail.replace("<current_link_width>16x</current_link_width>",
                                     "<current_link_width>2x</current_link_width>", 1)
    [f] = findings(hs.answered(tmp_path / "s", text), "PCI001")
    assert (f.status.value, f.title, f.subject) == (
        "warn", "GPU 0: PCIe link x1 of x16; GPU 1: PCIe link x2 of x16", "00000000:02:00.0")
    assert f.detail.startswith("GPU 0 (GeForce RTX 2080 Ti) moves host<->GPU data at most at ")
