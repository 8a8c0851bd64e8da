"""node_exporter textfile-collector output for the hook, written atomically.

node_exporter reads every ``*.prom`` file in its ``--collector.textfile.directory`` on each
scrape; a half-written file would be read as garbage, so the file is written beside its
final name and moved into place with ``os.replace`` (atomic on one filesystem). No
timestamps on samples: node_exporter rejects them in textfiles.
"""

from __future__ import annotations

import os
import tempfile
from typing import Iterable, List, Optional, Sequence, Tuple

from gpudoctor.hook.outcome import Outcome, verdict

STATE_VALUE = {"ok": 0, "problem": 1, "unknown": 2}


def _escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Sequence[Tuple[str, object]]) -> str:
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _metric(lines: List[str], name: str, help_text: str, samples: Iterable[Tuple[Sequence, float]]) -> None:
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} gauge")
    for labels, value in samples:
        lines.append(f"{name}{_labels(labels)} {_number(value)}")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))


def render(outcome: Outcome, now: float, gpus: Sequence = (), driver: Optional[str] = None) -> str:
    """The textfile's content: the verdict, one gauge per check, GPU info, timing."""
    lines: List[str] = []
    _metric(lines, "gpudoctor_hook_status",
            "Verdict of the last gpudoctor hook run: 0 ok, 1 problem, 2 unknown (the exit code).",
            [((), int(outcome.exit_code))])
    _metric(lines, "gpudoctor_check_status",
            "State of each check the hook ran (gpudoctor check ids): 0 ok, 1 problem, 2 unknown.",
            [((("check", f.check_id),), STATE_VALUE[verdict(f, outcome.lenient)]) for f in outcome.findings])
    _metric(lines, "gpudoctor_gpu_info", "GPUs nvidia-smi listed (value is always 1).",
            [((("index", g.index), ("name", g.name or ""), ("uuid", g.uuid or ""), ("driver", driver or "")), 1)
             for g in gpus])
    temps = [((("index", g.index),), g.temperature_c) for g in gpus if g.temperature_c is not None]
    if temps:
        _metric(lines, "gpudoctor_gpu_temperature_celsius", "GPU temperature nvidia-smi reported.", temps)
    _metric(lines, "gpudoctor_hook_duration_seconds", "Wall time of the last hook run.",
            [((), round(outcome.duration_s, 3))])
    _metric(lines, "gpudoctor_last_run_timestamp_seconds", "Unix time the last hook run finished.",
            [((), round(now, 3))])
    return "\n".join(lines) + "\n"


def write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file in the same directory, then os.replace)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".gpudoctor-", suffix=".prom.tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)  # node_exporter usually runs as another user
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
