"""CUDA_VISIBLE_DEVICES parsing and mapping (gpudoctor.visible_devices), with seeded property tests."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional
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


# --- the mapping as the report carries it, and one entry on its own ---------------------------

def test_to_dict_of_an_index_list_on_four_v100s():
    d = vd.resolve(vd.parse("2,0"), V100).to_dict()
    assert {k: d[k] for k in ("cuda_visible_devices", "mode", "order", "order_source", "certain", "order_known",
                              "problems")} == {
        "cuda_visible_devices": "2,0", "mode": "index", "order": "FASTEST_FIRST", "order_source": "pci_order",
        "certain": True, "order_known": True, "problems": []}
    assert d["visible"][0] == {
        "cuda_index": 0, "entry": "2", "gpu_index": 2, "name": "Tesla V100-PCIE-16GB",
        "uuid": "GPU-c141de25-4738-ed72-538d-21ffd71597f9", "pci_bus_id": "00000003:00:00.0", "compute_cap": None,
        "mig_enabled": False, "mig_uuid": None, "mig": None}
    assert [(v["cuda_index"], v["entry"], v["gpu_index"]) for v in d["visible"]] == [(0, "2", 2), (1, "0", 0)]
    assert d["hidden"] == [
        {"gpu_index": 1, "name": "Tesla V100-PCIE-16GB", "pci_bus_id": "00000002:00:00.0",
         "uuid": "GPU-734eb6b1-0b19-e9c0-cdea-7eb873e2ff57", "compute_cap": None},
        {"gpu_index": 3, "name": "Tesla V100-PCIE-16GB", "pci_bus_id": "00000004:00:00.0",
         "uuid": "GPU-bbe70036-e852-8f8e-afef-a839975c9b5e", "compute_cap": None}]


def test_to_dict_names_the_problems_and_the_mig_instance():
    d = vd.resolve(vd.parse("0,9"), V100, "pci").to_dict()
    assert d["problems"] == [
        {"code": "bad_order", "hides_all": False,
         "message": "CUDA_DEVICE_ORDER='pci' is neither FASTEST_FIRST nor PCI_BUS_ID; CUDA ignores it and "
                    "numbers the fastest GPU first"},
        {"code": "beyond_count", "hides_all": False,
         "message": "GPU 9 does not exist: this machine shows 4 GPU(s), numbered 0 to 3"}]
    a100 = _recorded("xml/a100-sxm4-40gb_driver-510.47.03_cuda-11.6_mig.xml")
    (v,) = vd.resolve(vd.parse(f"MIG-{a100[0].uuid}/2/0"), a100).to_dict()["visible"]   # the pre-R470 form
    assert v["mig_enabled"] is True and v["mig_uuid"] is None   # this XML gives the instances no UUID
    assert v["mig"] == {"uuid": None, "profile": None, "gi_id": 2, "ci_id": 0}
    (v,) = vd.resolve(vd.parse("MIG-7d8b2e8d"), H100_MIG).to_dict()["visible"]
    assert (v["gpu_index"], v["mig_enabled"], v["mig_uuid"]) == (0, True, "MIG-7d8b2e8d-57ea-5fe3-83bc-2026e5cb10fb")
    assert v["mig"] == {"uuid": "MIG-7d8b2e8d-57ea-5fe3-83bc-2026e5cb10fb", "profile": "1g.10gb", "gi_id": None,
                        "ci_id": None}


def test_to_dict_of_a_fastest_first_guess_on_a_recorded_workstation():
    from tests.scenarios import SCENARIOS, report_for

    d = report_for(SCENARIOS / "fw-cvd-fastest-first-slow-card-first").devices
    assert (d["order_source"], d["certain"], d["order_known"]) == ("compute_capability", False, False)
    assert [(v["gpu_index"], v["name"], v["compute_cap"]) for v in d["visible"]] == [(1, "NVIDIA GeForce RTX 3090", "8.6")]
    assert d["hidden"] == [{"gpu_index": 0, "name": "Quadro P2000", "pci_bus_id": "00000000:17:00.0",
                            "uuid": "GPU-396caaed-39ca-3199-2e68-717cdb786ec6", "compute_cap": "6.1"}]


def test_gpu_for_names_the_gpu_one_entry_selects_alone():
    m = vd.resolve(vd.parse("0,0"), V100)   # the whole list hides everything; each entry alone does not
    assert m.hides_all and m.physical_count == 4
    assert m.gpu_for("2") is V100[2] and m.gpu_for(" 3 ") is V100[3] and m.gpu_for("GPU-734e") is V100[1]
    assert m.gpu_for("GPU-c") is None and m.gpu_for("9") is None and m.gpu_for("x") is None
    assert not vd.resolve(vd.parse(""), []).hides_all   # no GPU at all: nothing is hidden


# --- CUDA's enumeration order -------------------------------------------------------------------

@dataclass(frozen=True)
class CcGpu:
    index: int
    name: str
    compute_cap: object
    uuid: str = ""


def test_fastest_first_ranks_the_newest_architecture_first_and_unknowns_last():
    p2000, rtx, a100, odd = (CcGpu(0, "Quadro P2000", "6.1"), CcGpu(1, "RTX 3090", "8.6"),
                             CcGpu(2, "A100", "8.0"), CcGpu(3, "Mystery", None))
    ordered, source = vd.cuda_order([p2000, odd, rtx, a100], "FASTEST_FIRST")
    assert [g.index for g in ordered] == [1, 2, 0, 3] and source == "unknown"   # an unknown capability
    ordered, source = vd.cuda_order([p2000, rtx, a100], "FASTEST_FIRST")
    assert [g.index for g in ordered] == [1, 2, 0] and source == "compute_capability"
    assert vd.cuda_order([p2000, CcGpu(4, "Quadro P5000", "6.1")], "FASTEST_FIRST")[1] == "unknown"  # same CC
    assert vd.cuda_order([p2000, rtx], "PCI_BUS_ID") == ([p2000, rtx], "pci_order")
    assert vd.cuda_order([CcGpu(0, "X", "8.6"), CcGpu(1, "Y", "8.10")], "FASTEST_FIRST")[0][0].index == 1
    assert vd.cuda_order([CcGpu(0, "X", "8"), CcGpu(1, "Y", "9.0")], "FASTEST_FIRST")[0][0].index == 1
    assert [g.index for g in vd.cuda_order([CcGpu(0, "X", "sm"), CcGpu(1, "Y", "5.0")], "FASTEST_FIRST")[0]] \
        == [1, 0]


def test_an_observed_order_wins_when_it_names_every_gpu_once():
    a, b = CcGpu(0, "Quadro P2000", "6.1", "GPU-AAAA"), CcGpu(1, "RTX 3090", "8.6", "GPU-bbbb")
    assert vd.cuda_order([a, b], "FASTEST_FIRST", ["gpu-aaaa", "GPU-BBBB"]) == ([a, b], "observed")
    assert vd.cuda_order([a, b], "FASTEST_FIRST", ["GPU-bbbb", "GPU-aaaa"]) == ([b, a], "observed")
    for partial in (["GPU-aaaa"], ["GPU-aaaa", "GPU-aaaa"], ["GPU-aaaa", "GPU-cccc"], ["GPU-aaaa", None], []):
        assert vd.cuda_order([a, b], "FASTEST_FIRST", partial) == ([b, a], "compute_capability")
    m = vd.resolve(vd.parse("0"), [a, b], None, ["GPU-aaaa", "GPU-bbbb"])
    assert (m.order_source, m.certain, m.order_known, [v.gpu for v in m.visible]) == ("observed", True, True, [a])
    m = vd.resolve(vd.parse("0"), [a, b], None, ["GPU-bbbb", "GPU-aaaa"])
    assert (m.certain, m.order_known, [v.gpu for v in m.visible], m.cuda_order) == (True, False, [b], (b, a))


# --- exact readings and messages -----------------------------------------------------------------

P = vd.Problem


@pytest.mark.parametrize("raw, mode, entries, ignored, problems", [
    ("GPU-734e,GPU-734e", "uuid", (), ("GPU-734e", "GPU-734e"),
     (P("duplicate", "GPU-734e is listed twice, which makes CUDA show no GPU at all", True),)),
    ("GPU-734e, GPU-c4f7,3", "uuid", ("GPU-734e",), ("GPU-c4f7", "3"),
     (P("invalid", "' GPU-c4f7' starts with a space, so it is not read as a UUID: CUDA stops there and ignores "
                   "GPU-c4f7, 3; remove the spaces"),)),
    ("GPU-734e,3,GPU-x", "uuid", ("GPU-734e",), ("3", "GPU-x"),
     (P("invalid", "'3' does not start with GPU-: in a UUID list CUDA stops there and ignores 3, GPU-x"),)),
    ("MIG-aa,MIG-bb,MIG-cc", "mig", ("MIG-aa", "MIG-bb", "MIG-cc"), (),
     (P("mig_single", "a CUDA process enumerates one MIG instance only: MIG-aa is used, MIG-bb, MIG-cc not"),)),
    ("MIG-aa", "mig", ("MIG-aa",), (), ()),
    ("MIG-aa,GPU-bb", "mig", ("MIG-aa",), ("GPU-bb",),
     (P("invalid", "'GPU-bb' does not start with MIG-: in a UUID list CUDA stops there and ignores GPU-bb"),)),
    ("0,x,1,2", "index", ("0",), ("x", "1", "2"),
     (P("invalid", "'x' is neither a GPU index nor a GPU-/MIG- UUID: CUDA stops reading the list there "
                   "(1, 2 after it are ignored too)"),)),
    ("0,,1", "index", ("0",), ("", "1"),
     (P("invalid", "an empty entry (two commas in a row, or a trailing comma): CUDA stops reading the list there "
                   "(1 after it is ignored too)"),)),
    ("0,-1", "index", ("0",), ("-1",), (P("negative", "'-1' is negative: CUDA stops reading the list there"),)),
    ("-1,2", "index", (), ("-1", "2"),
     (P("negative", "'-1' is negative: CUDA stops reading the list there and shows no GPU (2 after it is "
                    "ignored too)", True),)),
    ("x", "index", (), ("x",),
     (P("invalid", "'x' is neither a GPU index nor a GPU-/MIG- UUID: CUDA stops reading the list there and "
                   "shows no GPU", True),)),
    (" ", "index", (), ("",), (P("empty", "the variable is set but empty, which hides every GPU", True),)),
    ("0,1,0", "index", (), ("0", "1", "0"),
     (P("duplicate", "GPU 0 is listed twice, which makes CUDA show no GPU at all", True),)),
    ("1gpu, 2", "index", ("1", "2"), (),
     (P("lenient", "'1gpu' is read as 1: CUDA keeps the leading digits and ignores the rest"),
      P("spaces", "'1gpu, 2' contains spaces; CUDA skips them before a number, but not in a UUID list, and many "
                  "launchers do not: remove them"))),
    (" 1, 3,4", "index", ("1", "3", "4"), (),
     (P("spaces", "' 1, 3,4' contains spaces; CUDA skips them before a number, but not in a UUID list, and many "
                  "launchers do not: remove them"),)),
    ("+1,007", "index", ("1", "7"), (),
     (P("lenient", "'007' is read as 7: CUDA keeps the leading digits and ignores the rest"),)),
    ("1," + "9" * 30, "index", ("1", str(2 ** 64 - 1)), (),
     (P("lenient", f"'{'9' * 30}' is read as {2 ** 64 - 1}: CUDA keeps the leading digits and ignores the rest"),)),
])
def test_parse_reads_the_value_exactly(raw, mode, entries, ignored, problems):
    assert vd.parse(raw) == vd.Spec(raw, mode, entries, ignored, problems)


def test_strtoul_saturates_like_c():
    assert vd._strtoul("9" * 25) == 2 ** 64 - 1 and vd._strtoul("-" + "9" * 25) == -(2 ** 64 - 1)
    assert vd._strtoul("0" * 25 + "7") == 7 and vd._strtoul(" +5x") == 5 and vd._strtoul("-0") == 0
    assert vd._strtoul("1" + "0" * 18) == 10 ** 18 and vd._strtoul("x") is None and vd._strtoul("") is None
    assert vd.parse("-" + "9" * 25).problems[0].code == "negative"
    # 20 digits above ULONG_MAX saturate as well (strtoul's ERANGE), the 20-digit ULONG_MAX itself stays
    assert vd._strtoul("9" * 20) == 2 ** 64 - 1 and vd._strtoul("-" + "9" * 20) == -(2 ** 64 - 1)
    assert vd._strtoul(str(2 ** 64 - 1)) == 2 ** 64 - 1 and vd._strtoul(str(2 ** 64)) == 2 ** 64 - 1


@pytest.mark.parametrize("raw, gpus, shown, problems", [
    ("GPU-c,GPU-734e", V100, [],
     [("ambiguous_uuid", "GPU-c is the start of 2 UUIDs: CUDA stops the list there; GPU-734e after it ignored", True)]),
    ("GPU-734e,GPU-dead,GPU-c4f7", V100, [1],
     [("unknown_uuid", "GPU-dead matches no device on this machine: CUDA stops the list there; GPU-c4f7 after it "
                       "ignored", False)]),
    ("GPU-734e,GPU-dead", V100, [1],
     [("unknown_uuid", "GPU-dead matches no device on this machine: CUDA stops the list there", False)]),
    ("GPU-734e,GPU-734eb6b1", V100, [],
     [("duplicate", "GPU-734eb6b1 names a device already listed, which makes CUDA show no GPU at all", True)]),
    ("0,9,1,x", V100, [0],
     [("invalid", "'x' is neither a GPU index nor a GPU-/MIG- UUID: CUDA stops reading the list there", False),
      ("beyond_count", "GPU 9 does not exist: this machine shows 4 GPU(s), numbered 0 to 3; 1, x after it are "
                       "ignored", False)]),
    ("9,1", V100, [],
     [("beyond_count", "GPU 9 does not exist: this machine shows 4 GPU(s), numbered 0 to 3; 1 after it is ignored",
       True)]),
    ("1,9", V100, [1],
     [("beyond_count", "GPU 9 does not exist: this machine shows 4 GPU(s), numbered 0 to 3", False)]),
    ("gpu-734E", V100, [], [("invalid", "'gpu-734E' is neither a GPU index nor a GPU-/MIG- UUID: CUDA stops reading "
                                        "the list there and shows no GPU", True)]),
    ("GPU-734EB6B1", V100, [1], []),   # a UUID prefix matches whatever its case
    ("MIG-7D8B2E8D", H100_MIG, [0], []),
])
def test_resolve_names_each_problem_exactly(raw, gpus, shown, problems):
    m = vd.resolve(vd.parse(raw), gpus)
    assert [v.gpu.index for v in m.visible] == shown
    assert [(p.code, p.message, p.hides_all) for p in m.problems] == problems


def test_a_mig_list_keeps_the_first_instance_and_its_parent():
    m = vd.resolve(vd.parse("MIG-ec4af7a3,MIG-7d8b2e8d"), H100_MIG)
    assert [(v.cuda_index, v.entry, v.gpu.index) for v in m.visible] == [(0, "MIG-ec4af7a3", 0)]
    assert vd.resolve(vd.parse(f"MIG-{H100_MIG[1].uuid}/1/0"), H100_MIG).visible == ()  # -L gives no GI ids


# --- the CVD checks' wording of a mapping (gpudoctor_checks.visible_devices) ----------------------

@dataclass(frozen=True)
class Card:
    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    compute_cap: Optional[str] = None
    mig_devices: tuple = ()


# CUDA numbers these fastest first: cuda:0 is the RTX 2070 at 04:00.0, nvidia-smi's GPU 1
MIXED = [Card(0, "GeForce GTX 750 Ti", None, "00000000:01:00.0", "5.0"),
         Card(1, "GeForce RTX 2070", None, "00000000:04:00.0", "7.5")]
RANKED = ("(CUDA numbers these GPUs fastest first; gpudoctor ranked them by compute capability, set "
          "CUDA_DEVICE_ORDER=PCI_BUS_ID to be sure)")


def test_mapping_lines_name_each_device_a_program_sees():
    from gpudoctor_checks.visible_devices import mapping_lines

    assert mapping_lines(vd.resolve(vd.parse("3,1"), V100)) == [
        "cuda:0 -> GPU 3 Tesla V100-PCIE-16GB (00000004:00:00.0, GPU-bbe70036-e852-8f8e-afef-a839975c9b5e)",
        "cuda:1 -> GPU 1 Tesla V100-PCIE-16GB (00000002:00:00.0, GPU-734eb6b1-0b19-e9c0-cdea-7eb873e2ff57)"]
    assert mapping_lines(vd.resolve(vd.parse("MIG-4d0efb7d-0970-51d9-b761-0686be6b8af3"), H100_MIG)) == [
        "cuda:0 -> MIG 1g.10gb MIG-4d0efb7d-0970-51d9-b761-0686be6b8af3 on GPU 0 NVIDIA H100 80GB HBM3 "
        "(GPU-63d1e50a-b952-d15c-0740-12bc14859142)"]
    assert mapping_lines(vd.resolve(vd.parse("1"), [Card(0), Card(1)])) == ["cuda:0 -> GPU 1 ?"]


def test_mapping_lines_add_the_order_note_when_the_order_matters():
    from gpudoctor_checks.visible_devices import mapping_lines

    assert mapping_lines(vd.resolve(vd.parse(None), MIXED)) == [
        "cuda:0 -> GPU 1 GeForce RTX 2070 (00000000:04:00.0)", "cuda:1 -> GPU 0 GeForce GTX 750 Ti (00000000:01:00.0)",
        RANKED]
    # one device chosen by index: which one the index means depends on the order
    assert mapping_lines(vd.resolve(vd.parse("1"), MIXED)) == ["cuda:0 -> GPU 0 GeForce GTX 750 Ti (00000000:01:00.0)",
                                                               RANKED]
    # one GPU in all: nothing to order
    assert mapping_lines(vd.resolve(vd.parse(None), MIXED[:1])) == [
        "cuda:0 -> GPU 0 GeForce GTX 750 Ti (00000000:01:00.0)"]


def test_the_short_mapping_names_four_devices_at_most():
    from gpudoctor_checks.visible_devices import _short

    assert _short(vd.resolve(vd.parse(None), V100)) == "cuda:0 = GPU 0, cuda:1 = GPU 1, cuda:2 = GPU 2, cuda:3 = GPU 3"
    assert _short(vd.resolve(vd.parse("0,1,2,3,4"), H100_MIG)) == (
        "cuda:0 = GPU 0, cuda:1 = GPU 1, cuda:2 = GPU 2, cuda:3 = GPU 3, ...")


def test_the_suggested_value_names_the_meant_gpus_by_uuid_else_by_index():
    from gpudoctor_checks.visible_devices import _fix, _suggest

    assert _suggest(vd.resolve(vd.parse("2,GPU-734eb6b1,x"), V100)) == (
        "GPU-c141de25-4738-ed72-538d-21ffd71597f9,GPU-734eb6b1-0b19-e9c0-cdea-7eb873e2ff57")
    assert _suggest(vd.resolve(vd.parse("1,,0"), [Card(0), Card(1)])) == "1,0"     # the empty entry ended the list
    assert _suggest(vd.resolve(vd.parse("7"), [Card(0), Card(1)])) == "0"
    # Mixed models without UUIDs: CUDA counts fastest first, so nvidia-smi's index needs PCI order said.
    mixed = [Card(0, "NVIDIA GeForce GTX 1080", compute_cap="6.1"), Card(1, "NVIDIA RTX A6000", compute_cap="8.6")]
    assert vd.resolve(vd.parse("1"), mixed).visible[0].gpu.index == 0   # CUDA's 1 is the slower GPU 0
    assert _suggest(vd.resolve(vd.parse("1"), mixed)) == "0 CUDA_DEVICE_ORDER=PCI_BUS_ID"
    assert _suggest(vd.resolve(vd.parse("1"), mixed, "PCI_BUS_ID")) == "1"
    assert _suggest(vd.resolve(vd.parse("0,1"), [Card(0, "A"), Card(1, "A")])) == "0,1"   # one model: PCI order
    # An index in the value counts in the mapping's order: CUDA_DEVICE_ORDER, or the order a program saw.
    named = [Card(0, "NVIDIA GeForce GTX 1080", "GPU-aaaa0000", compute_cap="6.1"),
             Card(1, "NVIDIA RTX A6000", "GPU-bbbb1111", compute_cap="8.6")]
    assert _suggest(vd.resolve(vd.parse("1,5"), named, "PCI_BUS_ID")) == "GPU-bbbb1111"
    assert _suggest(vd.resolve(vd.parse("1,5"), named)) == "GPU-aaaa0000"   # fastest first: CUDA's 1 is the 1080
    seen = vd.resolve(vd.parse("0,5"), named, observed=["GPU-aaaa0000", "GPU-bbbb1111"])
    assert seen.order_source == "observed" and _suggest(seen) == "GPU-aaaa0000"
    from gpudoctor.facts import Facts
    from gpudoctor.snapshot import Snapshot

    assert _fix(Facts(Snapshot()), None, "x").commands[1] == "export CUDA_VISIBLE_DEVICES=0"
    assert _fix(Facts(Snapshot()), vd.resolve(vd.parse("1,,0"), [Card(0), Card(1)]), "x").commands[1] == (
        "export CUDA_VISIBLE_DEVICES=1,0")


def test_sentences_and_model_counts():
    from gpudoctor_checks.visible_devices import _models, _sentence

    assert (_sentence("cuda:0 is GPU 2"), _sentence("done.")) == ("Cuda:0 is GPU 2.", "Done.")
    assert _models([Card(0), Card(1, "A100"), Card(2, "A100")]) == "1 x unknown GPU and 2 x A100"
