"""explain's derived values (gpudoctor/explain/derive.py): what a message's numbers become through the knowledge
tables, and the flags they imply. Each test gives the values a signature read and checks the values and flags
derived from them, with the figures of the tables (driver 535.104.05 runs CUDA 12.2 at most, CUDA 12.1 needs
525.60.13, Xid 79 is a GPU fallen off the bus)."""

from __future__ import annotations

import pytest

from gpudoctor.explain import derive as derive_module
from gpudoctor.explain.derive import derive
from gpudoctor.explain.pipeline import _near, explain_text


def _derived(values, tables=None):
    values = dict(values)
    flags = derive(values, tables or {})
    return values, flags


# --- CUDA and the driver -----------------------------------------------------------------------------------------

def test_the_driver_apis_number_is_the_cuda_it_runs():
    values, _ = _derived({"driver_api": "12040"})
    assert (values["driver_cuda"], values["cuda_driver_max"]) == ("12.4", "12.4")


def test_a_driver_version_is_the_newest_cuda_it_runs_and_outranks_the_api_number():
    values, flags = _derived({"driver_api": "11020", "driver_version": "535.104.05"})
    assert (values["driver_cuda"], values["driver_max_cuda"], values["cuda_driver_max"]) == ("11.2", "12.2", "12.2")
    assert flags == {"driver_seen"}


def test_values_the_message_gave_are_kept():
    values, _ = _derived({"driver_api": "12040", "driver_cuda": "9.9", "driver_version": "535.104.05",
                          "driver_max_cuda": "9.8", "cuda_driver_max": "9.7", "required_cuda": "12.1",
                          "min_driver": "1.0"})
    assert (values["driver_cuda"], values["driver_max_cuda"], values["cuda_driver_max"], values["min_driver"]) == (
        "9.9", "9.8", "9.7", "1.0")


@pytest.mark.parametrize("given", [{"required_cuda": "12.1"}, {"torch_version": "2.3.1+cu121"}])
def test_the_cuda_a_build_needs_gives_the_oldest_driver_for_it(given):
    values, _ = _derived(given)
    assert values["min_driver"] == "525.60.13"


@pytest.mark.parametrize("given", [
    {"driver_api": "not a number"},
    {"driver_api": "1" * 5000},                 # a long number in a message is no version
    {"driver_version": "unknown"},
    {"required_cuda": "banana"},
    {"torch_version": "2.3.1+cpu"},            # a CPU wheel needs no driver
    {"torch_version": "2.3.1+cu12"},           # too few digits for a CUDA version
])
def test_values_the_tables_cannot_read_derive_nothing(given):
    values, _ = _derived(given)
    assert {k for k in values if k not in given} <= {"cuda_driver_max"} and values["cuda_driver_max"] is None


# --- architectures -----------------------------------------------------------------------------------------------

def test_an_sm_name_is_a_compute_capability_and_the_torch_build_with_kernels_for_it():
    values, _ = _derived({"sm": "sm_86"})
    assert values["compute_cap"] == "8.6"
    assert values["torch_install"].startswith("python -m pip install --force-reinstall 'torch==")
    assert values["torch_fit_hint"] == f"torch {values['torch_fit_release']} for CUDA {values['torch_fit_cuda']} " \
                                       f"({values['torch_fit_variant']})"
    assert values["torch_index_url"] == f"https://download.pytorch.org/whl/{values['torch_fit_variant']}"


def test_the_python_the_message_named_runs_the_install():
    values, _ = _derived({"sm": "sm_86", "python": "/opt/venv/bin/python3"})
    assert values["torch_install"].startswith("/opt/venv/bin/python3 -m pip install")


def test_a_compute_capability_the_message_gave_is_kept():
    values, _ = _derived({"sm": "sm_86", "compute_cap": "7.5", "torch_install": "already"})
    assert (values["compute_cap"], values["torch_install"]) == ("7.5", "already")


def test_the_newest_architecture_of_a_list():
    values, _ = _derived({"arch_list": ["sm_50", "sm_86", "sm_90", "compute_75"]})
    assert values["arch_max"] == "sm_90"
    values, _ = _derived({"arch_list": ["none", "of", "these"]})
    assert "arch_max" not in values


def test_no_torch_build_for_a_capability_says_so(monkeypatch):
    monkeypatch.setattr(derive_module, "torch_fit", lambda *a: None)
    values, _ = _derived({"compute_cap": "12.0"})
    assert values["torch_fit_hint"] == "no PyTorch release in gpudoctor's table has kernels for it yet"
    assert "torch_install" not in values


# --- Xid -----------------------------------------------------------------------------------------------------------

def test_an_xid_of_explains_table_with_nvidias_action():
    values, _ = _derived({"xid": 79}, {"xid": {"79": {"meaning": "M", "action": "A", "cause": "C"}}})
    assert (values["xid_meaning"], values["xid_cause"]) == ("M", "C")
    assert values["xid_action"] == ("A (NVIDIA's Xid catalog: RESTART_BM, restart the bare-metal node: the GPU is no "
                                    "longer reachable)")


def test_an_xid_of_nvidias_catalog_only():
    values, _ = _derived({"xid": 79})
    assert values["xid_meaning"] == "GPU has fallen off the bus"
    assert values["xid_action"] == ("NVIDIA's Xid catalog: RESTART_BM, restart the bare-metal node: the GPU is no "
                                    "longer reachable")
    assert "xid_cause" not in values


def test_an_unknown_xid_points_to_the_catalog():
    values, _ = _derived({"xid": 9999})
    assert values["xid_meaning"] == "see NVIDIA's Xid catalog"
    assert values["xid_action"] == "look it up in NVIDIA's Xid catalog and check the lines around it"


def test_no_xid_derives_no_xid_values():
    values, _ = _derived({"detail": "Fatal"})
    assert not any(k.startswith("xid_") for k in values)


# --- flags -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("given,flags", [
    ({"driver_version": "535.104.05", "smi_cuda": "12.4"}, {"driver_seen", "cuda_beyond_driver"}),
    ({"driver_version": "535.104.05", "smi_cuda": "12.2"}, {"driver_seen"}),       # the driver's own CUDA
    ({"tf_version": "2.11.0"}, {"tf_windows_no_gpu"}),
    ({"tf_version": "2.10.1"}, {"tf_windows_gpu_ok"}),
    ({"tf_version": "1.15"}, {"tf_windows_gpu_ok"}),
    ({"torch_version": "2.1.2+cpu"}, {"torch_cpu_wheel"}),
    ({"torch_version": "2.1.2+cu121"}, set()),
    ({"library": "libcublas.so.9.0"}, {"tf_exact_cuda"}),
    ({}, set()),
])
def test_flags_of_the_derived_values(given, flags):
    assert _derived(given)[1] == flags


# --- old TensorFlow's exact CUDA -------------------------------------------------------------------------------------

@pytest.mark.parametrize("library,cuda,releases", [
    ("libcublasLt.so.10.0", "10.0", "TensorFlow 1.13 to 2.0"),
    ("libcudart.so.8.0", "8.0", "TensorFlow 0.11 to 1.4"),
    ("libcudnn.so.7.5", None, None),            # cuDNN's own version
    ("libcudart.so.10.1", None, None),          # no release before 2.0 linked it
    ("libcudart.so.9.0.176", None, None),       # a full version is not the soname
    (None, None, None),
])
def test_the_tensorflow_releases_of_a_librarys_exact_cuda(library, cuda, releases):
    values, _ = _derived({"library": library})
    assert (values.get("tf_exact_cuda"), values.get("tf_exact_releases")) == (cuda, releases)


def test_one_release_is_named_alone_and_a_given_value_is_kept(monkeypatch):
    monkeypatch.setattr(derive_module, "releases_for_exact_cuda", lambda cuda: ("1.0", "1.0"))
    assert _derived({"library": "libcudart.so.8.0"})[0]["tf_exact_releases"] == "TensorFlow 1.0"
    assert _derived({"library": "libcudart.so.8.0", "tf_exact_releases": "given"})[0]["tf_exact_releases"] == "given"


# --- the lines around a words-only message ---------------------------------------------------------------------------

def test_only_the_lines_around_a_diagnosis_are_kept():
    text = "one\ntwo\nCUDA initialization failure\nfour\nfive\nsix"
    d = explain_text(text).diagnoses[0]
    assert (d.source, d.lines) == ("<text>", [3])
    assert _near([("<text>", text), ("other.log", "x\ny")], [d]) == [("<text>", "\ntwo\nCUDA initialization failure"
                                                                       "\nfour\n\n"), ("other.log", "\n")]


@pytest.mark.parametrize("text,first", [
    ("CUDA initialization failure\nerror 222", "driver_too_old"),                # the next line
    ("error 222\nCUDA initialization failure", "driver_too_old"),                # the line before
    ("CUDA initialization failure\nok\nerror 222", "cuda_init_error_other"),     # two lines away
])
def test_an_error_code_counts_on_the_next_or_previous_line_only(text, first):
    assert explain_text(text).diagnoses[0].family == first


# --- what an Xid line says beside its number ------------------------------------------------------------------------

@pytest.mark.parametrize("detail,action", [
    (None, "NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR, decode the NVLink5 error with the catalog's 'Xid 144-150 "
           "Decode' sheet"),
    ("Fatal", "NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR, that is RESET_GPU, stop the GPU's processes and reset it "
              "(nvidia-smi -r), or reboot"),
    ("Nonfatal", "NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR, that is IGNORE, no action"),
])
def test_an_nvlink5_xids_severity_decides_its_action(detail, action):
    values, _ = _derived({"xid": 145, **({"detail": detail} if detail else {})})
    assert values["xid_action"] == action
    values, _ = _derived({"xid": 145, **({"detail": detail} if detail else {})},
                         {"xid": {"145": {"meaning": "M", "action": "A", "cause": "C"}}})
    assert values["xid_action"] == f"A ({action})"


@pytest.mark.parametrize("to,action", [
    ("0x2 (Node Reboot Required)", "RESTART_BM, restart the bare-metal node: the GPU is no longer reachable"),
    ("0x1 (GPU Reset Required)", "RESET_GPU, stop the GPU's processes and reset it (nvidia-smi -r), or reboot"),
])
def test_xid_154s_recovery_action_decides_its_action(to, action):
    values, _ = _derived({"xid": 154, "detail": f"GPU recovery action changed from 0x0 (None) to {to}"})
    assert values["xid_action"] == f"NVIDIA's Xid catalog: XID_154, that is {action}"


def test_an_xid_row_without_an_action_of_nvidias_keeps_its_own(monkeypatch):
    monkeypatch.setattr(derive_module, "_xid_catalog", lambda xid, detail=None: None)
    values, _ = _derived({"xid": 79}, {"xid": {"79": {"meaning": "M", "action": "A", "cause": "C"}}})
    assert values["xid_action"] == "A"


@pytest.mark.parametrize("text,number", [("12040", 12040), (" 12040 ", 12040), ("1" * 18, int("1" * 18)),
                                         ("1" * 19, None), ("12a", None), ("", None), (None, None)])
def test_a_small_int_is_at_most_18_digits(text, number):
    assert derive_module._small_int(text) == number


# --- the PyTorch build for a GPU fits the driver and the torch the message named -------------------------------------

def test_the_torch_build_for_a_gpu_runs_on_the_driver_the_message_named():
    values, _ = _derived({"sm": "sm_86", "driver_version": "470.57.02"})
    assert values["torch_fit_cuda"] == "11.8"                # the newest CUDA build driver 470 runs (compat mode)
    values, _ = _derived({"sm": "sm_86", "torch_version": "1.13.1+cu117"})
    assert (values["torch_fit_release"], values["torch_fit_cuda"]) == ("1.13.1", "11.7")   # that torch has sm_86


def test_a_torch_table_that_cannot_read_the_values_gives_no_build(monkeypatch):
    def broken(*args):
        raise ValueError("not a version")

    monkeypatch.setattr(derive_module, "torch_fit", broken)
    values, _ = _derived({"sm": "sm_86"})
    assert "torch_install" not in values and values["torch_fit_hint"].startswith("no PyTorch release")
