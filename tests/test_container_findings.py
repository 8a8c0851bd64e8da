"""CTR001 in full: what the runtime was told (NVIDIA_VISIBLE_DEVICES, read as the NVIDIA runtime reads it),
the signs that a GPU was meant, and the device nodes that did arrive."""

from __future__ import annotations

import pytest

from gpudoctor_checks import containers
from tests.builders import ran, snap
from tests.test_checks_system import one

TITLE = "no GPU was passed into this docker container (no /dev/nvidia0)"
NO_DEV = ("listing:/dev", "no /dev/nvidia* device")
REQ = ("env:NVIDIA_REQUIRE_CUDA", "cuda>=12.4")


def ctr001(env, dev=(), commands=None):
    return one(containers.container_gpu_devices,
               snap(files={"/.dockerenv": ""}, listings={"/dev": list(dev)}, env=env, commands=commands or {}))


@pytest.mark.parametrize("visible, said, shown", [
    ("all", "NVIDIA_VISIBLE_DEVICES=all, yet no device arrived: the container was not started with --gpus", True),
    ("none", "NVIDIA_VISIBLE_DEVICES=none: driver libraries but no GPU", False),
    (" void", "NVIDIA_VISIBLE_DEVICES=' void': the NVIDIA runtime acts like plain runc", False),
    ("", "NVIDIA_VISIBLE_DEVICES='': the NVIDIA runtime acts like plain runc", False),
    (None, "NVIDIA_VISIBLE_DEVICES is unset", False),
])
def test_a_container_meant_for_cuda_without_devices_fails_saying_what_the_runtime_was_told(visible, said, shown):
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.4", **({} if visible is None else {"NVIDIA_VISIBLE_DEVICES": visible})}
    f = ctr001(env)
    assert (f.status.value, f.title, f.detail) == ("fail", TITLE, f"{said}. CUDA inside sees no device.")
    assert [(e.source, e.excerpt) for e in f.evidence] == (
        [NO_DEV] + ([("env:NVIDIA_VISIBLE_DEVICES", visible)] if shown else []) + [REQ])
    assert f.fix.kb_id == "no_device_in_container"


def test_nvidia_smi_that_ran_is_a_sign_a_gpu_was_meant():
    smi = ran(["nvidia-smi", "-q", "-x"], "", 9, "NVIDIA-SMI has failed because it couldn't communicate with the "
                                                 "NVIDIA driver.")
    f = ctr001({}, commands={"nvidia_smi_xml": smi})
    assert f.status.value == "fail"
    assert [(e.source, e.excerpt) for e in f.evidence] == [NO_DEV, ("command:nvidia_smi_xml",
                                                                   "`nvidia-smi -q -x` exited 9")]


def test_control_nodes_without_a_gpu_node_are_no_gpu_and_nothing_expects_one():
    f = ctr001({}, dev=["nvidiactl", "nvidia-uvm"])
    assert (f.status.value, f.title, f.detail) == (
        "warn", TITLE, "Nothing in it expects a GPU either; if GPU work should run here, start it with GPUs.")
    assert [(e.source, e.excerpt) for e in f.evidence] == [("listing:/dev", "nvidiactl nvidia-uvm")]


def test_gpu_nodes_that_arrived_are_counted_and_listed():
    f = ctr001({}, dev=["nvidia0", "nvidia1", "nvidiactl", "null", "nvidia-uvm"])
    assert (f.status.value, f.title) == (
        "ok", "2 GPU device(s) passed into this docker container: /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl "
              "/dev/nvidia-uvm")
    assert [(e.source, e.excerpt) for e in f.evidence] == [("listing:/dev", "nvidia0 nvidia1 nvidiactl nvidia-uvm")]
