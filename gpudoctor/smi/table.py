"""The default `nvidia-smi` table, from driver 346 (79 columns) to 610 (89 columns).

The column layout moved over the years (GI/CI columns from 450, a third row per GPU with
`MIG M.` from 450, wider cells from 530, `KMD Version` in the 610 header), so rows are
recognised by the shape of their cells, not by their column positions.

Linear in its input: no pattern here can backtrack over a run of blanks or digits (a
process row padded with 500 blanks once took a minute); cells are split, not matched
whole, and numbers longer than `values.MAX_DIGITS` read as no value.
"""

import re
from dataclasses import replace
from typing import List, Optional, Tuple

from .errors import SmiParseError, find_errors, find_warnings
from .model import SmiGpu, SmiMigDevice, SmiProcess, SmiReport
from .values import clean, to_float, to_int, to_mib, to_mode, to_version

_BANNER = re.compile(r"\|\s*NVIDIA-SMI\s+(\S+)")
_HEADER_VALUE = r"%s:\s*(\S+)"
_BUS_ID = re.compile(r"^\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])(?:\s+(\S+))?")
_GPU_MODES = ("On", "Off", "WDDM", "TCC", "MCDM", "N/A", "ERR!")
# (?<!\d) starts a number only at its first digit: without it, a run of n digits costs n^2.
_MEMORY = re.compile(r"(?<!\d)(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_TEMP = re.compile(r"(?<!\d)(\d+)C\b")
_POWER = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)W\s*/")
_MIG_CELL = re.compile(r"^\s*(\d+)\s+(\d+|N/A)\s+(\d+|N/A)\s+(\d+|N/A)\s*$")
# The row up to the process name; the name and memory at its end are split off in code.
_PROCESS = re.compile(
    r"^\|\s*(\d+|N/A)\s+(?:(\d+|N/A)\s+(\d+|N/A)\s+)?(\d+)\s+([CGM](?:\+[CGM])*)\s+(.*)$")
_DRIVER_MODELS = ("WDDM", "TCC", "MCDM")


def _cells(line: str) -> List[str]:
    return line.strip().strip("|").split("|")


def _is_border(line: str) -> bool:
    text = line.strip()
    return text.startswith("+") or text.startswith("|=") or text.startswith("|-")


def _blocks(lines: List[str]) -> List[List[str]]:
    """Runs of `|` lines between border lines: one GPU, one MIG device, or one header."""
    blocks, current = [], []
    for line in lines:
        if line.strip().startswith("|") and not _is_border(line):
            current.append(line)
            continue
        if current:
            blocks.append(current)
        current = []
    return blocks + ([current] if current else [])


def _gpu_cell(cell: str) -> Optional[Tuple[int, str, str]]:
    """`  0  NVIDIA A100-SXM4-80GB    On` -> (index, name, persistence or driver model)."""
    words = cell.split(None, 1)
    if len(words) < 2 or not words[0].isdigit():
        return None
    name, _, mode = words[1].rstrip().rpartition(" ")
    index = to_int(words[0])
    if index is None or mode not in _GPU_MODES or not name.strip():
        return None
    return index, name.strip(), mode


def _gpu(block: List[str]) -> Optional[SmiGpu]:
    """Rows: `idx name persistence|bus-id disp|ECC`, `fan temp perf pwr|mem|util compute`
    and (450+) `||MIG M.`. Names are cut with `...`; a broken fan reads `ERR!`."""
    first = _cells(block[0])
    if len(first) < 2:
        return None
    head, bus = _gpu_cell(first[0]), _BUS_ID.match(first[1])
    if not head or not bus:
        return None
    second = _cells(block[1]) if len(block) > 1 else []
    third = _cells(block[2]) if len(block) > 2 else []
    index, name, mode = head
    memory = _MEMORY.search(second[1]) if len(second) > 1 else None
    temp = _TEMP.search(second[0]) if second else None
    power = _POWER.search(second[0]) if second else None
    compute = second[2].split(None, 1) if len(second) > 2 else []
    return SmiGpu(
        index=index, name=clean(name), uuid=None,
        pci_bus_id=bus.group(1),
        memory_total_mib=to_int(memory.group(2)) if memory else None,
        memory_used_mib=to_int(memory.group(1)) if memory else None,
        mig_mode=clean(third[2]) if len(third) > 2 else None,
        driver_model=mode if mode in _DRIVER_MODELS else None,
        persistence_mode=None if mode in _DRIVER_MODELS else to_mode(mode),
        compute_mode=clean(compute[1]) if len(compute) > 1 else None,
        temperature_c=to_int(temp.group(1)) if temp else None,
        power_draw_w=to_float(power.group(1)) if power else None,
        ecc_uncorrected_volatile=to_int(first[2]) if len(first) > 2 else None,
    )


def _mig_device(block: List[str]) -> Optional[SmiMigDevice]:
    """MIG devices table (470+): `GPU GI CI MIG | used / total | SM Unc ECC | CE ENC ...`."""
    first = _cells(block[0])
    head = _MIG_CELL.match(first[0]) if len(first) > 1 else None
    memory = _MEMORY.search(first[1]) if head else None
    if not head or not memory:
        return None
    gpu, gi, ci, mig = (to_int(v) for v in head.groups())
    return SmiMigDevice(gpu_index=gpu, gi_id=gi, ci_id=ci, mig_index=mig, profile=None, uuid=None,
                        memory_total_mib=to_int(memory.group(2)), memory_used_mib=to_int(memory.group(1)))


def _name_and_memory(rest: str) -> Optional[Tuple[str, Optional[str]]]:
    """`/usr/bin/python3      1234MiB |` -> ("/usr/bin/python3", "1234MiB"); the memory is
    `N/A` on Windows (WDDM) and absent on some rows; None when the row has no closing `|`."""
    rest = rest.rstrip()
    if not rest.endswith("|"):
        return None
    rest = rest[:-1].rstrip()
    if rest.endswith("N/A"):
        return rest[:-3].rstrip(), "N/A"
    if rest.endswith("MiB"):
        number = rest[:-3].rstrip()
        name = number.rstrip("0123456789")
        if len(name) < len(number):
            return name.rstrip(), number[len(name):] + "MiB"
    return rest, None


def _process(line: str) -> Optional[SmiProcess]:
    """One process row; GI/CI columns exist from 450 on, Windows WDDM prints `N/A`
    memory and `C+G` types, long names are cut with a leading `...`."""
    match = _PROCESS.match(line)
    tail = _name_and_memory(match.group(6)) if match else None
    if tail is None:
        return None
    gpu, gi, ci, pid, kind = match.groups()[:5]
    return SmiProcess(gpu_index=to_int(gpu), pid=to_int(pid), type=kind, name=clean(tail[0]),
                      used_memory_mib=to_mib(tail[1]), gi_id=to_int(gi), ci_id=to_int(ci))


def _header(lines: List[str]) -> dict:
    """Driver and CUDA versions from the banner; 610+ print `KMD Version` and
    `CUDA UMD Version` instead, and CUDA reads `N/A` when libcuda is missing."""
    banner = next((l for l in lines if _BANNER.search(l)), "")
    found = {}
    for key, label in (("driver", r"Driver Version"), ("kmd", r"KMD Version"),
                       ("umd", r"CUDA UMD Version"), ("cuda", r"(?<!UMD )CUDA Version")):
        match = re.search(_HEADER_VALUE % label, banner)
        found[key] = to_version(match.group(1)) if match else None
    return found


def _first_table(lines: List[str]) -> Tuple[List[str], Tuple[str, ...]]:
    """A `watch nvidia-smi` log or repeated runs hold several tables; the first is read."""
    banners = [i for i, line in enumerate(lines) if _BANNER.search(line)]
    if len(banners) < 2:
        return lines, ()
    cut = banners[1] - (1 if lines[banners[1] - 1].lstrip().startswith("+") else 0)
    return lines[:cut], ("%d nvidia-smi tables found; only the first was read" % len(banners),)


def parse_table(text: str) -> SmiReport:
    """Parse the default `nvidia-smi` output, ignoring whatever surrounds the table
    (a `$ nvidia-smi` prompt, `WARNING: infoROM is corrupted ...` lines)."""
    lines, notes = _first_table(text.splitlines())
    gpus, migs, processes = [], [], []
    for block in _blocks(lines):
        gpu = _gpu(block)
        mig = None if gpu else _mig_device(block)
        if gpu:
            gpus.append(gpu)
        elif mig:
            migs.append(mig)
        else:
            processes.extend(p for p in map(_process, block) if p)
    header, errors = _header(lines), find_errors(lines)
    if not gpus and not any(header.values()) and not errors:
        raise SmiParseError("no nvidia-smi table found (no `| NVIDIA-SMI` banner, no GPU rows)")
    gpus = [replace(g, mig_devices=tuple(m for m in migs if m.gpu_index == g.index)) for g in gpus]
    return SmiReport(
        format="table", driver_version=header["kmd"] or header["driver"],
        cuda_version=header["umd"] or header["cuda"], attached_gpus=None,
        gpus=tuple(gpus), processes=tuple(processes),
        warnings=find_warnings(lines) + notes, errors=errors, kmd_version=header["kmd"])
