"""CUDA toolkit <-> driver knowledge: table completeness and facts from compat.md / NVIDIA's table."""

from __future__ import annotations

import pytest
from packaging.version import Version

from gpudoctor.knowledge import (
    cuda_from_driver_api_int,
    max_cuda_for_driver,
    min_driver_for_cuda,
    toolkit_driver,
)
from gpudoctor.knowledge import cuda
from gpudoctor.knowledge._load import load

CLAIMED_MINORS = {
    11: range(0, 9), 12: [0, 1, 2, 3, 4, 5, 6, 8, 9], 13: range(0, 4),
}  # NVIDIA never released a CUDA 12.7


def test_no_gaps_among_claimed_cuda_minors():
    present = {Version(r["toolkit"]).release[:2] for r in load("cuda_drivers")["toolkits"]}
    for major, minors in CLAIMED_MINORS.items():
        for minor in minors:
            assert (major, minor) in present, f"CUDA {major}.{minor} missing"


def test_old_toolkits_present():
    for cuda in ("9.0", "9.1", "9.2", "10.0", "10.1", "10.2"):
        assert toolkit_driver(cuda) is not None, cuda


def test_bundled_driver_never_decreases_within_a_major():
    rows = load("cuda_drivers")["toolkits"]
    for a, b in zip(rows, rows[1:]):
        if Version(a["toolkit"]).major == Version(b["toolkit"]).major:
            assert Version(b["linux_min"]) >= Version(a["linux_min"]), (a["toolkit"], b["toolkit"])


def test_min_driver_minor_compat_12():
    req = min_driver_for_cuda("12.1")
    assert (req.min_driver, req.rule) == ("525.60.13", "minor-compat")
    assert min_driver_for_cuda("12.4").min_driver == "525.60.13"
    assert min_driver_for_cuda("12.4", os="windows").min_driver == "527.41"


def test_min_driver_minor_compat_11_and_13():
    assert min_driver_for_cuda("11.8").min_driver == "450.80.02"
    assert min_driver_for_cuda("11.8", os="wsl").min_driver == "452.39"
    assert min_driver_for_cuda("13.0").min_driver == "580"


def test_min_driver_11_0_is_its_own_older_driver():
    req = min_driver_for_cuda("11.0")
    assert (req.min_driver, req.rule) == ("450.51.05", "toolkit-release")


@pytest.mark.parametrize("cuda,linux,windows", [("10.2", "440.33", "441.22"), ("10.1", "418.39", "418.96"),
                                                ("10.0", "410.48", "411.31"), ("9.2", "396.26", "397.44")])
def test_min_driver_before_11_is_the_toolkit_driver(cuda, linux, windows):
    assert min_driver_for_cuda(cuda).min_driver == linux
    assert min_driver_for_cuda(cuda).rule == "toolkit-release"
    assert min_driver_for_cuda(cuda, os="windows").min_driver == windows


def test_toolkit_driver_exact_releases():
    assert toolkit_driver("12.1").min_driver == "530.30.02"
    assert toolkit_driver("12.8").min_driver == "570.26"
    assert toolkit_driver("12.8.1").min_driver == "570.124.06"
    assert toolkit_driver("12.4.131").min_driver == "550.54.15"  # component version -> newest release not after it
    assert toolkit_driver("12.8", os="windows").min_driver == "570.65"
    assert toolkit_driver("12.1").rule == "toolkit-release"


def test_cuda_13_windows_driver_is_not_bundled():
    row = next(r for r in load("cuda_drivers")["toolkits"] if r["toolkit"] == "13.1.0")
    assert row["windows_min"] is None
    req = toolkit_driver("13.1", os="windows")
    assert req.min_driver == "590" and req.verified is False


@pytest.mark.parametrize("driver,expected", [
    ("470.82.01", "11.4"), ("535.104.05", "12.2"), ("535.54.03", "12.2"), ("525.125.06", "12.0"),
    ("570.124.04", "12.8"), ("590.48.01", "13.1"), ("595.71.05", "13.2"), ("610.57.04", "13.3"),
    ("450.57", "11.0"), ("440.82", "10.2"), ("418.43", "10.1"), ("410.104", "10.0"), ("560.35.03", "12.6"),
    ("550.90.07", "12.4"), ("515.105.01", "11.7"), ("510.47.03", "11.6"), ("460.32.03", "11.2"),
])
def test_max_cuda_for_driver_matches_nvidia_smi_banner(driver, expected):
    # pairs are the "Driver Version / CUDA Version" of the real recordings in fixtures-real
    assert max_cuda_for_driver(driver) == expected


@pytest.mark.parametrize("driver,expected", [("536.40", "12.2"), ("516.59", "11.7"), ("591.86", "13.1"),
                                             ("610.62", "13.3")])
def test_max_cuda_for_windows_driver(driver, expected):
    assert max_cuda_for_driver(driver, os="windows") == expected


def test_driver_versions_compare_numerically_not_as_strings():
    assert max_cuda_for_driver("570.124.06") == "12.8"
    assert max_cuda_for_driver("570.9") == "12.6"  # 570.9 < 570.26 numerically


def test_unknown_inputs_return_none():
    assert max_cuda_for_driver("300.1") is None
    assert toolkit_driver("12.7") is None
    assert min_driver_for_cuda("14.0") is None
    assert min_driver_for_cuda("6.5") is None


@pytest.mark.parametrize("bad", ["abc", "", "N/A", "12.x"])
def test_invalid_versions_raise_value_error(bad):
    with pytest.raises(ValueError):
        min_driver_for_cuda(bad)
    with pytest.raises(ValueError):
        max_cuda_for_driver(bad)


def test_unknown_os_raises():
    with pytest.raises(ValueError):
        toolkit_driver("12.1", os="macos")


@pytest.mark.parametrize("n,expected", [(11040, "11.4"), (12080, "12.8"), (13020, "13.2"), (10020, "10.2"),
                                        (9000, "9.0")])
def test_cuda_from_driver_api_int(n, expected):
    assert cuda_from_driver_api_int(n) == expected


@pytest.mark.parametrize("bad", [-1, 0, 999, True, "11040"])
def test_cuda_from_driver_api_int_rejects_garbage(bad):
    with pytest.raises(ValueError):
        cuda_from_driver_api_int(bad)


def test_requirements_are_frozen_and_sourced():
    req = min_driver_for_cuda("12.4")
    with pytest.raises(Exception):
        req.min_driver = "1"  # type: ignore[misc]
    assert req.source.startswith("https://")


# --- legacy driver branches: the last driver an old GPU generation can run ---------------------------------

KEPLER = ("Kepler", 470, "470.239.06", "https://forums.developer.nvidia.com/t/current-graphics-driver-releases/28500")
MAXWELL_VOLTA = ("Maxwell, Pascal and Volta", 580, None, "https://wiki.nixos.org/wiki/NVIDIA")


@pytest.mark.parametrize("cc, branch", [
    ("2.1", ("Fermi", 390, "390.157", KEPLER[3])), ("3.0", KEPLER), ("3.7", KEPLER), ("5.0", MAXWELL_VOLTA),
    ("7.2", MAXWELL_VOLTA), ("7.5", None), ("12.0", None), (None, None), ("", None),
])
def test_legacy_branch_of_each_generation(cc, branch):
    got = cuda.legacy_branch(cc)
    assert (None if got is None else (got.architecture, got.last_branch, got.last_release, got.source)) == branch


@pytest.mark.parametrize("driver, cc, possible", [
    ("470.57.02", "3.7", True), ("470", "3.7", True), ("471.1", "3.7", False), ("580.65.06", "6.1", True),
    ("590.1", "7.0", False), ("590.1", "7.5", True), ("999.1", None, True),
])
def test_a_driver_is_possible_up_to_the_last_branch_of_the_gpus_generation(driver, cc, possible):
    assert cuda.driver_possible(driver, cc) is possible


def test_legacy_branch_inputs_that_are_not_versions_say_which_value():
    with pytest.raises(ValueError, match="^not a valid compute capability: 'x'$"):
        cuda.legacy_branch("x")
    with pytest.raises(ValueError, match="^not a valid driver version: 'abc'$"):
        cuda.driver_possible("abc", "3.7")
