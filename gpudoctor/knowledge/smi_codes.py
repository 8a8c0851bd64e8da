"""nvidia-smi exit codes (NVML return codes), read from ``data/nvidia_smi_exit_codes.json``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ._load import load


@dataclass(frozen=True)
class SmiExitCode:
    code: int
    nvml: str            # "NVML_ERROR_GPU_IS_LOST"
    meaning: str         # "a GPU has fallen off the bus or otherwise become inaccessible"
    status: str          # how gpudoctor judges it: "fail" or "warn"
    recipe: Optional[str]
    output_usable: bool  # nvidia-smi still printed its report (infoROM warnings)
    source: str


def smi_exit_code(code: Optional[int]) -> Optional[SmiExitCode]:
    """What exit code ``code`` of nvidia-smi means, or None for 0, None and unknown codes."""
    for row in load("nvidia_smi_exit_codes")["codes"]:
        if row["code"] == code:
            return SmiExitCode(row["code"], row["nvml"], row["meaning"], row["status"], row["recipe"],
                               row["output_usable"], row["source"])
    return None
