"""`nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` and `--query-compute-apps`.

The header names the queried fields, with units in brackets unless `nounits`
(`memory.total [MiB]`); cells read `[N/A]` or `[Not Supported]` when a field has no value.
With `-l N` the same GPUs repeat once per interval: the LAST complete sample of each GPU
is kept (the newest state); a row cut off by a killed writer is dropped with a warning.
"""

import csv
import re
from datetime import datetime
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import shapes
from .errors import SmiParseError, find_errors
from .model import SmiGpu, SmiProcess, SmiReport
from .values import clean, to_bool, to_float, to_int, to_mib, to_mode, to_version

_Conv = Callable[[Optional[str]], object]
GPU_FIELDS: Dict[str, Tuple[str, _Conv]] = {
    "index": ("index", to_int), "name": ("name", clean), "gpu_name": ("name", clean),
    "uuid": ("uuid", clean), "gpu_uuid": ("uuid", clean),
    "pci.bus_id": ("pci_bus_id", clean), "gpu_bus_id": ("pci_bus_id", clean),
    "memory.total": ("memory_total_mib", to_mib), "memory.used": ("memory_used_mib", to_mib),
    "mig.mode.current": ("mig_mode", clean), "serial": ("serial", clean),
    "gpu_serial": ("serial", clean), "vbios_version": ("vbios_version", clean),
    "driver_model.current": ("driver_model", clean), "persistence_mode": ("persistence_mode", to_mode),
    "compute_mode": ("compute_mode", clean), "compute_cap": ("compute_cap", clean),
    "temperature.gpu": ("temperature_c", to_int), "power.draw": ("power_draw_w", to_float),
    "power.draw.instant": ("power_draw_w", to_float), "power.draw.average": ("power_draw_w", to_float),
    "retired_pages.pending": ("retired_pages_pending", to_bool),
    "remapped_rows.pending": ("remapped_rows_pending", to_bool),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected_volatile", to_int),
}
_FIELD_NAME = re.compile(r"^[a-z][A-Za-z0-9_.]*(\s*\[[^\]]*\])?$")
_IDENTITY = ("index", "uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id", "serial", "gpu_serial")
_PROMPT = re.compile(r"^\s*([$#>]|PS [A-Z]:\\.*?>|\S+@\S+[:$#])|nvidia-smi\s")
_GAP_SECONDS = 0.5  # rows of one `-l` sample are printed within milliseconds of each other


def _field(cell: str) -> str:
    """`memory.total [MiB]` -> `memory.total`."""
    return cell.split("[")[0].strip()


def is_header(cells: Sequence[str]) -> bool:
    """All cells look like query field names nvidia-smi knows (`name`, `memory.used [MiB]`; a bare
    word must be one of its few undotted fields) and at least one is a field gpudoctor reads."""
    names = [c.strip() for c in cells]
    known = set(GPU_FIELDS) | {"pid", "driver_version", "count", "timestamp", "process_name"}
    fields = [_field(n) for n in names]
    return (all(_FIELD_NAME.match(n) for n in names) and any(f in known for f in fields)
            and all(f in shapes.BARE_FIELDS or "." in f or "_" in f for f in fields))


def content_lines(text: str) -> List[str]:
    """Non-blank lines after any leading shell prompt (`$ nvidia-smi --query-gpu=...`)."""
    lines = [l for l in text.splitlines() if l.strip()]
    start = 0  # an index, not lines[1:] in a loop: 100,000 prompt lines were quadratic
    while start < len(lines) and _PROMPT.search(lines[start]) and "," not in lines[start].split("nvidia-smi")[0]:
        start += 1
    return lines[start:]


_GUESSES = (
    ("uuid", shapes.UUID),
    ("pci.bus_id", shapes.BUS_ID),
    ("name", shapes.PRODUCT),
    # only three-part versions: a two-part one ("591.86") is indistinguishable from watts
    ("driver_version", re.compile(r"^\d{3}\.\d{2,3}\.\d{2}$")),
)


def guess_fields(rows: List[List[str]]) -> Optional[List[str]]:
    """Field names for a `noheader` CSV from what the cells look like. Only unmistakable
    columns are named (GPU-uuid, bus id, product name, driver version, a leading index);
    numbers such as memory are left unnamed, because their order cannot be told. Every cell
    must have a shape nvidia-smi prints (see `shapes`), and a GPU UUID or bus id must be among
    them: a product name alone is too weak a sign that a line is nvidia-smi's."""
    width = len(rows[0]) if rows else 0
    if width < 2 or any(len(r) != width for r in rows[:-1]):
        return None
    if not all(shapes.is_value(cell) for row in (rows[:-1] or rows) for cell in row):  # last: maybe cut
        return None
    names = ["?%d" % i for i in range(width)]  # unnamed columns are ignored
    for i, cell in enumerate(rows[0]):
        name = next((n for n, rx in _GUESSES if rx.search(cell) and n not in names), None)
        names[i] = name or names[i]
    if re.match(r"^\d{1,2}$", rows[0][0]) and "?0" == names[0]:
        names[0] = "index"
    return names if any(n in ("uuid", "pci.bus_id") for n in names) else None


def _rows(text: str) -> Tuple[List[List[str]], bool]:
    """The rows, and whether the text lacks its final newline (a writer killed mid-row)."""
    lines = content_lines(text)
    try:
        rows = [[c.strip() for c in row] for row in csv.reader(lines, skipinitialspace=True)]
    except csv.Error as exc:
        raise SmiParseError("unreadable CSV (%s)" % exc) from None
    return rows, not text.endswith("\n")


def _timestamp(value: str) -> Optional[float]:
    try:
        moment = datetime.strptime(value.strip(), "%Y/%m/%d %H:%M:%S.%f")
        return (moment - datetime(1970, 1, 1)).total_seconds()  # naive on purpose: only gaps matter
    except ValueError:
        return None


def _latest_sample(records: List[Dict[str, str]]) -> List[Dict[str, str]]:
    """One record per GPU, the last one seen. GPUs are told apart by index, uuid, bus id or
    serial; without any of those, a jump in `timestamp` separates the samples of a loop."""
    key = next((k for k in _IDENTITY if records and k in records[0]), None)
    if key:
        latest: Dict[str, Dict[str, str]] = {}
        for rec in records:  # dicts keep first-insertion order: GPUs stay in index order
            latest[rec[key]] = rec
        return list(latest.values())
    if records and "timestamp" in records[0]:
        start = 0
        for i in range(1, len(records)):
            a, b = _timestamp(records[i - 1]["timestamp"]), _timestamp(records[i]["timestamp"])
            if a is not None and b is not None and b - a >= _GAP_SECONDS:
                start = i
        return records[start:]
    return records


def _records(header: List[str], rows: List[List[str]], cut: bool) -> Tuple[List[Dict[str, str]], Tuple[str, ...]]:
    """Rows as {field: cell}; a last row that was cut off is dropped with a warning."""
    notes = ()
    if rows and (len(rows[-1]) < len(header) or (cut and len(rows) > 1 and not rows[-1][-1])):
        rows, notes = rows[:-1], ("CSV ends in the middle of a row (output cut off); that row was ignored",)
    names = [_field(h) for h in header]
    return [dict(zip(names, row)) for row in rows if len(row) >= len(header)], notes


def _fitting(records: List[Dict[str, str]], notes: Tuple[str, ...], cut: bool):
    """The records, refused when a column gpudoctor reads holds what nvidia-smi never prints there
    (`name, foo` over `bar, baz` is not a GPU called bar); a last row cut off mid-cell is dropped."""
    for i, rec in enumerate(records):
        bad = shapes.misfit(rec)
        if bad and cut and i == len(records) - 1 and not notes:
            return records[:-1], ("CSV ends in the middle of a row (output cut off); that row was ignored",)
        if bad:
            raise SmiParseError(f"CSV row {i + 1} is not nvidia-smi's ({bad})")
    return records, notes


def _gpu(rec: Dict[str, str], position: int) -> SmiGpu:
    values: Dict[str, object] = {}
    for field, cell in rec.items():
        if field in GPU_FIELDS and values.get(GPU_FIELDS[field][0]) is None:
            values[GPU_FIELDS[field][0]] = GPU_FIELDS[field][1](cell)
    if values.get("index") is None:
        values["index"] = position  # rows come in index order when `index` was not queried
    base = dict.fromkeys(("name", "uuid", "pci_bus_id", "memory_total_mib", "memory_used_mib", "mig_mode"))
    return SmiGpu(**{**base, **values})


def _process(rec: Dict[str, str]) -> SmiProcess:
    """`--query-compute-apps` row; WDDM prints `[N/A]` for used_gpu_memory."""
    return SmiProcess(
        gpu_index=None, pid=to_int(rec.get("pid")), type=None,
        name=clean(rec.get("process_name", rec.get("name"))),
        used_memory_mib=to_mib(rec.get("used_gpu_memory", rec.get("used_memory"))),
        gpu_uuid=clean(rec.get("gpu_uuid")))


def _header(rows: List[List[str]], fields: Optional[Sequence[str]]) -> Tuple[List[str], int, Tuple[str, ...]]:
    """The field names, how many rows they took (1 for a header line), and a note."""
    if is_header(rows[0]):
        return rows[0], 1, ()
    if fields:
        return [f.strip() for f in (fields.split(",") if isinstance(fields, str) else fields)], 0, ()
    guessed = guess_fields(rows)
    if guessed is None:
        raise SmiParseError("CSV has no header line and no GPU uuid or bus id column")
    return guessed, 0, ("CSV without header: only index, name, uuid, bus id and driver version were read",)


def parse_csv(text: str, fields: Optional[Sequence[str]] = None) -> SmiReport:
    """Parse `--query-gpu` / `--query-compute-apps` CSV, with or without `nounits`.
    For `noheader` output pass the queried `fields` (the `--query-gpu=` list); without
    them only unmistakable columns are read (see `guess_fields`)."""
    rows, cut = _rows(text)
    if not rows:
        raise SmiParseError("empty CSV")
    header, used, notes = _header(rows, fields)
    records, cut_note = _fitting(*_records(header, rows[used:], cut), cut)
    first = records[0] if records else {}
    if "pid" in first:
        gpus, processes = (), tuple(_process(r) for r in records)
    else:
        gpus = tuple(_gpu(r, i) for i, r in enumerate(_latest_sample(records)))
        processes = ()
    return SmiReport(
        format="csv", driver_version=to_version(first.get("driver_version")),
        cuda_version=None, attached_gpus=to_int(first.get("count")),
        gpus=gpus, processes=processes, warnings=notes + cut_note,
        errors=find_errors(text.splitlines()))
