"""The caching-allocator model shared by ``explain`` and ``memory``: every verdict, its edges and its sentences.

The numbers are PyTorch's OOM message fields in MiB, e.g. "Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total
capacity; 6.11 GiB already allocated; 9.50 MiB free; 6.28 GiB reserved in total by PyTorch)".
"""

from __future__ import annotations

import pytest

from gpudoctor.memory.allocator import (AllocatorState, account, classify_oom, context_share, outside, reserved,
                                        unallocated)

GIB = 1024.0
FULL = ("Reduce the batch size or sequence length, use mixed precision (bf16/fp16) or gradient checkpointing, "
        "and make sure nothing keeps old tensors alive between steps.")
TOO_BIG = ("Reduce the batch size, image or sequence size, or load the model quantized or split over several "
           "GPUs; or use a GPU with more memory.")
EXPANDABLE = ("Let the allocator grow segments instead (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; "
              "max_split_size_mb on PyTorch before 2.1) before reaching for a smaller batch.")
FREE_IT = "Free the GPU (nvidia-smi lists the processes) or choose another one with CUDA_VISIBLE_DEVICES."


def test_the_classic_8_gib_message_is_a_full_gpu():
    s = AllocatorState(total=7.79 * GIB, free=9.5, requested=20, allocated=6.11 * GIB, reserved=6.28 * GIB)
    v = classify_oom(s)
    assert (v.kind, v.recipe) == ("exhausted", "oom_exhausted")
    assert v.explanation == ["The GPU is simply full: 20.00 MiB more does not fit in 7.79 GiB (9.50 MiB free).", FULL]
    assert v.numbers == {"requested": "20.00 MiB", "total": "7.79 GiB", "reserved_unallocated": "174.08 MiB",
                         "used_outside_pytorch": "1.50 GiB"}
    assert v.to_dict() == {"kind": "exhausted", "numbers": v.numbers}


@pytest.mark.parametrize("state", [AllocatorState(requested=20), AllocatorState(total=8 * GIB),
                                   AllocatorState(free=10, allocated=5, reserved=6)])
def test_without_the_request_and_the_total_nothing_is_concluded(state):
    v = classify_oom(state)
    assert (v.kind, v.recipe, v.explanation, v.numbers) == ("unknown", "oom_exhausted", [], {})


def test_more_than_four_gpus_in_one_allocation_is_a_program_bug():
    v = classify_oom(AllocatorState(total=80 * GIB, requested=130674.91 * GIB, free=70 * GIB))
    assert (v.kind, v.recipe) == ("program_bug", None)
    assert v.explanation == [
        "The program asked for 130674.91 GiB in one allocation on a GPU with 80.00 GiB in total: no GPU setting "
        "can satisfy that. A tensor's shape is wrong (a size or index blown up by the code or the data); this "
        "looks like a bug in the program, not the environment."]
    assert v.numbers == {"requested": "130674.91 GiB", "total": "80.00 GiB"}
    assert classify_oom(AllocatorState(total=100.0, requested=400.01)).kind == "program_bug"


def test_up_to_four_gpus_is_a_batch_that_does_not_fit():
    v = classify_oom(AllocatorState(total=100 * GIB, requested=400 * GIB))
    assert (v.kind, v.recipe) == ("exhausted", "oom_exhausted")
    assert v.explanation == ["One allocation of 400.00 GiB is larger than the whole GPU (100.00 GiB): this batch, "
                             "input size or model does not fit this GPU at any setting.", TOO_BIG]
    assert v.numbers == {"requested": "400.00 GiB", "total": "100.00 GiB"}
    assert classify_oom(AllocatorState(total=100.0, requested=100.01)).explanation[1] == TOO_BIG


def test_a_request_of_exactly_the_gpu_is_judged_by_the_cache_and_the_others():
    v = classify_oom(AllocatorState(total=100.0, requested=100.0, free=0.0, allocated=10.0, reserved=10.0))
    assert v.kind == "other_processes" and v.numbers["used_outside_pytorch"] == "90.00 MiB"


def test_a_cache_holding_the_request_in_pieces_is_fragmentation():
    s = AllocatorState(total=80 * GIB, free=10, requested=1 * GIB, allocated=70 * GIB, reserved=75 * GIB)
    v = classify_oom(s)
    assert (v.kind, v.recipe) == ("fragmentation", "oom_fragmentation")
    assert v.explanation == [
        "PyTorch's caching allocator holds 5.00 GiB reserved but unallocated - at least the 1.00 GiB requested - "
        "yet no single free block is large enough: the cache is fragmented.", EXPANDABLE]
    assert v.numbers == {"requested": "1.00 GiB", "total": "80.00 GiB", "reserved_unallocated": "5.00 GiB"}


@pytest.mark.parametrize("free,requested,unalloc,kind", [
    (1.0, 5.0, 5.0, "fragmentation"),       # exactly the request, exactly 5% of the GPU
    (1.0, 4.0, 4.99, "exhausted"),          # holds the request but under 5% of the GPU, little free
    (4.0, 4.0, 4.0, "fragmentation"),       # under 5%, but the GPU has the request free: only the cache is cut up
    (3.99, 4.0, 4.0, "exhausted"),
    (50.0, 6.0, 5.99, "exhausted"),         # the cache holds less than the request: never fragmentation
    (None, 5.0, 5.0, "fragmentation"),      # free unknown: the 5% share alone decides
    (None, 4.0, 4.0, "exhausted"),
])
def test_fragmentation_edges(free, requested, unalloc, kind):
    s = AllocatorState(total=100.0, free=free, requested=requested, reserved_unallocated=unalloc)
    assert classify_oom(s).kind == kind


@pytest.mark.parametrize("used_outside,kind", [(25.0, "other_processes"), (24.9, "exhausted")])
def test_a_quarter_of_the_gpu_outside_pytorch_is_other_processes(used_outside, kind):
    s = AllocatorState(total=100.0, free=100.0 - 60.0 - used_outside, requested=2.0, allocated=60.0, reserved=60.0)
    assert classify_oom(s).kind == kind


def test_other_processes_sentences():
    v = classify_oom(AllocatorState(total=80 * GIB, free=500, requested=1 * GIB, allocated=50 * GIB, reserved=50 * GIB))
    assert (v.kind, v.recipe) == ("other_processes", "oom_exhausted")
    assert v.explanation == [
        "29.51 GiB of the GPU's 80.00 GiB is used outside this program's PyTorch allocator - other processes "
        "(another training run, a notebook kernel, a desktop) or a leak in native code.", FREE_IT]
    assert v.numbers == {"requested": "1.00 GiB", "total": "80.00 GiB", "reserved_unallocated": "0.00 KiB",
                         "used_outside_pytorch": "29.51 GiB"}


def test_full_gpu_without_the_free_figure_says_nothing_of_it():
    v = classify_oom(AllocatorState(total=8 * GIB, requested=2 * GIB))
    assert v.explanation == ["The GPU is simply full: 2.00 GiB more does not fit in 8.00 GiB.", FULL]
    assert v.numbers == {"requested": "2.00 GiB", "total": "8.00 GiB"}


def test_unallocated_prefers_the_reported_figure_then_the_difference_then_pytorch_1x_cached():
    assert unallocated(AllocatorState(reserved_unallocated=0.0, reserved=10.0, allocated=4.0, cached=9.0)) == 0.0
    assert unallocated(AllocatorState(reserved=10.0, allocated=4.0, cached=9.0)) == 6.0
    assert unallocated(AllocatorState(reserved=4.0, allocated=10.0)) == 0.0      # never negative
    assert unallocated(AllocatorState(reserved=10.0, cached=9.0)) == 9.0
    assert unallocated(AllocatorState(allocated=10.0, cached=9.0)) == 9.0
    assert unallocated(AllocatorState(reserved=10.0, allocated=4.0, reserved_unallocated=None)) == 6.0
    assert unallocated(AllocatorState()) is None


def test_reserved_is_reported_or_allocated_plus_cached():
    assert reserved(AllocatorState(reserved=0.0, allocated=5.0, cached=3.0)) == 0.0
    assert reserved(AllocatorState(allocated=5.0, cached=3.0)) == 8.0
    assert reserved(AllocatorState(allocated=5.0)) is None
    assert reserved(AllocatorState(cached=3.0)) is None


def test_memory_outside_the_allocator_and_the_context_share():
    s = AllocatorState(total=100.0, free=10.0, reserved=60.0, process_used=70.0)
    assert (outside(s), context_share(s)) == (30.0, 10.0)
    over = AllocatorState(total=100.0, free=50.0, reserved=60.0, process_used=55.0)
    assert (outside(over), context_share(over)) == (0.0, 0.0)      # never negative
    assert outside(AllocatorState(total=100.0, reserved=60.0)) is None
    assert outside(AllocatorState(free=10.0, reserved=60.0)) is None
    assert outside(AllocatorState(total=100.0, free=10.0)) is None
    assert context_share(AllocatorState(reserved=60.0)) is None
    assert context_share(AllocatorState(process_used=70.0)) is None


def test_account_explains_every_known_relation():
    s = AllocatorState(total=80 * GIB, free=1 * GIB, requested=1 * GIB, allocated=60 * GIB, reserved=64 * GIB,
                       process_used=65 * GIB, non_releasable=2 * GIB)
    assert account(s) == [
        "nvidia-smi's 65.00 GiB for the process = CUDA context and other non-PyTorch memory 1.00 GiB + PyTorch's "
        "reserved 64.00 GiB.",
        "Reserved 64.00 GiB = allocated 60.00 GiB (live tensors) + 4.00 GiB cached but free: the caching allocator "
        "keeps freed blocks for reuse instead of returning them to the driver (torch.cuda.empty_cache() returns the "
        "unused ones to other processes, not to this one).",
        "2.00 GiB of it sits in blocks split around live tensors (non-releasable): free space that cannot be "
        "returned, and serves only requests that fit in the pieces - fragmentation "
        "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces it).",
        "15.00 GiB of the GPU's 80.00 GiB is in use outside this process's allocator (its CUDA context, other "
        "processes), 1.00 GiB is free."]


def test_account_leaves_out_what_is_not_known():
    assert account(AllocatorState()) == []
    assert account(AllocatorState(process_used=10.0, non_releasable=0.0)) == []
    only_reserved = account(AllocatorState(process_used=70.0, reserved=60.0))
    assert only_reserved == ["nvidia-smi's 70.00 MiB for the process = CUDA context and other non-PyTorch memory "
                             "10.00 MiB + PyTorch's reserved 60.00 MiB."]
    assert account(AllocatorState(reserved=60.0, allocated=50.0))[0].startswith(
        "Reserved 60.00 MiB = allocated 50.00 MiB (live tensors) + 10.00 MiB cached but free")
