"""`gpudoctor explain` as a user runs it: text, files, .gz, stdin, JSON, exit codes, and bad input."""

from __future__ import annotations

import codecs
import io
import gzip
import json
import os

import pytest

from tests.conftest import ROOT, invoke

INSUFFICIENT = "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version"
TOO_OLD = ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU "
           "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx")
SMI = """Traceback (most recent call last):
RuntimeError: CUDA failed with error forward compatibility was attempted on non supported HW

+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 12.1     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  NVIDIA GeForce ...  Off  | 00000000:01:00.0  On |                  N/A |
| 30%   45C    P8    20W / 250W |    500MiB / 11019MiB |      2%      Default |
+-------------------------------+----------------------+----------------------+
"""


def explain_json(*args, **kw):
    proc = invoke("explain", "--json", *args, **kw)
    return proc, (json.loads(proc.stdout) if proc.stdout.strip() else None)


def test_text_argument_json_shape_and_values():
    proc, out = explain_json(TOO_OLD)
    assert proc.returncode == 0, proc.stderr
    assert out["schema"] == "gpudoctor.explain/5" and out["exit_code"] == 0
    d = out["diagnoses"][0]
    assert {"id", "family", "lines", "values", "explanation", "fix", "excerpt", "confidence"} <= set(d)
    assert d["id"] == "torch_driver_too_old" and d["family"] == "driver_too_old" and d["lines"] == [1]
    assert d["values"]["driver_api"] == "11040" and d["values"]["driver_cuda"] == "11.4"
    assert "CUDA 11.4" in d["explanation"]
    assert d["fix"]["recipe"] == "driver_too_old" and "supports CUDA up to 11.4" in d["fix"]["summary"]


def test_nothing_matched_exits_1_with_a_hint():
    proc = invoke("explain", "everything is fine: epoch 3 loss 0.12")
    assert proc.returncode == 1
    assert "gpudoctor check" in proc.stdout


def test_program_bug_exits_1_and_says_why():
    proc = invoke("explain", "RuntimeError: Expected all tensors to be on the same device, but found at least "
                                    "two devices, cuda:0 and cpu!")
    assert proc.returncode == 1
    assert "bug in the program, not the environment" in proc.stdout


def test_log_file_line_numbers(tmp_path):
    log = tmp_path / "train.log"
    lines = [f"epoch {i} loss 0.{i}" for i in range(1, 200)]
    lines[149] = "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied"
    log.write_text("\n".join(lines) + "\n")
    proc, out = explain_json(str(log))
    assert proc.returncode == 0
    d = out["diagnoses"][0]
    assert d["family"] == "nccl_errors" and d["lines"] == [150] and d["input"] == str(log)
    assert d["values"]["shm_error"] == "Permission denied"
    assert out["inputs"] == [{"name": str(log), "kind": "file", "bytes": log.stat().st_size, "lines": 199}]


def test_gzip_file_and_several_files(tmp_path):
    gz = tmp_path / "a.log.gz"
    with gzip.open(gz, "wt") as f:
        f.write("x\ny\nCannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing\n")
    plain = tmp_path / "b.log"
    plain.write_text("ok\n" + INSUFFICIENT + "\n")
    proc, out = explain_json(str(gz), str(plain))
    assert proc.returncode == 0
    got = {d["family"]: (d["input"], d["lines"]) for d in out["diagnoses"]}
    assert got["cuda_init_error_other"] == (str(gz), [3])
    assert got["driver_too_old"] == (str(plain), [2])


def test_stdin_dash():
    proc, out = explain_json("-", input="some output\nmodprobe: ERROR: could not insert 'nvidia': Key was rejected by service\n")
    assert proc.returncode == 0
    assert out["diagnoses"][0]["family"] == "secure_boot_module_unsigned"
    assert out["diagnoses"][0]["values"]["module"] == "nvidia"


def test_pasted_nvidia_smi_table_is_read_and_used():
    proc, out = explain_json(SMI)
    assert proc.returncode == 0
    smi = out["context"]["nvidia_smi"]
    assert smi["driver_version"] == "470.57.02" and smi["cuda_version"] == "12.1"
    assert out["context"]["facts"]["driver_max_cuda"] if "driver_max_cuda" in out["context"]["facts"] else True
    first = out["diagnoses"][0]
    assert first["family"] == "cuda_compat_unsupported"          # smi CUDA 12.1 > what driver 470 runs natively
    assert first["values"]["driver_max_cuda"] == "11.4"
    assert "470.57.02" in first["explanation"] and "12.1" in first["explanation"]


def test_context_option_reorders():
    proc, out = explain_json("--context", "container", INSUFFICIENT)
    assert [d["family"] for d in out["diagnoses"]] == ["no_device_in_container", "driver_too_old"]
    assert out["context"]["flags"] == ["container"]


def test_snapshot_tailors_the_fix_like_the_checks():
    snap = ROOT / "fixtures/scenarios/fw-torch-cu121-old-driver-515/snapshot"
    proc, out = explain_json("--snapshot", str(snap), INSUFFICIENT)
    assert proc.returncode == 0, proc.stderr
    d = out["diagnoses"][0]
    assert d["family"] == "driver_too_old"
    assert d["machine"]["check"] == "TRC002" and d["machine"]["family"] == "driver_too_old"
    assert "Driver 515.105.01 supports CUDA up to 11.7" in d["fix"]["summary"]
    assert "525.60.13" in d["fix"]["summary"]
    check = json.loads(invoke("check", "--json", "--snapshot", str(snap)).stdout)
    fix = next(f["fix"] for f in check["findings"] if f["check_id"] == "TRC002")
    assert d["fix"]["summary"] == fix["summary"] and d["fix"]["commands"] == fix["commands"]


def test_help_has_examples():
    proc = invoke("explain", "--help")
    assert proc.returncode == 0
    assert "Examples:" in proc.stdout and "gpudoctor explain train.log" in proc.stdout and "--json" in proc.stdout


def test_colour_only_when_asked():
    plain = invoke("explain", INSUFFICIENT)
    assert "\x1b[" not in plain.stdout
    forced = invoke("explain", "--color", INSUFFICIENT)
    assert "\x1b[" in forced.stdout
    no_color = invoke("explain", INSUFFICIENT, env={"NO_COLOR": "1"})
    assert "\x1b[" not in no_color.stdout


# -- bad input: one line on stderr, exit 2, never a traceback -----------------------------

def assert_bad(proc, needle):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpudoctor: ") and needle in err[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_file(tmp_path):
    assert_bad(invoke("explain", str(tmp_path / "nope.log")), "no such file")


def test_directory(tmp_path):
    assert_bad(invoke("explain", str(tmp_path)), "is a directory")


def test_empty_file_and_empty_stdin(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert_bad(invoke("explain", str(empty)), "is empty")
    assert_bad(invoke("explain", "-", input=""), "no input")
    blank = tmp_path / "blank.log"
    blank.write_text("\n  \n\t\n")
    assert_bad(invoke("explain", str(blank)), "only whitespace")
    assert_bad(invoke("explain", ""), "empty")


def test_binary_file(tmp_path):
    png = tmp_path / "plot.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40)
    assert_bad(invoke("explain", str(png)), "binary")


def test_corrupt_gzip(tmp_path):
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(gzip.compress(b"CUDA error: out of memory\n" * 1000)[:60])
    assert_bad(invoke("explain", str(bad)), "not a valid gzip file")


def test_unreadable_file(tmp_path, monkeypatch, capsys):
    secret = tmp_path / "secret.log"
    secret.write_text(INSUFFICIENT + "\n")
    secret.chmod(0)
    if os.geteuid() != 0:
        assert_bad(invoke("explain", str(secret)), "permission denied")
        return
    # root can read anything: make the permission check answer as it would for a normal user
    from gpudoctor.cli import main
    from gpudoctor.explain import sources
    real_access = os.access
    monkeypatch.setattr(sources.os, "access", lambda p, mode: False if str(p) == str(secret) else real_access(p, mode))
    with pytest.raises(SystemExit) as exc:
        main(["explain", str(secret)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gpudoctor: cannot read {secret}: permission denied"]


def test_invalid_utf8_is_read_with_a_note(tmp_path):
    log = tmp_path / "latin1.log"
    log.write_bytes("Gerät: café\n".encode("latin-1") + INSUFFICIENT.encode() + b"\n")
    proc = invoke("explain", str(log))
    assert proc.returncode == 0
    assert "not valid UTF-8" in proc.stderr and proc.stderr.startswith("gpudoctor: note: ")


def test_utf16_log_from_powershell(tmp_path):
    log = tmp_path / "ps.log"
    log.write_bytes(codecs.BOM_UTF16_LE + ("step 1\r\n" + TOO_OLD + "\r\n").encode("utf-16-le"))
    proc, out = explain_json(str(log))
    assert proc.returncode == 0 and out["diagnoses"][0]["lines"] == [2]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_log_without_a_byte_order_mark(tmp_path, encoding):
    log = tmp_path / "ps.log"
    log.write_bytes(("step 1\r\n" + TOO_OLD + "\r\n").encode(encoding))
    proc, out = explain_json(str(log))
    assert proc.returncode == 0 and out["diagnoses"][0]["lines"] == [2]
    assert f"{log} is {encoding.upper()} text without a byte-order mark" in proc.stderr


@pytest.mark.parametrize("blob", [
    b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4,
    # 16-bit little-endian samples of 1..255: every other byte NUL, as in UTF-16, but the others not text
    b"".join(bytes([1 + (i * 37) % 255, 0]) for i in range(4000)),
])
def test_binary_data_with_nul_bytes_is_not_taken_for_utf16(tmp_path, blob):
    path = tmp_path / "core.bin"
    path.write_bytes(blob)
    assert_bad(invoke("explain", str(path)), "looks like binary data")


def test_a_short_utf16_log_without_a_byte_order_mark(tmp_path):
    log = tmp_path / "xid.log"
    log.write_bytes("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.".encode("utf-16-le")[:24])
    proc = invoke("explain", str(log))
    assert "is UTF-16-LE text without a byte-order mark" in proc.stderr and "binary" not in proc.stderr


def test_utf16_from_a_pipe_that_gives_a_few_bytes_at_a_time():
    from gpudoctor.explain.sources import Source, _unwrap

    class Trickle(io.RawIOBase):            # a pipe whose first read returns 10 bytes, then the rest in pieces
        def __init__(self, data):
            self.data = data

        def readable(self):
            return True

        def readinto(self, buffer):
            n = min(10, len(buffer), len(self.data))
            buffer[:n], self.data = self.data[:n], self.data[n:]
            return n

    text = "step 1\r\n" + TOO_OLD + "\r\n"
    source = Source("<stdin>", "stdin")
    stream = _unwrap(Trickle(text.encode("utf-16-le")), source)
    assert stream.read().decode("utf-8") == text
    assert source.notes == ["<stdin> is UTF-16-LE text without a byte-order mark; read it as such"]


def test_snapshot_and_here_together_is_a_usage_error():
    assert_bad(invoke("explain", "--here", "--snapshot", "x", INSUFFICIENT), "give one of them")


def test_bad_snapshot_path(tmp_path):
    assert_bad(invoke("explain", "--snapshot", str(tmp_path / "none"), INSUFFICIENT), "")


@pytest.mark.timeout(120)
def test_huge_single_line_file_in_bounded_memory(tmp_path):
    big = tmp_path / "oneline.log"
    with open(big, "wb") as f:
        block = b"0123456789abcdef" * 65536                       # 1 MiB, no newline anywhere
        for i in range(64):
            f.write(block if i != 40 else block[:1000] + b" GPU has fallen off the bus " + block[1028:])
    # VmHWM: this process's peak since exec (ru_maxrss keeps the forking pytest's, 300 MiB late in a run).
    code = ("import resource, sys\nfrom gpudoctor.cli import main\n"
            "def peak():\n    for l in open('/proc/self/status'):\n        if l.startswith('VmHWM:'):\n"
            "            return int(l.split()[1])\n    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "try:\n    main(['explain', '--json', sys.argv[1]])\nexcept SystemExit as e:\n"
            "    print('RC', int(e.code), peak(), file=sys.stderr)\n")
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", code, str(big)], capture_output=True, text=True, timeout=120,
                          cwd=str(ROOT))
    rc_line = [l for l in proc.stderr.splitlines() if l.startswith("RC ")][0].split()
    assert rc_line[1] == "0"
    # Less than the line itself (about 27 MiB are measured): holding the line, in bytes or text, would not fit.
    assert int(rc_line[2]) < 60 * 1024, f"peak RSS {int(rc_line[2]) // 1024} MiB for a 64 MiB line"
    out = json.loads(proc.stdout)
    assert out["diagnoses"][0]["family"] == "xid_or_hardware" and out["diagnoses"][0]["lines"] == [1]
    assert len(out["diagnoses"][0]["excerpt"]) <= 300
    assert "longer than 1 MiB" in proc.stderr
