"""The JSON contracts themselves: well-formed, named like the outputs, shipped, listed, versioned.

The outputs are validated against them in tests/test_schema_outputs.py; here each schema must
reject broken documents, and a change to a schema's shape must come with a new version.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import re

import pytest
from jsonschema import Draft202012Validator

from gpudoctor import schemas
from tests.conftest import ROOT
from tests.schema_support import cli_json, fingerprint, live_documents, problems

FINGERPRINTS = ROOT / "tests" / "data" / "schema_fingerprints.json"
# Where each document's "schema" value is set in the code: module, attribute.
CONSTANTS = {
    "report": ("gpudoctor.report", "SCHEMA"),
    "hook": ("gpudoctor.hook.outcome", "SCHEMA"),
    "devices": ("gpudoctor.commands.devices", "SCHEMA"),
    "explain": ("gpudoctor.explain.render", "SCHEMA"),
    "fleet": ("gpudoctor.fleet.summary", "SCHEMA"),
    "memory": ("gpudoctor.memory.report", "SCHEMA"),
    "snapshot": ("gpudoctor.snapshot", "SCHEMA"),
    "snapshot-summary": ("gpudoctor.commands.snapshot", "SCHEMA"),
    "bundle": ("gpudoctor.bundle.manifest", "SCHEMA"),
    "bundle-summary": ("gpudoctor.commands.bundle", "SCHEMA"),
    "smi": ("gpudoctor.commands.parse_smi", "SCHEMA"),
    "checks": ("gpudoctor.commands.check", "LIST_SCHEMA"),
}
NAMES = schemas.names()
SCENARIOS = ROOT / "fixtures" / "scenarios"
BROKEN = SCENARIOS / "fw-torch-cu121-old-driver-515" / "snapshot"  # a GPU, failures, diagnoses with fixes
XML = ROOT / "fixtures" / "nvidia-smi" / "xml" / "a100-sxm4-80gb_driver-535.54.03_cuda-12.2_mig.xml"


def test_every_output_has_a_schema_file_and_every_file_an_output():
    assert NAMES == sorted(CONSTANTS)


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_draft_2020_12_with_id_and_title_of_its_version(name):
    schema = schemas.load(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    version = getattr(importlib.import_module(CONSTANTS[name][0]), CONSTANTS[name][1])
    assert re.fullmatch(rf"gpudoctor\.{re.escape(name)}/[1-9][0-9]*", version)
    assert schema["title"] == version
    assert schema["properties"]["schema"] == {"const": version}
    assert schema["$id"] == schemas.schema_id(version)
    assert schema["additionalProperties"] is False and "schema" in schema["required"]


@pytest.mark.parametrize("name", NAMES)
def test_refs_to_other_schemas_name_their_current_version(name):
    """A $ref to another schema pins its version: bumping that one shows up here, and in this one's fingerprint."""
    ids = {schemas.load(n)["$id"] for n in NAMES}
    refs = re.findall(r'"\$ref": "([^"#]+)#', json.dumps(schemas.load(name)))
    assert set(refs) <= ids


def test_a_shape_change_bumps_the_version():
    recorded = json.loads(FINGERPRINTS.read_text(encoding="utf-8"))["schemas"]
    update = os.environ.get("GPUDOCTOR_UPDATE_FINGERPRINTS") == "1"
    stale = []
    for name in NAMES:
        schema, old = schemas.load(name), recorded.get(name)
        now = {"version": schema["title"], "fingerprint": fingerprint(schema)}
        if old == now:
            continue
        if old is not None and old["version"] == now["version"]:
            pytest.fail(f"{name}.schema.json changed its shape (fields, required fields, types or enums) but is still "
                        f"{now['version']}: bump the version (the schema's title, const and $id, the SCHEMA "
                        f"constant in {CONSTANTS[name][0]}, the README), then record the new fingerprint")
        stale.append((name, now))
    if stale and update:
        data = json.loads(FINGERPRINTS.read_text(encoding="utf-8"))
        data["schemas"].update(stale)
        FINGERPRINTS.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    assert update or not stale, (f"new versions {[n for n, _ in stale]}: record their fingerprints with "
                                 "GPUDOCTOR_UPDATE_FINGERPRINTS=1 pytest tests/test_schemas.py")
    assert sorted(recorded) == NAMES or update, "tests/data/schema_fingerprints.json lists a schema that is gone"


def test_the_fingerprint_sees_a_new_field_and_a_new_enum_value_but_not_a_description():
    base = schemas.load("hook")
    added = copy.deepcopy(base)
    added["properties"]["node_name"] = {"type": "string"}
    widened = copy.deepcopy(base)
    widened["properties"]["state"]["enum"].append("draining")
    reworded = copy.deepcopy(base)
    reworded["properties"]["reason"]["description"] = "the drain reason"
    assert fingerprint(added) != fingerprint(base) != fingerprint(widened)
    assert fingerprint(reworded) == fingerprint(base)


def test_readme_lists_every_schema_and_the_version_rule():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## JSON contracts", 1)[1].split("\n## ", 1)[0]
    for name in NAMES:
        assert f"`gpudoctor/schemas/{name}.schema.json`" in section, name
        assert f"`{schemas.load(name)['title']}`" in section, name
    assert "bump" in section and "--jsonl" in section


def test_schemas_are_package_data():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"gpudoctor.schemas"' in pyproject
    assert '"gpudoctor.schemas" = ["*.schema.json"]' in pyproject


def test_for_document_finds_the_schema_a_document_names():
    assert schemas.for_document({"schema": "gpudoctor.hook/2"})["title"] == "gpudoctor.hook/2"
    with pytest.raises(KeyError, match="gpudoctor.hook/1"):
        schemas.for_document({"schema": "gpudoctor.hook/1"})
    with pytest.raises(ValueError):
        schemas.schema_id("report/2")
    with pytest.raises(KeyError, match="no gpudoctor schema 'reports'"):
        schemas.load("reports")


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """One real document per schema, rich enough that each of the mutations below has something to break."""
    docs = {name: doc for name, doc in live_documents().items() if name in NAMES}
    docs["report"] = cli_json("check", "--snapshot", BROKEN, "--json")[1]
    docs["hook"] = cli_json("hook", "--snapshot", BROKEN, "--cuda", "12.1", "--json")[1]
    docs["devices"] = cli_json("devices", "--snapshot", SCENARIOS / "fw-cvd-uuid-prefix" / "snapshot", "--json")[1]
    docs["explain"] = cli_json("explain", "--json", "CUDA error: no kernel image is available for execution on the device")[1]
    reports = tmp_path_factory.mktemp("reports")
    (reports / "node1.json").write_text(json.dumps(docs["report"]))
    docs["fleet"] = cli_json("fleet", reports, "--json")[1]
    docs["memory"] = cli_json("memory", "--params", "7B", "--gpu", "RTX 4090", "--json")[1]
    docs["smi"] = cli_json("parse-smi", XML, "--json")[1]
    docs["checks"] = cli_json("check", "--list-checks", "--json")[1]
    assert docs["report"]["diagnoses"] and docs["explain"]["diagnoses"] and docs["fleet"]["problems"]
    assert docs["hook"]["state"] == "problem"
    return docs


# --- each schema rejects broken documents ---------------------------------------------------------------

# One place per schema where a closed set of values lives, and a value outside it.
WRONG_VALUES = {
    "report": (("findings", 0, "status"), "passed"),
    "hook": (("state",), "draining"),
    "devices": (("mode",), "some"),
    "explain": (("diagnoses", 0, "confidence"), "certain"),
    "fleet": (("problems", 0, "status"), "skip"),
    "memory": (("settings", "dtype"), "fp64"),
    "snapshot": (("commands", "nvidia_smi_xml", "timed_out"), "no"),
    "snapshot-summary": (("commands",), -1),
    "bundle": (("commands", 0, "part"), "extra"),
    "bundle-summary": (("report_summary", "fail"), "1"),
    "smi": (("format",), "html"),
    "checks": (("checks", 0, "id"), "driver-answers"),
}


def _set(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


@pytest.mark.parametrize("name", NAMES)
def test_a_sample_of_each_output_conforms(name, samples):
    assert problems(samples[name], name) == []


@pytest.mark.parametrize("name", NAMES)
def test_each_missing_required_field_is_refused(name, samples):
    for field in schemas.load(name)["required"]:
        broken = copy.deepcopy(samples[name])
        del broken[field]
        assert any(f"'{field}' is a required property" in p for p in problems(broken, name)), field


@pytest.mark.parametrize("name", NAMES)
def test_a_value_outside_its_set_is_refused(name, samples):
    path, value = WRONG_VALUES[name]
    broken = copy.deepcopy(samples[name])
    _set(broken, path, value)
    assert any(p.startswith("/" + "/".join(map(str, path)) + ":") for p in problems(broken, name))


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_field_and_another_version_are_refused(name, samples):
    broken = copy.deepcopy(samples[name])
    broken["extra"] = 1
    assert any("'extra' was unexpected" in p for p in problems(broken, name))
    other = dict(samples[name], schema=re.sub(r"/\d+$", "/999", samples[name]["schema"]))
    assert problems(other, name)


def test_nested_shapes_bite_too(samples):
    report = copy.deepcopy(samples["report"])
    del report["findings"][0]["evidence"]
    report["machine"]["gpus"].append({"index": 0})
    report["diagnoses"][0]["status"] = "ok"  # only a problem is a diagnosis
    found = "\n".join(problems(report, "report"))
    assert "/findings/0: 'evidence' is a required property" in found
    assert "/machine/gpus/" in found and "/diagnoses/0/status" in found
    hook = copy.deepcopy(samples["hook"])
    hook["exit_code"] = 0  # a problem exits 1
    assert any(p.startswith("/exit_code") for p in problems(hook, "hook"))
