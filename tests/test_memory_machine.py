"""The facts adapter and the live view: GPUs, processes (nvidia-smi, else NVML), owners read live."""

from __future__ import annotations

import subprocess
import sys

from gpudoctor.facts import Facts
from gpudoctor.memory import live, processes
from gpudoctor.memory.machine import read_machine
from tests.builders import snap

NVML_ONLY = {"devices": [{"index": 0, "name": {"value": "NVIDIA A10"}, "pci_bus_id": {"value": "00000000:01:00.0"},
                          "memory": {"value": {"total_mib": 23028, "used_mib": 20500, "free_mib": 2528}},
                          "compute_cap": {"value": "8.6"},
                          "processes": {"value": [{"pid": 4242, "used_mib": 20000}]}}]}


def test_nvml_fills_in_when_nvidia_smi_is_missing():
    s = snap(env={"CUDA_MODULE_LOADING": "EAGER"})
    s.nvml = NVML_ONLY
    m = read_machine(Facts(s))
    assert [(g.index, g.name, g.total_mib, g.used_mib, g.compute_cap) for g in m.gpus] == [
        (0, "NVIDIA A10", 23028, 20500, "8.6")]
    assert [(p.gpu_index, p.pid, p.used_mib) for p in m.processes] == [(0, 4242, 20000)]
    assert m.processes_known and m.lazy_loading() == (False, "CUDA_MODULE_LOADING=EAGER")


def test_no_gpu_keeps_the_facts_layers_reason():
    m = read_machine(Facts(snap()))
    assert m.gpus == () and m.why_no_gpus == "nvidia-smi was not recorded in this snapshot"
    assert not m.processes_known
    assert live.render(live.build(m)) == ["No GPU to look at: nvidia-smi was not recorded in this snapshot"]


def test_live_view_attributes_memory_to_processes_and_owners():
    s = snap()
    s.nvml = NVML_ONLY
    view = live.build(read_machine(Facts(s)), {4242: {"user": "alice", "command": "python train.py --bs 64"}})
    gpu = view["gpus"][0]
    assert gpu["processes"][0]["user"] == "alice" and gpu["unattributed_bytes"] == 500 * 2 ** 20
    text = live.render(view)
    assert text[0] == "GPU 0 (NVIDIA A10): 22.49 GiB total, 20.02 GiB used, 2.47 GiB free"
    assert text[2] == "  4242  C     alice  19.53 GiB  python train.py --bs 64"
    assert "not attributed to a listed process: 500.00 MiB" in text[3]


def test_owner_and_command_of_a_live_process():
    # A child whose command line is known (a pytest-xdist worker retitles its own process).
    # It says "up" once its interpreter runs, so it is described after exec, not between fork and exec.
    code = "import sys; print('up', flush=True); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", code, "marker-7d1e"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "up\n"
        me = processes.describe([child.pid, 2 ** 22 + 12345])
    finally:
        child.communicate(timeout=60)
    assert me[child.pid]["command"] == f"{sys.executable} -c {code} marker-7d1e"
    assert me[child.pid]["user"]
    assert me[2 ** 22 + 12345] == {"error": "not visible from here (ended, or another PID namespace such as a "
                                            "container)"}
