"""--no-foreign-processes inside a Slurm job: the job's GPUs (SLURM_JOB_GPUS, its
CUDA_VISIBLE_DEVICES) and the job's user (hook/job.py)."""

from __future__ import annotations

import getpass
import os

import pytest

from gpudoctor.cli import run
from gpudoctor.engine import run_checks
from gpudoctor.hook.job import Job, cuda_gpus, for_job, job_from_environ, slurm_gpus
from gpudoctor.requirements import Requirements
from gpudoctor.snapshot_folder import load
from gpudoctor_checks.processes import foreign_processes
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


def _environ(job):
    if job is None:
        return {}
    env = {"SLURM_JOB_ID": job.job_id, "SLURM_JOB_USER": job.user or ""}
    if job.gpus is not None:
        env["SLURM_JOB_GPUS" if all(g.isdigit() for g in job.gpus) else "CUDA_VISIBLE_DEVICES"] = ",".join(job.gpus)
    return env


def _foreign(tmp_path, job, owners=None, **req):
    """NOD004's finding on the six-GPU recording, with the requirements the hook builds inside ``job``."""
    meta = {"process_owners": {str(k): v for k, v in owners.items()}} if owners else None
    snap = load(str(hs.recording(tmp_path / "s", hs.SIX_GPUS, meta=meta)))
    reqs = for_job(Requirements(no_foreign_processes=True, **req), _environ(job))
    return run_checks(snap, [foreign_processes], requirements=reqs)[0]


def test_only_processes_on_the_jobs_gpus_are_judged(tmp_path):
    everywhere = _foreign(tmp_path / "a", None)
    assert everywhere.title.startswith("6 foreign GPU process(es)")
    by_index = _foreign(tmp_path / "b", Job("42", "alice", ("2",)), owners={3093: "bob"})
    assert (by_index.status.value, by_index.title) == (
        "fail", "1 foreign GPU process(es) on GPU 2: ethminer pid 3093 on GPU 2")
    by_uuid = _foreign(tmp_path / "c", Job("42", "alice", (SIX_UUID_2[:12],)), owners={3093: "bob"})
    assert by_uuid.title == by_index.title
    no_gpus = _foreign(tmp_path / "d", Job("42", "alice", ()), owners={3093: "bob"})
    assert (no_gpus.status.value, no_gpus.title) == ("ok", "no foreign compute process on any GPU")


def test_the_jobs_user_is_allowed_on_its_gpus(tmp_path):
    mine = _foreign(tmp_path / "a", Job("42", "alice", ("2",)), owners={3093: "alice"})
    assert mine.status.value == "ok"
    theirs = _foreign(tmp_path / "b", Job("42", "bob", ("2",)), owners={3093: "alice"})
    assert theirs.status.value == "fail"
    unknown_gpus = _foreign(tmp_path / "c", Job("42", "alice", None), owners={3093: "alice"})
    assert unknown_gpus.status.value == "ok"  # every GPU judged, alice's processes allowed on all of them


def test_a_job_user_on_a_replay_without_owners_cannot_tell(tmp_path):
    got = _foreign(tmp_path / "a", Job("42", "alice", ("2",)))
    assert got.status.value == "skip" and got.cannot_tell


def test_outside_a_job_nothing_changes():
    req = Requirements(no_foreign_processes=True)
    assert for_job(req, {}) is req
    assert for_job(Requirements(), {"SLURM_JOB_ID": "42", "SLURM_JOB_USER": "alice"}) == Requirements()


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
    assert capsys.readouterr().err == (f"gpudoctor: 1 foreign GPU process(es) on GPU 0: python pid {os.getpid()} "
                                       "on GPU 0\n")


def test_live_a_process_on_a_gpu_the_job_does_not_have_is_not_its_business(own_process_on_gpu0, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_USER", "somebody-else")
    monkeypatch.setenv("SLURM_JOB_GPUS", "1")
    assert run(["hook", "--no-foreign-processes"]) == 0
