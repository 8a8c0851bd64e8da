"""CUDA_VISIBLE_DEVICES parsing and mapping (gpudoctor.visible_devices), with seeded property tests."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpudoctor import smi
from gpudoctor import visible_devices as vd


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"


def _recorded(name: str):
    return smi.parse((FIXTURES / name).read_text(encoding="utf-8")).gpus


# 4 x Tesla V100, GPU-c4f7ca3e / GPU-734eb6b1 / GPU-c141de25 / GPU-bbe70036 (two share the prefix "GPU-c")
V100 = _recorded("text/tesla-v100-pcie-16gb-x4_driver-460.32.03_cuda-11.2_query-q.txt")
# 8 x H100 in MIG mode, 7 x 1g.10gb instances each, from `nvidia-smi -L`
H100_MIG = _recorded("text/h100-80gb-hbm3-x8_mig-1g.10gb-x7_list-gpus-L.txt")


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: str


def visible(raw, gpus=V100, order=None):
    return [v.gpu.index for v in vd.resolve(vd.parse(raw), gpus, order).visible]


def codes(raw, gpus=V100):
    return [p.code for p in vd.resolve(vd.parse(raw), gpus).problems]


@pytest.mark.parametrize("raw, expected", [
    (None, [0, 1, 2, 3]),
    ("", []),
    ("-1", []),
    ("2,1", [2, 1]),                 # the programming guide's example: 2 is enumerated before 1
    ("0,2,-1,1", [0, 2]),            # and this one: -1 ends the list
    ("1gpu2,2ampere", [1, 2]),       # strtoul keeps the leading digits (torch's comment)
    (" 1, 3", [1, 3]),               # leading blanks are skipped before a number
    ("0,x,1", [0]),
    ("0,1,0", []),                   # a repeated ordinal hides everything
    ("0,7,1", [0]),                  # 7 does not exist: the list ends there
    ("5", []),
    ("+1", [1]),
])
def test_index_lists(raw, expected):
    assert visible(raw) == expected


def test_empty_string_hides_everything_with_a_reason():
    m = vd.resolve(vd.parse(""), V100)
    assert m.hides_all and [p.code for p in m.problems] == ["empty"]


def test_truncation_names_the_dropped_entries():
    spec = vd.parse("0,2,-1,1,3")
    assert spec.entries == ("0", "2") and spec.ignored == ("-1", "1", "3")
    msg = spec.problems[-1].message
    assert "'-1' is negative" in msg and "1, 3 after it are ignored too" in msg
    assert not spec.problems[-1].hides_all


def test_invalid_first_entry_hides_all():
    spec = vd.parse("gpu0,1")
    assert spec.entries == () and spec.problems[0].code == "invalid" and spec.problems[0].hides_all


def test_lenient_and_space_notes_do_not_drop_gpus():
    assert codes("1gpu2") == ["lenient"]
    assert codes(" 1, 3") == ["spaces"]   # reported once, not per entry


def test_beyond_count_message_counts_the_machines_gpus():
    m = vd.resolve(vd.parse("0,7,1"), V100)
    beyond = [p for p in m.problems if p.code == "beyond_count"][0]
    assert beyond.message == "GPU 7 does not exist: this machine shows 4 GPU(s), numbered 0 to 3; 1 after it is ignored"
    assert not beyond.hides_all
    assert vd.resolve(vd.parse("4"), V100).problems[0].hides_all


@pytest.mark.parametrize("raw, expected", [
    ("GPU-734eb6b1", [1]),                                      # a unique prefix is enough
    ("GPU-734eb6b1-0b19-e9c0-cdea-7eb873e2ff57,GPU-c4f7", [1, 0]),
    ("GPU-c", []),                                              # ambiguous: c4f7ca3e and c141de25
    ("GPU-c14,GPU-c,GPU-734e", [2]),                            # ambiguity ends the list
    ("GPU-deadbeef", []),
    ("GPU-734e,GPU-734eb6b1", []),                              # two prefixes of the same GPU
    ("GPU-734e,1", [1]),                                        # an index inside a UUID list ends it
    ("GPU-734e, GPU-c4f7", [1]),                                # so does a space before GPU-
])
def test_uuid_lists(raw, expected):
    assert visible(raw) == expected


def test_uuid_problem_codes():
    assert codes("GPU-c") == ["ambiguous_uuid"]
    assert codes("GPU-deadbeef") == ["unknown_uuid"]
    assert codes("GPU-734e, GPU-c4f7") == ["invalid"]   # unlike before an index, a space here drops GPUs
    assert codes("GPU-734e,GPU-734e") == ["duplicate"]


def test_mig_uuid_selects_the_instance_and_only_one():
    m = vd.resolve(vd.parse("MIG-7d8b2e8d,MIG-4d0efb7d"), H100_MIG)
    assert [(v.gpu.index, v.mig.uuid, v.mig.profile) for v in m.visible] == [
        (0, "MIG-7d8b2e8d-57ea-5fe3-83bc-2026e5cb10fb", "1g.10gb")]
    assert [p.code for p in m.problems] == ["mig_single"]


def test_mig_uuid_on_another_gpu_and_unknown_mig():
    assert visible("MIG-ec4af7a3", H100_MIG) == [0]
    assert codes("MIG-00000000", H100_MIG) == ["unknown_uuid"]
    assert visible("GPU-7e7d2a20", H100_MIG) == [1]   # the GPU's own UUID still names the GPU


def test_device_order_values():
    assert vd.device_order(None) == ("FASTEST_FIRST", None)
    assert vd.device_order("PCI_BUS_ID") == ("PCI_BUS_ID", None)
    order, problem = vd.device_order("pci_bus_id")   # CUDA compares the exact text
    assert order == "FASTEST_FIRST" and problem.code == "bad_order"


def test_order_is_known_only_for_pci_order_or_identical_gpus():
    mixed = [Gpu(0, "GeForce RTX 2070", "GPU-aaaa"), Gpu(1, "GeForce GTX 750 Ti", "GPU-bbbb")]
    assert not vd.resolve(vd.parse(None), mixed).order_known
    assert vd.resolve(vd.parse(None), mixed, "PCI_BUS_ID").order_known
    assert vd.resolve(vd.parse(None), V100).order_known


# --- properties, over seeded random values built from the pieces users actually type -----

PIECES = ["0", "1", "2", "3", "7", "-1", " 2", "1gpu", "x", "", "GPU-734e", "GPU-c", "GPU-c4f7ca3e", "MIG-7d8b"]


def _random_values(n=400, seed=20261122):
    rng = random.Random(seed)
    for _ in range(n):
        yield ",".join(rng.choice(PIECES) for _ in range(rng.randint(1, 5)))


@pytest.mark.parametrize("raw", list(_random_values()))
def test_properties(raw):
    spec = vd.parse(raw)
    m = vd.resolve(spec, V100)
    indices = [v.gpu.index for v in m.visible]
    assert len(indices) == len(set(indices))                       # never the same GPU twice
    assert len(indices) <= len(V100)
    assert [v.cuda_index for v in m.visible] == list(range(len(indices)))  # renumbered from 0
    assert all(0 <= i < len(V100) for i in indices)
    if spec.mode == "index":                                       # visible GPUs follow the list's order
        assert [str(i) for i in indices] == list(spec.entries[:len(indices)])
    if not indices:                                                # an empty result always says why
        assert any(p.hides_all for p in m.problems), (raw, m.problems)
    assert vd.resolve(vd.parse(raw), V100) == m                   # deterministic


def test_pre_r470_mig_form_names_the_parent_gpu_and_instance_ids():
    a100 = _recorded("xml/a100-sxm4-40gb_driver-510.47.03_cuda-11.6_mig.xml")   # MIG on, GI 1 and 2
    m = vd.resolve(vd.parse(f"MIG-{a100[0].uuid}/2/0"), a100)
    assert [(v.gpu.index, v.mig.gi_id, v.mig.ci_id) for v in m.visible] == [(0, 2, 0)]
    assert visible(f"MIG-{a100[0].uuid}/9/0", a100) == []
