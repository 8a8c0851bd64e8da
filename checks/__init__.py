"""gpudoctor's built-in checks (installed as ``gpudoctor_checks``).

They are registered through the same entry-point group as third-party checks
(``gpudoctor.checks.v1``, entry ``builtin = gpudoctor_checks:CHECKS``). The modules
are listed explicitly, in report order, so that a typo cannot silently drop one.
"""

from __future__ import annotations

import importlib

MODULES = (
    "gpudoctor_checks.driver",
    "gpudoctor_checks.inventory",
    "gpudoctor_checks.probes",
)


def _collect():
    out = []
    for name in MODULES:
        out.extend(importlib.import_module(name).CHECKS)
    return tuple(out)


CHECKS = _collect()
