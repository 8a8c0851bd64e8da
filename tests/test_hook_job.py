"""--no-foreign-processes inside a Slurm job: the job's GPUs (SLURM_JOB_GPUS, its
CUDA_VISIBLE_DEVICES) and the job's user (hook/job.py)."""

from __future__ import annotations

import getpass
import os

import pytest

from gpudoctor.cli import run
from gpudoctor.hook import node
from gpudoctor.hook.job import Job, cuda_gpus, job_from_environ, scope, slurm_gpus
from gpudoctor.hook.requirements import Requirements, State, evaluate
from gpudoctor.snapshot import load
from tests import hook_snapshots as hs

SIX_UUID_2 = "GPU-e342d672-4033-5df9-b938-236756ab729c"  # GPU 2 of the six-GPU recording


@pytest.mark.parametrize("raw, gpus", [
    ("0,1,3", ("0", "1", "3")), (" 1 , 2 ", ("1", "2")), ("0-2,5", ("0", "1", "2", "5")), ("2,2", ("2",)),
    ("", ()), ("gpu0", None), ("3-1", None), ("0-5000", None), ("9" * 5000, None), ("1,-1", None),
])
def test_slurm_job_gpus(raw, gpus):
    assert slurm_gpus(raw) == gpus


@pytest.mark.parametrize("raw, gpus", [
    ("1,0", ("1", "0")), ("0,-1,1", ("0",)), ("GPU-e342d672", ("GPU-e342d672",)),
    ("MIG-4d0efb7d-1c2b-5d5e-a6b1-aa3e1e5b9a2a", None),
])
def test_cuda_visible_devices_read_as_cuda_reads_it(raw, gpus):
    assert cuda_gpus(raw) == gpus


def test_the_job_from_the_environment():
    assert job_from_environ({"SLURM_JOB_GPUS": "0"}) is None  # not in a job
    env = {"SLURM_JOB_ID": "42", "SLURM_JOB_USER": "alice", "SLURM_JOB_GPUS": "2,3", "CUDA_VISIBLE_DEVICES": "0"}
    assert job_from_environ(env) == Job("42", "alice", ("2", "3"), "SLURM_JOB_GPUS")
    env["SLURM_JOB_GPUS"] = "gpu:2"  # unreadable: the job's CUDA_VISIBLE_DEVICES is next
    assert job_from_environ(env) == Job("42", "alice", ("0",), "CUDA_VISIBLE_DEVICES")
    assert job_from_environ({"SLURM_JOB_ID": "42"}) == Job("42", None, None)


def _foreign(tmp_path, job, owners=None, **req):
    view = node.from_snapshot(load(str(hs.recording(tmp_path / "s", hs.SIX_GPUS))), owners=owners)
    view, reqs = scope(view, Requirements(no_foreign_processes=True, **req), job)
    return next(r for r in evaluate(view, reqs) if r.check == "foreign_processes")


def test_only_processes_on_the_jobs_gpus_are_judged(tmp_path):
    everywhere = _foreign(tmp_path / "a", None)
    assert everywhere.message.startswith("6 foreign GPU process(es)")
    by_index = _foreign(tmp_path / "b", Job("42", "alice", ("2",)))
    assert (by_index.state, by_index.message) == (State.PROBLEM, "1 foreign GPU process(es): ethminer pid 3093 on GPU 2")
    by_uuid = _foreign(tmp_path / "c", Job("42", "alice", (SIX_UUID_2[:12],)))
    assert by_uuid.message == by_index.message
    no_gpus = _foreign(tmp_path / "d", Job("42", "alice", ()))
    assert (no_gpus.state, no_gpus.message) == (State.OK, "no foreign compute process on any GPU")


def test_the_jobs_user_is_allowed_on_its_gpus(tmp_path):
    mine = _foreign(tmp_path / "a", Job("42", "alice", ("2",)), owners={3093: "alice"})
    assert mine.state is State.OK
    theirs = _foreign(tmp_path / "b", Job("42", "bob", ("2",)), owners={3093: "alice"})
    assert theirs.state is State.PROBLEM
    unknown_gpus = _foreign(tmp_path / "c", Job("42", "alice", None), owners={3093: "alice"})
    assert unknown_gpus.state is State.OK  # every GPU judged, alice's processes allowed on all of them


def test_outside_a_job_nothing_changes(tmp_path):
    view = node.from_snapshot(load(str(hs.recording(tmp_path / "s", hs.SIX_GPUS))))
    req = Requirements(no_foreign_processes=True)
    assert scope(view, req, None) == (view, req)


# --- live, through `gpudoctor hook`: a stub nvidia-smi lists this test's own process ---------------

@pytest.fixture
def own_process_on_gpu0(stub_bin, monkeypatch, tmp_path):
    listing = tmp_path / "t4.xml"
    listing.write_text(hs.xml(hs.T4_PROCS).replace("<pid>5762</pid>", f"<pid>{os.getpid()}</pid>"))
    stub_bin("nvidia-smi", f"cat {listing}")
    monkeypatch.setenv("PATH", f"{stub_bin.dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_JOB_GPUS", "0")
    monkeypatch.delenv("GPUDOCTOR_SNAPSHOT", raising=False)
    monkeypatch.delenv("GPUDOCTOR_HOOK_CONFIG", raising=False)


def test_live_the_jobs_own_user_may_hold_its_gpu(own_process_on_gpu0, monkeypatch, capsys):
    monkeypatch.setenv("SLURM_JOB_USER", getpass.getuser())
    assert run(["hook", "--no-foreign-processes"]) == 0
    assert capsys.readouterr().err == ""


def test_live_another_users_process_on_the_jobs_gpu_is_foreign(own_process_on_gpu0, monkeypatch, capsys):
    monkeypatch.setenv("SLURM_JOB_USER", "somebody-else")
    assert run(["hook", "--no-foreign-processes"]) == 1
    assert capsys.readouterr().err == f"gpudoctor: 1 foreign GPU process(es): python pid {os.getpid()} on GPU 0\n"


def test_live_a_process_on_a_gpu_the_job_does_not_have_is_not_its_business(own_process_on_gpu0, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_USER", "somebody-else")
    monkeypatch.setenv("SLURM_JOB_GPUS", "1")
    assert run(["hook", "--no-foreign-processes"]) == 0
