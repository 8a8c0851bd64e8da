"""The one seam through which gpudoctor runs other programs.

Every command runs with an argv list (never a shell), a timeout, and its own process
group; when it ends, it and everything it started (new sessions included, see
``proctree``) are killed together, and its output is read with a cap while it runs
(``capture``). Failures are data: the result records what happened instead of raising.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import asdict, dataclass
from typing import Dict, Mapping, Optional, Sequence, Union

from gpudoctor import proctree
from gpudoctor.capture import DISCARD_FACTOR, MAX_OUTPUT_BYTES, pump, wait_exit

_ACTIVE: Dict[int, str] = {}  # pid -> run id of each command running now, for kill_active()
HELD = "exited, but a process it started kept its output open; killed that process"


def _note(stop: Optional[str], limit: int) -> Optional[str]:
    if stop == "flood":
        return f"printed more than {_size((DISCARD_FACTOR + 1) * limit)}; stopped it and kept the first {_size(limit)}"
    return HELD if stop == "held" else None


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


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
    truncated: bool = False  # output over the run's cap was cut
    note: Optional[str] = None  # how the run was cut short, besides a timeout

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
        if self.note:
            return f"`{cmd}` {self.note} (exit {self.returncode})"
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


def _decode(data: bytes) -> str:
    return bytes(data).decode("utf-8", errors="replace")


def _start(argv: tuple, env: Optional[Mapping[str, str]], cwd: Optional[str], mark: str,
           with_stdin: bool) -> Union[subprocess.Popen, str]:
    child_env = dict(os.environ if env is None else env)
    child_env[proctree.MARK] = mark  # how proctree finds what the command left behind
    try:
        return subprocess.Popen(argv, stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env, cwd=cwd,
                                start_new_session=True)
    except FileNotFoundError:
        return "not found"
    except PermissionError:
        return "permission denied"
    except OSError as exc:
        return f"could not start: {exc.strerror or exc}"


def run(argv: Sequence[str], timeout: float, env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None, stdin_data: Optional[bytes] = None,
        max_bytes: int = MAX_OUTPUT_BYTES) -> CommandResult:
    """Run ``argv`` for at most ``timeout`` seconds; never raises for the command's sake.

    Whatever happens, nothing the command started outlives this call (``proctree``), and
    no more than ``max_bytes`` of each stream is ever held.
    """
    argv = tuple(str(a) for a in argv)
    start = time.monotonic()
    mark = proctree.new_mark()
    proc = _start(argv, env, cwd, mark, stdin_data is not None)
    if isinstance(proc, str):
        return CommandResult(argv, error=proc)
    deadline = start + max(timeout, 0.01)
    _ACTIVE[proc.pid] = mark
    try:
        kept, stop = pump(proc, deadline, stdin_data, max_bytes)
        if stop is None and not wait_exit(proc, deadline):
            stop = "timeout"  # closed its output but kept running
    finally:
        proctree.kill_tree(proc.pid, mark)
        _ACTIVE.pop(proc.pid, None)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    returncode = proc.wait()
    out, err = kept[proc.stdout], kept[proc.stderr]
    cut = stop == "flood" or len(out) >= max_bytes or len(err) >= max_bytes
    timed_out = stop == "timeout"
    return CommandResult(argv, None if timed_out else returncode, _decode(out), _decode(err),
                         round(time.monotonic() - start, 3), timed_out, None, cut,
                         _note(stop, max_bytes))


def kill_active() -> None:
    """Kill every command still running (and what it started), for an exit that cannot wait
    for the runs to end by themselves: a signal handler, the hook's watchdog."""
    for pid, mark in list(_ACTIVE.items()):
        proctree.kill_tree(pid, mark, rounds=1)


def which(name: str, path: Optional[str] = None) -> Optional[str]:
    """``shutil.which`` with the PATH that gpudoctor recorded, not necessarily its own."""
    import shutil

    return shutil.which(name, path=path)
