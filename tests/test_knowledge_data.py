"""Every knowledge data file is well-formed: documented, sourced, sorted, parseable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

DATA = Path(__file__).resolve().parents[1] / "gpudoctor" / "knowledge" / "data"
FILES = sorted(DATA.glob("*.json"))
# gpudoctor's own taxonomy (diagnosis families and their order), not facts taken from elsewhere.
TAXONOMY = {"families"}
SOURCED = [p for p in FILES if p.stem not in TAXONOMY]
EXPECTED = {"cuda_drivers", "torch_releases", "tf_builds", "gpus", "arch_rules"}


def _sourced(node, path="$"):
    """Yield (path, dict) for every dict that is a row: it carries a source, or sits in a list of rows."""
    if isinstance(node, dict):
        if "source" in node:
            yield path, node
        for key, value in node.items():
            yield from _sourced(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if isinstance(value, dict) and "source" not in value:
                raise AssertionError(f"{path}[{i}] is a row without a source")
            yield from _sourced(value, f"{path}[{i}]")


def test_all_expected_files_exist():
    assert EXPECTED <= {p.stem for p in FILES}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_is_documented_json(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(doc.get("_doc"), str) and len(doc["_doc"]) > 40


@pytest.mark.parametrize("path", SOURCED, ids=[p.stem for p in SOURCED])
def test_every_row_has_https_source_and_verified_flag(path):
    rows = list(_sourced(json.loads(path.read_text(encoding="utf-8"))))
    assert rows, f"{path.name} has no sourced rows"
    for where, row in rows:
        assert isinstance(row["source"], str) and row["source"].startswith("https://"), where
        assert isinstance(row.get("verified"), bool), f"{where}: verified must be true/false"


def _load(name):
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


TABLES = [
    ("cuda_drivers", "toolkits", "toolkit"),
    ("torch_releases", "releases", "version"),
    ("tf_builds", "builds", "version"),
    ("arch_rules", "toolkit_targets", "cc"),
    ("arch_rules", "integrated", "cc"),
]


@pytest.mark.parametrize("name,table,key", TABLES, ids=[f"{n}.{t}" for n, t, _ in TABLES])
def test_tables_sorted_by_version_without_duplicates(name, table, key):
    versions = [Version(row[key]) for row in _load(name)[table]]
    assert versions == sorted(versions), f"{name}.{table} is not sorted by {key}"
    assert len(set(versions)) == len(versions), f"{name}.{table} has duplicate {key}s"


VERSION_FIELDS = {"toolkit", "linux_min", "windows_min", "version", "cuda", "cudnn", "first_cuda", "last_cuda",
                  "min_driver", "max_exclusive", "cc", "compute_cap", "default_cuda"}


def _version_values(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in VERSION_FIELDS and isinstance(value, str):
                yield key, value
            yield from _version_values(value)
    elif isinstance(node, list):
        for value in node:
            yield from _version_values(value)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_version_string_parses(path):
    for key, value in _version_values(json.loads(path.read_text(encoding="utf-8"))):
        Version(value)  # raises InvalidVersion on anything packaging cannot compare


def test_every_nvidia_smi_failure_matches_its_real_examples_and_only_its_row_claims_them():
    from gpudoctor.knowledge.smi_failures import failure_in

    rows = _load("nvidia_smi_failures")["failures"]
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        assert row["examples"], row["id"]
        for example in row["examples"]:
            said = failure_in([example])
            assert said is not None and said.id == row["id"], (row["id"], example)
