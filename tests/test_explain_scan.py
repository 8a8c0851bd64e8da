"""The streaming scanner: exact line numbers across chunk boundaries, multi-line messages split
between chunks, lines of any length in bounded memory, and excerpts cut to a fixed size."""

from __future__ import annotations

import tracemalloc

from gpudoctor.explain import catalog
from gpudoctor.explain.scan import CHUNK, EXCERPT, SHORT_GATE, Scanner, _finder

CAT = catalog.load()
FILLER = b"2024-05-01 12:00:01 INFO train.py:88 epoch 3 step 1200/5000 loss=0.4312 lr=3.0e-04 throughput=812.5\n"
ERROR = b"RuntimeError: CUDA error: an illegal value no kernel image is available for execution on the device\n"


def scan_chunks(chunks):
    s = Scanner(CAT)
    for c in chunks:
        s.feed(c)
    return s.finish()


def test_line_numbers_are_exact_across_chunks():
    per_chunk = CHUNK // len(FILLER)
    lines = [FILLER] * (per_chunk * 5)
    targets = [1, per_chunk - 1, per_chunk, per_chunk + 1, 3 * per_chunk + 17, len(lines)]
    for n in targets:
        lines[n - 1] = ERROR
    data = b"".join(lines)
    for step in (CHUNK, 4096, 777_777):           # how the stream is cut must not matter
        result = scan_chunks(data[i:i + step] for i in range(0, len(data), step))
        assert result.hits["no_kernel_image"].lines == targets
        assert result.hits["no_kernel_image"].count == len(targets)
        assert result.lines == len(lines)


def test_multiline_message_split_between_chunks():
    head = FILLER * (CHUNK // len(FILLER))
    msg = (b"RuntimeError:\n    The detected CUDA version (12.2) mismatches the version that was used to compile\n"
           b"    PyTorch (11.3). Please make sure to use the same CUDA versions.\n")
    data = head + msg + FILLER * 10
    cut = len(head) + msg.index(b"compile\n") + 3          # the stream breaks inside the message
    result = scan_chunks([data[:cut], data[cut:]])
    hit = result.hits["detected_cuda_version_mismatch"]
    assert hit.lines == [head.count(b"\n") + 2]
    assert hit.values == {"nvcc_cuda": "12.2", "torch_cuda": "11.3"}


def test_gate_across_a_forced_split_inside_a_long_line_is_found():
    filler = b"x" * (3 * CHUNK)
    line = filler + b" CUDA error: no kernel image is available for execution on the device " + filler
    result = scan_chunks(line[i:i + CHUNK] for i in range(0, len(line), CHUNK))
    assert result.hits["no_kernel_image"].lines == [1]
    assert result.long_line == 1


def test_huge_line_without_newline_stays_in_bounded_memory():
    size = 24 * CHUNK                                    # a 24 MiB single line, streamed
    block = (b"abcdefghij" * (CHUNK // 10 + 1))[:CHUNK]
    needle = b" Failed to initialize NVML: Driver/library version mismatch "

    def chunks():
        for i in range(size // CHUNK):
            yield block[:CHUNK // 2] + needle + block[CHUNK // 2 + len(needle):] if i == 15 else block

    tracemalloc.start()
    result = scan_chunks(chunks())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 12 * CHUNK, f"peak {peak / CHUNK:.1f} MiB for a 24 MiB line"
    hit = result.hits["nvml_driver_library_mismatch"]
    assert hit.lines == [1] and len(hit.excerpt) <= EXCERPT
    assert "Driver/library version mismatch" in hit.excerpt
    assert result.bytes_read == size and result.lines == 1


def test_peak_memory_does_not_grow_with_the_line():
    def peak_for(nchunks):
        block = b"z" * CHUNK
        tracemalloc.start()
        scan_chunks(block for _ in range(nchunks))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak
    small, large = peak_for(8), peak_for(32)  # a kept line would add 24 MiB
    assert large < small * 1.5 + CHUNK


def test_excerpt_of_a_long_line_is_cut_around_the_match():
    line = b"y" * 5000 + b" CUDA error: unspecified launch failure " + b"y" * 5000 + b"\n"
    hit = scan_chunks([line]).hits["unspecified_launch_failure"]
    assert len(hit.excerpt) <= EXCERPT and "unspecified launch failure" in hit.excerpt
    assert hit.excerpt.startswith("…") and hit.excerpt.endswith("…")


def test_lines_without_gates_are_never_decoded():
    calls = []
    s = Scanner(CAT)
    original = s._match
    s._match = lambda *a: (calls.append(a[1]), original(*a))
    s.feed(FILLER * 5000)
    s.finish()
    assert calls == []


def test_invalid_utf8_in_a_matching_line_is_replaced_not_fatal():
    line = b"\xff\xfe garbage \xc3 CUDA error: no kernel image is available for execution on the device\n"
    hit = scan_chunks([line]).hits["no_kernel_image"]
    assert "\ufffd" in hit.excerpt and hit.lines == [1]


def test_parallel_ranges_give_the_same_lines_as_one_pass(tmp_path):
    from gpudoctor.explain import parallel
    lines = [FILLER] * 40000
    targets = [1, 9999, 10000, 10001, 13333, 26667, 39999, 40000]
    for n in targets:
        lines[n - 1] = ERROR
    msg = (b"RuntimeError:\n    The detected CUDA version (12.2) mismatches the version that was used to compile\n"
           b"    PyTorch (11.3). Please make sure to use the same CUDA versions.\n")
    data = b"".join(lines[:20000]) + msg + b"".join(lines[20000:])
    path = tmp_path / "big.log"
    path.write_bytes(data)
    single = scan_chunks([data])
    for workers in (2, 3, 7):
        result = parallel.scan_parallel(str(path), len(data), workers, data[-1:])
        assert result.lines == single.lines == len(lines) + 3
        shifted = [n if n <= 20000 else n + 3 for n in targets]
        assert result.hits["no_kernel_image"].lines == single.hits["no_kernel_image"].lines == shifted
        assert result.hits["detected_cuda_version_mismatch"].lines == [20002]
        assert result.hits["no_kernel_image"].count == len(targets)


def test_two_gates_of_one_message_in_a_long_line_count_it_once():
    """"CUDA error: invalid device function" holds the CUDA gate and is near the 'no kernel image'
    gate of the next message; inside a very long line both hits share one window, not two."""
    filler = b"y" * (3 * CHUNK)
    line = filler + b" RuntimeError: CUDA error: no kernel image is available for execution on the device " + filler
    result = scan_chunks([line])
    assert result.hits["no_kernel_image"].count == 1
    assert result.long_line == 1


def test_every_gate_finder_answers_like_bytes_find():
    """Short gates are searched with ``re`` (faster there), long ones with ``bytes.find``: same offsets,
    same bounds (a hit must end before ``end``), -1 when absent."""
    text = b"x cud CUDA\nGPU: NVRM: ... CUDA driver version is insufficient ... CUDA" + b"." * 40 + b"NCCL"
    gates = [b"cud", b"CUDA", b"GPU", b"NCCL", b"NVRM", b"absent", b"driver version is insufficient"]
    assert any(len(g) <= SHORT_GATE for g in gates) and any(len(g) > SHORT_GATE for g in gates)
    for gate in gates:
        find = _finder(gate)
        for start in range(0, len(text), 7):
            for end in (len(text), len(text) - 2, start + 3, start + 40):
                assert find(text, start, end) == text.find(gate, start, end), (gate, start, end)


# --- the time limit: what was read is diagnosed, what was not is said --------------------------------------------

def test_the_time_limit_stops_reading_says_where_and_skips_the_rest(tmp_path):
    from gpudoctor.explain.pipeline import explain
    from gpudoctor.explain.sources import Source

    big = tmp_path / "big.log"
    big.write_bytes(b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
                    + (b"step 1 loss 0.5 " * 12 + b"\n") * 400_000)                  # about 78 MiB
    small = tmp_path / "small.log"
    small.write_text("CUDA driver version is insufficient for CUDA runtime version\n")
    result = explain([Source(str(big), "file"), Source(str(small), "file")], time_limit=0.05, jobs=1)
    stopped = result.inputs[0]["stopped"]
    assert stopped.startswith("stopped after 0.05 s (the time limit), ") and stopped.endswith(
        " MiB in: the rest was not read, and errors in it are not diagnosed")
    assert result.inputs[1] == {"name": str(small), "kind": "file", "bytes": 0, "lines": 0,
                                "stopped": "not read: the time limit of 0.05 s was reached before it"}
    assert result.warnings == [f"{big}: {stopped}", f"{small}: not read: the time limit of 0.05 s was reached "
                                                    "before it"]
    assert result.diagnoses[0].id == "no_kernel_image"     # read before the limit


def test_no_time_limit_reads_everything(tmp_path):
    from gpudoctor.explain.pipeline import explain
    from gpudoctor.explain.sources import Source

    log = tmp_path / "a.log"
    log.write_text("ok\nCUDA driver version is insufficient for CUDA runtime version\n")
    result = explain([Source(str(log), "file")], time_limit=None)
    assert result.inputs == [{"name": str(log), "kind": "file", "bytes": log.stat().st_size, "lines": 2}]
    assert result.warnings == [] and result.diagnoses[0].family == "driver_too_old"
