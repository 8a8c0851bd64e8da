"""OOM messages: the numbers are read from both PyTorch formats and decide the kind of OOM."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text
from gpudoctor.explain.oom import analyse
from gpudoctor.explain.values import Size, size

OLD = ("RuntimeError: CUDA out of memory. Tried to allocate {req} (GPU 0; {total} total capacity; {alloc} already "
       "allocated; {free} free; {reserved} reserved in total by PyTorch) If reserved memory is >> allocated memory try "
       "setting max_split_size_mb to avoid fragmentation.")
NEW = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {req}. GPU 0 has a total capacity of {total} of "
       "which {free} is free.{procs} Of the allocated memory {alloc} is allocated by PyTorch, and {unalloc} is reserved "
       "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")


def only(result):
    assert len(result.diagnoses) == 1, [d.family for d in result.diagnoses]
    return result.diagnoses[0]


def test_sizes_parse_all_units():
    assert size("1.24 GiB").mib == pytest.approx(1269.76)
    assert size("20.00 MiB").mib == 20.0
    assert size("0 bytes").mib == 0.0
    assert size("179.00 KiB").mib == pytest.approx(0.1748, abs=1e-3)
    assert size("17179869184 bytes").mib == 16384.0
    assert size("lots") is None


def test_old_format_fragmentation_from_the_numbers():
    d = only(explain_text(OLD.format(req="2.93 GiB", total="23.80 GiB", alloc="12.04 GiB", free="2.82 GiB",
                                     reserved="19.69 GiB")))
    assert d.family == "oom" and d.recipe == "oom_fragmentation"
    assert d.analysis == {"kind": "fragmentation", "numbers": {"requested": "2.93 GiB", "total": "23.80 GiB",
                                                               "reserved_unallocated": "7.65 GiB"}}
    assert isinstance(d.values["reserved"], Size) and d.values["reserved"].text == "19.69 GiB"
    assert d.fix.kb_id == "oom_fragmentation"
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in "\n".join(d.fix.commands)


def test_new_format_small_request_with_cache_holding_it_is_fragmentation():
    d = only(explain_text(NEW.format(req="20.00 MiB", total="4.00 GiB", free="2.35 GiB", procs="",
                                     alloc="825.15 MiB", unalloc="24.85 MiB")))
    assert d.recipe == "oom_fragmentation"
    assert d.values["reserved_unallocated"].text == "24.85 MiB"


def test_new_format_full_gpu_is_exhaustion():
    text = NEW.format(req="22.78 GiB", total="31.47 GiB", free="12.73 GiB",
                      procs=" Including non-PyTorch memory, this process has 18.73 GiB memory in use.",
                      alloc="9.08 GiB", unalloc="9.35 GiB")
    d = only(explain_text(text))
    assert d.recipe == "oom_exhausted" and d.analysis["kind"] == "exhausted"
    assert d.values["process_used"].text == "18.73 GiB"


def test_memory_held_outside_pytorch_points_at_other_processes():
    d = only(explain_text(OLD.format(req="2.26 GiB", total="6.00 GiB", alloc="781.59 MiB", free="3.03 GiB",
                                     reserved="1.24 GiB")))
    assert d.analysis["kind"] == "other_processes"
    assert d.analysis["numbers"]["used_outside_pytorch"] == "1.73 GiB"
    assert any("nvidia-smi" in c for c in d.fix.commands)


def test_process_lines_are_read():
    text = NEW.format(req="496.00 MiB", total="14.75 GiB", free="235.06 MiB",
                      procs=" Process 20398 has 14.52 GiB memory in use.", alloc="14.06 GiB", unalloc="330.42 MiB")
    d = only(explain_text(text))
    assert d.values["other_pid"] == 20398 and d.values["other_used"].text == "14.52 GiB"
    assert d.analysis["kind"] == "exhausted"      # the listed process is this one: nothing outside PyTorch


def test_request_larger_than_the_gpu_is_a_program_bug():
    result = explain_text(NEW.format(req="55.57 GiB", total="12.00 GiB", free="9.02 GiB", procs="",
                                     alloc="984.52 MiB", unalloc="463.48 MiB"))
    assert result.diagnoses == [] and result.exit_code == 1
    assert result.notes[0].kind == "program_bug" and "55.57 GiB" in result.notes[0].explanation[0]
    n = result.notes[0]
    assert (n.id, n.title, n.source, n.lines) == ("torch_oom", "PyTorch ran out of GPU memory", "<text>", [1])
    assert "OutOfMemoryError: CUDA out of memory. Tried to allocate 55.57 GiB" in n.excerpt


def test_pytorch_1x_cached_format():
    text = ("RuntimeError: CUDA out of memory. Tried to allocate 50.00 MiB (GPU 0; 6.00 GiB total capacity; "
            "693.78 MiB already allocated; 3.91 GiB free; 18.22 MiB cached)")
    d = only(explain_text(text))
    assert d.values["cached"].text == "18.22 MiB" and d.analysis["kind"] != "program_bug"


def test_oom_without_numbers_still_diagnosed():
    d = only(explain_text("RuntimeError: CUDA error: out of memory"))
    assert d.family == "oom" and d.recipe == "oom_exhausted" and d.analysis == {"kind": "unknown", "numbers": {}}


def test_tensorflow_oom():
    result = explain_text("ResourceExhaustedError: OOM when allocating tensor with shape[128,128,109,109] and type "
                          "float on /job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc")
    assert [x.family for x in result.diagnoses] == ["oom", "tf_memory_growth"]
    d = result.diagnoses[0]
    assert d.values["shape"] == "128,128,109,109" and d.values["allocator"] == "GPU_1_bfc"


def test_analysis_needs_request_and_total():
    assert analyse({}).kind == "unknown"
    assert analyse({"requested": size("1 GiB"), "total": size("2 GiB")}).kind == "exhausted"
