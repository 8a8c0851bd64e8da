"""TensorFlow tested build configurations, and-cuda pins and the Windows GPU cut-off."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from gpudoctor.knowledge import arch_covers, tf_build
from gpudoctor.knowledge._load import load
from gpudoctor.knowledge.tensorflow import tf_windows_native_gpu_last


@pytest.mark.parametrize("version,cuda,cudnn", [("2.10.0", "11.2", "8.1"), ("2.14.0", "11.8", "8.7"),
                                                ("2.15.1", "12.2", "8.9"), ("2.16.1", "12.3", "8.9"),
                                                ("2.18.0", "12.5", "9.3"), ("2.4.0", "11.0", "8.0")])
def test_tested_build_configurations(version, cuda, cudnn):
    build = tf_build(version)
    assert (build.cuda, build.cudnn) == (cuda, cudnn)


def test_python_ranges():
    assert Version("3.12") in SpecifierSet(tf_build("2.16.1").python)
    assert Version("3.12") not in SpecifierSet(tf_build("2.15.0").python)
    assert Version("3.9") not in SpecifierSet(tf_build("2.21.0").python)


def test_windows_native_gpu_ends_with_2_10():
    assert tf_windows_native_gpu_last() == "2.10"
    assert tf_build("2.10.1").windows_native_gpu is True
    assert tf_build("2.11.0").windows_native_gpu is False
    for row in load("tf_builds")["builds"]:
        assert row["windows_native_gpu"] == (Version(row["version"]) < Version("2.11")), row["version"]


def test_and_cuda_pins():
    assert tf_build("2.13.0").and_cuda_pins == {}
    assert tf_build("2.14.0").and_cuda_pins["nvidia-cudnn-cu11"] == "==8.7.0.84"
    assert tf_build("2.18.0").and_cuda_pins["nvidia-cudnn-cu12"] == "==9.3.0.75"
    for row in load("tf_builds")["builds"]:
        for spec in row["and_cuda_pins"].values():
            SpecifierSet(spec)


def test_build_info_archs_leave_hopper_and_blackwell_on_ptx():
    archs = tf_build("2.21.0").archs
    assert arch_covers(archs, "9.0") and arch_covers(archs, "12.0")  # via compute_90 PTX only
    assert not any(a == "sm_90" for a in archs)
    assert not arch_covers(archs, "5.2")  # Maxwell has neither SASS nor PTX


def test_unknown_and_invalid():
    assert tf_build("1.15.0") is None
    with pytest.raises(ValueError):
        tf_build("latest")


@pytest.mark.parametrize("cuda,releases", [
    ("7.5", ("0.7", "0.10")), ("8.0", ("0.11", "1.4")), ("9.0", ("1.5", "1.12")),
    ("10.0", ("1.13", "2.0")),      # 2.0, a row of the builds table, shares 1.13-1.15's CUDA
    ("10.1", None),                 # only 2.1+ used it: they load CUDA lazily, no ImportError names the library
    ("11.2", None), ("9", None), ("", None),
])
def test_releases_built_for_one_exact_cuda(cuda, releases):
    from gpudoctor.knowledge.tensorflow import releases_for_exact_cuda
    assert releases_for_exact_cuda(cuda) == releases


def test_legacy_rows_are_data_with_a_source_and_not_read_by_check():
    rows = load("tf_builds")["legacy_builds"]
    assert {r["version"] for r in rows} >= {"1.15.0", "1.5.0", "1.0.0", "0.7.0"}
    for r in rows:
        assert r["source"].startswith("https://") and r["cuda"].count(".") == 1 and Version(r["version"]) < Version("2")
        assert tf_build(r["version"]) is None          # check's table starts at 2.0
