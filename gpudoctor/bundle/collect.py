"""What a bundle records beyond the snapshot: packages, pip's configuration, NVIDIA kernel messages.

Every command goes through :func:`gpudoctor.runner.run` with a timeout, all of them in
parallel with the snapshot's probes, so a hung ``conda`` or ``journalctl`` costs at most
the bundle's ``--timeout``. Failures are data: ``dmesg`` without root usually fails with
"Operation not permitted" and that is what the bundle says.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from gpudoctor import runner
from gpudoctor.kernlog import MAX_LINE_CHARS
from gpudoctor.probes.commands import resolve
# The kernel lines worth a support engineer's time are the ones the snapshot keeps: one filter for both.
from gpudoctor.probes.kernel_log import NVIDIA_LINE

MAX_KERNEL_LINES = 2000   # the most recent ones are kept
# pip and conda settings that explain "could not find a version" / proxy failures; URLs are redacted.
PACKAGE_ENV = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_TRUSTED_HOST", "PIP_CONFIG_FILE",
               "PIP_NO_INDEX", "PIP_REQUIRE_VIRTUALENV", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_INDEX",
               "CONDA_EXE", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE",
               "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
               "HF_HOME", "HF_ENDPOINT", "TORCH_HOME", "TRANSFORMERS_CACHE")


@dataclass(frozen=True)
class Extra:
    """One extra command: a stable key (also its name in the manifest) and its argv."""

    key: str
    argv: Tuple[str, ...]
    env: Tuple[Tuple[str, str], ...] = ()


def plan(python: str, environ: Mapping[str, str]) -> List[Extra]:
    """The extra commands for this machine; conda only where it is installed."""
    quiet_pip = (("PIP_DISABLE_PIP_VERSION_CHECK", "1"), ("PIP_NO_INPUT", "1"), ("PYTHONIOENCODING", "utf-8"))
    extras = [Extra("pip_list", (python, "-m", "pip", "list", "--format=json"), quiet_pip),
              Extra("pip_config", (python, "-m", "pip", "config", "list"), quiet_pip)]
    conda = environ.get("CONDA_EXE") or resolve("conda", environ.get("PATH"))
    if conda:
        argv = (conda, "list", "--json")
        prefix = environ.get("CONDA_PREFIX") or _conda_prefix(python)
        extras.append(Extra("conda_list", argv + (("-p", prefix) if prefix else ())))
    for key, argv in (("dmesg", ("dmesg",)), ("journalctl", ("journalctl", "-k", "-b", "--no-pager", "-q"))):
        exe = resolve(argv[0], environ.get("PATH"))
        extras.append(Extra(key, ((exe,) if exe else argv) + argv[1:]))
    return extras


def _conda_prefix(python: str) -> Optional[str]:
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    return prefix if os.path.isdir(os.path.join(prefix, "conda-meta")) else None


def run_extra(extra: Extra, environ: Mapping[str, str], timeout: float) -> runner.CommandResult:
    if not os.path.isabs(extra.argv[0]) and runner.which(extra.argv[0], environ.get("PATH")) is None:
        return runner.CommandResult(extra.argv, error="not found")
    env = dict(environ)
    env.setdefault("LC_ALL", "C")
    env.update(dict(extra.env))
    return runner.run(extra.argv, timeout=timeout, env=env)


@dataclass
class Collection:
    """Extra commands running in the background while the snapshot is recorded."""

    extras: List[Extra]
    futures: Dict[str, Future] = field(default_factory=dict)
    pool: Optional[ThreadPoolExecutor] = None

    @classmethod
    def start(cls, extras: Sequence[Extra], environ: Mapping[str, str], timeout: float,
              note: Callable[[str, str], None]) -> "Collection":
        c = cls(list(extras), pool=ThreadPoolExecutor(max_workers=max(1, len(extras))))
        for extra in extras:
            def job(e=extra):
                note(e.key.replace("_", " "), "start")
                try:
                    return run_extra(e, environ, timeout)
                finally:
                    note(e.key.replace("_", " "), "done")
            c.futures[extra.key] = c.pool.submit(job)
        return c

    def results(self, wait_s: float) -> Dict[str, runner.CommandResult]:
        """Each extra's result; one still running after ``wait_s`` is recorded as timed out."""
        from gpudoctor import waits

        waits.wait_all(self.futures.values(), max(0.1, wait_s))
        out = {}
        for extra in self.extras:
            fut = self.futures[extra.key]
            out[extra.key] = fut.result() if fut.done() else runner.CommandResult(
                extra.argv, timed_out=True, duration_s=round(wait_s, 3))
        self.pool.shutdown(wait=False, cancel_futures=True)
        return out


def kernel_lines(text: str) -> Tuple[List[str], int]:
    """NVIDIA lines of a kernel log (the newest MAX_KERNEL_LINES, each cut), and how many lines were read."""
    lines = text.splitlines()
    hits = [ln[:MAX_LINE_CHARS] for ln in lines if NVIDIA_LINE.search(ln)]
    return hits[-MAX_KERNEL_LINES:], len(lines)


def kernel_report(results: Mapping[str, runner.CommandResult]) -> str:
    """kernel/nvidia-messages.txt: each source's NVIDIA lines, or why it could not be read."""
    out = ["# NVIDIA kernel messages (NVRM, Xid/SXid, the nvidia modules' own lines) recorded by gpudoctor bundle"]
    for key in ("dmesg", "journalctl"):
        res = results.get(key)
        if res is None:
            continue
        out.append("")
        out.append(f"== {' '.join([os.path.basename(res.argv[0])] + list(res.argv[1:]))} ==")
        if not res.ok:
            said = next((ln.strip() for ln in (res.stderr + "\n" + res.stdout).splitlines() if ln.strip()), "")
            out.append(f"# not readable: {res.describe()}" + (f": {said}" if said else ""))
            if res.timed_out or res.error:
                continue
        lines, scanned = kernel_lines(res.stdout)
        out.append(f"# {len(lines)} NVIDIA line(s) of {scanned} read"
                   + (f" (the newest {MAX_KERNEL_LINES} kept)" if len(lines) == MAX_KERNEL_LINES else ""))
        out.extend(lines)
    return "\n".join(out) + "\n"


def package_env(environ: Mapping[str, str]) -> Dict[str, str]:
    """The package-manager settings a support engineer needs; the caller redacts them."""
    return {k: environ[k] for k in PACKAGE_ENV if k in environ}
