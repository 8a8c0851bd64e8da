"""The JSON Schemas (draft 2020-12) of gpudoctor's JSON outputs, shipped with the package.

Every document gpudoctor prints or writes names its contract in a ``"schema"`` field,
``gpudoctor.<name>/<version>``; the schema file is ``<name>.schema.json`` here, its
``$id`` is ``urn:gpudoctor:<name>:<version>`` and its ``title`` is the field's value. A
change that breaks a contract (a field added, removed, renamed or retyped) bumps its
version. gpudoctor does not validate its own output at run time (jsonschema is a test
dependency only); these functions hand the schemas to whoever does.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Dict, List, Mapping

SUFFIX = ".schema.json"


def names() -> List[str]:
    """The schema names, sorted: ``["bundle", "bundle-summary", "checks", ...]``."""
    files = resources.files(__name__).iterdir()
    return sorted(f.name[:-len(SUFFIX)] for f in files if f.name.endswith(SUFFIX))


def load(name: str) -> Dict:
    """The schema ``name`` (``"report"``) as a dict; KeyError names the unknown one."""
    if name not in names():
        raise KeyError(f"no gpudoctor schema {name!r} (known: {', '.join(names())})")
    return json.loads(resources.files(__name__).joinpath(name + SUFFIX).read_text(encoding="utf-8"))


def schema_id(value: str) -> str:
    """The ``$id`` of the schema a document names: ``gpudoctor.report/2`` -> ``urn:gpudoctor:report:2``."""
    if not value.startswith("gpudoctor.") or value.count("/") != 1:
        raise ValueError(f"{value!r} is not a gpudoctor schema name (gpudoctor.<name>/<version>)")
    name, version = value[len("gpudoctor."):].split("/")
    return f"urn:gpudoctor:{name}:{version}"


def for_document(doc: Mapping) -> Dict:
    """The schema a gpudoctor document names in its ``"schema"`` field (this version's file only)."""
    wanted = schema_id(str(doc.get("schema", "")))
    found = next((s for s in map(load, names()) if s.get("$id") == wanted), None)
    if found is None:
        raise KeyError(f"{doc.get('schema')!r}: not a schema this gpudoctor ships")
    return found
