"""Classes of real errors round 8 of issue 10 reads for the class (REAL texts from the tuning sets, named next to
each): other tools' words for a known message, and error codes below 30 on a line that names their API."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text
from gpudoctor.explain.words import features


def _first(text, flags=()):
    d = explain_text(text, flags=list(flags)).diagnoses
    assert d, "no diagnosis"
    return d[0]


def test_xla_kernel_dso_mismatch_without_tensorflows_file_name_is_a_driver_library_mismatch():
    # round7-a driver_library_mismatch-jax-11477 (before round 8: no answer): XLA's cuda_diagnostics, as JAX prints it
    text = ("I recently upgraded and was hitting this error:\n\n    kernel version 515.48.7 does not match DSO version "
            "510.73.5 -- cannot find working devices in this configuration")
    d = _first(text)
    assert (d.family, d.id) == ("driver_library_mismatch", "tf_kernel_dso_version_mismatch")
    assert d.title == "The kernel module 515.48.7 does not match libcuda 510.73.5"


@pytest.mark.parametrize("flags", [(), ("container",)])
def test_apex_setup_cuda_check_is_an_extension_build_mismatch(flags):
    # round7-a extension_build_mismatch-apex-955 (before round 8: the vocabulary's driver/library mismatch)
    text = ("RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version "
            "used to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 10.2.\n    In some cases, a "
            "minor-version mismatch will not cause later errors:  https://github.com/NVIDIA/apex/pull/323#discussion_"
            "r287021798.  You can try commenting out this check (at your own risk).")
    d = _first(text, flags)
    assert (d.family, d.id) == ("extension_build_mismatch", "apex_cuda_version_mismatch")
    assert d.title == "The CUDA toolkit that builds the extension is not the CUDA 10.2 PyTorch was built with"


SMALL_CODES = [
    # round7-a xid_or_hardware-t-rex-230 (before round 8: the vocabulary's driver/library mismatch): NVML code 15
    ("WARN: NVML: can't get GPU #0, error code 15\n\nI have the same error on a 13x 3070 rig.  Never had it before but "
     "also never had 13x in 1 rig before.  If I reboot it all works again.", "code:nvmlerrorgpuislost",
     "xid_or_hardware"),
    # round7-a cuda_init_error_other-ollama-11593 (before round 8: TensorFlow's GPU libraries, from 'cudart'):
    # the CUDA driver's code 3, CUDA_ERROR_NOT_INITIALIZED
    ('Same thing happens with the 575 driver and CUDA 12.9 btw:\n\n```\ntime=2025-08-02T22:42:20.643Z level=INFO '
     'source=gpu.go:612 msg="Unable to load cudart library /usr/lib/x86_64-linux-gnu/libcuda.so.575.57.08: cuda driver '
     'library init failure: 3"\n```\n\nIs this GPU not supported by ollama?', "code:cudaerrornotinitialized",
     "cuda_init_error_other"),
]


@pytest.mark.parametrize("text,code,family", SMALL_CODES)
def test_a_small_error_number_is_read_on_a_line_naming_its_api(text, code, family):
    assert code in features(text)
    assert _first(text).family == family


@pytest.mark.parametrize("text", [
    "error code 15",                                            # no API named: 'error 15' says nothing
    "NVML: can't get GPU #0\nsomething else failed, error code 15",    # the number is on another line
    "nvidia-smi: libnvidia-ml.so.1 status 15",                 # a library's file name is not the API speaking
    "NVML version 12.535.2, error code 1.5",                   # a version, not a code
])
def test_small_numbers_are_not_read_without_their_api_on_the_line(text):
    assert not any(k.startswith("code:nvml") for k in features(text))


def test_compose_gpu_request_is_a_containers_way_to_get_the_gpu():
    # round7-a no_device_in_container-cresset-216 (before round 8: driver too old, from the word 'driver'):
    # Compose's deploy.resources.reservations.devices asks for the GPU; CUDA not detected in it
    text = ("CUDA runtime detection failure.\n```\ndeploy: # API dependent on compose version.\n  resources:\n"
            "    reservations:\n      devices:\n        - driver: nvidia\n          capabilities: [ gpu ]\n```\n"
            "The code above is not working in some versions of Docker Compose.")
    assert {"container_gpu", "no_gpu_found", "container"} <= set(features(text, flags=["container"]))
    assert _first(text, ["container"]).family == "no_device_in_container"


@pytest.mark.parametrize("text,term", [
    ("It converts OK (creates the image), but upon running it complains that it can't find cuda.", "no_gpu_found"),
    ("No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'", "no_gpu_found"),
    ("incus config device add c1 gpu gpu\nincus config set c1 nvidia.runtime=true", "container_gpu"),
    ("lxc launch ubuntu:22.04 c1", "container"),
])
def test_other_tools_words_for_a_container_and_cuda_not_found(text, term):
    assert term in features(text)


def test_the_nvrm_version_line_is_no_gpu_fault():
    # round7-a no_device_in_container-incus-1322 shows an 'NVRM Version:' field: the driver's version, no Xid
    assert "xid" not in features("NVIDIA information:\n    CUDA Version:\n    NVRM Version:\n    UUID:")
    assert "xid" in features("NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.")
    assert "xid" in features("kernel: NVRM: GPU at PCI:0000:01:00: GPU-1234 has failed to respond")
