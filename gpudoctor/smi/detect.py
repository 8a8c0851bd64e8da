"""Which nvidia-smi output is this? Auto-detection, bundles, and tables pasted in prose.

Users paste whatever they have: XML, the table after a `$ nvidia-smi` prompt, Windows
CRLF text, a capture script's multi-command file, or just the error nvidia-smi printed.
"""

import re
from typing import Callable, Dict, List, Optional, Union

from . import bundle
from .csvfmt import content_lines, guess_fields, is_header, parse_csv
from .errors import SmiParseError, find_errors, find_warnings
from .listing import GPU_LINE, MIG_LINE, parse_list
from .model import SmiReport
from .query import parse_query
from .table import parse_table
from .xml import parse_xml

PARSERS: Dict[str, Callable[[str], SmiReport]] = {
    "xml": parse_xml, "query": parse_query, "table": parse_table,
    "list": parse_list, "csv": parse_csv,
}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_QUERY = re.compile(r"NVSMI LOG|^Attached GPUs\s*:|^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d\s*$", re.M)
# [ \t]*, not \s*, after ^: \s* also eats newlines, and from every line start it ran to the end
# of a run of blank lines (200,000 blank lines took 278 s).
_TABLE = re.compile(r"\|\s*NVIDIA-SMI\s+\S+|^[ \t]*\|\s+\d+\s+.*\|\s*[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:", re.M)


def normalise(text: Union[str, bytes]) -> str:
    """Unix newlines, no BOM, no terminal colour codes (`topo -m` underlines its header).
    Bytes are decoded as UTF-8 with replacement characters (Windows consoles vary)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return _ANSI.sub("", text)


def check_readable(text: str) -> None:
    """Refuse empty and binary input with a one-line reason."""
    if not text.strip():
        raise SmiParseError("empty input")
    sample = text[:8192]
    controls = sum(1 for c in sample if (ord(c) < 32 and c not in "\t\n\x1b") or c == "\ufffd")
    if "\x00" in text or controls > len(sample) // 10:
        raise SmiParseError("no nvidia-smi output recognised (binary data)")


def sniff(text: str) -> Optional[str]:
    """The format of one output, or "error" when it is only nvidia-smi's failure message."""
    if "<nvidia_smi_log" in text or text.lstrip().startswith("<?xml"):
        return "xml"
    if _QUERY.search(text):
        return "query"
    if _TABLE.search(text):
        return "table"
    lines = text.splitlines()
    if any(GPU_LINE.match(line) for line in lines):
        return "list"
    cells = [[c.strip() for c in line.split(",")] for line in content_lines(text)[:2]]
    # A header followed by another header-like line is a list of field names, not CSV.
    if cells and is_header(cells[0]) and not (len(cells) > 1 and is_header(cells[1])):
        return "csv"
    if cells and guess_fields(cells) is not None:
        return "csv"
    return "error" if find_errors(lines) else None


def _parse_one(text: str, kind: str) -> SmiReport:
    if kind == "error":
        lines = text.splitlines()
        return SmiReport(format="error", driver_version=None, cuda_version=None,
                         attached_gpus=None, gpus=(), processes=(),
                         warnings=find_warnings(lines), errors=find_errors(lines))
    return PARSERS[kind](text)


def _parse_bundle(text: str) -> Optional[SmiReport]:
    """Parse each `#`-headed section; a bundle needs two sections that are nvidia-smi output."""
    sections = bundle.split_sections(text)
    if len(sections) < 2:
        return None
    reports, version_text = [], ""
    for header, body in sections:
        kind = sniff(body)
        if kind is None:
            version_text += body if "version" in header.lower() or "--version" in body else ""
            continue
        try:
            reports.append(_parse_one(body, kind))
        except SmiParseError:
            continue
    if len(reports) < 2:
        return reports[0] if reports else None
    return bundle.merge(reports, version_text)


def parse(text: str, expect: Optional[str] = None) -> SmiReport:
    """Parse any nvidia-smi output, detecting its format. Failure messages ("No devices
    were found", "Failed to initialize NVML: ...") give a report with `errors` and no GPUs;
    input that is not nvidia-smi output at all raises SmiParseError. With ``expect`` (a key of
    PARSERS: what the command that printed it was asked for), any other format is refused:
    `nvidia-smi -q -x` prints XML or a failure message, never a CSV line."""
    text = normalise(text)
    check_readable(text)
    report = _parse_bundle(text) if expect is None else None
    if report is not None:
        return _substantial(report)
    kind = sniff(text)
    if kind is None:
        raise SmiParseError("no nvidia-smi output recognised (not XML, table, -q, -L or CSV)")
    if expect is not None and kind not in (expect, "error"):
        raise SmiParseError(f"expected nvidia-smi's {expect} output, found something that looks like {kind}")
    return _substantial(_parse_one(text, kind))


def _substantial(report: SmiReport) -> SmiReport:
    """nvidia-smi always names something: a GPU by bus id, UUID or name (a CSV may query only
    numbers), a driver version, a GPU count, a process, or one of its failure messages. A parse
    that found none of these read something that merely resembles nvidia-smi's output."""
    if report.format != "csv" and any(not (g.name or g.uuid or g.pci_bus_id) for g in report.gpus):
        raise SmiParseError("a GPU without bus id, UUID or name: not nvidia-smi's output")
    if not (report.gpus or report.processes or report.errors or report.driver_version
            or report.attached_gpus is not None):
        raise SmiParseError("nothing nvidia-smi prints was found (no GPU, driver version or failure message)")
    return report


def _unquote(line: str) -> str:
    """A pasted line without its indentation and markdown quote markers (`> `)."""
    return re.sub(r"^[\s>]*", "", line)


def _table_block(lines: List[str]) -> Optional[List[str]]:
    start = next((i for i, l in enumerate(lines) if re.match(r"\|\s*NVIDIA-SMI\s", l)), None)
    if start is None:
        return None
    start -= 1 if start > 0 and lines[start - 1].startswith("+") else 0
    end = start
    while end < len(lines) and (not lines[end] or lines[end][0] in "+|"):
        end += 1
    tail = end
    while tail < len(lines) and lines[tail].startswith("WARNING:"):
        tail += 1
    head = start
    while head > 0 and lines[head - 1].startswith("WARNING:"):
        head -= 1
    return lines[head:tail]


def _list_block(lines: List[str]) -> Optional[List[str]]:
    start = next((i for i, l in enumerate(lines) if GPU_LINE.match(l)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and (GPU_LINE.match(lines[end]) or MIG_LINE.match("  " + lines[end])):
        end += 1
    return [l if GPU_LINE.match(l) else "  " + l for l in lines[start:end]]


def extract(text: str) -> Optional[SmiReport]:
    """Find an nvidia-smi table (or else a `-L` listing) inside arbitrary text - a bug
    report with a traceback and a pasted, maybe indented or `> `-quoted table - and
    parse it. None when the text holds neither."""
    lines = [_unquote(l) for l in normalise(text).splitlines()]
    block = _table_block(lines)
    if block is not None:
        try:
            return parse_table("\n".join(block) + "\n")
        except SmiParseError:
            pass
    block = _list_block(lines)
    return parse_list("\n".join(block) + "\n") if block else None
