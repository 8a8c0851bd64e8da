"""`gpudoctor parse-smi FILE`: read any saved nvidia-smi output and show what it says.

Useful on a bug report: paste the user's `nvidia-smi` (table, `-q`, `-q -x`, `-L`, CSV or
a capture script's multi-command file) into a file, or pipe it in with `-`.
"""

from __future__ import annotations

import codecs
import sys
from typing import List, Optional, Sequence

import click

from gpudoctor.exitcodes import ExitCode

MAX_BYTES = 64 * 1024 * 1024
SCHEMA = "gpudoctor.smi/2"  # the --json document (gpudoctor/schemas/smi.schema.json)


class _Unreadable(click.ClickException):
    """One line `gpudoctor: <file>: <reason>` on stderr, exit code 2."""

    exit_code = ExitCode.USAGE

    def show(self, file=None):
        click.echo(f"gpudoctor: {self.format_message()}", err=True)


def _read(path: str, limit: int) -> bytes:
    if path == "-":
        stream = getattr(sys.stdin, "buffer", None)
        return stream.read(limit + 1) if stream else sys.stdin.read(limit + 1).encode("utf-8")
    try:
        with open(path, "rb") as handle:
            return handle.read(limit + 1)
    except FileNotFoundError:
        raise _Unreadable(f"{path}: no such file") from None
    except IsADirectoryError:
        raise _Unreadable(f"{path}: is a directory, not a file") from None
    except PermissionError:
        raise _Unreadable(f"{path}: permission denied") from None
    except OSError as exc:
        raise _Unreadable(f"{path}: cannot read ({exc.strerror or exc})") from None


def _utf16(data: bytes) -> Optional[str]:
    """PowerShell's `nvidia-smi > smi.txt` writes UTF-16 with a BOM: ASCII text, so every high byte is 0."""
    for bom, high in ((codecs.BOM_UTF16_LE, data[3::2]), (codecs.BOM_UTF16_BE, data[2::2])):
        if data.startswith(bom) and high and high.count(0) * 2 >= len(high):
            return data.decode("utf-16", errors="replace")
    return None


def load_report(path: str, max_bytes: int = MAX_BYTES):
    """The parsed SmiReport of `path`, or _Unreadable with the reason in one line."""
    from gpudoctor.smi import SmiParseError, parse

    data = _read(path, max_bytes)
    path = "<stdin>" if path == "-" else path  # how the messages below name it
    if len(data) > max_bytes:
        size = f"{max_bytes >> 20} MiB" if max_bytes >= 1 << 20 else f"{max_bytes} bytes"
        raise _Unreadable(f"{path}: larger than {size}, not nvidia-smi output")
    text = _utf16(data)
    if text is None and b"\x00" in data:
        raise _Unreadable(f"{path}: binary data, not nvidia-smi output")
    if text is None:
        text = data.decode("utf-8", errors="replace")
    try:
        return parse(text)
    except SmiParseError as exc:
        raise _Unreadable(f"{path}: {exc}") from None


def _cell(value) -> str:
    return "-" if value is None else str(value)


def _table(headers: Sequence[str], rows: List[Sequence[str]]) -> List[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    return [fmt.format(*headers).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


def _gpu_lines(report) -> List[str]:
    rows = []
    for g in report.gpus:
        memory = f"{_cell(g.memory_used_mib)} / {_cell(g.memory_total_mib)}"
        rows.append([_cell(g.index), _cell(g.name), _cell(g.uuid), _cell(g.pci_bus_id), memory, _cell(g.mig_mode)])
        for m in g.mig_devices:
            label = f"  MIG {_cell(m.mig_index)} gi={_cell(m.gi_id)} ci={_cell(m.ci_id)} {m.profile or ''}".rstrip()
            rows.append(["", label, _cell(m.uuid), "",
                         f"{_cell(m.memory_used_mib)} / {_cell(m.memory_total_mib)}", ""])
    return _table(["GPU", "NAME", "UUID", "PCI BUS ID", "MEMORY USED / TOTAL (MiB)", "MIG MODE"], rows)


def render_text(report) -> str:
    """The report for a person: versions, GPU table, processes, then warnings and errors."""
    lines = [f"format:  {report.format}",
             f"driver:  {_cell(report.driver_version)}" + (f"  (KMD {report.kmd_version})" if report.kmd_version else ""),
             f"CUDA:    {_cell(report.cuda_version)}",
             f"GPUs:    {len(report.gpus)}" + (f" (attached: {report.attached_gpus})"
                                               if report.attached_gpus is not None else ""), ""]
    if report.gpus:
        lines += _gpu_lines(report) + [""]
    if report.processes:
        rows = [[_cell(p.gpu_index), _cell(p.pid), _cell(p.type), _cell(p.used_memory_mib), _cell(p.name)]
                for p in report.processes]
        lines += ["Processes:"] + _table(["GPU", "PID", "TYPE", "MEMORY (MiB)", "NAME"], rows) + [""]
    lines += [f"warning: {w}" for w in report.warnings]
    lines += [f"error: {e}" for e in report.errors]
    return "\n".join(lines).rstrip() + "\n"


def _run(file: str, as_json: bool) -> None:
    """Show what a saved nvidia-smi output says: driver, CUDA, GPUs, processes, errors.

    FILE is the saved output of `nvidia-smi`, `-q`, `-q -x`, `-L`, `--query-gpu ...
    --format=csv`, or a multi-command capture; `-` reads standard input. Exits 0, 1 when
    the output is nvidia-smi reporting its own failure, 2 when FILE cannot be read.

    \b
    Examples:
      gpudoctor parse-smi smi.txt                # what a user pasted into a ticket
      nvidia-smi -q -x | gpudoctor parse-smi - --json
    """
    report = load_report(file)
    if as_json:
        from gpudoctor.render.json import dumps
        click.echo(dumps({"schema": SCHEMA, **report.to_dict()}), nl=False)
    else:
        click.echo(render_text(report), nl=False)
    if report.errors:
        raise click.exceptions.Exit(ExitCode.PROBLEM)


command = click.command("parse-smi")(
    click.argument("file", metavar="FILE")(
        click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(_run)))
