"""Classes of real errors round 6 of issue 10 reads for the class. REAL texts are real ones from the tuning
sets (named next to each); LIBRARY texts are the libraries' or tools' own messages, from their source or docs
(named next to each), for rules no tuning thread holds yet."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text

SINGULARITY = (
    ">>> torch.cuda.is_available()\n/opt/conda/lib/python3.8/site-packages/torch/cuda/__init__.py:52: UserWarning: CUDA "
    "initialization: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env "
    "variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero. (Triggered "
    "internally at  /opt/conda/conda-bld/pytorch_1607370172916/work/c10/cuda/CUDAFunctions.cpp:100.)\n  return "
    "torch._C._cuda_getDeviceCount() > 0\nFalse")


def test_cuda_unknown_error_in_a_container_is_its_driver_setup_first_and_suspend_second():
    # round5-a cuda_init_error_other-singularity-5966 (run with --context container; before round 6: suspend first)
    d = explain_text(SINGULARITY, flags=["container"]).diagnoses
    assert (d[0].id, d[0].family, d[0].recipe) == ("torch_cuda_unknown_error", "cuda_init_error_other",
                                                   "cuda_init_error_other")
    assert d[0].title.startswith("CUDA could not initialise in a container: 'CUDA unknown error'")
    cands = d[0].differential.candidates
    assert (cands[0].family, cands[0].tell_apart.command) == ("cuda_init_error_other", "ls -l /dev/nvidia-uvm /dev/nvidiactl")
    assert cands[0].clue is not None and cands[1].family == "suspend_resume_uvm"


def test_cuda_unknown_error_outside_a_container_stays_a_suspend_resume_first():
    # the same text with no clue: a desktop's suspend/resume first (dev suspend-pytorch-49081-uvm's class)
    d = explain_text(SINGULARITY).diagnoses
    assert (d[0].family, d[0].recipe) == ("suspend_resume_uvm", "suspend_resume_uvm")
    cands = [c.family for c in d[0].differential.candidates]
    assert cands[-1] == "cuda_init_error_other"      # needs a container, nothing says this is one
