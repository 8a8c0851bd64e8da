"""The active smoke test: the arithmetic, the child on this (CPU-only) machine, its timeouts, and the
verdicts on GPU measurements.

No GPU is available where these tests run, so the GPU-path payloads below are HAND-MADE in the shape
probes/smoke_child.py prints; the CPU path runs the real child in the test's own interpreter.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import time

import pytest

from gpudoctor import measures
from gpudoctor.facts import Facts, Missing, NotApplicable
from gpudoctor.probes import active
from gpudoctor.probes import smoke_child
from gpudoctor.report import build_report
from gpudoctor.requirements import Requirements
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import Snapshot
from tests import hook_snapshots as hs

MARKER = "GPUDOCTOR-SMOKE-JSON:"


# --- the arithmetic ---------------------------------------------------------------------------

def test_relative_error():
    assert measures.relative_error(0.5, 100.0) == 0.005
    assert measures.relative_error(float("nan"), 10.0) == math.inf  # a GPU that produced NaN
    assert measures.relative_error(1.0, float("inf")) == math.inf
    assert measures.relative_error(None, 1.0) == math.inf
    assert measures.relative_error(0.0, 0.0) == 0.0 and measures.relative_error(1e-9, 0.0) == math.inf


def test_bandwidths():
    mib256 = 256 * 1024 * 1024
    assert measures.gb_per_s(mib256, [0.03, 0.0107, 0.02]) == pytest.approx(25.09, abs=0.01)  # the fastest run
    assert measures.gb_per_s(mib256, []) is None and measures.gb_per_s(mib256, [0.0]) is None
    assert measures.link_gb_per_s(1.969, 16) == pytest.approx(31.504)
    assert measures.link_gb_per_s(None, 16) is None
    assert measures.share(12.6, 31.5) == pytest.approx(0.4) and measures.share(None, 31.5) is None
    # nccl-tests' bus bandwidth: 8 ranks move 2*7/8 of the buffer over the busiest link
    assert measures.bus_gb_per_s(64 * 1024 * 1024, [0.001], 8) == pytest.approx(67.108864 * 1.75)
    assert measures.bus_gb_per_s(64 * 1024 * 1024, [0.001], 1) == 0.0


# --- the child on this machine ------------------------------------------------------------------

def test_the_child_reports_a_cpu_only_torch_and_the_checks_skip_saying_so():
    """The real child in this interpreter (torch CPU build in CI, or no torch at all)."""
    res = active.run_smoke(sys.executable, dict(os.environ), 120)
    assert res.returncode == 0 and not res.timed_out, res.stderr[-500:]
    payload = json.loads([ln for ln in res.stdout.splitlines() if ln.startswith(MARKER)][-1][len(MARKER):])
    assert payload["python"] == sys.executable
    snap = Snapshot()
    snap.commands["smoke_test"] = res
    with pytest.raises(NotApplicable) as exc:
        Facts(snap)["smoke_test"]
    try:
        import torch
    except ImportError:
        assert str(exc.value).startswith(f"torch cannot be imported in {sys.executable}")
        return
    if torch.version.cuda:
        pytest.skip("a CUDA torch: the CPU path is not what this interpreter takes")
    assert str(exc.value) == f"torch {torch.__version__} in {sys.executable} is a CPU-only build: no GPU to test"
    report = build_report(snap, requirements=Requirements(smoke=True))
    smk = {f.check_id: (f.status.value, f.cannot_tell) for f in report.findings if f.check_id.startswith("SMK")}
    assert smk == {"SMK001": ("skip", False), "SMK002": ("skip", False), "SMK003": ("skip", False)}


def _fake_python(tmp_path, body):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return any(line.split() == ["State:", "Z", "(zombie)"] for line in fh)
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to see the process is gone")
def test_a_hung_child_is_killed_with_its_children(tmp_path):
    """A child that starts a grandchild and hangs: at the timeout the whole process group goes."""
    pidfile = tmp_path / "grandchild.pid"
    python = _fake_python(tmp_path, f"/bin/sleep 300 &\necho $! > {pidfile}\n/bin/sleep 300\n")
    res = active.run_smoke(python, dict(os.environ), 1.0)
    assert res.timed_out and res.duration_s < 10
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(grandchild), f"process {grandchild} outlived the smoke test"
    snap = Snapshot()
    snap.commands["smoke_test"] = res
    with pytest.raises(Missing, match=r"the smoke test did not finish within 1s \(its processes were killed\)"):
        Facts(snap)["smoke_test"]


def test_hung_nccl_ranks_are_killed_at_the_all_reduce_timeout():
    """smoke_child's own all-reduce timeout: ranks that never finish are killed, and it says so."""
    import psutil

    cfg = {"allreduce_mib": 1, "allreduce_repeats": 1, "nccl_timeout_s": 1.0,
           "worker": "import time\ntime.sleep(120)\n"}
    start = time.monotonic()
    out = smoke_child._allreduce(cfg, 2)
    assert out["timed_out"] and out["world"] == 2 and time.monotonic() - start < 10
    alive = [p for p in psutil.Process().children(recursive=True) if p.is_running()
             and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == []


def test_the_child_is_told_the_sizes_and_dtypes_from_the_data():
    cfg = active.smoke_config(180)
    assert [d["label"] for d in cfg["dtypes"]] == ["fp32", "fp16", "bf16"]
    assert [d["min_cc"] for d in cfg["dtypes"]] == ["3.5", "5.3", "8.0"]
    assert (cfg["matrix_n"], cfg["block_mib"], cfg["copy_mib"], cfg["nccl_timeout_s"]) == (512, 512, 256, 60)
    assert "dist.init_process_group(\"nccl\"" in cfg["worker"]


# --- verdicts on GPU measurements (HAND-MADE payloads) ----------------------------------------

MIB256 = 256 * 1024 * 1024


def device(index=0, bus="0000:3b:00.0", cc="9.0", matmuls=None, h2d=(0.0052,), d2h=(0.0050,), **extra):
    d = {"index": index, "name": "NVIDIA H100 80GB HBM3", "compute_cap": cc, "memory_mib": 81559, "pci_bus_id": bus,
         "alloc": {"mib": 512, "ok": True, "seconds": 0.2},
         "copy": {"bytes": MIB256, "h2d_s": list(h2d), "d2h_s": list(d2h), "pinned": True},
         "matmul": matmuls if matmuls is not None else [
             {"dtype": "fp32", "max_abs_diff": 2.1e-5, "max_abs_ref": 41.3},
             {"dtype": "fp16", "max_abs_diff": 0.012, "max_abs_ref": 41.3},
             {"dtype": "bf16", "max_abs_diff": 0.09, "max_abs_ref": 41.3}]}
    d.update(extra)
    return d


def judged(payload, smi_text=None):
    snap = Snapshot()
    out = "some library noise\n" + MARKER + json.dumps({"python": "/opt/venv/bin/python", "torch": "2.4.0+cu121",
                                                        "cuda_build": "12.1", "cuda_visible_devices": None, **payload})
    snap.commands["smoke_test"] = CommandResult(("/opt/venv/bin/python", "-c", active.SMOKE_ARGV_NAME), 0, out, "", 9.0)
    if smi_text is not None:
        snap.commands["nvidia_smi_xml"] = CommandResult(hs.ARGV, 0, smi_text, "", 0.3)
    report = build_report(snap, requirements=Requirements(smoke=True))
    return {f.check_id: f for f in report.findings if f.check_id.startswith("SMK")}


def _uuid_of(name):
    import re

    return re.search(r"<uuid>([^<]+)</uuid>", hs.xml(name)).group(1)


def h100_gen5_xml(bus="00000000:3B:00.0"):
    """The RTX 4090 recording's link fields and bus id edited to an H100's Gen5 x16 link (hand-made)."""
    text = hs.xml(hs.HEALTHY, max_link_gen="5", pci_bus_id=bus)
    return text.replace('<gpu id="00000000:84:00.0">', f'<gpu id="{bus}">', 1)


def test_a_healthy_gpu_passes_with_its_numbers():
    found = judged({"devices": [device()]}, h100_gen5_xml())
    assert found["SMK001"].status.value == "ok"
    assert found["SMK001"].evidence[0].excerpt == ("GPU 0 (NVIDIA H100 80GB HBM3, cc 9.0): 512 MiB block ok; "
                                                   "matmul error vs CPU fp32 5.1e-07, fp16 2.9e-04, bf16 2.2e-03")
    assert found["SMK002"].title == ("GPU 0: host->device 51.6 GB/s, device->host 53.7 GB/s (82%/85% of the 63.0 GB/s "
                                     "a Gen5 x16 link carries)")
    assert found["SMK003"].title == "NCCL all-reduce: 1 GPU visible, nothing to reduce across"


def test_wrong_products_and_nan_fail_and_name_the_dtype():
    bad = device(matmuls=[{"dtype": "fp32", "max_abs_diff": 3.7, "max_abs_ref": 41.3},
                          {"dtype": "fp16", "max_abs_diff": float("nan"), "max_abs_ref": 41.3},
                          {"dtype": "bf16", "skipped": "needs compute capability 8.0"}])
    f = judged({"devices": [bad]})["SMK001"]
    assert (f.status.value, f.title) == ("fail", "GPU 0 (NVIDIA H100 80GB HBM3): fp32 matmul differs from the CPU "
                                                 "by 0.09 (tolerance 0.005)")
    assert "fp16 matmul differs from the CPU by inf" in f.detail and f.fix.kb_id == "gpu_smoke_failure"


def test_bf16_is_not_asked_of_a_pre_ampere_gpu():
    t4 = device(cc="7.5", matmuls=[{"dtype": "fp32", "max_abs_diff": 2e-5, "max_abs_ref": 40.0},
                                   {"dtype": "fp16", "max_abs_diff": 0.01, "max_abs_ref": 40.0},
                                   {"dtype": "bf16", "skipped": "needs compute capability 8.0"}])
    f = judged({"devices": [t4]})["SMK001"]
    assert f.status.value == "ok" and f.evidence[0].excerpt.endswith("; bf16 not supported")


def test_a_block_that_reads_back_wrong_fails():
    f = judged({"devices": [device(alloc={"mib": 512, "ok": False, "seconds": 0.3})]})["SMK001"]
    assert f.title == "GPU 0 (NVIDIA H100 80GB HBM3): 512 MiB block: read back wrong values"


def test_slow_copies_warn_and_point_at_the_link():
    slow = device(h2d=(0.0213,), d2h=(0.0209,))  # 12.6 GB/s on a Gen5 x16 link
    f = judged({"devices": [slow]}, h100_gen5_xml())["SMK002"]
    assert (f.status.value, f.title) == ("warn", "GPU 0 (NVIDIA H100 80GB HBM3): host<->device copies at 12.6 GB/s, "
                                                 "20% of its Gen5 x16 link")
    assert f.symptom_of == ("PCI001", "PCI002") and f.fix.kb_id == "pcie_link_degraded"
    # matched by UUID where torch gives no bus id (the 4090 recording's UUID, hand-made device)
    by_uuid = dict(slow, pci_bus_id=None, uuid="GPU-0b8a9a3e-9b55-6a6f-1e3b-7a0b1f43c2d5".upper())
    smi = h100_gen5_xml().replace(_uuid_of(hs.HEALTHY), "GPU-0b8a9a3e-9b55-6a6f-1e3b-7a0b1f43c2d5")
    assert judged({"devices": [by_uuid]}, smi)["SMK002"].status.value == "warn"
    # without nvidia-smi's link facts the numbers are reported, not judged
    f = judged({"devices": [slow]})["SMK002"]
    assert (f.status.value, f.title) == ("ok", "GPU 0: host->device 12.6 GB/s, device->host 12.8 GB/s")


@pytest.mark.parametrize("nccl,status,title", [
    ({"world": 2, "timed_out": True, "ranks": [], "seconds_limit": 60},
     "fail", "NCCL all-reduce across 2 GPUs did not finish within 60s"),
    ({"world": 2, "timed_out": False, "seconds_limit": 60,
      "ranks": [{"rank": 0, "error": {"type": "DistBackendError", "message": "NCCL error: unhandled system error"}},
                {"rank": 1, "correct": True, "seconds": [0.001], "bytes": 67108864}]},
     "fail", "NCCL all-reduce across 2 GPUs failed: DistBackendError: NCCL error: unhandled system error"),
    ({"world": 2, "timed_out": False, "seconds_limit": 60,
      "ranks": [{"rank": 0, "correct": False, "seconds": [0.001], "bytes": 67108864},
                {"rank": 1, "correct": True, "seconds": [0.001], "bytes": 67108864}]},
     "fail", "NCCL all-reduce across 2 GPUs returned wrong sums"),
    ({"world": 2, "timed_out": False, "seconds_limit": 60,
      "ranks": [{"rank": 0, "correct": True, "seconds": [0.0021, 0.0020], "bytes": 67108864},
                {"rank": 1, "correct": True, "seconds": [0.0021, 0.0020], "bytes": 67108864}]},
     "ok", "NCCL all-reduce across 2 GPUs: 64 MiB in 2.0 ms, bus bandwidth 33.6 GB/s"),
])
def test_nccl_all_reduce(nccl, status, title):
    f = judged({"devices": [device(0), device(1, bus="0000:5e:00.0")], "nccl": nccl})["SMK003"]
    assert (f.status.value, f.title) == (status, title)
    if status == "fail":
        assert f.fix.kb_id == "nccl_errors" and f.family == "nccl_errors"


def test_cuda_that_does_not_start_fails_only_where_nvidia_smi_sees_gpus():
    error = {"type": "RuntimeError", "message": "CUDA unknown error - this may be due to an incorrectly set up environment"}
    f = judged({"cuda_error": error}, hs.xml(hs.HEALTHY))["SMK001"]
    assert (f.status.value, f.title) == ("fail", "CUDA does not start in /opt/venv/bin/python: RuntimeError: CUDA unknown "
                                                 "error - this may be due to an incorrectly set up environment")
    assert f.symptom_of == ("DRV001", "TRC001", "TRC002", "TRC004", "CTR001")
    f = judged({"cuda_error": error})["SMK001"]
    assert f.status.value == "skip" and f.title.startswith("smoke test: no GPU here (RuntimeError: CUDA unknown error")
    hidden = judged({"cuda_error": error, "cuda_visible_devices": ""}, hs.xml(hs.HEALTHY))["SMK002"]
    assert (hidden.status.value, hidden.title) == ("skip", "smoke test: no GPU is visible to the job "
                                                           "(CUDA_VISIBLE_DEVICES='')")


def test_the_childs_measurements_on_the_cpu():
    """smoke_child's own functions, run with CPU torch (CUDA's synchronize stubbed): the block reads back,
    each dtype's product is within its tolerance, copies are timed, and the measurements judge as ok."""
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    class CpuTorch:
        cuda = SimpleNamespace(synchronize=lambda *a: None)

        def __getattr__(self, name):
            return getattr(torch, name)

    shim, cpu = CpuTorch(), torch.device("cpu")
    assert smoke_child._alloc(shim, cpu, 8)["ok"] is True
    cfg = active.smoke_config(180)
    tolerances = {t["label"]: t for t in cfg["dtypes"]}
    from gpudoctor.knowledge import node_health

    for spec in cfg["dtypes"]:
        m = smoke_child._matmul(shim, cpu, 128, spec, (9, 0))
        limit = next(t.tolerance for t in node_health.smoke_dtypes() if t.label == spec["label"])
        assert measures.relative_error(m["max_abs_diff"], m["max_abs_ref"]) < limit, m
    assert smoke_child._matmul(shim, cpu, 128, tolerances["bf16"], (7, 5)) == {
        "dtype": "bf16", "skipped": "needs compute capability 8.0"}
    copies = smoke_child._copies(shim, cpu, 1, 2)
    assert copies["bytes"] == 1024 * 1024 and len(copies["h2d_s"]) == 2 and len(copies["d2h_s"]) == 2
