"""Ways out of a torch build that does not fit the machine (gpudoctor/remedies.py), on recorded machines."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from gpudoctor.facts import Facts
from gpudoctor.remedies import WheelArchs, driver_blocked, torch_archs, torch_ways, uncovered
from gpudoctor.snapshot_folder import load
from tests.scenarios import SCENARIOS


def _facts(name: str) -> Facts:
    return Facts(load(str(SCENARIOS / name / "snapshot")))


def _gpu(cc, name="GPU X", index=0):
    return SimpleNamespace(compute_cap=cc, name=name, index=index)


def test_torchs_own_arch_list_wins():
    tb = _facts("fw-torch-recent-on-p100").get("torch_build")
    assert torch_archs(tb, "linux") == WheelArchs(("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
                                                  "torch.cuda.get_arch_list()")


def test_a_silent_torch_is_answered_by_the_wheel_table():
    tb = _facts("fw-torch-archs-silent-p100-cu128").get("torch_build")
    assert tb.arch_list == ()
    got = torch_archs(tb, "linux")
    assert got.archs == ("sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
    assert got.source == ("gpudoctor's table of torch 2.8 cu128 wheels "
                          "(https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_cuda.sh)")


def test_the_table_answers_only_for_a_wheel_it_knows_with_the_same_cuda_major():
    tb = _facts("fw-torch-archs-silent-t4-cu124").get("torch_build")
    assert torch_archs(tb, "linux").archs == ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
    assert torch_archs(replace(tb, cuda="11.8"), "linux") is None         # cu124 tag, CUDA 11 runtime: not that wheel
    assert torch_archs(replace(tb, cuda=None), "linux") is None
    assert torch_archs(replace(tb, version="2.5.1+cu999"), "linux") is None   # no such variant
    assert torch_archs(replace(tb, version="0.1.0+cu124"), "linux") is None   # no such release
    assert torch_archs(replace(tb, version="not a version"), "linux") is None
    # no local tag: the release's default wheel (2.5: cu124), whose CUDA must still match
    assert torch_archs(replace(tb, version="2.5.1"), "linux").archs[:2] == ("sm_50", "sm_60")
    assert torch_archs(replace(tb, version="2.5.1+cpu"), "linux") is None  # the CPU wheel has no CUDA


def test_uncovered_names_the_gpus_without_kernels_and_trusts_an_unknown_list():
    p100, t4, nocc = _gpu("6.0", "P100"), _gpu("7.5", "T4"), _gpu(None, "?")
    archs = WheelArchs(("sm_70", "sm_75"), "x")
    assert uncovered([p100, t4, nocc], archs) == [p100]
    assert uncovered([p100], None) == []
    assert uncovered([t4], WheelArchs(("compute_70",), "x")) == []    # PTX for 7.0 is JIT-compiled on 7.5
    assert uncovered([t4], WheelArchs(("compute_80",), "x")) == [t4]  # but not PTX for a newer GPU
    assert uncovered([_gpu("8.6")], WheelArchs(("sm_80",), "x")) == []   # same major: binary compatible
    assert uncovered([_gpu("8.0")], WheelArchs(("sm_86",), "x")) != []


@pytest.mark.parametrize("need, blocked", [("580.65.06", None), ("575.51.03", None), ("590.44.01", True)])
def test_a_pascal_gpu_runs_drivers_up_to_the_580_branch(need, blocked):
    gpus = [_gpu("8.6", "RTX 3060"), _gpu("6.0", "Tesla P100-PCIE-16GB", index=1)]
    got = driver_blocked(gpus, need)
    if blocked is None:
        assert got is None
    else:
        assert got == "Tesla P100-PCIE-16GB (Maxwell, Pascal and Volta) is supported only up to the R580 driver branch"


def test_a_gpu_without_a_name_is_named_by_its_index():
    assert driver_blocked([_gpu("3.5", name=None, index=2)], "525.60.13") == \
        "GPU 2 (Kepler) is supported only up to the R470 driver branch"
    assert driver_blocked([_gpu("9.0", "H100")], "999.1") is None


def test_no_kernels_means_no_driver_helps_and_another_build_is_offered():
    f = _facts("fw-torch-recent-on-p100")
    ways = torch_ways(f, f.get("torch_build"), "580.65.06")
    assert ways.driver_blocked == "torch 2.11.0+cu130 has no kernels for Tesla P100-PCIE-16GB (sm_60), whatever the driver"
    assert (ways.build.release, ways.build.variant.name, ways.build.same_release) == ("2.7", "cu118", False)


def test_an_old_driver_with_kernels_is_not_blocked_and_the_same_release_fits():
    f = _facts("fw-torch-cu121-old-driver-515")
    ways = torch_ways(f, f.get("torch_build"), "525.60.13")
    assert ways.driver_blocked is None
    assert (ways.build.release, ways.build.variant.name, ways.build.same_release) == ("2.3.1", "cu118", True)
    assert torch_ways(f, f.get("torch_build"), None).driver_blocked is None


def test_a_needed_driver_the_gpu_cannot_run_blocks_the_driver_way():
    f = _facts("fw-torch-archs-silent-t4-cu124")
    tb = f.get("torch_build")
    facts = {"gpus": [_gpu("6.1", "GTX 1080")], "driver_version": f.get("driver_version"), "target_os": "linux",
             "torch": f.get("torch")}
    ways = torch_ways(SimpleNamespace(get=lambda k, d=None: facts.get(k, d)), tb, "590.44.01")
    assert ways.driver_blocked == "GTX 1080 (Maxwell, Pascal and Volta) is supported only up to the R580 driver branch"
    # the build must run on this driver (515) and on the GTX 1080: 2.5.1 cu118 does
    assert (ways.build.release, ways.build.variant.name) == ("2.5.1", "cu118")


def test_the_build_is_chosen_for_every_gpu_the_driver_and_the_os():
    f = _facts("fw-torch-old-wheel-on-rtx3060-laptop")
    ways = torch_ways(f, f.get("torch_build"), None)
    assert ways.driver_blocked == ("torch 1.12.1+cu102 has no kernels for NVIDIA GeForce RTX 3060 Laptop GPU "
                                   "(sm_86), whatever the driver")
    assert (ways.build.release, ways.build.variant.name) == ("1.12.1", "cu116")
    facts = {"gpus": [], "driver_version": None, "target_os": "linux", "torch": None}
    none = torch_ways(SimpleNamespace(get=lambda k, d=None: facts.get(k, d)), f.get("torch_build"), None)
    assert none.driver_blocked is None and none.build.release == "1.12.1"


def _ways(facts: dict, tb, need=None):
    return torch_ways(SimpleNamespace(get=lambda k, d=None: facts.get(k, d)), tb, need)


def test_the_os_decides_which_wheel_archs_apply():
    # torch 2.9 cu130 wheels carry PTX for compute 12.0 on Linux only (ptx_linux_only); a GPU of a later
    # major (a hypothetical CC 13.0) runs only that PTX
    tb = replace(_facts("fw-torch-archs-silent-t4-cu124").get("torch_build"), version="2.9.0+cu130", cuda="13.0")
    assert torch_archs(tb, "linux").archs[-1] == "compute_120"
    assert "compute_120" not in torch_archs(tb, "windows").archs
    gpu = _gpu("13.0", "Future GPU")
    linux = {"gpus": [gpu], "driver_version": None, "target_os": "linux"}
    assert _ways(linux, tb).driver_blocked is None
    assert _ways({**linux, "target_os": "windows"}, tb).driver_blocked == \
        "torch 2.9.0+cu130 has no kernels for Future GPU (sm_130), whatever the driver"


def test_every_gpu_without_kernels_is_named_once_in_order():
    tb = _facts("fw-torch-recent-on-p100").get("torch_build")
    gpus = [_gpu("6.0", "Tesla P100", 0), _gpu("6.1", "GTX 1080", 1), _gpu("6.0", "Tesla P100", 2),
            _gpu("8.0", "A100", 3)]
    got = _ways({"gpus": gpus, "target_os": "linux"}, tb).driver_blocked
    assert got == "torch 2.11.0+cu130 has no kernels for GTX 1080 (sm_61), Tesla P100 (sm_60), whatever the driver"


def test_the_build_offered_runs_on_this_python():
    # torch 2.11 has no kernels for the P100 on driver 510: an older release must run on the recorded Python
    f = _facts("fw-torch-recent-on-p100")
    tb = f.get("torch_build")
    facts = {"gpus": f.get("gpus"), "driver_version": f.get("driver_version"), "target_os": "linux"}

    def build(python):
        b = _ways({**facts, "torch": SimpleNamespace(python_version=python)}, tb).build
        return b and (b.release, b.variant.name, b.same_release)

    assert build("3.11.2") == ("2.7", "cu118", False)
    assert build("3.8.10") == ("2.4", "cu118", False)   # torch 2.5 and newer need Python 3.9
    assert build("3.14.0") is None                        # no release with sm_60 kernels has 3.14 wheels
