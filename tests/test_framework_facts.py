"""Facts behind the framework checks: TensorFlow's log, the CUDA libraries around it, the probe's wheels."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from gpudoctor.facts import Facts
from gpudoctor.framework_fixes import torch_fit
from gpudoctor.probes.frameworks import probe
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import FileRecord, Snapshot

TF_OLD = (
    "2021-01-09 12:25:03.574107: I tensorflow/stream_executor/platform/default/dso_loader.cc:49] Successfully "
    "opened dynamic library libcudart.so.11.0\n"
    "2021-01-09 12:25:09.101010: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load "
    "dynamic library 'libcusolver.so.10'; dlerror: libcusolver.so.10: cannot open shared object file: No such "
    "file or directory; LD_LIBRARY_PATH: /usr/local/cuda/lib64\n"
    "2021-01-09 12:25:09.101234: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load "
    "dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or "
    "directory\n"
    "2021-01-09 12:25:09.101300: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1757] Cannot dlopen some GPU "
    "libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to "
    "use GPU.\nSkipping registering GPU devices...\n"
    "2021-01-09 12:25:09.2: E tensorflow/core/common_runtime/gpu/gpu_bfc_allocator.cc:58] The "
    "TF_FORCE_GPU_ALLOW_GROWTH environment variable is set but could not be parsed: \"True\". Valid values are "
    "\"true\" or \"false\". Using original config value of 0.\n")


def facts(**kw) -> Facts:
    return Facts(Snapshot(**kw))


def test_tf_log_reads_failed_and_opened_libraries():
    log = facts(frameworks={"tensorflow": {"installed": True, "probe": {"stderr": TF_OLD}}})["tf_log"]
    assert log.failed == (("libcusolver.so.10", "libcusolver.so.10: cannot open shared object file: No such file or "
                                                "directory"),
                          ("libcudnn.so.8", "libcudnn.so.8: cannot open shared object file: No such file or directory"))
    assert log.opened == ("libcudart.so.11.0",)
    assert log.skipped_gpus.endswith("Please make sure the missing libraries mentioned above are installed "
                                     "properly if you would like to use GPU.")
    assert 'could not be parsed: "True"' in log.growth_unparsed


def test_cuda_libraries_merge_the_loader_cache_and_pip_wheels():
    ldconfig = ("3 libs found in cache `/etc/ld.so.cache'\n"
                "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9\n"
                "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12\n"
                "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1\n")
    f = facts(commands={"ldconfig_p": CommandResult(("ldconfig", "-p"), 0, ldconfig)},
              frameworks={"torch": {"nvidia_wheels": {"nvidia-cudnn-cu12": "9.1.0.70"}}},
              env={"LD_LIBRARY_PATH": "/opt/lib"})
    libs = f["cuda_libraries"]
    assert libs.linker == {"libcudnn.so.9": ("/usr/lib/x86_64-linux-gnu/libcudnn.so.9",),
                           "libcudart.so.12": ("/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12",)}
    assert libs.wheels == {"nvidia-cudnn-cu12": "9.1.0.70"} and libs.ld_library_path == "/opt/lib"
    assert libs.linker_recorded is True
    assert facts().why_missing("cuda_libraries") == "neither `ldconfig -p` nor the installed nvidia-* wheels were recorded"


def test_target_os():
    assert facts(meta={"platform": {"system": "Windows"}})["target_os"] == "windows"
    wsl = Snapshot(meta={"platform": {"system": "Linux"}})
    wsl.files["/proc/version"] = FileRecord("/proc/version", content="Linux version 5.15.90.1-microsoft-standard-WSL2")
    assert Facts(wsl)["target_os"] == "wsl"


def test_import_error_makes_the_build_facts_missing():
    f = facts(frameworks={"torch": {"installed": True, "import_error": {"type": "OSError",
                                                                         "message": "libcudnn.so.9: cannot open"}}})
    assert f.why_missing("torch_build") == "`import torch` fails (OSError: libcudnn.so.9: cannot open); see PRB001"


def test_torch_fit_prefers_the_release_default_then_newest_cuda():
    assert torch_fit("2.13.0+cu130", "595.58.03", ["8.6"]).variant.name == "cu130"   # the default fits
    assert torch_fit("2.13.0+cu130", "570.124.04", ["8.6"]).variant.name == "cu126"  # 13.x needs 580
    nothing = torch_fit("2.13.0", "384.66", ["6.1"])                                   # no CUDA 11+ driver
    assert nothing is None
    ngc = torch_fit("2.1.0a0+29c30b1", "525.147.05", ["8.6"])
    assert (ngc.pin, ngc.variant.name) == ("2.1.*", "cu121")                         # a pre-release: pin the series


def test_the_probe_records_pip_nvidia_wheels():
    """Run the real probe in a child of this interpreter: it reports the torch pip installed here."""
    import importlib.metadata

    if importlib.util.find_spec("torch") is None:
        pytest.skip(f"torch is not installed for {sys.executable} (the `frameworks` extra)")
    rec = probe("torch", sys.executable, {"PATH": "/usr/bin:/bin"}, timeout=120)
    assert rec["installed"] is True and rec["version"] == importlib.metadata.version("torch")
    # the NVML binding gpudoctor itself depends on, at the version pip installed
    assert rec["nvidia_wheels"]["nvidia-ml-py"] == importlib.metadata.version("nvidia-ml-py")
    assert all(name.startswith("nvidia-") for name in rec["nvidia_wheels"])
