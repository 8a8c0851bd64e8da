"""gpudoctor's built-in checks (installed as ``gpudoctor_checks``).

They are registered through the same entry-point group as third-party checks
(``gpudoctor.checks.v1``, entry ``builtin = gpudoctor_checks:CHECKS``). The modules
are listed explicitly, in report order, so that a typo cannot silently drop one.
"""

from __future__ import annotations

import importlib

MODULES = (
    "gpudoctor_checks.driver",
    "gpudoctor_checks.kernel_module",
    "gpudoctor_checks.nouveau",
    "gpudoctor_checks.gpu_health",
    "gpudoctor_checks.inventory",
    "gpudoctor_checks.cuda_toolkit",
    "gpudoctor_checks.host_compiler",
    "gpudoctor_checks.cudnn",
    "gpudoctor_checks.containers",
    "gpudoctor_checks.wsl",
    "gpudoctor_checks.probes",
    "gpudoctor_checks.torch_build",
    "gpudoctor_checks.tensorflow_build",
    "gpudoctor_checks.visible_devices",
    "gpudoctor_checks.device_lists",
    "gpudoctor_checks.tf_memory",
    "gpudoctor_checks.node",
    "gpudoctor_checks.processes",
    "gpudoctor_checks.kernel_log",
    "gpudoctor_checks.fabric",
    "gpudoctor_checks.pcie",
    "gpudoctor_checks.clocks",
    "gpudoctor_checks.persistence",
    "gpudoctor_checks.dcgm",
    "gpudoctor_checks.smoke",
    "gpudoctor_checks.smoke_links",
)


def _collect():
    out = []
    for name in MODULES:
        out.extend(importlib.import_module(name).CHECKS)
    return tuple(out)


CHECKS = _collect()
