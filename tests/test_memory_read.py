"""Reading torch.cuda.memory_summary() and OOM messages; explain and memory share one allocator model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

try:   # main moved it to gpudoctor.explain.pipeline; this branch still exports it from the package
    from gpudoctor.explain.pipeline import explain_text
except ImportError:
    from gpudoctor.explain.pipeline import explain_text
from gpudoctor.memory import allocator, summary
from gpudoctor.memory.read import read

DATA = Path(__file__).resolve().parent / "data" / "memory"
# The "all" rows of a summary published in a write-up on SGLang's memory (KiB), printed by torch 2.13's own
# formatter (tests/data/memory/memory_summary_torch2.txt; its per-pool rows are zero).
TORCH2 = (DATA / "memory_summary_torch2.txt").read_text()
# torch 1.x printed KB/MB/GB (binary units); rows from the parallelformers README (tunib-ai/parallelformers).
TORCH1 = """|                  PyTorch CUDA memory summary, device ID 1                 |
|            CUDA OOMs: 0            |        cudaMalloc retries: 2         |
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
| Allocated memory      |    2721 MB |    2967 MB |    2967 MB |  251905 KB |
|       from large pool |    2720 MB |    2966 MB |    2966 MB |  251904 KB |
"""
NEW_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total capacity of "
           "31.47 GiB of which 12.73 GiB is free. Including non-PyTorch memory, this process has 18.73 GiB memory in "
           "use. Of the allocated memory 9.08 GiB is allocated by PyTorch, and 9.35 GiB is reserved by PyTorch but "
           "unallocated.")


def test_torch2_summary_rows_in_bytes():
    s = summary.parse(TORCH2)
    assert (s["device"], s["ooms"], s["alloc_retries"]) == (0, 0, 0)
    assert s["rows"]["allocated"] == {"current": 184648 * 1024, "peak": 192833 * 1024,
                                      "total_allocated": 258378 * 1024, "total_freed": 73729 * 1024}
    assert s["rows"]["reserved"]["current"] == 235520 * 1024 and s["rows"]["reserved"]["total_freed"] == 0
    assert s["rows"]["non_releasable"]["current"] == 30391 * 1024
    assert set(s["rows"]) == {"allocated", "active", "requested", "reserved", "non_releasable"}


def test_torch1_units_and_counters():
    s = summary.parse(TORCH1)
    assert (s["device"], s["alloc_retries"]) == (1, 2)
    assert s["rows"]["allocated"]["current"] == 2721 * 2 ** 20 and s["rows"]["allocated"]["total_freed"] == 251905 * 1024


def test_summary_explained_in_the_allocators_terms():
    doc = read(TORCH2)
    assert doc["kind"] == "memory_summary"
    assert doc["explanation"][0].startswith("Reserved 230.00 MiB = allocated 180.32 MiB (live tensors) + 49.68 MiB "
                                            "cached but free")
    assert doc["explanation"][1].startswith("29.68 MiB of it sits in blocks split around live tensors (non-releasable)")
    assert doc["explanation"][2].startswith("At the peak: 188.31 MiB allocated, 230.00 MiB reserved")
    assert any("2 cudaMalloc retries" in line for line in read(TORCH1)["explanation"])


def test_oom_message_accounting():
    doc = read(NEW_OOM)
    assert doc["kind"] == "oom" and doc["verdict"] == "exhausted"
    assert doc["explanation"][:2] == [
        "nvidia-smi's 18.73 GiB for the process = CUDA context and other non-PyTorch memory 307.20 MiB + "
        "PyTorch's reserved 18.43 GiB.",
        "Reserved 18.43 GiB = allocated 9.08 GiB (live tensors) + 9.35 GiB cached but free: the caching allocator "
        "keeps freed blocks for reuse instead of returning them to the driver (torch.cuda.empty_cache() returns the "
        "unused ones to other processes, not to this one)."]
    assert doc["numbers"]["requested"] == round(22.78 * 2 ** 30)


def test_explain_and_memory_read_every_oom_example_the_same_way():
    sigs = json.loads((Path(allocator.__file__).parents[1] / "knowledge" / "signatures" / "oom.json").read_text())
    examples = [ex["text"] for sig in sigs["signatures"] if sig.get("analysis") == "oom"
                for ex in sig.get("examples", []) if "Tried to allocate" in ex["text"]]
    assert len(examples) >= 6
    for text in examples:
        result = explain_text(text)
        theirs = result.diagnoses[0].analysis["kind"] if result.diagnoses else result.notes[0].kind
        if theirs == "unknown":                 # a message cut before its numbers: neither reads any
            with pytest.raises(ValueError):
                read(text)
            continue
        mine = read(text)
        assert mine["verdict"] == theirs, text
        if result.diagnoses:
            assert all(line in mine["explanation"] for line in result.diagnoses[0].explanation[1:]), text


def test_text_without_numbers_is_refused():
    with pytest.raises(ValueError, match="no torch.cuda.memory_summary"):
        read("RuntimeError: CUDA error: out of memory")


def test_parser_follows_the_installed_torch_formatter():
    """torch's own memory_summary() over made-up statistics, read back: every total row survives."""
    code = """
import json, torch.cuda.memory as m
stats = {"num_ooms": 3, "num_alloc_retries": 5}
for i, key in enumerate(["allocated_bytes", "active_bytes", "requested_bytes", "reserved_bytes",
                         "inactive_split_bytes", "allocation", "active", "segment", "inactive_split"]):
    for pool in ("all", "large_pool", "small_pool"):
        for j, t in enumerate(("current", "peak", "allocated", "freed")):
            stats[f"{key}.{pool}.{t}"] = (i + 1) * 7 * 1024 ** (j % 4) + j
for key in ("oversize_allocations", "oversize_segments"):
    for t in ("current", "peak", "allocated", "freed"):
        stats[f"{key}.{t}"] = 0
m.memory_stats = lambda device=None: stats
print(json.dumps({"text": m.memory_summary(2), "stats": stats}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    got = json.loads(out.stdout)
    s = summary.parse(got["text"])
    assert (s["device"], s["ooms"], s["alloc_retries"]) == (2, 3, 5)
    for name, key in (("allocated", "allocated_bytes"), ("reserved", "reserved_bytes"),
                      ("non_releasable", "inactive_split_bytes")):
        for part, t in (("current", "current"), ("peak", "peak"), ("total_allocated", "allocated")):
            exact = got["stats"][f"{key}.all.{t}"]
            # torch prints fewer than 768 Ki units and rounds down: off by less than one unit
            assert 0 <= exact - s["rows"][name][part] < exact / 768 + 1, (name, part)
