"""The one seam through which gpudoctor runs other programs.

Every command runs with an argv list (never a shell), a timeout, and its own process
group so that a hung ``nvidia-smi`` and any children it spawned are killed together.
Failures are data: the result records what happened instead of raising.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Mapping, Optional, Sequence

# Output beyond this is cut; a doctor needs the start of a command's output, not gigabytes.
MAX_OUTPUT_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class CommandResult:
    """What one command did: argv, exit code, output, duration and how it ended.

    ``error`` is set when the command could not be run at all (``not found``,
    ``permission denied``) and ``timed_out`` when it was killed at its deadline.
    """

    argv: tuple
    returncode: Optional[int] = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    error: Optional[str] = None
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.returncode == 0

    @property
    def ran(self) -> bool:
        return self.error is None

    def describe(self) -> str:
        """One line saying how the command ended, for evidence and messages."""
        cmd = " ".join(self.argv)
        if self.error:
            return f"`{cmd}`: {self.error}"
        if self.timed_out:
            return f"`{cmd}` did not answer within {self.duration_s:.0f}s"
        return f"`{cmd}` exited {self.returncode}"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["argv"] = list(self.argv)
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> "CommandResult":
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        known["argv"] = tuple(known.get("argv", ()))
        return cls(**known)


def _decode(data: Optional[bytes]) -> tuple[str, bool]:
    if not data:
        return "", False
    cut = len(data) > MAX_OUTPUT_BYTES
    return data[:MAX_OUTPUT_BYTES].decode("utf-8", errors="replace"), cut


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def run(argv: Sequence[str], timeout: float, env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None, stdin_data: Optional[bytes] = None) -> CommandResult:
    """Run ``argv`` for at most ``timeout`` seconds; never raises for the command's sake."""
    argv = tuple(str(a) for a in argv)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(env) if env is not None else None,
            cwd=cwd, start_new_session=True)
    except FileNotFoundError:
        return CommandResult(argv, error="not found")
    except PermissionError:
        return CommandResult(argv, error="permission denied")
    except OSError as exc:
        return CommandResult(argv, error=f"could not start: {exc.strerror or exc}")
    timed_out = False
    try:
        out, err = proc.communicate(input=stdin_data, timeout=max(timeout, 0.01))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            out, err = b"", b""
    duration = time.monotonic() - start
    stdout, cut_out = _decode(out)
    stderr, cut_err = _decode(err)
    return CommandResult(argv, None if timed_out else proc.returncode, stdout, stderr,
                         round(duration, 3), timed_out, None, cut_out or cut_err)


def which(name: str, path: Optional[str] = None) -> Optional[str]:
    """``shutil.which`` with the PATH that gpudoctor recorded, not necessarily its own."""
    import shutil

    return shutil.which(name, path=path)
