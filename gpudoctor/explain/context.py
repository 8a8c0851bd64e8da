"""What the text says about the machine it came from: facts, context flags, nvidia-smi output.

Facts (driver version, torch version, CUDA_VISIBLE_DEVICES...) and context clues
(a container, WSL, native Windows, TensorFlow, a suspend) are read from the start of
the input and the lines around each match - not streamed through the whole log. A
recorded snapshot (``--snapshot``/``--here``) adds the machine's own facts and flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Optional, Set

from gpudoctor.explain.values import convert
from gpudoctor.smi import extract
from gpudoctor.literals import fold, needles


@dataclass
class Context:
    flags: Set[str] = field(default_factory=set)
    values: Dict[str, Any] = field(default_factory=dict)      # typed facts, first seen wins
    sources: Dict[str, str] = field(default_factory=dict)     # value/flag -> where it came from
    smi: Optional[Any] = None                                 # gpudoctor.smi.SmiReport

    def set_value(self, name: str, value: Any, source: str) -> None:
        if value is not None and self.values.get(name) is None:
            self.values[name] = value
            self.sources[name] = source

    def set_flag(self, flag: str, source: str) -> None:
        if flag not in self.flags:
            self.flags.add(flag)
            self.sources[flag] = source


def read_text(ctx: Context, text: str, catalog) -> None:
    """Facts and context flags found in ``text`` by the catalog's fact/context signatures."""
    folded = fold(text)
    for sig in catalog.of_kind("fact", "context"):
        for pattern in sig.patterns:
            m = needles(pattern).search(text, folded)
            if m is None:
                continue
            if sig.kind == "context":
                ctx.set_flag(sig.flag, f"text: {m.group(0)[:60]!r}")
            for name, raw in m.groupdict().items():
                if raw is not None:
                    ctx.set_value(name, convert(sig.values.get(name, "str"), raw), f"text ({sig.id})")
            break
    _read_smi(ctx, text)


def _read_smi(ctx: Context, text: str) -> None:
    """A pasted nvidia-smi table or -L listing: its driver, CUDA version and GPU names."""
    if ctx.smi is not None:
        return
    try:
        report = extract(text)
    except Exception:                 # a half-pasted table must not stop the diagnosis
        return
    if report is None:
        return
    ctx.smi = report
    ctx.set_value("driver_version", report.driver_version, "pasted nvidia-smi")
    ctx.set_value("smi_cuda", report.cuda_version, "pasted nvidia-smi")
    names = [g.name for g in report.gpus if g.name]
    if names:
        ctx.set_value("gpu_name", names[0], "pasted nvidia-smi")
        ctx.set_value("gpu_names", names, "pasted nvidia-smi")


def read_flags(ctx: Context, flags: Iterable[str], source: str) -> None:
    for flag in flags:
        ctx.set_flag(flag, source)


def _fact(facts, name: str) -> Any:
    """A fact's value, or None when it is missing, unknown to this version, or its provider broke."""
    try:
        return facts.get(name)
    except Exception:
        return None


def read_machine(ctx: Context, facts) -> None:
    """Flags and values from a recorded snapshot's facts (the checks' own view of the machine)."""
    container = _fact(facts, "container")
    if container and container.inside:
        ctx.set_flag("container", f"snapshot: {container.kind or 'container'}")
    wsl = _fact(facts, "wsl")
    if wsl and wsl.inside:
        ctx.set_flag("wsl", "snapshot: WSL")
    target = str(_fact(facts, "target_os") or "").lower()
    if target == "windows":
        ctx.set_flag("windows", "snapshot: Windows")
    elif target == "darwin":
        ctx.set_flag("macos", "snapshot: macOS")
    dev = _fact(facts, "dev_nodes")
    if dev is not None and not any(n.startswith("nvidia") for n in dev):
        ctx.set_flag("no_dev_nvidia", "snapshot: no /dev/nvidia* device")
    driver = _fact(facts, "driver_version")
    if driver:
        ctx.set_value("driver_version", driver.version, "snapshot")
    torch = _fact(facts, "torch_build")
    ctx.set_value("torch_version", getattr(torch, "version", None), "snapshot")
    tf = _fact(facts, "tf_info")
    ctx.set_value("tf_version", getattr(tf, "version", None), "snapshot")
    gpus = _fact(facts, "gpus") or ()
    if gpus:
        ctx.set_value("gpu_name", gpus[0].name, "snapshot")
        ctx.set_value("compute_cap", gpus[0].compute_cap, "snapshot")
    ctx.set_value("smi_cuda", _fact(facts, "cuda_driver_max"), "snapshot")
