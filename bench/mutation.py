"""Mutation testing of the judging code with mutmut 3, one target at a time.

    python bench/mutation.py                 # every target, fresh
    python bench/mutation.py diagnoses hook  # some targets
    python bench/mutation.py --again hook    # re-test only the survivors (after adding tests)
    python bench/mutation.py --resume checks # go on with the mutants an interrupted run left
    python bench/mutation.py --survivors hook  # list them (mutmut show NAME in .mutation/hook)

Why a staging folder per target (``.mutation/<target>``, ignored by git): mutmut names a mutant by
its file path (``checks/driver.py`` -> ``checks.driver``) and routes a call to it by the function's
``__module__``; the built-in checks run as ``gpudoctor_checks`` (the name the entry point loads), so
the stage exposes ``checks/`` under that name and links ``mutants/checks`` to the mutated copy for
tests/tree.py. Each target names the test files that pin it: mutmut records which of their tests
reach each function and runs only those per mutant, so a mutant costs seconds, not the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / ".mutation"
LINKED = ("gpudoctor", "tests", "fixtures", "contrib", "docs", "bench", "gpudoctor_entry.py", "README.md",
          "LICENSE", "MANIFEST.in")
COPIED = ["tests", "fixtures", "contrib", "docs", "bench", "gpudoctor_entry.py", "README.md", "LICENSE",
          "MANIFEST.in"]

# target -> (files to mutate, as the stage names them; test files that pin them[; files left to another target])
TARGETS = {
    "diagnoses": (["gpudoctor/diagnoses.py"], ["tests/test_diagnoses.py", "tests/test_scenarios.py::test_scenario"]),
    "remedies": (["gpudoctor/remedies.py"], ["tests/test_remedies.py", "tests/test_scenarios.py::test_scenario"]),
    "visible_devices": (["gpudoctor/visible_devices.py"], ["tests/test_visible_devices.py"]),
    "requirements": (["gpudoctor/requirements.py"], ["tests/test_hook_outcome.py", "tests/test_hook_config.py"]),
    "hook": (["gpudoctor/hook/select.py", "gpudoctor/hook/outcome.py"],
             ["tests/test_hook_outcome.py", "tests/test_hook_config.py"]),
    # The checks the deliberate bugs were put into, first; the rest of checks/ as "checks_rest".
    "checks": (["gpudoctor_checks/driver.py", "gpudoctor_checks/torch_build.py", "gpudoctor_checks/torch_fixes.py",
                "gpudoctor_checks/tensorflow_build.py", "gpudoctor_checks/cuda_toolkit.py",
                "gpudoctor_checks/nouveau.py", "gpudoctor_checks/visible_devices.py"],
               ["tests/test_checks_system.py", "tests/test_framework_checks.py", "tests/test_visible_devices.py",
                "tests/test_scenarios.py::test_scenario_findings_golden", "tests/test_scenarios.py::test_scenario",
                "tests/test_scenarios.py::test_scenario_text_golden"]),
    "checks_rest": (["gpudoctor_checks/*"], ["tests/test_checks_system.py", "tests/test_framework_checks.py",
                                             "tests/test_fabric.py", "tests/test_host_compiler.py",
                                             "tests/test_node_health.py", "tests/test_node_health_dcgm.py",
                                             # the smoke tests (SMK*), foreign processes (NOD004), Xid (XID*)
                                             "tests/test_node_health_smoke.py", "tests/test_hook_job.py",
                                             "tests/test_hook_outcome.py", "tests/test_kernel_log.py",
                                             "tests/test_device_lists.py", "tests/test_dcgm_findings.py",
                                             "tests/test_smoke_no_gpu.py", "tests/test_clock_findings.py",
                                             "tests/test_probe_findings.py", "tests/test_xid_findings.py",
                                             "tests/test_pcie_findings.py", "tests/test_container_findings.py",
                                             "tests/test_scenarios.py::test_scenario_findings_golden",
                                             "tests/test_scenarios.py::test_scenario",
                                             "tests/test_scenarios.py::test_scenario_text_golden"],
                    ["gpudoctor_checks/driver.py", "gpudoctor_checks/torch_build.py", "gpudoctor_checks/torch_fixes.py",
                     "gpudoctor_checks/tensorflow_build.py", "gpudoctor_checks/cuda_toolkit.py",
                     "gpudoctor_checks/nouveau.py", "gpudoctor_checks/visible_devices.py"]),
    "memory": (["gpudoctor/memory/allocator.py", "gpudoctor/memory/fit.py", "gpudoctor/memory/activations.py",
                "gpudoctor/memory/plan.py", "gpudoctor/memory/units.py", "gpudoctor/memory/states.py",
                "gpudoctor/explain/oom.py"],  # explain's reading of an OOM message, through the same model
               ["tests/test_explain_oom.py", "tests/test_memory_fit.py", "tests/test_memory_plan.py", "tests/test_memory_plan_edges.py",
                "tests/test_memory_allocator.py", "tests/test_memory_units.py", "tests/test_memory_counts.py",
                "tests/test_memory_read.py",
                # imports torch in a child for 25 s; it pins read.py's parser, not these modules
                "--deselect", "tests/test_memory_read.py::test_parser_follows_the_installed_torch_formatter"]),
    "engine": (["gpudoctor/engine.py"], ["tests/test_engine.py", "tests/test_runner.py", "tests/test_plugins.py",
                                        "tests/test_scenarios.py"]),
    "facts": (["gpudoctor/facts/*"], ["tests/test_facts_core.py", "tests/test_facts_system.py",
                                      "tests/test_facts_typed.py", "tests/test_scenarios.py",
                                      "tests/test_scenario_facts.py", "tests/test_facts_records.py",
                                      # the findings that read each fact, on real recordings
                                      "tests/test_framework_facts.py", "tests/test_host_compiler.py",
                                      "tests/test_fabric.py", "tests/test_kernel_log.py",
                                      "tests/test_node_health.py", "tests/test_node_health_dcgm.py",
                                      "tests/test_node_health_smoke.py", "tests/test_nvml_child.py",
                                      "tests/test_checks_system.py", "tests/test_framework_checks.py",
                                      "tests/test_probe_findings.py", "tests/test_xid_findings.py",
                                      "tests/test_container_findings.py", "tests/test_device_lists.py",
                                      "tests/test_pcie_findings.py", "tests/test_clock_findings.py",
                                      "tests/test_dcgm_findings.py"]),
    "knowledge": (["gpudoctor/knowledge/*"], ["tests/test_knowledge_archs.py", "tests/test_knowledge_cuda.py",
                                              "tests/test_knowledge_cudnn.py", "tests/test_knowledge_data.py",
                                              "tests/test_knowledge_edges.py",
                                              "tests/test_knowledge_framework_runtime.py",
                                              "tests/test_knowledge_gpus.py", "tests/test_knowledge_tensorflow.py",
                                              "tests/test_knowledge_torch.py", "tests/test_scenarios.py",
                                              # the judging code that reads the tables, and the tables' own users
                                              "tests/test_checks_system.py", "tests/test_framework_checks.py",
                                              "tests/test_memory_fit.py", "tests/test_memory_plan.py",
                                              "tests/test_memory_plan_edges.py", "tests/test_node_health.py",
                                              "tests/test_node_health_dcgm.py", "tests/test_kernel_log.py",
                                              "tests/test_explain_smi_table.py", "tests/test_explain_fallback.py"]),
    # explain's judgment of a text: the readings a message proposes, the clues that reorder them, the differential
    "explain": (["gpudoctor/explain/diagnose.py", "gpudoctor/explain/differential.py", "gpudoctor/explain/clues.py",
                 "gpudoctor/explain/derive.py", "gpudoctor/explain/pipeline.py"],
                ["tests/test_explain_cases.py", "tests/test_explain_clues.py", "tests/test_explain_differential.py",
                 "tests/test_explain_classes.py", "tests/test_explain_classes_r2.py", "tests/test_explain_classes_r3.py",
                 "tests/test_explain_classes_r4.py", "tests/test_explain_classes_r5.py", "tests/test_explain_classes_r6.py",
                 "tests/test_explain_classes_r7.py", "tests/test_explain_classes_r8.py", "tests/test_explain_classes_r9.py",
                 "tests/test_explain_classes_r9_machine.py", "tests/test_explain_classes_r10.py",
                 "tests/test_explain_classes_r11.py", "tests/test_explain_classes_r12.py",
                 "tests/test_explain_classes_r13.py", "tests/test_explain_classes_r14.py",
                 "tests/test_explain_classes_r15.py", "tests/test_explain_classes_r16.py",
                 "tests/test_explain_classes_r17.py", "tests/test_explain_classes_r18.py", "tests/test_explain_eval.py",
                 "tests/test_explain_fallback.py", "tests/test_explain_oom.py", "tests/test_explain_judgment.py",
                 "tests/test_explain_derive.py", "tests/test_explain_scan.py"]),
                # not test_explain_cli.py: its RSS bound fails under mutmut's trampolines
    # explain's reading of a text before any judgment: the second reading's normalisation, the vocabulary's words and
    # error codes, and the fallback that ranks families from them
    "explain_reading": (["gpudoctor/explain/normalize.py", "gpudoctor/explain/words.py", "gpudoctor/explain/fallback.py"],
                        ["tests/test_explain_fallback.py", "tests/test_explain_classes_r5.py",
                         "tests/test_explain_classes_r8.py", "tests/test_explain_classes_r9.py", "tests/test_explain_classes_r10.py",
                         "tests/test_explain_classes_r11.py", "tests/test_explain_classes_r12.py",
                         "tests/test_explain_classes_r13.py", "tests/test_explain_classes_r14.py",
                         "tests/test_explain_classes_r15.py", "tests/test_explain_classes_r16.py",
                         "tests/test_explain_classes_r17.py", "tests/test_explain_classes_r18.py",
                         "tests/test_explain_cases.py", "tests/test_explain_eval.py"]),
}
# mutmut's own codes (mutmut/stats.py status_by_exit_code)
STATUS = {0: "survived", 1: "killed", 3: "killed", 33: "no tests", 5: "no tests", 34: "skipped",
          36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout", None: "not checked"}


def _toml(target: str) -> str:
    mutate, tests, *skip = TARGETS[target]
    base = (ROOT / "pyproject.toml").read_text()
    return base + f"""
[tool.mutmut]
source_paths = ["gpudoctor", "gpudoctor_checks"]
only_mutate = {json.dumps(mutate)}
do_not_mutate = {json.dumps(skip[0] if skip else [])}
also_copy = {json.dumps(COPIED)}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-W", "ignore"]
pytest_add_cli_args_test_selection = {json.dumps([t for t in tests if t.startswith("--") or (ROOT / t.split("::")[0]).exists()])}
"""


def stage(target: str, fresh: bool) -> Path:
    where = STAGE / target
    if fresh and where.exists():
        shutil.rmtree(where)
    (where / "mutants").mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        if not (where / name).exists():
            (where / name).symlink_to(ROOT / name)
    if not (where / "gpudoctor_checks").exists():
        (where / "gpudoctor_checks").symlink_to(ROOT / "checks")
    if not (where / "mutants" / "checks").exists():  # tests/tree.py binds gpudoctor_checks to ROOT/checks
        (where / "mutants" / "checks").symlink_to("gpudoctor_checks")
    (where / "pyproject.toml").write_text(_toml(target))
    return where


def mutmut(where: Path, *args: str) -> int:
    code = "import sys; from mutmut.__main__ import cli; sys.argv[0] = 'mutmut'; cli()"
    return subprocess.call([sys.executable, "-c", code, *args], cwd=where)


def results(where: Path) -> dict:
    """mutant name -> status, read from mutmut's meta files."""
    out = {}
    for meta in (where / "mutants").rglob("*.py.meta"):
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            out[name] = STATUS.get(code, "suspicious")
    return out


def summary(target: str, res: dict) -> str:
    """One line per target; the score counts killed and timed-out mutants among those tested."""
    count = {s: sum(1 for v in res.values() if v == s) for s in ("killed", "survived", "timeout", "no tests")}
    judged = sum(count.values())
    score = 100.0 * (count["killed"] + count["timeout"]) / judged if judged else 0.0
    untested = len(res) - judged
    return (f"{target:16} mutants {len(res):5}  killed {count['killed']:5}  survived {count['survived']:4}  "
            f"timeout {count['timeout']:3}  no-tests {count['no tests']:4}  score {score:5.1f}%"
            + (f"  (NOT TESTED YET: {untested})" if untested else ""))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("targets", nargs="*", default=list(TARGETS))
    p.add_argument("--again", action="store_true", help="keep the stage; re-test only the survivors")
    p.add_argument("--resume", action="store_true", help="keep the stage; test the mutants not tested yet")
    p.add_argument("--survivors", action="store_true", help="list the survivors of the last run")
    p.add_argument("--summary", action="store_true", help="print the last run's line per target, run nothing")
    p.add_argument("--max-children", default="2")
    a = p.parse_args(argv)
    lines = []
    for target in a.targets:
        if a.summary:
            lines.append(summary(target, results(STAGE / target)))
            continue
        if a.survivors:
            print("\n".join(sorted(k for k, v in results(STAGE / target).items() if v == "survived")))
            continue
        where = stage(target, fresh=not (a.again or a.resume))
        names = sorted(k for k, v in results(where).items() if v in ("survived", "no tests")) if a.again else []
        if a.again and not names:
            print(f"{target}: no survivors to re-test")
        else:
            mutmut(where, "run", "--max-children", a.max_children, *names)
        lines.append(summary(target, results(where)))
        print(lines[-1], flush=True)
    if lines:
        print(f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, mutmut {_version()}")
        print("\n".join(lines))
    return 0


def _version() -> str:
    from importlib.metadata import version

    return version("mutmut")


if __name__ == "__main__":
    sys.exit(main())
