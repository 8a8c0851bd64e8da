"""What a run asks of a node: the thresholds of gpudoctor's parameterised checks.

The hook's flags and config file fill a :class:`Requirements`; so does ``check --config``
with the same file. A check that declares ``params=("max_temp",)`` runs only when that
requirement was asked for, and reads its value from ``facts.requirements``. There is no
second rule engine: the hook is the check engine with a selection and these values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Optional, Tuple


@dataclass(frozen=True)
class Requirements:
    """None, False or () means "not asked for"."""

    gpus: Optional[int] = None               # at least this many GPUs visible
    min_driver: Optional[str] = None         # "535.104.05"
    min_free_mem_mib: Optional[int] = None   # on every GPU
    no_foreign_processes: bool = False       # no compute process on any GPU ...
    allow_processes: Tuple[str, ...] = ()    # ... except these names (basename or full path)
    allow_users: Tuple[str, ...] = ()        # ... or processes of these users
    cuda: Optional[str] = None               # the CUDA version jobs are built with
    persistence: bool = False                # persistence mode on for every GPU
    pending_retirement: bool = True          # hook: judge memory errors waiting for a GPU reset
    max_temp: Optional[int] = None           # degrees C, on every GPU
    job_gpus: Optional[Tuple[str, ...]] = None  # the job's own GPUs (indices/UUIDs), when known
    # Xids (kernel log since boot) whose NVIDIA resolution bucket drains the node; () = do not read the log.
    drain_xid_actions: Tuple[str, ...] = ("RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT")
    fabric_manager: bool = True              # hook: on NVSwitch systems the fabric manager runs, at the driver's version
    nvlink: bool = False                     # hook: every NVLink up, no NVLink error counter growing
    pcie_width: bool = False                 # every GPU's PCIe link at its full width
    no_slowdown: bool = False                # no GPU held down by a thermal or power slowdown
    dcgm: Optional[int] = None               # run `dcgmi diag -r LEVEL` (1-4) and judge its results
    smoke: bool = False                      # run the active smoke test (compute, copies, NCCL)

    explicit: Tuple[str, ...] = ()            # the fields an administrator set (flags, config), not defaults

    def strict(self, names) -> bool:
        """Was one of these requirements set by the administrator (not just on by default)? A check that
        cannot tell is then an unknown verdict; a default-on one that cannot tell is only not judged."""
        defaults = Requirements()
        return any(n in self.explicit or getattr(defaults, n) in (None, False, ()) for n in names)

    def asked(self, name: str) -> bool:
        value = getattr(self, name)
        return value is not None and value is not False and value != ()

    def needs_frameworks(self) -> bool:
        """Framework build facts are read only when a requirement judges them."""
        return self.cuda is not None


# The command-line flag that asks for each requirement, for skip reasons and help texts.
FLAGS = {
    "gpus": "--gpus", "min_driver": "--min-driver", "min_free_mem_mib": "--min-free-mem",
    "no_foreign_processes": "--no-foreign-processes", "allow_processes": "--allow-process",
    "allow_users": "--allow-user", "cuda": "--cuda", "persistence": "--persistence",
    "pending_retirement": "--pending-retirement", "max_temp": "--max-temp", "job_gpus": "SLURM_JOB_GPUS",
    "drain_xid_actions": "--drain-xid-actions", "fabric_manager": "--fabric-manager", "nvlink": "--nvlink",
    "pcie_width": "--pcie-width", "no_slowdown": "--no-slowdown", "dcgm": "--dcgm", "smoke": "--smoke",
}

NAMES = tuple(f.name for f in fields(Requirements) if f.name != "explicit")
