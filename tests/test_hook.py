"""`gpudoctor hook`: verdicts, exit codes, the one-line reason, deadlines and the crash path."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gpudoctor.cli import main
from gpudoctor.exitcodes import HookExit
from gpudoctor.hook import outcome
from gpudoctor.runner import CommandResult
from tests import hook_snapshots as hs
from tests.conftest import run_gpudoctor

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"


def hook(capsys, *args):
    """Run `gpudoctor hook ARGS` in-process; (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exc:
        main(["hook", *args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def checks(capsys, path, *args):
    """{check id: (state, title)} of one hook run over a snapshot, from its --json."""
    code, out, _ = hook(capsys, "--snapshot", str(path), "--json", *args)
    return {c["check"]: (c["state"], c["title"]) for c in json.loads(out)["checks"]}


# --- the verdict over recorded machines ------------------------------------------------

def test_healthy_recording_is_quiet_and_exits_0(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.HEALTHY)
    code, out, err = hook(capsys, "--snapshot", str(snap), "--gpus", "1", "--min-driver", "535.54.03",
                          "--max-temp", "85", "--persistence", "--min-free-mem", "20GiB")
    assert (code, out, err) == (0, "", "")


def test_every_problem_is_summarised_most_serious_first(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.RETIRED)  # V100, driver 410.104, 33 C, retired pages pending
    code, out, err = hook(capsys, "--snapshot", str(snap), "--gpus", "2", "--min-driver", "535.104.05",
                          "--max-temp", "30")
    assert code == HookExit.PROBLEM and out == ""
    # Hardware first (families.json ranks it above the administrator's thresholds), then in check order.
    assert err == ("gpudoctor: GPU 0 (Tesla V100-SXM3-32GB): retired pages pending (applied at the next GPU "
                   "reset); 1 uncorrected ECC error(s) since the driver loaded; 1 of 2 GPUs visible (+2 more)\n")
    got = checks(capsys, snap, "--gpus", "2", "--min-driver", "535.104.05", "--max-temp", "30")
    assert got["DRV005"] == ("problem", "driver 410.104 < 535.104.05")
    assert got["NOD002"] == ("problem", "GPU 0 at 33C > 30C")


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


def test_driver_not_loaded_is_a_problem(tmp_path, capsys):
    code, _, err = hook(capsys, "--snapshot", str(hs.driver_not_loaded(tmp_path / "s")), "--gpus", "1")
    assert (code, err) == (1, "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not "
                              "loaded\n")


def test_no_nvidia_smi_fails_only_a_node_that_should_have_gpus(tmp_path, capsys):
    # Like `check`: no driver and no sign of a GPU is a warning for a person, not a drain reason...
    snap = hs.not_found(tmp_path / "s")
    assert hook(capsys, "--snapshot", str(snap)) == (0, "", "")
    # ...but a node that should have GPUs has lost them.
    assert hook(capsys, "--snapshot", str(snap), "--gpus", "1") == (1, "", "gpudoctor: 0 of 1 GPUs visible\n")


def test_gpu_fallen_off_the_bus_is_named_from_nvidia_smis_words(tmp_path, capsys):
    lost = CommandResult(hs.ARGV, 15, "", "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n",
                         0.4)
    code, _, err = hook(capsys, "--snapshot", str(hs.save(tmp_path / "s", lost)))
    assert code == 1
    assert err == "gpudoctor: GPU 0000:3B:00.0 has fallen off the bus or stopped answering\n"


def test_corrupted_inforom_warning_keeps_the_gpus_judged(tmp_path, capsys):
    # nvidia-smi exits 14 yet prints its whole table (a real recording with the trailing warning).
    table = (hs.ROOT / "fixtures/nvidia-smi/text/"
             "tesla-v100-sxm2-32gb-x8_driver-460.32.03_cuda-11.2_inforom-corrupted-warning.txt").read_text()
    # The table is what `nvidia-smi` (no -q -x) prints, so it is recorded as that command's output.
    snap = hs.save(tmp_path / "s", CommandResult(("nvidia-smi",), 14, table, "", 0.5), key="nvidia_smi")
    got = checks(capsys, snap, "--gpus", "8", "--min-driver", "450")
    assert got["DRV001"] == ("ok", "driver 460.32.03 answers, 8 GPU(s) visible (nvidia-smi exited 14: "
                                   "a GPU's infoROM is corrupted)")
    assert (got["NOD001"][0], got["DRV005"][0]) == ("ok", "ok")


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

def test_foreign_compute_processes_and_allow_list(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.T4_PROCS)  # Xorg (type G) and python pid 5762 (type C)
    assert checks(capsys, snap, "--no-foreign-processes")["NOD004"] == (
        "problem", "1 foreign GPU process(es) on GPU 0: python pid 5762 on GPU 0")
    assert checks(capsys, snap, "--no-foreign-processes", "--allow-process", "python")["NOD004"][0] == "ok"


def test_allow_user_on_a_replay_without_owners_cannot_tell(tmp_path, capsys):
    # nvidia-smi does not print owners; a recording without them must not guess either way.
    snap = hs.recording(tmp_path / "s", hs.T4_PROCS)
    state, title = checks(capsys, snap, "--no-foreign-processes", "--allow-user", "alice")["NOD004"]
    assert state == "unknown" and title.startswith("cannot tell whose 1 GPU process(es) these are: process owners")


@pytest.mark.parametrize("owner, state", [("alice", "ok"), ("mallory", "problem")])
def test_allow_user_with_recorded_owners(tmp_path, capsys, owner, state):
    snap = hs.recording(tmp_path / "s", hs.T4_PROCS, meta={"process_owners": {"5762": owner}})
    assert checks(capsys, snap, "--no-foreign-processes", "--allow-user", "alice")["NOD004"][0] == state


def test_foreign_processes_are_summarised_when_many(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.SIX_GPUS)
    assert checks(capsys, snap, "--no-foreign-processes")["NOD004"][1] == (
        "6 foreign GPU process(es) on GPUs 0-5: ethminer pid 3093 on GPU 0, ethminer pid 3093 on GPU 1 (+4 more)")


def test_free_memory_per_gpu(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.T4_PROCS)  # 15360 MiB total, 1032 MiB used
    assert checks(capsys, snap, "--min-free-mem", str(14 * 1024))["NOD005"] == (
        "problem", "GPU 0: 14.0GiB free < 14.0GiB")
    assert checks(capsys, snap, "--min-free-mem", "14000")["NOD005"][0] == "ok"


def test_persistence_mode(tmp_path, capsys):
    on = checks(capsys, hs.recording(tmp_path / "a", hs.HEALTHY), "--persistence")["NOD003"]
    off = checks(capsys, hs.recording(tmp_path / "b", hs.T4_PROCS), "--persistence")["NOD003"]
    na = checks(capsys, hs.recording(tmp_path / "c", hs.WDDM), "--persistence")["NOD003"]
    assert (on[0], off[0], na[0]) == ("ok", "problem", "unknown")
    assert off[1] == "GPU 0: persistence mode off"


def test_pending_row_remap_is_a_problem_and_can_be_ignored(tmp_path, capsys):
    text = hs.xml(hs.HEALTHY).replace("<remapped_row_pending>No</remapped_row_pending>",
                                      "<remapped_row_pending>Yes</remapped_row_pending>")
    assert "<remapped_row_pending>Yes" in text
    snap = hs.answered(tmp_path / "s", text)
    assert checks(capsys, snap)["DRV003"] == (
        "problem", "GPU 0 (NVIDIA GeForce RTX 4090): remapped rows pending (applied at the next GPU reset)")
    assert "DRV003" not in checks(capsys, snap, "--ignore-pending-retirement")


def test_cuda_uses_minor_version_compatibility_like_the_framework_checks(tmp_path, capsys):
    # Driver 535.86.05 reports CUDA 12.2 yet runs any CUDA 12.x runtime (>= 525.60.13): the same rule as
    # TRC002/TF003, so the hook never drains a node `check` calls healthy.
    snap = hs.recording(tmp_path / "s", hs.HEALTHY, frameworks={"torch": {"installed": False, "probe": {}},
                                                               "tensorflow": {"installed": False, "probe": {}}})
    assert checks(capsys, snap, "--cuda", "12.4")["CUDA003"] == (
        "ok", "driver 535.86.05 runs CUDA 12.4 (needs >= 525.60.13)")
    assert checks(capsys, snap, "--cuda", "13.0")["CUDA003"] == (
        "problem", "driver 535.86.05 < 580 needed for CUDA 13.0")


def test_cuda_judged_from_the_table_when_nvidia_smi_prints_none(tmp_path, capsys):
    # The K80 recording's nvidia-smi printed no CUDA version; the CUDA -> driver table decides.
    snap = hs.recording(tmp_path / "s", "tesla-k80-x4_driver-430.26_cuda-not-found_processes.xml")
    assert checks(capsys, snap, "--cuda", "10.2")["CUDA003"] == ("problem", "driver 430.26 < 440.33 needed for CUDA 10.2")


def test_framework_builds_are_judged_by_the_framework_checks(tmp_path, capsys):
    fws = {"torch": hs.torch_record("2.5.1+cu124", "12.4"), "tensorflow": hs.tf_record("2.15.0", "12.2")}
    snap = hs.recording(tmp_path / "s", hs.HEALTHY, frameworks=fws)  # driver 535.86.05, CUDA 12.2
    got = checks(capsys, snap, "--cuda", "12.1")
    assert got["TRC002"] == ("ok", "driver 535.86.05 runs torch 2.5.1+cu124 (CUDA 12.4 needs >= 525.60.13)")
    assert got["TF003"][0] == "ok"
    old = hs.recording(tmp_path / "t", "tesla-t4_driver-515.105.01_cuda-11.7_processes.xml", frameworks=fws)
    assert checks(capsys, old, "--cuda", "11.7")["TRC002"][0] == "problem"


def test_cpu_only_framework_builds_fail_on_a_gpu_node(tmp_path, capsys):
    fws = {"torch": hs.torch_record("2.13.0+cpu", None), "tensorflow": {"installed": False, "probe": {}}}
    code, _, err = hook(capsys, "--snapshot", str(hs.recording(tmp_path / "s", hs.HEALTHY, frameworks=fws)),
                        "--cuda", "12.1")
    assert (code, err) == (1, "gpudoctor: torch 2.13.0+cpu is a CPU-only build, but this machine has 1 NVIDIA "
                              "GPU(s)\n")


def test_unprobed_frameworks_leave_the_framework_checks_unknown(tmp_path, capsys):
    code, _, err = hook(capsys, "--snapshot", str(hs.recording(tmp_path / "s", hs.HEALTHY)), "--cuda", "12.1")
    assert (code, err) == (2, "gpudoctor: cannot tell: torch was not probed in this snapshot; tensorflow was not "
                              "probed in this snapshot\n")


@pytest.mark.parametrize("name, args, code, reason", [
    ("core-healthy-workstation", ["--gpus", "1", "--min-driver", "535"], 0, ""),
    ("core-8gpu-server", ["--gpus", "8", "--cuda", "12.4"], 0, ""),  # torch 2.4.0+cu121, driver CUDA 12.4
    ("core-a100-mig", ["--cuda", "12.1"], 2,
     "gpudoctor: cannot tell: torch was not probed in this snapshot; tensorflow was not probed in this snapshot\n"),
    ("core-8gpu-server", ["--gpus", "8", "--min-driver", "550.54.15"], 0, ""),
    ("core-8gpu-server", ["--cuda", "13.0", "--min-free-mem", "80GiB"], 1,
     "gpudoctor: GPUs 0-7: 79.6GiB free < 80.0GiB; driver 550.90.07 < 580 needed for CUDA 13.0\n"),
    ("core-a100-mig", ["--gpus", "1"], 0, ""),
    ("core-driver-not-loaded", ["--gpus", "1"], 1,
     "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded\n"),
    ("core-gpu-less", [], 0, ""),
    ("core-gpu-less", ["--gpus", "1"], 1, "gpudoctor: 0 of 1 GPUs visible\n"),
    ("sys-nvidia-smi-hang", [], 1, "gpudoctor: nvidia-smi did not answer within 10s\n"),
    ("sys-retired-pages-pending", [], 1,
     "gpudoctor: GPU 0 (Tesla V100-SXM3-32GB): retired pages pending (applied at the next GPU reset); 1 "
     "uncorrected ECC error(s) since the driver loaded\n"),
    ("sys-driver-library-mismatch", [], 1,
     "gpudoctor: the NVIDIA kernel module and user-space driver have different versions\n"),
    # The contradiction issue 9 found: TensorFlow 2.18 (CUDA 12.5) on a 535 driver is fine by minor-version
    # compatibility, so the hook must not drain what `check` calls healthy (TF003 ok).
    ("fw-tf-missing-libcudnn", ["--cuda", "12.2"], 0, ""),
])
def test_core_scenarios(capsys, name, args, code, reason):
    # These recordings predate the kernel-log and fabric-manager probes: judged without them, as asked.
    path = SCENARIOS / name / "snapshot"
    got, _, err = hook(capsys, "--snapshot", str(path), *args, "--drain-xid-actions", "none", "--no-fabric-manager")
    assert (got, err) == (code, reason)


def test_a_recording_without_the_kernel_log_cannot_tell_about_xids(capsys):
    path = SCENARIOS / "core-8gpu-server" / "snapshot"
    # Asked for explicitly, as a Prolog's config would: then a missing log is "cannot tell".
    got, _, err = hook(capsys, "--snapshot", str(path), "--gpus", "8", "--no-fabric-manager",
                       "--drain-xid-actions", "RESET_GPU,RESTART_BM,CONTACT_SUPPORT")
    assert (got, err) == (2, "gpudoctor: cannot tell: the kernel log was not recorded in this snapshot\n")
    got, _, err = hook(capsys, "--snapshot", str(path), "--gpus", "8", "--drain-xid-actions", "none",
                       "--fabric-manager")
    assert (got, err) == (2, "gpudoctor: cannot tell: fabric manager state unknown: the fabric manager state "
                             "was not recorded in this snapshot\n")


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


def test_json_lists_every_check_the_hook_ran(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.HEALTHY, hostname="gpu017")
    code, out, _ = hook(capsys, "--snapshot", str(snap), "--json", "--gpus", "2")
    data = json.loads(out)
    assert code == 1 and data["schema"] == "gpudoctor.hook/2"
    assert (data["state"], data["exit_code"]) == ("problem", 1)
    assert data["reason"] == "gpudoctor: 1 of 2 GPUs visible"
    assert [c["check"] for c in data["checks"]] == ["DRV001", "DRV003", "DRV006", "NOD001", "XID001", "XID002",
                                                    "XID003", "XID004", "SXID001", "FAB001"]
    assert [d["cause"]["check_id"] for d in data["diagnoses"]] == ["NOD001"]
    assert data["node"]["hostname"] == "gpu017" and data["node"]["driver_version"] == "535.86.05"


def test_verbose_lists_results(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.HEALTHY)
    code, out, err = hook(capsys, "--snapshot", str(snap), "-v", "--no-color", "--max-temp", "85")
    assert code == 0 and err == ""
    assert "[✓] NOD002   hottest GPU 40C <= 85C" in out
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
    def boom(*args, **kwargs):
        raise RuntimeError("injected failure")

    import gpudoctor.engine

    monkeypatch.setattr(gpudoctor.engine, "run_checks", boom)
    prom = tmp_path / "gpudoctor.prom"
    snap = hs.recording(tmp_path / "s", hs.RETIRED)  # a node with a real problem: still not judged
    code, out, err = hook(capsys, "--snapshot", str(snap), "--prometheus", str(prom))
    assert code == HookExit.UNKNOWN
    assert err == ("gpudoctor: internal error, not judging this node: hook failed: RuntimeError: "
                   "injected failure\n")
    assert "gpudoctor_hook_status 2\n" in prom.read_text()


def test_crash_in_a_real_process_exits_2_with_one_line(tmp_path):
    snap = hs.recording(tmp_path / "s", hs.RETIRED)
    code = ("import gpudoctor.engine as n\n"
            "def boom(*a, **k):\n    raise KeyError('injected')\n"
            "n.run_checks = boom\n"
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
    code, out, err = hook(capsys, "--gpus", "1", "--min-driver", "535", "--drain-xid-actions", "none",
                          "--no-fabric-manager")
    assert (code, out, err) == (0, "", "")
    assert log.read_text() == "-q -x\n"


@pytest.mark.parametrize("allowed, code", [("me", 0), ("somebody-else", 1)])
def test_live_hook_records_process_owners_for_allow_user(stub_bin, tmp_path, monkeypatch, capsys, allowed, code):
    import getpass

    xml = tmp_path / "smi.xml"
    xml.write_text(hs.xml(hs.T4_PROCS).replace("<pid>5762</pid>", f"<pid>{os.getpid()}</pid>"))
    stub_bin("nvidia-smi", f"cat {xml}")
    monkeypatch.setenv("PATH", f"{stub_bin.dir}:{os.environ['PATH']}")
    user = getpass.getuser() if allowed == "me" else allowed
    got, _, err = hook(capsys, "--no-foreign-processes", "--allow-user", user)
    assert got == code, err
    if code:
        assert err.startswith("gpudoctor: 1 foreign GPU process(es) on GPU 0: ")


def test_hung_nvidia_smi_is_killed_at_the_deadline(stub_bin, tmp_path, monkeypatch, capsys):
    pidfile = tmp_path / "pid"
    stub_bin("nvidia-smi", f"echo $$ > {pidfile}\nexec sleep 60")
    monkeypatch.setenv("PATH", f"{stub_bin.dir}:{os.environ['PATH']}")
    start = time.monotonic()
    code, _, err = hook(capsys, "--timeout", "1.5")
    elapsed = time.monotonic() - start
    assert code == HookExit.PROBLEM
    assert err.startswith("gpudoctor: nvidia-smi did not answer within 1.")
    assert elapsed < 3.0  # the --timeout and slack for a loaded runner, far from the stub's 60 s
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_live_hook_never_imports_a_framework(stub_bin, tmp_path):
    stub_bin("nvidia-smi", f"cat {hs.XML / hs.HEALTHY}")
    code = ("import sys, json\n"
            "from gpudoctor.cli import main\n"
            "try:\n    main(['hook', '--cuda', '12.1', '--json'])\n"
            "except SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'tensorflow', 'jax', 'numpy') or m in "
            "('gpudoctor.probes.nvml_child',))\n"
            "print('HEAVY=' + json.dumps(heavy))\n")
    import subprocess
    import sys

    env = {**os.environ, "PATH": f"{stub_bin.dir}:{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    data = json.loads(proc.stdout[: proc.stdout.index("HEAVY=")])
    assert proc.stdout.rsplit("HEAVY=", 1)[1].strip() == "[]"
    # torch and tensorflow-cpu (the `frameworks` extra) were read from their files, never imported, and judged by
    # the framework checks.
    import importlib.util
    import runpy
    from importlib.metadata import PackageNotFoundError, version

    try:
        torch_v = version("torch")
    except PackageNotFoundError as exc:
        pytest.skip(f"{exc.args[0]} is not installed (the `frameworks` extra); the rest of this test needs it")
    torch_dir = list(importlib.util.find_spec("torch").submodule_search_locations)[0]
    torch_cuda = runpy.run_path(os.path.join(torch_dir, "version.py")).get("cuda")
    ran = {c["check"]: c for c in data["checks"]}
    assert {"TRC001", "TRC002", "TF001", "TF003"} <= set(ran)
    assert data["node"]["frameworks"]["torch"]["version"] == torch_v
    if torch_cuda is None:  # a CPU build (the CI's) on a node with a GPU: TRC001 fails
        assert ran["TRC001"]["state"] == "problem" and f"torch {torch_v} is a CPU-only build" in ran["TRC001"]["title"]


def test_a_hook_stuck_in_itself_is_ended_by_its_watchdog_as_unknown(tmp_path):
    # Something in gpudoctor blocks (a stuck filesystem, a bug): the deadline still holds.
    snap = hs.recording(tmp_path / "s", hs.HEALTHY)
    code = ("import time\n"
            "import gpudoctor.engine as n\n"
            "n.run_checks = lambda *a, **k: time.sleep(60)\n"
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


# --- live: the kernel log, the fabric manager and NVLink (stub commands, a test root) -------------

XID79_KMSG = ("4,812,6781741548779,-;NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
              "off the bus.\n")  # the gpud sxid README's line, in /dev/kmsg's format
XID119 = ("[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s "
          "of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).")  # gpud testdata


@pytest.fixture
def live_root(tmp_path, monkeypatch):
    """The live hook reading /dev/kmsg and /dev below a test folder instead of /."""
    import functools

    from gpudoctor.hook import live

    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    monkeypatch.setattr(live, "record", functools.partial(live.record, root=str(root)))
    return root


def _path(monkeypatch, stub_bin):
    monkeypatch.setenv("PATH", f"{stub_bin.dir}:{os.environ['PATH']}")


def test_live_hook_drains_on_an_xid_in_kmsg(stub_bin, live_root, monkeypatch, capsys):
    (live_root / "dev" / "kmsg").write_text("6,0,0,-;Linux version 6.8.0\n" + XID79_KMSG)
    journal = live_root / "journal-ran"
    stub_bin("nvidia-smi", f"cat {hs.XML / hs.HEALTHY}")
    stub_bin("journalctl", f"touch {journal}")
    _path(monkeypatch, stub_bin)
    code, out, err = hook(capsys, "--no-fabric-manager")
    assert (code, out) == (1, "")
    assert err == "gpudoctor: Xid 79 on GPU at PCI 0000:91:00: GPU has fallen off the bus; action RESTART_BM\n"
    assert not journal.exists()  # /dev/kmsg was readable: no journalctl
    code, _, err = hook(capsys, "--no-fabric-manager", "--drain-xid-actions", "RESET_GPU")
    assert code == 0  # warned, not drained: this node drains on GPU resets only


def test_live_hook_falls_back_to_the_journal_when_kmsg_is_refused(stub_bin, live_root, monkeypatch, capsys):
    stub_bin("nvidia-smi", f"cat {hs.XML / hs.HEALTHY}")
    stub_bin("journalctl", f"echo '[    0.000000] node kernel: Linux version 6.8.0'\necho '{XID119}'")
    _path(monkeypatch, stub_bin)
    code, _, err = hook(capsys, "--no-fabric-manager")  # no dev/kmsg under the test root
    assert (code, err) == (1, "gpudoctor: Xid 119 on GPU at PCI 0000:9b:00: GSP RPC Timeout; action RESET_GPU\n")


def test_a_slow_journal_cannot_make_the_hook_late(stub_bin, live_root, monkeypatch, capsys):
    pidfile = live_root / "pid"
    stub_bin("nvidia-smi", f"cat {hs.XML / hs.HEALTHY}")
    stub_bin("journalctl", f"echo $$ > {pidfile}\nexec sleep 60")
    _path(monkeypatch, stub_bin)
    start = time.monotonic()
    code, _, err = hook(capsys, "--no-fabric-manager", "--timeout", "1.5", "--drain-xid-actions", "RESET_GPU")
    assert time.monotonic() - start < 3.0  # the --timeout and slack for a loaded runner, not the stub's 60 s
    assert code == HookExit.UNKNOWN and err.startswith("gpudoctor: cannot tell: the kernel log could not be read (")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_live_hook_checks_the_fabric_manager_of_an_nvswitch_node(stub_bin, live_root, monkeypatch, capsys):
    (live_root / "dev" / "kmsg").write_text("6,0,0,-;Linux version 6.8.0\n")
    (live_root / "dev" / "nvidia-nvswitch0").write_text("")
    stub_bin("nvidia-smi", f"cat {hs.XML / hs.HEALTHY}")
    stub_bin("systemctl", "echo inactive\nexit 3")
    stub_bin("nv-fabricmanager", "echo 'Fabric Manager version is : 535.161.08'")
    _path(monkeypatch, stub_bin)
    code, _, err = hook(capsys)
    assert (code, err) == (1, "gpudoctor: nvidia-fabricmanager is inactive: CUDA fails with error 802 "
                              "system not yet initialized\n")  # the reason drops quotes: it goes into drain reasons
    code, _, err = hook(capsys, "--no-fabric-manager")
    assert (code, err) == (0, "")


def test_live_hook_reads_nvlink_errors_twice_when_asked(stub_bin, live_root, monkeypatch, capsys):
    (live_root / "dev" / "kmsg").write_text("6,0,0,-;Linux version 6.8.0\n")
    calls = live_root / "calls"
    h100_e = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)\n"
              "         Link 0: Replay Errors: 0\n         Link 0: Recovery Errors: 0\n         Link 0: CRC Errors: 0\n")
    stub_bin("nvidia-smi", f'echo "$* $(date +%s.%N)" >> {calls}\n'
                           f'case "$*" in\n  "nvlink -e") printf "%s" "{h100_e}";;\n'
                           f'  "nvlink -s") printf "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\\n\\t Link 0: <inactive>\\n";;\n'
                           f'  *) cat {hs.XML / hs.HEALTHY};;\nesac')
    _path(monkeypatch, stub_bin)
    code, _, err = hook(capsys, "--nvlink", "--no-fabric-manager")
    assert (code, err) == (1, "gpudoctor: NVLink down: GPU 0: link 0 down\n")
    seen = [line.rsplit(" ", 1) for line in calls.read_text().splitlines()]
    assert sorted(args for args, _ in seen) == ["-q -x", "nvlink -e", "nvlink -e", "nvlink -s"]
    e_at = sorted(float(t) for args, t in seen if args == "nvlink -e")
    assert 0.9 < e_at[1] - e_at[0] < 3


def test_a_second_nvlink_reading_that_hangs_keeps_the_first(stub_bin, live_root, monkeypatch, capsys):
    (live_root / "dev" / "kmsg").write_text("6,0,0,-;Linux version 6.8.0\n")
    once = live_root / "once"
    h100_e = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n         Link 0: Replay Errors: 0\n"
              "         Link 0: Recovery Errors: 0\n         Link 0: CRC Errors: 0\n")
    stub_bin("nvidia-smi", f'case "$*" in\n'
                           f'  "nvlink -e") [ -e {once} ] && exec sleep 60; touch {once}; printf "%s" "{h100_e}";;\n'
                           f'  "nvlink -s") printf "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\\n\\t Link 0: 26.562 GB/s\\n";;\n'
                           f'  *) cat {hs.XML / hs.HEALTHY};;\nesac')
    _path(monkeypatch, stub_bin)
    # 4 s: the first reading and the XML must fit before the deadline on a loaded CI machine too (2.5 s once did not)
    code, out, err = hook(capsys, "--nvlink", "--no-fabric-manager", "--timeout", "4", "--json")
    assert (code, err) == (0, "")
    nvl002 = next(c for c in json.loads(out)["checks"] if c["check"] == "NVL002")
    assert (nvl002["state"], nvl002["title"]) == ("ok", "1 NVLink, no recovery errors, no counter growing; "
                                                         "read once, growth not measured")


@pytest.mark.parametrize("args, code", [
    ([], 0),                                                  # Xid and fabric manager on by default: not judged
    (["--drain-xid-actions", "RESET_GPU,RESTART_BM"], 2),     # asked for: a log that cannot be read is unknown
    (["--fabric-manager"], 2),
])
def test_default_on_requirements_never_make_an_unreadable_fact_unknown(capsys, args, code):
    # The 8x H100 recording has neither a kernel log nor the fabric manager's state.
    got, _, err = hook(capsys, "--snapshot", str(SCENARIOS / "core-8gpu-server" / "snapshot"), *args)
    assert got == code, err
    if code:
        assert err.startswith("gpudoctor: cannot tell: ")


def test_a_config_file_that_sets_a_default_on_requirement_makes_it_strict(tmp_path, capsys):
    conf = tmp_path / "hook.toml"
    conf.write_text('drain_xid_actions = "RESET_GPU"\n')
    got, _, err = hook(capsys, "--snapshot", str(SCENARIOS / "core-8gpu-server" / "snapshot"), "--config", str(conf))
    assert got == 2 and "kernel log" in err
