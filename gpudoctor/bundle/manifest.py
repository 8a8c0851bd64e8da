"""manifest.json: what the bundle holds (size and sha256 of each member) and how it was made."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from typing import Dict, List, Mapping, Sequence

import gpudoctor
from gpudoctor.bundle.sanitize import Sanitizer
from gpudoctor.bundle.write import Member, sha256
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import Snapshot

SCHEMA = "gpudoctor.bundle/1"


def commands(snap: Snapshot, extras: Dict[str, CommandResult], s: Sanitizer, python: str) -> List[Dict]:
    """Every command the bundle ran: argv, exit code, duration, how it ended."""
    rows = []
    for key, res in sorted(snap.commands.items()):
        rows.append({"key": key, "part": "snapshot", **_cmd(res)})
    probe = (snap.nvml or {}).get("probe") or {}
    if probe:
        rows.append({"key": "nvml", "part": "snapshot", "argv": [s.text(sys.executable), "-m",
                     "gpudoctor.probes.nvml_child"], **_probe_fields(probe)})
    for name, fw in sorted((snap.frameworks or {}).items()):
        p = fw.get("probe") or {}
        argv = [p.get("python") or s.text(python), "-c", "<gpudoctor/probes/framework_probe.py>", name]
        rows.append({"key": f"framework:{name}", "part": "snapshot", "argv": argv, **_probe_fields(p)})
    for key, res in extras.items():
        rows.append({"key": key, "part": "bundle", **s.value(_cmd(res))})
    return rows


def _cmd(res: CommandResult) -> Dict:
    return {"argv": list(res.argv), "returncode": res.returncode, "duration_s": res.duration_s,
            "timed_out": res.timed_out, "error": res.error}


def _probe_fields(p: Mapping) -> Dict:
    return {"returncode": p.get("returncode"), "duration_s": p.get("duration_s"),
            "timed_out": bool(p.get("timed_out")), "error": p.get("error")}


def manifest(s: Sanitizer, members: List[Member], commands: List[Dict], command_line: Sequence[str],
             python: str) -> str:
    data = {
        "schema": SCHEMA,
        "gpudoctor_version": gpudoctor.__version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command_line": [s.text(a) for a in command_line],
        "python": s.text(python),
        "anonymized": s.anonymize,
        "redactions": s.counts(),
        "commands": commands,
        "members": [{"name": n, "size": len(d), "sha256": sha256(d)} for n, d in members],
        "replay": "gpudoctor check --snapshot <this file>",
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
