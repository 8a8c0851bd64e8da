"""`gpudoctor hook`: verdicts, exit codes, the one-line reason, deadlines and the crash path."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gpudoctor.cli import main
from gpudoctor.exitcodes import HookExit
from gpudoctor.hook import node, outcome, requirements
from gpudoctor.hook.requirements import Requirements, State, evaluate
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import load
from tests import hook_snapshots as hs
from tests.conftest import run_gpudoctor

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"


def hook(capsys, *args):
    """Run `gpudoctor hook ARGS` in-process; (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exc:
        main(["hook", *args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def view_of(path, **kw):
    return node.from_snapshot(load(str(path)), **kw)


def results(path, **req):
    return {r.check: r for r in evaluate(view_of(path), Requirements(**req))}


# --- the verdict over recorded machines ------------------------------------------------

def test_healthy_recording_is_quiet_and_exits_0(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.HEALTHY)
    code, out, err = hook(capsys, "--snapshot", str(snap), "--gpus", "1", "--min-driver", "535.54.03",
                          "--max-temp", "85", "--persistence", "--min-free-mem", "20GiB")
    assert (code, out, err) == (0, "", "")


def test_every_failed_requirement_is_summarised_most_important_first(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.RETIRED)  # V100, driver 410.104, 33 C, retired pages pending
    code, out, err = hook(capsys, "--snapshot", str(snap), "--gpus", "2", "--min-driver", "535.104.05",
                          "--max-temp", "30")
    assert code == HookExit.PROBLEM and out == ""
    assert err == ("gpudoctor: 1 of 2 GPUs visible; GPU 0: retired pages pending (reset the GPU); "
                   "driver 410.104 < 535.104.05; GPU 0 at 33C > 30C\n")


def test_reason_fits_a_drain_reason(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.SIX_GPUS)
    code, _, err = hook(capsys, "--snapshot", str(snap), "--gpus", "8", "--min-driver", "550.54.15",
                        "--cuda", "12.4", "--max-temp", "40", "--no-foreign-processes", "--min-free-mem", "8GiB",
                        "--persistence")
    line = err.rstrip("\n")
    assert code == 1 and "\n" not in line
    assert len(line) <= outcome.MAX_REASON_CHARS
    assert not set(line) & set("\"'`\\")
    assert line.startswith("gpudoctor: 6 of 8 GPUs visible; driver 384.66 < 550.54.15; ")
    assert line.endswith(" more)")


def test_hung_nvidia_smi_in_a_recording_is_a_problem(tmp_path, capsys):
    code, _, err = hook(capsys, "--snapshot", str(hs.hung(tmp_path / "s", 10.0)))
    assert code == 1 and err == "gpudoctor: nvidia-smi did not answer within 10s\n"


@pytest.mark.parametrize("maker, reason", [
    (hs.driver_not_loaded, "NVIDIA driver not loaded (nvidia-smi cannot reach it)"),
    (hs.not_found, "nvidia-smi not found (no NVIDIA driver installed)"),
])
def test_driver_failures_are_problems(tmp_path, capsys, maker, reason):
    code, _, err = hook(capsys, "--snapshot", str(maker(tmp_path / "s")), "--gpus", "1")
    assert (code, err) == (1, f"gpudoctor: {reason}\n")


def test_gpu_fallen_off_the_bus_is_named_from_the_exit_code_data(tmp_path, capsys):
    lost = CommandResult(hs.ARGV, 15, "", "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n",
                         0.4)
    code, _, err = hook(capsys, "--snapshot", str(hs.save(tmp_path / "s", lost)))
    assert code == 1
    assert err == ("gpudoctor: a GPU has fallen off the bus or otherwise become inaccessible (nvidia-smi exit 15): "
                   "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n")


def test_corrupted_inforom_warning_keeps_the_gpus_judged(tmp_path):
    # nvidia-smi exits 14 yet prints its whole table (a real recording with the trailing warning).
    table = (hs.ROOT / "fixtures/nvidia-smi/text/"
             "tesla-v100-sxm2-32gb-x8_driver-460.32.03_cuda-11.2_inforom-corrupted-warning.txt").read_text()
    snap = hs.save(tmp_path / "s", CommandResult(("nvidia-smi",), 14, table, "", 0.5))
    r = results(snap, gpus=8, min_driver="450")
    assert r["driver"].state is State.OK
    assert r["driver"].message == ("driver 460.32.03 answers, 8 GPU(s); nvidia-smi exit 14: "
                                   "WARNING: infoROM is corrupted at gpu 0008:00:00.0")
    assert (r["gpu_count"].state, r["min_driver"].state) == (State.OK, State.OK)


def test_gpu_less_node_passes_when_no_gpu_is_required(tmp_path, capsys):
    code, out, err = hook(capsys, "--snapshot", str(hs.not_found(tmp_path / "s")), "--gpus", "0",
                          "--max-temp", "80")
    assert (code, out, err) == (0, "", "")


def test_a_requirement_that_cannot_be_judged_is_unknown_not_a_problem(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.NO_TEMP)  # GT 730: temperature N/A
    code, _, err = hook(capsys, "--snapshot", str(snap), "--max-temp", "80")
    assert code == HookExit.UNKNOWN
    assert err == "gpudoctor: cannot tell: GPU 0: temperature not reported\n"


def test_problems_win_over_unknowns(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.NO_TEMP)  # driver 384.111
    code, _, err = hook(capsys, "--snapshot", str(snap), "--max-temp", "80", "--min-driver", "450")
    assert (code, err) == (1, "gpudoctor: driver 384.111 < 450\n")


# --- single requirements ------------------------------------------------------------------

def test_foreign_compute_processes_and_allow_list(tmp_path):
    snap = hs.recording(tmp_path / "s", hs.T4_PROCS)  # Xorg (type G) and python pid 5762 (type C)
    r = results(snap, no_foreign_processes=True)["foreign_processes"]
    assert (r.state, r.message) == (State.PROBLEM, "1 foreign GPU process(es): python pid 5762 on GPU 0")
    assert results(snap, no_foreign_processes=True, allow_processes=("python",))["foreign_processes"].state is State.OK
    by_user = evaluate(view_of(snap, owners={5762: "alice"}),
                       Requirements(no_foreign_processes=True, allow_users=("alice",)))
    assert [r.state for r in by_user if r.check == "foreign_processes"] == [State.OK]


def test_foreign_processes_are_summarised_when_many(tmp_path):
    snap = hs.recording(tmp_path / "s", hs.SIX_GPUS)
    r = results(snap, no_foreign_processes=True)["foreign_processes"]
    assert r.message == ("6 foreign GPU process(es): ethminer pid 3093 on GPU 0, ethminer pid 3093 on GPU 1 "
                         "(+4 more)")


def test_free_memory_per_gpu(tmp_path):
    snap = hs.recording(tmp_path / "s", hs.T4_PROCS)  # 15360 MiB total, 1032 MiB used
    assert results(snap, min_free_mem_mib=14 * 1024)["min_free_mem"].message == "GPU 0: 14.0GiB free < 14.0GiB"
    assert results(snap, min_free_mem_mib=14000)["min_free_mem"].state is State.OK


def test_persistence_mode(tmp_path):
    on = results(hs.recording(tmp_path / "a", hs.HEALTHY), persistence=True)["persistence"]
    off = results(hs.recording(tmp_path / "b", hs.T4_PROCS), persistence=True)["persistence"]
    na = results(hs.recording(tmp_path / "c", hs.WDDM), persistence=True)["persistence"]
    assert (on.state, off.state, na.state) == (State.OK, State.PROBLEM, State.UNKNOWN)
    assert off.message == "GPU 0: persistence mode off"


def test_pending_row_remap_is_a_problem_and_can_be_ignored(tmp_path):
    text = hs.xml(hs.HEALTHY).replace("<remapped_row_pending>No</remapped_row_pending>",
                                      "<remapped_row_pending>Yes</remapped_row_pending>")
    assert "<remapped_row_pending>Yes" in text
    snap = hs.answered(tmp_path / "s", text)
    assert results(snap)["pending_retirement"].message == "GPU 0: row remap pending (reset the GPU)"
    assert "pending_retirement" not in results(snap, pending_retirement=False)


def test_cuda_the_driver_must_support(tmp_path):
    snap = hs.recording(tmp_path / "s", hs.HEALTHY)  # driver 535.86.05, CUDA 12.2
    assert results(snap, cuda="12.4")["cuda"].message == "driver 535.86.05 supports CUDA 12.2 < 12.4"
    assert results(snap, cuda="12.1")["cuda"].state is State.OK


def test_driver_cuda_falls_back_to_the_knowledge_table(tmp_path):
    # The K80 recording's nvidia-smi printed no CUDA version; driver 430.26 shipped with CUDA 10.1.
    snap = hs.recording(tmp_path / "s", "tesla-k80-x4_driver-430.26_cuda-not-found_processes.xml")
    assert results(snap, cuda="10.2")["cuda"].message == "driver 430.26 supports CUDA 10.1 < 10.2"


def test_framework_builds_must_not_need_a_newer_cuda_than_the_driver(tmp_path):
    fws = {"torch": hs.torch_record("2.5.1+cu124", "12.4"), "tensorflow": hs.tf_record("2.15.0", "12.2")}
    snap = hs.recording(tmp_path / "s", hs.HEALTHY, frameworks=fws)  # driver CUDA 12.2
    r = results(snap, cuda="12.1")
    assert r["cuda"].state is State.OK
    assert (r["framework_cuda"].state, r["framework_cuda"].message) == (
        State.PROBLEM, "torch 2.5.1+cu124 needs CUDA 12.4 > driver's 12.2")
    ok = hs.recording(tmp_path / "t", hs.HEALTHY, frameworks={"torch": hs.torch_record("2.1.0+cu121", "12.1")})
    assert results(ok, cuda="12.1")["framework_cuda"].message == "torch 2.1.0+cu121 (CUDA 12.1)"


def test_cpu_only_framework_builds_fail_a_cuda_requirement(tmp_path):
    fws = {"torch": hs.torch_record("2.13.0+cpu", None), "tensorflow": {"installed": False, "probe": {}}}
    snap = hs.recording(tmp_path / "s", hs.HEALTHY, frameworks=fws)
    assert results(snap, cuda="12.1")["framework_cuda"].message == "torch 2.13.0+cpu is a CPU-only build"


def test_unprobed_frameworks_leave_the_framework_requirement_unknown(tmp_path):
    snap = hs.recording(tmp_path / "s", hs.HEALTHY)
    r = results(snap, cuda="12.1")["framework_cuda"]
    assert (r.state, r.message) == (State.UNKNOWN, "frameworks were not probed")


@pytest.mark.parametrize("name, args, code, reason", [
    ("core-healthy-workstation", ["--gpus", "1", "--min-driver", "535"], 0, ""),
    ("core-8gpu-server", ["--gpus", "8", "--cuda", "12.4"], 0, ""),  # torch 2.4.0+cu121, driver CUDA 12.4
    ("core-a100-mig", ["--cuda", "12.1"], 2, "gpudoctor: cannot tell: frameworks were not probed\n"),
    ("core-8gpu-server", ["--gpus", "8", "--min-driver", "550.54.15"], 0, ""),
    ("core-8gpu-server", ["--cuda", "12.6", "--min-free-mem", "80GiB"], 1,
     "gpudoctor: driver 550.90.07 supports CUDA 12.4 < 12.6; GPUs 0-7: 79.6GiB free < 80.0GiB\n"),
    ("core-a100-mig", ["--gpus", "1"], 0, ""),
    ("core-driver-not-loaded", ["--gpus", "1"], 1,
     "gpudoctor: NVIDIA driver not loaded (nvidia-smi cannot reach it)\n"),
    ("core-gpu-less", [], 1, "gpudoctor: nvidia-smi not found (no NVIDIA driver installed)\n"),
    ("core-gpu-less", ["--gpus", "0"], 0, ""),
    ("sys-nvidia-smi-hang", [], 1, "gpudoctor: nvidia-smi did not answer within 10s\n"),
    ("sys-retired-pages-pending", [], 1, "gpudoctor: GPU 0: retired pages pending (reset the GPU)\n"),
    ("sys-driver-library-mismatch", [], 1,
     "gpudoctor: NVIDIA driver/library version mismatch (reboot or reload the module)\n"),
])
def test_core_scenarios(capsys, name, args, code, reason):
    path = SCENARIOS / name / "snapshot"
    if not path.is_dir():
        pytest.skip(f"scenario {name} is not in this checkout")
    got, _, err = hook(capsys, "--snapshot", str(path), *args)
    assert (got, err) == (code, reason)


# --- outputs ------------------------------------------------------------------------------

def test_npd_prints_at_most_80_bytes_on_stdout(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.SIX_GPUS)
    code, out, err = hook(capsys, "--snapshot", str(snap), "--npd", "--gpus", "8", "--min-driver", "550",
                          "--max-temp", "40", "--persistence")
    assert code == 1
    assert out == "gpudoctor: 6 of 8 GPUs visible; driver 384.66 < 550 (+2 more)\n"
    assert err == ("gpudoctor: 6 of 8 GPUs visible; driver 384.66 < 550; GPUs 0-5 at 61C > 40C; "
                   "GPUs 0-5: persistence mode off\n")
    assert len(out.rstrip("\n").encode()) <= 80
    ok_code, ok_out, ok_err = hook(capsys, "--snapshot", str(hs.recording(tmp_path / "h", hs.HEALTHY)), "--npd")
    assert (ok_code, ok_out, ok_err) == (0, "gpudoctor: ok\n", "")


def test_json_lists_every_requirement(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.HEALTHY, hostname="gpu017")
    code, out, _ = hook(capsys, "--snapshot", str(snap), "--json", "--gpus", "2")
    data = json.loads(out)
    assert code == 1 and data["state"] == "problem" and data["exit_code"] == 1
    assert data["reason"] == "gpudoctor: 1 of 2 GPUs visible"
    assert [r["check"] for r in data["requirements"]] == ["driver", "gpu_count", "pending_retirement"]
    assert data["node"]["hostname"] == "gpu017" and data["node"]["driver_version"] == "535.86.05"


def test_verbose_lists_results(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.HEALTHY)
    code, out, err = hook(capsys, "--snapshot", str(snap), "-v", "--no-color", "--max-temp", "85")
    assert code == 0 and err == ""
    assert "max_temp            hottest GPU 40C <= 85C" in out
    assert out.splitlines()[-1].startswith("ok in ")


# --- bad input and gpudoctor's own failures ------------------------------------------------

def test_bad_flag_value_is_one_line_and_exit_2(tmp_path, capsys):
    code, out, err = hook(capsys, "--min-free-mem", "lots")
    assert code == 2 and err.count("\n") == 1
    assert err == "gpudoctor: not a memory size: 'lots' (expected e.g. 70GiB, 512MiB or 80GB)\n"


def test_broken_snapshot_is_unknown_not_a_problem(tmp_path, capsys):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "snapshot.json").write_text("{not json")
    code, _, err = hook(capsys, "--snapshot", str(tmp_path / "s"))
    assert code == 2 and err.startswith("gpudoctor: ") and "unreadable snapshot.json" in err
    assert "Traceback" not in err


def test_a_crash_inside_the_hook_exits_unknown_and_says_so(tmp_path, capsys, monkeypatch):
    def boom(view, req):
        raise RuntimeError("injected failure")

    monkeypatch.setattr(requirements, "evaluate", boom)
    prom = tmp_path / "gpudoctor.prom"
    snap = hs.recording(tmp_path / "s", hs.RETIRED)  # a node with a real problem: still not judged
    code, out, err = hook(capsys, "--snapshot", str(snap), "--prometheus", str(prom))
    assert code == HookExit.UNKNOWN
    assert err == ("gpudoctor: internal error, not judging this node: hook failed: RuntimeError: "
                   "injected failure\n")
    assert "gpudoctor_hook_status 2\n" in prom.read_text()


def test_crash_in_a_real_process_exits_2_with_one_line(tmp_path):
    snap = hs.recording(tmp_path / "s", hs.RETIRED)
    code = ("import gpudoctor.hook.node as n\n"
            "def boom(*a, **k):\n    raise KeyError('injected')\n"
            "n.from_snapshot = boom\n"
            "from gpudoctor.cli import main\n"
            f"main(['hook', '--snapshot', {str(snap)!r}])\n")
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("gpudoctor: internal error, not judging this node: hook failed: KeyError: injected\n")
    assert proc.stdout == ""


# --- live runs with a stub nvidia-smi ---------------------------------------------------------

def test_live_hook_runs_only_nvidia_smi(stub_bin, tmp_path, monkeypatch, capsys):
    log = tmp_path / "calls"
    stub_bin("nvidia-smi", f'echo "$@" >> {log}\ncat {hs.XML / hs.HEALTHY}')
    monkeypatch.setenv("PATH", f"{stub_bin.dir}:{os.environ['PATH']}")
    code, out, err = hook(capsys, "--gpus", "1", "--min-driver", "535")
    assert (code, out, err) == (0, "", "")
    assert log.read_text() == "-q -x\n"


def test_hung_nvidia_smi_is_killed_at_the_deadline(stub_bin, tmp_path, monkeypatch, capsys):
    pidfile = tmp_path / "pid"
    stub_bin("nvidia-smi", f"echo $$ > {pidfile}\nexec sleep 60")
    monkeypatch.setenv("PATH", f"{stub_bin.dir}:{os.environ['PATH']}")
    start = time.monotonic()
    code, _, err = hook(capsys, "--timeout", "1.5")
    elapsed = time.monotonic() - start
    assert code == HookExit.PROBLEM
    assert err.startswith("gpudoctor: nvidia-smi did not answer within 1.")
    assert elapsed < 2.5
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_live_hook_never_imports_a_framework(stub_bin, tmp_path):
    stub_bin("nvidia-smi", f"cat {hs.XML / hs.HEALTHY}")
    code = ("import sys, json\n"
            "from gpudoctor.cli import main\n"
            "try:\n    main(['hook', '--cuda', '12.1', '--json'])\n"
            "except SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'tensorflow', 'jax', 'numpy', 'gpudoctor_checks') or m in "
            "('gpudoctor.report', 'gpudoctor.engine', 'gpudoctor.probes.nvml_child'))\n"
            "print('HEAVY=' + json.dumps(heavy))\n")
    import subprocess
    import sys

    env = {**os.environ, "PATH": f"{stub_bin.dir}:{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    data = json.loads(proc.stdout[: proc.stdout.index("HEAVY=")])
    assert proc.stdout.rsplit("HEAVY=", 1)[1].strip() == "[]"
    # torch and tensorflow-cpu (the `frameworks` extra) were read from their files, never imported.
    import importlib.util
    import runpy
    from importlib.metadata import PackageNotFoundError, version

    try:
        torch_v, tf_v = version("torch"), version("tensorflow-cpu")
    except PackageNotFoundError as exc:
        pytest.skip(f"{exc.args[0]} is not installed (the `frameworks` extra); the rest of this test needs it")
    torch_dir = list(importlib.util.find_spec("torch").submodule_search_locations)[0]
    torch_cuda = runpy.run_path(os.path.join(torch_dir, "version.py")).get("cuda")
    assert data["node"]["frameworks"]["torch"] == {"version": torch_v, "cuda": torch_cuda}
    if torch_cuda is None:  # CPU builds (the CI's), so --cuda fails
        assert data["requirements"][-1] == {"check": "framework_cuda", "state": "problem",
                                            "message": f"torch {torch_v} is a CPU-only build; "
                                                       f"tensorflow {tf_v} is a CPU-only build"}


def test_a_hook_stuck_in_itself_is_ended_by_its_watchdog_as_unknown(tmp_path):
    # Something in gpudoctor blocks (a stuck filesystem, a bug): the deadline still holds.
    snap = hs.recording(tmp_path / "s", hs.HEALTHY)
    code = ("import time\n"
            "import gpudoctor.hook.node as n\n"
            "n.from_snapshot = lambda *a, **k: time.sleep(60)\n"
            "from gpudoctor.cli import main\n"
            f"main(['hook', '--snapshot', {str(snap)!r}, '--timeout', '1'])\n")
    import subprocess
    import sys

    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 6
    assert proc.returncode == 2
    assert proc.stderr == ("gpudoctor: internal error, not judging this node: the hook did not finish "
                           "within 2.5s\n")
