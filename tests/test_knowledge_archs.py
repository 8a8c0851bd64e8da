"""Kernel-compatibility rule (SASS / PTX / Tegra) and toolkit target ranges."""

from __future__ import annotations

import pytest

from gpudoctor.knowledge import arch_covers, toolkit_supports_cc
from gpudoctor.knowledge.archs import parse_arch


@pytest.mark.parametrize("archs,cc,expected", [
    (["sm_80"], "8.6", True),
    (["sm_80"], "8.9", True),
    (["sm_80"], "8.7", False),          # Jetson Orin only runs its own SASS
    (["sm_87"], "8.9", False),          # and its SASS runs nowhere else
    (["sm_87"], "8.7", True),
    (["compute_90"], "12.0", True),     # PTX JIT-compiles forward
    (["compute_90"], "8.9", False),
    (["sm_90"], "10.0", False),         # SASS never crosses a major
    (["sm_120"], "12.1", True),
    (["sm_90a"], "9.0", True),
    (["sm_90a"], "9.1", False),
    (["sm_100f"], "10.3", True),
    (["sm_101"], "11.0", True),         # torch's rule for Thor under CUDA 13
    (["sm_50", "sm_60", "sm_70"], "5.3", False),
    (["8.0"], "8.6", True),
    (["8.0+PTX"], "9.0", True),
    (["8.0"], "9.0", False),
    ([], "8.0", False),
])
def test_arch_covers(archs, cc, expected):
    assert arch_covers(archs, cc) is expected


def test_torch_2_7_default_wheel_vs_rtx_50():
    default_2_7 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    assert arch_covers(default_2_7, "12.0") is False
    assert arch_covers(default_2_7, (8, 6)) is True


@pytest.mark.parametrize("bad", ["sm_", "gfx90a", "sm_8", "", "compute_x"])
def test_bad_arch_strings_raise(bad):
    with pytest.raises(ValueError):
        parse_arch(bad)


@pytest.mark.parametrize("bad", ["abc", "86", "8"])
def test_bad_compute_cap_raises(bad):
    with pytest.raises(ValueError):
        arch_covers(["sm_80"], bad)


@pytest.mark.parametrize("cuda,cc,expected", [
    ("13.0", "7.0", False), ("12.9", "7.0", True), ("13.0", "7.5", True),
    ("12.0", "3.5", False), ("11.8", "3.7", True), ("11.0", "3.0", False), ("10.2", "3.0", True),
    ("11.8", "8.9", True), ("11.7", "9.0", False), ("12.8", "12.0", True), ("13.2", "12.0", True),
])
def test_toolkit_supports_cc(cuda, cc, expected):
    assert toolkit_supports_cc(cuda, cc) is expected


def test_toolkit_supports_unknown_cc_is_none():
    assert toolkit_supports_cc("12.4", "4.0") is None
