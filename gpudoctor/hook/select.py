"""Which checks the hook runs: the same checks as ``gpudoctor check``, a selection of them.

Always the driver (DRV001); memory errors waiting for a reset (DRV003) unless ignored; the
framework build checks when a requirement reads framework facts (``--cuda``); the kernel-log
Xid checks unless no Xid action drains (``--drain-xid-actions none``); the fabric manager on
NVSwitch systems unless ``--no-fabric-manager``; NVLink with ``--nvlink``; and every check,
built-in or plugin, whose declared ``params`` were asked for.
"""

from __future__ import annotations

from typing import List, Sequence

from gpudoctor.engine import Check
from gpudoctor.requirements import Requirements

ALWAYS = ("DRV001",)
MEMORY_ERRORS = ("DRV003",)
FRAMEWORKS = ("TRC001", "TRC002", "TF001", "TF003")
KERNEL_LOG = ("XID001", "XID002", "XID003", "XID004", "SXID001")  # when an Xid action drains (--drain-xid-actions)
FABRIC = ("FAB001",)                                              # --fabric-manager (default: on)
NVLINK = ("NVL001", "NVL002")                                     # --nvlink
BOARD_FAILURES = ("DRV006",)  # a GPU that needs replacing: no setting asks for that, it always counts


def selected_ids(checks: Sequence[Check], req: Requirements) -> List[str]:
    ids = set(ALWAYS)
    if req.pending_retirement:
        ids.update(MEMORY_ERRORS)
    if req.needs_frameworks():
        ids.update(FRAMEWORKS)
    if req.drain_xid_actions:
        ids.update(KERNEL_LOG)
    if req.fabric_manager:
        ids.update(FABRIC)
    if req.nvlink:
        ids.update(NVLINK)
    ids.update(BOARD_FAILURES)
    ids.update(c.id for c in checks if c.params and any(req.asked(p) for p in c.params))
    return [c.id for c in checks if c.id in ids]


def select(checks: Sequence[Check], req: Requirements) -> List[Check]:
    wanted = set(selected_ids(checks, req))
    return [c for c in checks if c.id in wanted]


# Requirements on by default, and the checks each selects: an administrator who did not set one gets
# those checks where their facts can be read, and "not judged" where they cannot (never "unknown").
DEFAULT_ON = {"drain_xid_actions": KERNEL_LOG, "fabric_manager": FABRIC}


def lenient_ids(checks: Sequence[Check], req: Requirements) -> List[str]:
    """Checks the hook runs only because a requirement is on by default, that the administrator did not
    set (``req.explicit``): when they cannot tell (an unreadable kernel log, an unrecorded fabric
    manager), the node is not judged on them rather than unknown."""
    ids = {i for name, group in DEFAULT_ON.items() if req.asked(name) and name not in req.explicit for i in group}
    return [c.id for c in select(checks, req) if c.id in ids]
