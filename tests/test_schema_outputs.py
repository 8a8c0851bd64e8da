"""Every command's JSON output conforms to its shipped schema, on every recorded machine.

Commands that judge a snapshot (check, hook, devices, explain --snapshot, memory --snapshot) run on
every fixture scenario; parse-smi on every real nvidia-smi recording; explain on the real error
texts; the commands that only probe this machine (snapshot, bundle) once. All run in this process.
"""

from __future__ import annotations

import json
import shutil
import sys
from functools import lru_cache

import pytest

from gpudoctor.commands import memory as memory_cmd
from gpudoctor.knowledge.families import families
from gpudoctor.memory import measure
from tests.conftest import ROOT
from tests.scenarios import scenario_dirs
from tests.schema_support import assert_valid, cli, cli_json, gzip_text, live_documents

pytestmark = pytest.mark.usefixtures("smi_parse_memo")  # the recordings are parsed once (conftest)

DIRS = scenario_dirs()
IDS = [p.name for p in DIRS]
SMI = sorted(p for p in (ROOT / "fixtures" / "nvidia-smi").rglob("*") if p.is_file() and p.name != "SOURCES.md")
CASES = [json.loads(line) for line in (ROOT / "fixtures" / "errors-dev" / "cases.jsonl").read_text().splitlines()]
CONFIGS = sorted((ROOT / "tests" / "data" / "memory" / "configs").glob("*.json"))
OOM = ("RuntimeError: CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total capacity; 781.59 MiB "
       "already allocated; 3.03 GiB free; 1.24 GiB reserved in total by PyTorch)")
# One log with a driver failure (a differential), an arch error, an OOM (its arithmetic) and a program bug (a note).
LOG = "\n".join([
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
    "NVIDIA driver is installed and running.",
    "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    OOM,
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
])
# Node requirements that select every parametrised check, so the hook reaches ok, problem and unknown.
HOOK_FLAGS = ("--gpus", "1", "--min-driver", "450", "--max-temp", "85", "--persistence", "--min-free-mem", "1GiB",
              "--no-foreign-processes", "--cuda", "11.8")


@lru_cache(maxsize=None)
def report(name: str):
    return cli_json("check", "--snapshot", DIRS[IDS.index(name)] / "snapshot", "--json")


@lru_cache(maxsize=None)
def hook(name: str):
    return cli_json("hook", "--snapshot", DIRS[IDS.index(name)] / "snapshot", *HOOK_FLAGS, "--json")


def assert_families_known(doc, name: str) -> None:
    """A diagnosis family is an id of families.json (read now: other checks add theirs there)."""
    for d in doc["diagnoses"]:
        assert d["family"] in families(), f"{name}: diagnosis family {d['family']!r} is not in families.json"


# --- every scenario ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", IDS)
def test_check_json(name):
    code, doc = report(name)
    assert_valid(doc, "report", name)
    assert doc["summary"]["fail"] == sum(f["status"] == "fail" for f in doc["findings"])
    assert (code == 1) == (doc["summary"]["fail"] > 0)
    assert_families_known(doc, name)


@pytest.mark.parametrize("name", IDS)
def test_check_jsonl_is_the_same_report_on_one_line(name):
    code, out = cli("check", "--snapshot", DIRS[IDS.index(name)] / "snapshot", "--jsonl")
    lines = out.splitlines()
    assert len(lines) == 1 and out.endswith("\n")
    doc = json.loads(lines[0])
    assert_valid(doc, "report", name)
    assert (code, doc) == report(name)


@pytest.mark.parametrize("name", IDS)
def test_hook_json(name):
    code, doc = hook(name)
    assert_valid(doc, "hook", name)
    assert code == doc["exit_code"]
    assert_families_known(doc, name)


@pytest.mark.parametrize("name", ["core-8gpu-server", "core-a100-mig", "core-driver-not-loaded"])
def test_check_json_with_the_hooks_requirements(name, tmp_path):
    config = tmp_path / "hook.toml"
    config.write_text('gpus = 9\nmin_driver = "999"\nmax_temp = 30\npersistence = true\nmin_free_mem = "1TiB"\n'
                      'no_foreign_processes = true\ncuda = "12.4"\n')
    code, doc = cli_json("check", "--snapshot", DIRS[IDS.index(name)] / "snapshot", "--config", config, "--json")
    assert_valid(doc, "report", name)
    assert any(c["params"] for c in doc["checks"]) and code == 1
    assert_families_known(doc, name)


def test_live_check_hook_and_devices_on_this_host():
    """Whatever this machine has (a GPU or none), the live outputs are the schemas' too."""
    for args, name in ((("check", "--no-frameworks", "--timeout", "30"), "report"), (("hook",), "hook"),
                       (("devices",), "devices")):
        code, doc = cli_json(*args, "--json")
        assert_valid(doc, name, " ".join(args))


def test_the_scenarios_reach_every_hook_state():
    assert {hook(name)[1]["state"] for name in IDS} == {"ok", "problem", "unknown"}


@pytest.mark.parametrize("name", IDS)
def test_devices_json(name):
    code, doc = cli_json("devices", "--snapshot", DIRS[IDS.index(name)] / "snapshot", "--json")
    assert_valid(doc, "devices", name)


@pytest.mark.parametrize("visible,codes", [
    ("1,0", []), ("0,0", ["duplicate"]), ("-1", ["negative"]), ("", ["empty"]), ("2,junk", ["invalid", "beyond_count"]),
    ("GPU-", ["unknown_uuid"]), ("MIG-GPU-x/1/1", ["unknown_uuid"]), ("0, 1", ["spaces"]), ("7", ["beyond_count"])])
@pytest.mark.parametrize("order", ["FASTEST_FIRST", "PCI_BUS_ID"])
def test_devices_json_for_values_tried(visible, codes, order):
    snap = ROOT / "fixtures" / "scenarios" / "fw-cvd-mixed-gpus-no-order" / "snapshot"
    code, doc = cli_json("devices", "--snapshot", snap, "--visible", visible, "--order", order, "--json")
    assert_valid(doc, "devices", visible)
    assert [p["code"] for p in doc["problems"]] == codes


@lru_cache(maxsize=None)
def explain(name: str):
    return cli_json("explain", "--snapshot", DIRS[IDS.index(name)] / "snapshot", "--json", LOG)


@pytest.mark.parametrize("name", IDS)
def test_explain_json_with_the_scenario_as_the_machine(name):
    code, doc = explain(name)
    assert_valid(doc, "explain", name)
    assert code == 0 and doc["notes"]


def test_the_scenarios_reach_every_part_of_explains_diagnoses():
    """The optional parts (a differential, the machine's diagnosis, the OOM arithmetic) were all validated."""
    parts = {key for name in IDS for d in explain(name)[1]["diagnoses"] for key in ("differential", "machine", "analysis")
             if key in d}
    assert parts == {"differential", "machine", "analysis"}


@pytest.mark.parametrize("name", IDS)
def test_memory_plan_and_live_json(name):
    code, doc = cli_json("memory", "--snapshot", DIRS[IDS.index(name)] / "snapshot", "--params", "7B",
                         "--live", "--json")
    assert_valid(doc, "memory", name)
    assert "live" in doc and "breakdown" in doc


@pytest.mark.parametrize("name", IDS)
def test_recorded_snapshot_json(name):
    doc = json.loads((DIRS[IDS.index(name)] / "snapshot" / "snapshot.json").read_text(encoding="utf-8"))
    assert_valid(doc, "snapshot", name)


def test_fleet_json_over_every_scenario_with_outliers_and_junk(tmp_path):
    for name in IDS:
        (tmp_path / f"{name}.json").write_text(json.dumps(report(name)[1]))
    base = report("fw-healthy-torch-gpu")[1]
    for host, driver in (("gpu001", "570.124.04"), ("gpu002", "570.124.04"), ("gpu003", "550.54.15")):
        peer = dict(base, machine=dict(base["machine"], hostname=host, driver_version=driver))
        (tmp_path / f"{host}.jsonl").write_text(json.dumps(peer) + "\n" + json.dumps(peer) + "\nsrun: error: x\n")
    (tmp_path / "other.json").write_text('{"schema": "gpudoctor.hook/2"}')
    code, doc = cli_json("fleet", tmp_path, "--json")
    assert_valid(doc, "fleet")
    assert doc["outliers"] and doc["unreadable"] and doc["duplicates"] and doc["problems"]
    assert doc["nodes"] >= 4


# --- the other commands ------------------------------------------------------------------------------

@pytest.mark.parametrize("path", SMI, ids=[p.name for p in SMI])
def test_parse_smi_json_on_every_real_recording(path):
    code, doc = cli_json("parse-smi", path, "--json")
    assert_valid(doc, "smi", path.name)
    assert code == (1 if doc["errors"] else 0)


def test_parse_smi_json_of_a_failure_on_stdin():
    code, doc = cli_json("parse-smi", "-", "--json", stdin="NVIDIA-SMI has failed because it couldn't communicate "
                                                          "with the NVIDIA driver.\n")
    assert_valid(doc, "smi")
    assert (code, doc["format"]) == (1, "error")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_explain_json_on_real_error_texts(case):
    code, doc = cli_json("explain", "--json", case["error_text"])
    assert_valid(doc, "explain", case["id"])


def test_explain_json_on_files_gzip_stdin_and_contexts(tmp_path):
    plain = tmp_path / "job.err"
    plain.write_text(CASES[0]["error_text"])
    packed = gzip_text(tmp_path / "worker.log.gz", LOG)
    code, doc = cli_json("explain", "--json", "--context", "container", "--context", "wsl", plain, packed)
    assert_valid(doc, "explain")
    assert [i["kind"] for i in doc["inputs"]] == ["file", "file"]
    code, doc = cli_json("explain", "--json", "-", stdin=LOG)
    assert_valid(doc, "explain")
    code, doc = cli_json("explain", "--json", "all is well here")
    assert_valid(doc, "explain")
    assert (code, doc["diagnoses"]) == (1, [])


def test_list_checks_json():
    code, doc = cli_json("check", "--list-checks", "--json")
    assert_valid(doc, "checks")
    assert code == 0 and "DRV001" in {c["id"] for c in doc["checks"]}


@pytest.mark.parametrize("args", [
    ("--params", "7B", "--dtype", "bf16", "--gpu", "RTX 4090"),
    ("--params", "1B", "--layers", "16", "--hidden", "2048", "--heads", "16", "--kv-heads", "4", "--vocab", "32000",
     "--train", "--lora", "8", "--dtype", "int4", "--gpu-memory", "24GiB"),
    ("--params", "70B", "--train", "--gpus", "8", "--fsdp", "full", "--gpu", "H100 80GB", "--grad-checkpointing"),
    ("--params", "3B", "--train", "--activation-bytes-per-sample", "150MiB", "--batch", "4", "--gpu", "T4"),
] + [("--config", c, "--train", "--mixed-precision", "--gpus", "4", "--zero", "2", "--optimizer", "adafactor",
      "--gpu", "A100 80GB") for c in CONFIGS]
  + [("--config", c, "--context-len", "4096", "--kv-dtype", "fp8", "--dtype", "fp16", "--gpu", "L4") for c in CONFIGS])
def test_memory_plan_json(args):
    code, doc = cli_json("memory", *args, "--json")
    assert_valid(doc, "memory", " ".join(map(str, args)))
    assert code == (1 if doc["fits"] is False else 0)


def test_memory_read_json(tmp_path):
    code, doc = cli_json("memory", "--read", "-", "--json", stdin=OOM)
    assert_valid(doc, "memory")
    assert doc["read"]["kind"] == "oom"
    summary = ROOT / "tests" / "data" / "memory" / "memory_summary_torch2.txt"
    code, doc = cli_json("memory", "--read", summary, "--json")
    assert_valid(doc, "memory")
    assert doc["read"]["kind"] == "memory_summary"


def test_memory_measure_json_on_this_host():
    """A GPU host measures, any other says why not: both are the schema's."""
    code, doc = cli_json("memory", "--measure", "--json", "--python", sys.executable)
    assert_valid(doc, "memory")


def test_memory_measure_json_of_a_measurement_with_a_module():
    mib = 2 ** 20
    reading = {"allocated": 512, "reserved": 2 * mib, "free": 23 * 1024 * mib, "total": 24 * 1024 * mib,
               "process_used": 402 * mib, "process_used_from": "nvml"}
    answer = {"torch": "2.5.1+cu124", "cuda": "12.4", "device": 0, "name": "NVIDIA GeForce RTX 4090",
              "module_loading": "LAZY", "after_init": reading, "after_free": dict(reading, allocated=128 * mib),
              "module": {"peak_batch1": 900 * mib, "peak_batch2": 1200 * mib, "per_sample": 300 * mib}}
    options = {k: None for k in ("params", "config", "torch_module", "layers", "hidden", "heads", "kv_heads", "vocab",
                                 "seq_len", "context_len", "kv_dtype", "zero", "fsdp", "activation_bytes_per_sample",
                                 "gpu_memory", "snapshot_path", "input_shape", "read", "lora")}
    options.update(params="1B", dtype="fp16", train=False, optimizer="adamw", mixed_precision=False,
                   grad_checkpointing=False, batch=2, gpus=1, gpu="RTX 4090", live=False, measure=True, timeout=5.0)
    doc = memory_cmd._run(options, sys.executable, lambda machine, python: measure.interpret(answer))
    assert_valid(doc, "memory")
    assert doc["measure"]["ran"] and doc["settings"]["activation_bytes_per_sample"] == 300 * mib


@pytest.mark.parametrize("name", ["snapshot-summary", "snapshot", "bundle-summary", "bundle"])
def test_snapshot_and_bundle_json(name):
    assert_valid(live_documents()[name], name)


def test_the_report_and_snapshot_inside_a_bundle():
    docs = live_documents()
    assert_valid(docs["bundle-report"], "report", "report.json")
    assert_valid(docs["bundle-snapshot"], "snapshot", "snapshot/snapshot.json")
    assert docs["bundle"]["anonymized"] and docs["bundle"]["redactions"]["pseudonyms"]


def test_a_snapshot_folder_saved_again_still_conforms(tmp_path):
    """snapshot.json as gpudoctor writes it (links included), from a replayed scenario."""
    from gpudoctor.snapshot_folder import load

    src = ROOT / "fixtures" / "scenarios" / "sys-two-toolkits-path-mismatch" / "snapshot"
    load(str(src)).save(str(tmp_path / "again"))
    assert_valid(json.loads((tmp_path / "again" / "snapshot.json").read_text()), "snapshot")
    shutil.rmtree(tmp_path / "again")
