"""Which checks the hook runs: the same checks as ``gpudoctor check``, a selection of them.

Always the driver (DRV001); memory errors waiting for a reset (DRV003) unless ignored; the
framework build checks when a requirement reads framework facts (``--cuda``); and every check,
built-in or plugin, whose declared ``params`` were asked for.
"""

from __future__ import annotations

from typing import List, Sequence

from gpudoctor.engine import Check
from gpudoctor.requirements import Requirements

ALWAYS = ("DRV001",)
MEMORY_ERRORS = ("DRV003",)
FRAMEWORKS = ("TRC001", "TRC002", "TF001", "TF003")
BOARD_FAILURES = ("DRV006",)  # a GPU that needs replacing: no setting asks for that, it always counts


def selected_ids(checks: Sequence[Check], req: Requirements) -> List[str]:
    ids = set(ALWAYS)
    if req.pending_retirement:
        ids.update(MEMORY_ERRORS)
    if req.needs_frameworks():
        ids.update(FRAMEWORKS)
    ids.update(BOARD_FAILURES)
    ids.update(c.id for c in checks if c.params and any(req.asked(p) for p in c.params))
    return [c.id for c in checks if c.id in ids]


def select(checks: Sequence[Check], req: Requirements) -> List[Check]:
    wanted = set(selected_ids(checks, req))
    return [c for c in checks if c.id in wanted]
