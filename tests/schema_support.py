"""Helpers for the JSON contract tests: validators over the shipped schemas, commands run in-process."""

from __future__ import annotations

import atexit
import gzip
import hashlib
import json
import shutil
import tarfile
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from gpudoctor import schemas
from tests.conftest import invoke

# The fields a fingerprint covers: what a document may and must hold, and the values it may take.
# Descriptions, titles and bounds (minLength, pattern, minimum) can be refined without a new version.
SHAPE_KEYS = ("type", "required", "enum", "const", "additionalProperties", "$ref", "propertyNames", "prefixItems",
              "dependentRequired")


@lru_cache(maxsize=None)
def registry() -> Registry:
    """Every shipped schema under its $id, so that one schema's $ref reaches another's $defs."""
    return Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in map(schemas.load, schemas.names()))


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schemas.load(name), registry=registry())


def problems(doc, name: str) -> List[str]:
    """Each way ``doc`` breaks schema ``name``, as "path: message" (empty: it conforms)."""
    return list(_problems(repr(doc), name, doc))


_SEEN: Dict[Tuple[str, str], Tuple[str, ...]] = {}


def _problems(key: str, name: str, doc) -> Tuple[str, ...]:
    """Validation remembered per document (its repr: key order, tuple or list, True or 1 all count) and
    schema: the contract tests validate the same report more than once (--json and --jsonl, a report and
    the bundle holding it), and validating is most of their time."""
    if (key, name) not in _SEEN:
        errors = sorted(map(_deepest, validator(name).iter_errors(doc)),
                        key=lambda e: list(map(str, e.absolute_path)))
        _SEEN[key, name] = tuple(f"/{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors)
    return _SEEN[key, name]


def _deepest(error):
    """For "not valid under any of the given schemas" (a nullable $ref), the error inside the branch of the
    right type: the one that says which field is wrong."""
    while error.context:
        error = min(error.context, key=lambda e: (e.validator == "type", -len(e.absolute_path)))
    return error


def assert_valid(doc, name: str, what: str = "") -> None:
    found = problems(doc, name)
    assert not found, f"{what or name}: the output breaks {name}.schema.json:\n" + "\n".join(found[:10])


def cli(*args, stdin: str = "", env=None) -> Tuple[int, str]:
    """Run one gpudoctor command in this process: its exit code and what it printed on stdout."""
    ran = invoke(*args, input=stdin, env=env)
    return ran.returncode, ran.stdout


def cli_json(*args, stdin: str = "", env=None) -> Tuple[int, Dict]:
    code, out = cli(*args, stdin=stdin, env=env)
    assert out.endswith("\n") and out.strip(), f"gpudoctor {' '.join(map(str, args))} printed {out!r} (exit {code})"
    return code, json.loads(out)


@lru_cache(maxsize=None)
def live_documents() -> Dict[str, Dict]:
    """What the commands that only probe this machine write, made once per test run: `snapshot --json`
    and its snapshot.json, `bundle --anonymize --json` over a planted machine (tests/bundle_support.py)
    and the manifest.json, report.json and snapshot.json inside the bundle."""
    from tests.bundle_support import make_root, make_stubs, planted_env

    tmp = Path(tempfile.mkdtemp(prefix="gpudoctor-schemas-"))
    atexit.register(shutil.rmtree, tmp, True)
    env = planted_env(make_stubs(tmp / "bin"), tmp)
    _, snap = cli_json("snapshot", "--out", tmp / "snap", "--no-frameworks", "--json", env=env)
    _, bundle = cli_json("bundle", "--anonymize", "--no-frameworks", "--root", make_root(tmp / "root"),
                         "-o", tmp / "bundle.tar.gz", "--json", env=env)
    inside = _members(bundle["bundle"], ("manifest.json", "report.json", "snapshot/snapshot.json"))
    return {"snapshot-summary": snap, "snapshot": json.loads((tmp / "snap" / "snapshot.json").read_text()),
            "bundle-summary": bundle, "bundle": inside["manifest.json"], "bundle-report": inside["report.json"],
            "bundle-snapshot": inside["snapshot/snapshot.json"]}


def _members(path: str, names: Sequence[str]) -> Dict[str, Dict]:
    """The JSON members ``names`` of a bundle (their paths below its one top folder)."""
    out = {}
    with tarfile.open(path, "r:gz") as tar:
        for member in tar.getmembers():
            rel = member.name.split("/", 1)[-1]
            if rel in names:
                out[rel] = json.loads(tar.extractfile(member).read().decode("utf-8"))
    assert sorted(out) == sorted(names), f"{path} lacks {set(names) - set(out)}"
    return out


def gzip_text(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    return path


def fingerprint(schema: Dict) -> str:
    """A digest of a schema's shape: every property name and the SHAPE_KEYS at every place in it, the
    document's own version (the "schema" const, the $id, the title) left out so that a bump alone does
    not change it."""
    shape = sorted(_shape(schema, ""))
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]


MAPS = ("properties", "$defs", "patternProperties", "dependentSchemas")  # name -> subschema
ANNOTATIONS = ("description", "title", "$id", "$schema", "$comment", "examples")


def _shape(node, path: str):
    """One line per subschema: its path and its SHAPE_KEYS (property names for ``properties``)."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _shape(item, f"{path}/{i}")
        return
    if not isinstance(node, dict) or path == "/properties/schema":  # the version's own const
        return
    found = {k: node[k] for k in SHAPE_KEYS if k in node and _plain(node[k])}
    if isinstance(node.get("properties"), dict):
        found["properties"] = sorted(node["properties"])
    if found:
        yield json.dumps([path, found], sort_keys=True)
    for key, value in node.items():
        if key in MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from _shape(sub, f"{path}/{key}/{name}")
        elif key not in ANNOTATIONS:
            yield from _shape(value, f"{path}/{key}")


def _plain(value) -> bool:
    """A value kept whole in the fingerprint: no subschema inside it (those get lines of their own)."""
    if isinstance(value, list):
        return all(not isinstance(x, (dict, list)) for x in value)
    if isinstance(value, dict):
        return all(isinstance(v, list) for v in value.values())  # dependentRequired
    return True
