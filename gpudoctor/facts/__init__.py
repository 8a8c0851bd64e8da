"""Facts: named, parsed views of a snapshot that checks declare they need.

A fact provider turns raw snapshot data into a value, or raises :class:`Missing`
with the reason it cannot (``nvidia-smi was not found on PATH``). The engine skips
a check whose needs are missing and reports that reason. Providers are registered
with :func:`fact` in the modules listed in ``PROVIDER_MODULES`` (an explicit list,
so a typo cannot silently disable a provider).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, Optional

from gpudoctor.probes.commands import COMMANDS
from gpudoctor.requirements import Requirements
from gpudoctor.snapshot import Snapshot


class Missing(Exception):
    """The fact could not be read; ``str(exc)`` says why, for a skip reason. A check that needs
    it cannot tell (the hook answers "unknown")."""


class NotApplicable(Missing):
    """The fact does not exist on this machine, and that is an answer (torch is not installed,
    nvidia-smi is not installed): a check that needs it does not apply."""


_PROVIDERS: Dict[str, Callable[["Facts"], Any]] = {}
_DOCS: Dict[str, str] = {}

PROVIDER_MODULES = (
    "gpudoctor.facts.system",
    "gpudoctor.facts.nvidia",
    "gpudoctor.facts.nvml",
    "gpudoctor.facts.frameworks",
    "gpudoctor.facts.cuda",
    "gpudoctor.facts.cuda_paths",
    "gpudoctor.facts.host_compiler",
    "gpudoctor.facts.cudnn",
    "gpudoctor.facts.driver",
    "gpudoctor.facts.libraries",
    "gpudoctor.facts.modprobe",
    "gpudoctor.facts.isolation",
    "gpudoctor.facts.devices",
    "gpudoctor.facts.framework_builds",
    "gpudoctor.facts.kernel",
    "gpudoctor.facts.fabric",
    "gpudoctor.facts.gpu_faults",
    "gpudoctor.facts.dcgm",
    "gpudoctor.facts.smoke",
)


def fact(name: str):
    """Register the decorated function as the provider of fact ``name``."""

    def register(fn: Callable[["Facts"], Any]):
        if name in _PROVIDERS and _PROVIDERS[name] is not fn:
            raise ValueError(f"fact {name!r} is registered twice")
        _PROVIDERS[name] = fn
        _DOCS[name] = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        return fn

    return register


def command_result(f: "Facts", key: str, require_ok: bool = True):
    """The recorded run of command ``key``, or Missing saying why it cannot be used.

    ``require_ok=False`` accepts a non-zero exit (its output may still say something,
    like modinfo's "Module nvidia not found"); a command that did not run or timed out
    never counts.
    """
    res = f.snapshot.command(key)
    if res is None:
        raise Missing(f"{' '.join(COMMANDS.get(key, (key,)))} was not recorded")
    if not res.ran or res.timed_out or (require_ok and not res.ok):
        raise Missing(res.describe())
    return res


def _load_providers() -> None:
    for mod in PROVIDER_MODULES:
        importlib.import_module(mod)


def known_facts() -> Dict[str, str]:
    """Every fact name with the first line of its provider's docstring."""
    _load_providers()
    return dict(sorted(_DOCS.items()))


class Facts:
    """Lazy, cached facts over one snapshot. ``facts["smi"]`` raises Missing when absent."""

    def __init__(self, snapshot: Snapshot, requirements: Optional[Requirements] = None):
        _load_providers()
        self.snapshot = snapshot
        self.requirements = requirements or Requirements()
        self._values: Dict[str, Any] = {}
        self._errors: Dict[str, BaseException] = {}

    def __getitem__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        if name in self._errors:
            raise self._errors[name]
        provider = _PROVIDERS.get(name)
        if provider is None:
            raise KeyError(f"unknown fact {name!r}")
        try:
            value = provider(self)
        except Exception as exc:  # Missing, or a provider bug: both are remembered
            self._errors[name] = exc
            raise
        self._values[name] = value
        return value

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except Missing:
            return default

    def has(self, name: str) -> bool:
        try:
            self[name]
            return True
        except Missing:
            return False

    def failure(self, name: str) -> Optional[Missing]:
        """Why fact ``name`` is missing (the exception, so NotApplicable stays NotApplicable)."""
        try:
            self[name]
            return None
        except Missing as exc:
            return exc

    def missing_as(self, name: str, fallback: str) -> Missing:
        """A Missing to raise for a fact derived from ``name``: same reason, same kind."""
        exc = self.failure(name)
        if exc is None:
            return Missing(fallback)
        return type(exc)(str(exc) or fallback)

    def why_missing(self, name: str) -> Optional[str]:
        try:
            self[name]
            return None
        except Missing as exc:
            return str(exc) or f"{name} is not available"

    @property
    def env(self) -> Dict[str, str]:
        return self.snapshot.env
