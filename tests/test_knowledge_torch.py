"""PyTorch release table: facts from compat.md / RELEASE.md and the variant recommender."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from gpudoctor.knowledge import arch_covers, torch_local_variant, torch_release, torch_variants_for
from gpudoctor.knowledge._load import load


def _names(variants):
    return [v.name for v in variants]


def test_every_release_from_1_12_to_2_15_is_listed():
    wanted = ["1.12", "1.13"] + [f"2.{m}" for m in range(0, 16)]
    assert [r["version"] for r in load("torch_releases")["releases"]] == wanted


def test_python_ranges_are_specifier_sets_and_default_variant_exists():
    for row in load("torch_releases")["releases"]:
        SpecifierSet(row["python"])
        assert row["default_variant"] in row["variants"], row["version"]
        assert row["variants"][row["default_variant"]]["cuda"] == row["default_cuda"], row["version"]
        assert "cpu" in row["variants"]


@pytest.mark.parametrize("version", ["2.3.1+cu121", "2.3.1", "2.3", "2.3.0.dev20240101+cu118"])
def test_torch_release_matches_by_major_minor(version):
    rel = torch_release(version)
    assert rel.version == "2.3"
    assert rel.default_cuda == "12.1"
    assert set(rel.variants) == {"cu118", "cu121", "cpu"}


def test_torch_release_fields():
    rel = torch_release("2.13.0+cpu")
    assert Version("3.12") in SpecifierSet(rel.python)
    assert Version("3.9") not in SpecifierSet(rel.python)
    assert rel.default_cuda == "13.0"
    cu130 = rel.variants["cu130"]
    assert cu130.cuda == "13.0" and cu130.index_url == "https://download.pytorch.org/whl/cu130"
    assert rel.variants["cpu"].index_url == "https://download.pytorch.org/whl/cpu"
    assert rel.variants["cpu"].cuda is None


def test_2_7_default_wheel_lacks_sm_120_but_cu128_has_it():
    rel = torch_release("2.7.0")
    assert "sm_120" not in rel.default_archs
    assert "sm_120" in rel.variants["cu128"].archs
    assert "sm_70" not in rel.variants["cu128"].archs  # 2.7's cu128 build dropped Volta


def test_cu128_arch_list_differs_by_release():
    archs = {v: torch_release(v).variants["cu128"].archs for v in ("2.7", "2.8", "2.10", "2.11")}
    assert "sm_70" not in archs["2.7"] and "sm_70" in archs["2.8"] and "sm_70" in archs["2.10"]
    assert "sm_70" not in archs["2.11"]
    assert torch_release("2.12").variants.get("cu128") is None


def test_2_11_default_lacks_volta_and_pascal():
    default = torch_release("2.11.0").default_archs
    assert "sm_70" not in default and "sm_60" not in default
    assert not arch_covers(default, "7.0")
    assert arch_covers(torch_release("2.10.0").default_archs, "7.0")


def test_default_cuda_history():
    assert [torch_release(v).default_cuda for v in ("1.12", "2.0", "2.1", "2.5", "2.7", "2.8", "2.11", "2.14", "2.15")] \
        == ["10.2", "11.7", "12.1", "12.4", "12.6", "12.8", "13.0", "13.0", "13.2"]


def test_variants_for_rtx_50_on_2_7():
    assert _names(torch_variants_for("2.7.0", "570.124.06", "12.0"))[0] == "cu128"
    assert _names(torch_variants_for("2.7.0", "570.124.06", "12.0")) == ["cu128"]


def test_variants_for_v100_on_2_13_needs_cu126():
    assert _names(torch_variants_for("2.13.0", "535.104.05", "7.0")) == ["cu126"]


def test_variants_for_newest_cuda_first():
    assert _names(torch_variants_for("2.13.0", "580.95.05", "8.6")) == ["cu132", "cu130", "cu126"]


def test_variants_for_old_driver_excludes_cuda_13():
    assert _names(torch_variants_for("2.14.0", "570.124.06", "8.9")) == ["cu126"]
    assert torch_variants_for("2.14.0", "470.82.01", "8.9") == []


def test_variants_for_filters_are_optional():
    assert _names(torch_variants_for("2.6.0", None, None)) == ["cu126", "cu124", "cu118"]
    assert _names(torch_variants_for("2.6.0", None, "3.7")) == ["cu118"]


def test_variants_for_unknown_release_is_empty():
    assert torch_variants_for("9.9.0", "580.95.05", "8.6") == []
    assert torch_release("0.4.1") is None


def test_windows_variants_have_no_ptx_where_linux_only():
    assert "compute_120" in torch_release("2.13").variants["cu130"].archs
    assert "compute_120" not in torch_release("2.13", os="windows").variants["cu130"].archs


@pytest.mark.parametrize("version,expected", [("2.3.1+cu121", "cu121"), ("2.13.0+cpu", "cpu"), ("2.13.0", None),
                                              ("2.6.0+rocm6.2.4", "rocm6.2.4")])
def test_torch_local_variant(version, expected):
    assert torch_local_variant(version) == expected


@pytest.mark.parametrize("bad", ["torch", "", "2.x"])
def test_invalid_torch_versions_raise(bad):
    with pytest.raises(ValueError):
        torch_release(bad)
    with pytest.raises(ValueError):
        torch_local_variant(bad)


def test_release_objects_are_read_only():
    rel = torch_release("2.8")
    with pytest.raises(TypeError):
        rel.variants["cu999"] = None  # type: ignore[index]
    with pytest.raises(Exception):
        rel.default_cuda = "1"  # type: ignore[misc]
