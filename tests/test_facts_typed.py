"""Facts are typed and checks read facts only: guards that fail when a dict fact or a snapshot read creeps back."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from gpudoctor.facts import Facts, Missing, known_facts
from gpudoctor.facts.frameworks import FrameworkProbe
from gpudoctor.facts.modprobe import MaskedFile
from gpudoctor.snapshot_folder import load
from tests.builders import snap
from tests.scenarios import ROOT, scenario_dirs

# The environment is a name -> value map by nature; every other fact has named fields.
MAPPING_FACTS = {"env"}
CHECK_FILES = sorted((ROOT / "checks").glob("*.py"))


def _values(snapshot):
    f = Facts(snapshot)
    for name in known_facts():
        try:
            yield name, f[name]
        except Missing:
            continue


@pytest.mark.parametrize("scenario", scenario_dirs(), ids=lambda p: p.name)
def test_every_fact_is_a_frozen_dataclass_a_tuple_or_a_scalar(scenario):
    for name, value in _values(load(str(scenario / "snapshot"))):
        if name in MAPPING_FACTS:
            continue
        assert not isinstance(value, (dict, list, set)), f"fact {name} is a {type(value).__name__}"
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if dataclasses.is_dataclass(item):
                assert item.__dataclass_params__.frozen, f"fact {name}: {type(item).__name__} is not frozen"
                assert not any(isinstance(getattr(item, fl.name), (list, set)) for fl in dataclasses.fields(item)), \
                    f"fact {name}: {type(item).__name__} has a list field"


def _reads(tree: ast.AST):
    """(line, what) for each snapshot access or dict-style read of a fact value in a check module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "snapshot":
            yield node.lineno, "f.snapshot"
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript):
            inner = node.value.value
            if isinstance(inner, ast.Name) and inner.id == "f":
                yield node.lineno, 'f["x"]["y"]'
        if isinstance(node, ast.Attribute) and node.attr == "get" and isinstance(node.value, (ast.Subscript, ast.Call)):
            target = node.value.value if isinstance(node.value, ast.Subscript) else node.value.func
            base = getattr(target, "value", target)
            if isinstance(base, ast.Name) and base.id == "f":
                yield node.lineno, 'f["x"].get(...) or f.get("x").get(...)'


@pytest.mark.parametrize("path", CHECK_FILES, ids=lambda p: p.name)
def test_checks_read_facts_only(path: Path):
    found = list(_reads(ast.parse(path.read_text(encoding="utf-8"))))
    assert found == [], f"{path.name} reads around the facts: {found}"


def test_the_guard_sees_each_forbidden_read():
    code = 'def c(f):\n    a = f.snapshot.env\n    b = f["x"]["y"]\n    c = f["x"].get("y")\n    d = f.get("x").get("y")\n'
    assert sorted(line for line, _ in _reads(ast.parse(code))) == [2, 3, 4, 5]


def test_framework_probes_say_how_each_probe_ended():
    s = snap()
    s.frameworks = {"torch": {"probe": {"python": "/venv/bin/python", "timed_out": True, "duration_s": 30.0}},
                    "jax": {"installed": False, "probe": {"returncode": 0, "stderr": ""}}}
    torch, jax = Facts(s)["framework_probes"]
    assert torch == FrameworkProbe("torch", "/venv/bin/python", True, 30.0, None, None, False, None, None, "", "")
    assert (jax.framework, jax.python, jax.answered, jax.installed) == ("jax", "the target interpreter", True, False)
    assert Facts(s).why_missing("torch") == "the torch probe did not finish within 30.0s"
    assert Facts(snap())["framework_probes"] == ()


def test_dev_nodes_python_path_and_links():
    s = snap(listings={"/dev": ["nvidia0", "nvidiactl"]},
             links={"/usr/local/cuda": {"target": "cuda-12.4", "real": "/usr/local/cuda-12.4"}})
    s.meta = {"python": "/opt/venv/bin/python"}
    f = Facts(s)
    assert f["dev_nodes"] == ("nvidia0", "nvidiactl") and f["python_path"] == "/opt/venv/bin/python"
    (link,) = f["links"]
    assert (link.path, link.target, link.real) == ("/usr/local/cuda", "cuda-12.4", "/usr/local/cuda-12.4")
    empty = Facts(snap())
    assert empty.why_missing("dev_nodes") == "/dev was not listed in this snapshot"
    assert not empty.has("python_path") and not empty.has("links")


def test_modprobe_files_keep_the_masked_file_and_what_it_says():
    s = snap(files={"/usr/lib/modprobe.d/nvidia-utils.conf": "blacklist nouveau\n",
                    "/etc/modprobe.d/nvidia-utils.conf": "options nvidia_drm modeset=1\n"})
    files = Facts(s)["modprobe_files"]
    assert [c.path for c in files.read] == ["/etc/modprobe.d/nvidia-utils.conf"]
    assert files.masked == (MaskedFile("/usr/lib/modprobe.d/nvidia-utils.conf", "/etc/modprobe.d/nvidia-utils.conf",
                                       "blacklist nouveau\n"),)
    assert Facts(snap()).why_missing("modprobe_files") == "the modprobe.d directories were not recorded in this snapshot"


def test_nvml_readings_are_typed_and_refusals_are_none():
    s = snap()
    s.nvml = {"driver_version": {"value": "550.54.15"}, "cuda_driver_version": {"value": 12040},
              "device_count": {"value": 1},
              "devices": [{"index": 0, "name": {"value": "NVIDIA A100-SXM4-80GB"}, "uuid": {"value": "GPU-1"},
                           "memory": {"value": {"total_mib": 81920, "used_mib": 5}},
                           "mig_mode": {"error": "NVMLError_NotSupported", "message": "Not Supported"}}]}
    nv = Facts(s)["nvml"]
    assert (nv.driver_version, nv.cuda_driver_version, nv.device_count) == ("550.54.15", 12040, 1)
    (dev,) = nv.devices
    assert (dev.name, dev.uuid, dev.memory_total_mib, dev.compute_cap, dev.mig_mode) == \
        ("NVIDIA A100-SXM4-80GB", "GPU-1", 81920, None, None)
