"""CLK001/CLK002 in full: groups of GPUs by the slowdown they share, the first GPU's words and temperature,
evidence for every GPU, and a fix aimed at that GPU.

Recordings: the H100 x8 `nvidia-smi -q` (a real HW Slowdown and power brake on every GPU), the RTX 4090 and
the two RTX 2080 Ti XML recordings with a thermal slowdown edited in (no real recording shows one: hand-made).
"""

from __future__ import annotations

from tests import hook_snapshots as hs
from tests.test_node_health import findings, query_snapshot

H100_Q = "h100-80gb-hbm3-x8_driver-535.161.08_cuda-12.2_query-q.txt"
TWO = "rtx-2080-ti-x2_driver-410.73_cuda-10.0_ecc-na.xml"
SW = "clocks_throttle_reason_sw_thermal_slowdown"


def second_gpu_hot(text: str, tag: str = SW) -> str:
    """The second GPU's ``tag`` set Active (hs.xml edits the first match only)."""
    head, sep, tail = text.partition("</gpu>")
    return head + sep + tail.replace(f"<{tag}>Not Active</{tag}>", f"<{tag}>Active</{tag}>", 1)


def test_a_slowdown_on_every_gpu_is_one_group_with_the_first_gpus_words(tmp_path):
    [f] = findings(query_snapshot(tmp_path, H100_Q), "CLK001")
    assert (f.status.value, f.title, f.subject, f.family) == (
        "warn", "GPUs 0-7: HW Slowdown, HW Power Brake Slowdown active", "00000000:19:00.0", "gpu_slowdown")
    assert f.detail == ("GPU 0, 29C reports: hardware slowdown engaged, clocks cut by half or more: too hot, an "
                        "external power brake (e.g. the power supply), or power draw too high for fast-trigger "
                        "protection; external power brake asserted (e.g. by the system power supply), clocks cut "
                        "by half or more.")
    assert len(f.evidence) == 8
    assert [e.excerpt for e in f.evidence[:3]] == ["GPU 0: hw_slowdown, hw_power_brake_slowdown, 29C",
                                                   "GPU 1: hw_slowdown, hw_power_brake_slowdown, 29C",
                                                   "GPU 2: hw_slowdown, hw_power_brake_slowdown, 30C"]
    assert f.fix.commands[0] == "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i 0"


def test_only_the_hot_gpu_is_named_and_the_fix_points_at_it(tmp_path):
    snap = hs.answered(tmp_path / "s", second_gpu_hot(hs.xml(TWO)))
    [f] = findings(snap, "CLK001")
    assert (f.status.value, f.title, f.subject) == ("warn", "GPU 1: SW Thermal Slowdown active", "00000000:03:00.0")
    assert f.detail == ("GPU 1, 24C reports: the driver holds the clocks down because the GPU is hotter than its "
                        "maximum operating temperature.")  # the power cap beside it is normal: not in the words
    assert [e.excerpt for e in f.evidence] == ["GPU 0: gpu_idle, 24C", "GPU 1: sw_power_cap, sw_thermal_slowdown, 24C"]
    assert f.fix.commands[0] == "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i 1"
    [g] = findings(snap, "CLK002", no_slowdown=True)
    assert (g.status.value, g.title) == ("fail", f.title)


def test_two_kinds_of_slowdown_are_two_groups(tmp_path):
    text = second_gpu_hot(hs.xml(TWO, clocks_throttle_reason_hw_thermal_slowdown="Active"))
    [f] = findings(hs.answered(tmp_path / "s", text), "CLK001")
    assert f.title == "GPU 0: HW Thermal Slowdown active; GPU 1: SW Thermal Slowdown active"
    assert f.detail.startswith("GPU 0")


def test_benign_reasons_are_listed_and_not_judged(tmp_path):
    snap = hs.answered(tmp_path / "s", hs.xml(hs.HEALTHY))
    [f] = findings(snap, "CLK001")
    assert (f.status.value, f.title) == ("ok", "no thermal or power slowdown on 1 GPU(s) (active: gpu_idle)")
    [g] = findings(snap, "CLK002", no_slowdown=True)
    assert (g.status.value, g.title) == ("ok", "no thermal or power slowdown on 1 GPU(s)")


def test_a_gpu_with_no_reason_and_no_temperature_is_shown_as_such(tmp_path):
    text = hs.xml(TWO, clocks_throttle_reason_gpu_idle="Not Active")       # GPU 0: nothing active
    head, sep, tail = second_gpu_hot(text).partition("</gpu>")
    text = head + sep + tail.replace("<gpu_temp>24 C</gpu_temp>", "<gpu_temp>N/A</gpu_temp>", 1)  # GPU 1: no reading
    [f] = findings(hs.answered(tmp_path / "s", text), "CLK001")
    assert [e.excerpt for e in f.evidence] == ["GPU 0: none active, 24C", "GPU 1: sw_power_cap, sw_thermal_slowdown"]
    assert f.detail.startswith("GPU 1 reports: the driver holds the clocks down")
