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
