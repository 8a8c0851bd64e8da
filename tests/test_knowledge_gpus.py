"""GPU name -> compute capability, checked against the spellings real nvidia-smi recordings contain."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpudoctor.knowledge import gpu_info
from gpudoctor.knowledge._load import load
from gpudoctor.knowledge.gpus import _tokens

SMI = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"  # the project's copy of the recordings
# Names that cannot identify a product: a driver older than the GPU, and a name the table cut off too early.
UNKNOWABLE = {"Graphics Device", "NVIDIA GeForce ..."}


@pytest.mark.parametrize("name,cc,arch", [
    ("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6", "Ampere"),
    ("Tesla V100-SXM2-32GB", "7.0", "Volta"),
    ("Tesla V100-PCIE-16GB", "7.0", "Volta"),
    ("Tesla V100-SXM3-32GB", "7.0", "Volta"),
    ("NVIDIA H100 80GB HBM3", "9.0", "Hopper"),
    ("NVIDIA H100 NVL", "9.0", "Hopper"),
    ("NVIDIA H100 PCIe", "9.0", "Hopper"),
    ("NVIDIA H200", "9.0", "Hopper"),
    ("NVIDIA GH200 480GB", "9.0", "Hopper"),
    ("NVIDIA A100-SXM4-40GB", "8.0", "Ampere"),
    ("A100-SXM4-40GB", "8.0", "Ampere"),
    ("NVIDIA A100 80GB PCIe", "8.0", "Ampere"),
    ("NVIDIA A10G", "8.6", "Ampere"),
    ("NVIDIA RTX 4000 SFF Ada Generation", "8.9", "Ada Lovelace"),
    ("NVIDIA RTX 6000 Ada Generation", "8.9", "Ada Lovelace"),
    ("Quadro RTX 6000", "7.5", "Turing"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", "Blackwell"),
    ("NVIDIA GeForce RTX 5090", "12.0", "Blackwell"),
    ("NVIDIA GeForce RTX 4080 SUPER", "8.9", "Ada Lovelace"),
    ("NVIDIA GeForce RTX 2080 SUPER", "7.5", "Turing"),
    ("GeForce GTX 1080 Ti", "6.1", "Pascal"),
    ("GeForce GTX 1660 Ti", "7.5", "Turing"),
    ("GeForce GTX 750 Ti", "5.0", "Maxwell"),
    ("GeForce GTX TITAN X", "5.2", "Maxwell"),
    ("TITAN X (Pascal)", "6.1", "Pascal"),
    ("NVIDIA TITAN V", "7.0", "Volta"),
    ("NVIDIA B200", "10.0", "Blackwell"),
    ("NVIDIA GB200", "10.0", "Blackwell"),
    ("NVIDIA B300", "10.3", "Blackwell"),
    ("Tesla K80", "3.7", "Kepler"),
    ("GRID K520", "3.0", "Kepler"),
    ("Tesla T4", "7.5", "Turing"),
    ("NVIDIA T4", "7.5", "Turing"),
    ("NVIDIA L4", "8.9", "Ada Lovelace"),
    ("Jetson AGX Orin", "8.7", "Ampere"),
    ("NVIDIA GB10", "12.1", "Blackwell"),
])
def test_known_spellings(name, cc, arch):
    info = gpu_info(name)
    assert info is not None, name
    assert (info.compute_cap, info.architecture) == (cc, arch)


def test_gt_730_is_kepler_with_a_warning_about_the_fermi_model():
    info = gpu_info("GeForce GT 730")
    assert info.compute_cap == "3.5" and "2.1" in info.note
    assert gpu_info("GeForce GT 730 DDR3,128bit").compute_cap == "2.1"


@pytest.mark.parametrize("name,cc", [("GeForce GTX 108...", "6.1"), ("Tesla V100-SXM2...", "7.0"),
                                     ("NVIDIA GeForce RTX 2080 ...", "7.5"), ("NVIDIA GeForce RTX 4080 ...", "8.9")])
def test_truncated_names_resolve_when_unambiguous(name, cc):
    assert gpu_info(name).compute_cap == cc


@pytest.mark.parametrize("name", ["NVIDIA GeForce ...", "GeForce GTX TITAN ...", "Graphics Device", "", "   ",
                                  "AMD Radeon RX 7900 XTX", "NVIDIA"])
def test_unknown_names_return_none(name):
    assert gpu_info(name) is None


def test_names_are_unique_and_keys_do_not_collide_across_ccs():
    rows = load("gpus")["gpus"]
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names))
    seen = {}
    for row in rows:
        for spelling in [row["name"]] + row.get("aliases", []):
            key = tuple(_tokens(spelling))
            assert key, spelling
            assert seen.setdefault(key, row["compute_cap"]) == row["compute_cap"], spelling


def test_every_family_of_compat_md_is_covered():
    ccs = {r["compute_cap"] for r in load("gpus")["gpus"]}
    assert {"3.0", "3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7",
            "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"} <= ccs


def _sources_md_names():
    text = (SMI / "SOURCES.md").read_text(encoding="utf-8")
    names = []
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        cell = line.split("|")[4].strip()
        reported = re.search(r'reported as "([^"]+)"', cell)
        if reported:  # "GTX 1660 Ti reported as "Graphics Device""
            names += [cell[: reported.start()].strip(), reported.group(1)]
            continue
        cell = re.sub(r"\s*\([^)]*\)\s*$", "", cell)  # trailing remark: "(MIG mode)", "(Azure; ...)"
        names += [n.strip().strip('"') for n in cell.split(" + ")]
    return names


@pytest.mark.skipif(not SMI.is_dir(), reason="fixtures/nvidia-smi missing")
def test_every_gpu_in_the_real_recordings_table_maps_to_a_cc():
    names = _sources_md_names()
    assert len(set(names)) >= 30
    for name in names:
        if name in UNKNOWABLE:
            assert gpu_info(name) is None, name
        else:
            assert gpu_info(name) is not None, f"{name!r} from SOURCES.md has no CC"


@pytest.mark.skipif(not SMI.is_dir(), reason="fixtures/nvidia-smi missing")
def test_every_product_name_printed_in_the_recordings_maps_to_a_cc():
    pattern = re.compile(r"<product_name>([^<]+)</product_name>|^\s*Product Name\s*:\s*(.+?)\s*$|"
                         r"^GPU \d+: (.+?) \(UUID", re.M)
    seen = set()
    for path in SMI.rglob("*"):
        if path.is_file() and path.name != "SOURCES.md":
            for m in pattern.finditer(path.read_text(encoding="utf-8", errors="replace")):
                seen.add(next(g for g in m.groups() if g).strip())
    assert len(seen) >= 20
    for name in seen - UNKNOWABLE:
        assert gpu_info(name) is not None, f"{name!r} printed by nvidia-smi has no CC"
