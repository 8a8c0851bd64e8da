"""The bundle's members beyond the snapshot and the report: packages, pip config, kernel lines, env."""

from __future__ import annotations

import json
from typing import Dict, List, Mapping

from gpudoctor.bundle import collect
from gpudoctor.bundle.redact import redact_url, secret_env
from gpudoctor.bundle.sanitize import Sanitizer
from gpudoctor.bundle.write import Member
from gpudoctor.runner import CommandResult


def extra_members(extras: Dict[str, CommandResult], pkg_env: Dict[str, str], environ: Mapping[str, str],
                   s: Sanitizer) -> List[Member]:
    out: List[Member] = []
    for key, name in (("pip_list", "python/pip-list"), ("conda_list", "python/conda-list")):
        if key in extras:
            out.append(json_listing(name, extras[key], s))
    if "pip_config" in extras:
        res = extras["pip_config"]
        text = res.stdout if res.ok else f"# {res.describe()}\n{res.stdout}{res.stderr}"
        out.append(("python/pip-config.txt", s.text(text).encode("utf-8")))
    out.append(("kernel/nvidia-messages.txt", s.text(collect.kernel_report(extras)).encode("utf-8")))
    env = {"package_settings": {k: s.text(redact_url(v)) for k, v in sorted(pkg_env.items())},
           "secret_variables": sorted(secret_env(environ)),
           "note": "secret_variables lists names only; their values are never recorded and are redacted "
                   "wherever they appear"}
    out.append(("environment.json", (json.dumps(env, indent=2, sort_keys=True) + "\n").encode("utf-8")))
    return out


def json_listing(name: str, res: CommandResult, s: Sanitizer) -> Member:
    """pip/conda JSON with names and versions kept verbatim (9.1.0.70 is a version, not an IP address)."""
    try:
        rows = json.loads(res.stdout) if res.ok else None
        keep = ("name", "version", "build_string", "build_number")
        clean = [{k: _field(k in keep, v, s) for k, v in row.items()} if isinstance(row, dict) else s.value(row)
                 for row in rows] if isinstance(rows, list) else None
    except (ValueError, RecursionError):  # not JSON, or nested deeper than pip ever prints
        clean = None
    if clean is None:
        text = f"# {res.describe()}\n# stdout:\n{res.stdout}\n# stderr:\n{res.stderr}"
        return (f"{name}.txt", s.text(text).encode("utf-8"))
    return (f"{name}.json", (json.dumps(clean, indent=2) + "\n").encode("utf-8"))


def _field(keep: bool, value, s: Sanitizer):
    if not keep:
        return s.value(value)
    return s.secrets.text(value) if isinstance(value, str) else value
