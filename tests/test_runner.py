"""The one subprocess seam: timeouts kill the whole process group, failures are data."""

import time

from gpudoctor import runner


def test_records_output_and_exit_code():
    res = runner.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=5)
    assert (res.returncode, res.stdout, res.stderr, res.timed_out, res.error) == (3, "out\n", "err\n", False, None)
    assert not res.ok and res.ran


def test_missing_program_is_data_not_exception():
    res = runner.run(["/nonexistent/nvidia-smi", "-q"], timeout=5)
    assert res.error == "not found" and res.returncode is None
    assert res.describe() == "`/nonexistent/nvidia-smi -q`: not found"


def test_timeout_kills_children_too(tmp_path):
    marker = tmp_path / "child-still-alive"
    # The child spawns a grandchild that would write a marker after 2 s; both must die at the timeout.
    start = time.monotonic()
    res = runner.run(["sh", "-c", f"(sleep 2; touch {marker}) & sleep 100"], timeout=0.5)
    elapsed = time.monotonic() - start
    assert res.timed_out and res.returncode is None
    assert elapsed < 3
    time.sleep(2.5)
    assert not marker.exists()
    assert "did not answer within" in res.describe()


def test_binary_output_is_decoded_with_replacement():
    res = runner.run(["sh", "-c", r"printf '\377\376nv\000idia'"], timeout=5)
    assert res.ok and "nv" in res.stdout and "\ufffd" in res.stdout


def test_round_trip_dict():
    res = runner.run(["sh", "-c", "echo hi"], timeout=5)
    assert runner.CommandResult.from_dict(res.to_dict()) == res


# --- bounded in time and memory (issue 15) ---------------------------------------------------

import json
import os
import subprocess
import sys
import textwrap

from gpudoctor import proctree

# Double-forks; the grandchild calls setsid(), records its pid and holds our stdout and stderr.
DAEMON = textwrap.dedent("""
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(sys.argv[1], "a") as fh:
                fh.write("%d\\n" % os.getpid())
            time.sleep(60)
        os._exit(0)
    print("hello", flush=True)
    time.sleep(float(sys.argv[2]))
""")


def _pids(path):
    deadline = time.monotonic() + 5
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return [int(p) for p in path.read_text().split()]


def test_a_setsid_grandchild_holding_the_pipe_is_killed_and_not_waited_for(tmp_path):
    pids = tmp_path / "pids"
    start = time.monotonic()
    res = runner.run([sys.executable, "-c", DAEMON, str(pids), "0"], timeout=20)
    elapsed = time.monotonic() - start
    assert (res.returncode, res.stdout, res.timed_out) == (0, "hello\n", False)
    assert res.note == runner.HELD
    assert "kept its output open" in res.describe()
    assert elapsed < 5  # not the grandchild's 60 s, nor the 20 s timeout
    assert proctree.alive(_pids(pids)) == []


def test_a_setsid_grandchild_dies_with_a_command_that_times_out(tmp_path):
    pids = tmp_path / "pids"
    start = time.monotonic()
    res = runner.run([sys.executable, "-c", DAEMON, str(pids), "60"], timeout=1.5)
    assert res.timed_out and res.returncode is None and res.stdout == "hello\n"
    assert time.monotonic() - start < 4
    assert proctree.alive(_pids(pids)) == []


def test_a_detached_daemon_that_closed_its_output_is_killed_too(tmp_path):
    pids = tmp_path / "pids"
    script = (f"setsid sh -c 'echo $$ > {pids}; exec sleep 60' </dev/null >/dev/null 2>&1 & "
              f"while [ ! -s {pids} ]; do sleep 0.05; done; echo started")
    res = runner.run(["sh", "-c", script], timeout=10)
    assert res.ok and res.stdout == "started\n" and res.note is None
    assert proctree.alive(_pids(pids)) == []


def test_endless_output_is_cut_while_it_runs_and_the_command_stopped():
    # In a child, so that its peak RSS is the runner's alone.
    code = textwrap.dedent("""
        import json, resource, time
        from gpudoctor import runner
        t = time.monotonic()
        r = runner.run(["cat", "/dev/zero"], timeout=30)
        # VmHWM: this process's peak since exec (ru_maxrss keeps the forking pytest's, 300 MiB late in a run).
        hwm = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")]
        peak = hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps([len(r.stdout), r.truncated, r.timed_out, r.returncode, r.note,
                          time.monotonic() - t, peak // 1024]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    size, truncated, timed_out, rc, note, seconds, rss_mib = json.loads(out.stdout)
    assert (size, truncated, timed_out, rc) == (runner.MAX_OUTPUT_BYTES, True, False, -9)
    assert note == "printed more than 72 MiB; stopped it and kept the first 8 MiB"
    assert seconds < 10
    assert rss_mib < 150  # 8 MiB kept (bytes, then text): never the gigabytes cat prints


def test_long_but_finite_output_keeps_its_exit_code():
    res = runner.run(["sh", "-c", "head -c 20000000 /dev/zero; exit 4"], timeout=30)
    assert res.returncode == 4 and res.truncated and res.note is None
    assert len(res.stdout) == runner.MAX_OUTPUT_BYTES


def test_a_command_that_closes_its_output_but_runs_on_times_out():
    start = time.monotonic()
    res = runner.run(["sh", "-c", "exec >/dev/null 2>&1; sleep 30"], timeout=1)
    assert res.timed_out and time.monotonic() - start < 3


def test_stdin_is_fed_without_blocking_on_a_full_pipe():
    data = b"x" * (3 << 20)
    res = runner.run(["wc", "-c"], timeout=20, stdin_data=data)
    assert res.ok and res.stdout.strip() == str(len(data))


def test_the_run_id_does_not_stay_in_anything_it_records():
    res = runner.run(["sh", "-c", "echo $GPUDOCTOR_RUN_ID"], timeout=5)
    assert res.stdout.strip().startswith(f"{os.getpid()}.")
    assert proctree.marked_processes(f"{os.getpid()}.") == []
