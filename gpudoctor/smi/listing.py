"""`nvidia-smi -L` (`--list-gpus`): one line per GPU, indented lines per MIG device.

`nvidia-smi nvlink -s` and `topo` print the same `GPU N: name (UUID: ...)` lines with
their own details under them; those detail lines are skipped, the GPU lines kept.
"""

import re
from dataclasses import replace
from typing import List

from .errors import SmiParseError, find_errors, find_warnings
from .model import SmiGpu, SmiMigDevice, SmiReport
from .values import to_int

# The UUID is always the full 8-4-4-4-12 hex form (anonymised bundles keep that shape too).
# Greedy `(.*)` before a literal: a lazy `(.*?)\s+\(UUID` was quadratic in a run of blanks;
# the name's surrounding blanks are stripped in code.
GPU_LINE = re.compile(r"^\s*GPU\s+(\d{1,4}):\s(.*)\(UUID:\s*"
                      r"(GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})\)\s*$")
# R450-R460: "MIG 3g.20gb Device 0: (UUID: MIG-GPU-<gpu uuid>/7/0)";
# R470+:     "MIG 1g.10gb     Device  0: (UUID: MIG-4d0efb7d-...)".
MIG_LINE = re.compile(r"^\s+MIG\s+(\S+)\s+Device\s+(\d+):\s+\(UUID:\s*(MIG-[0-9A-Za-z/-]+)\)\s*$")


def _attach_mig(gpus: List[SmiGpu], migs: List[SmiMigDevice]) -> None:
    # MIG device lines are only printed while MIG mode is on, so they imply it.
    gpus[-1] = replace(gpus[-1], mig_devices=tuple(migs), mig_mode="Enabled")


def parse_list(text: str) -> SmiReport:
    """Parse `nvidia-smi -L`; MIG lines belong to the GPU line above them."""
    lines = text.splitlines()
    gpus: List[SmiGpu] = []
    migs: List[SmiMigDevice] = []
    for line in lines:
        gpu, mig = GPU_LINE.match(line), MIG_LINE.match(line)
        if gpu:
            if migs:
                _attach_mig(gpus, migs)
            migs = []
            gpus.append(SmiGpu(index=to_int(gpu.group(1)), name=gpu.group(2).strip(), uuid=gpu.group(3),
                               pci_bus_id=None, memory_total_mib=None, memory_used_mib=None,
                               mig_mode=None))
        elif mig and gpus:
            migs.append(SmiMigDevice(gpu_index=gpus[-1].index, gi_id=None, ci_id=None,
                                     mig_index=to_int(mig.group(2)), profile=mig.group(1),
                                     uuid=mig.group(3), memory_total_mib=None, memory_used_mib=None))
    if migs:
        _attach_mig(gpus, migs)
    errors = find_errors(lines)
    if not gpus and not errors:
        raise SmiParseError("no `nvidia-smi -L` lines found (`GPU 0: <name> (UUID: GPU-...)`)")
    return SmiReport(format="list", driver_version=None, cuda_version=None, attached_gpus=None,
                     gpus=tuple(gpus), processes=(), warnings=find_warnings(lines), errors=errors)
