"""Every live command ends within its --timeout and leaves no process behind (issue 15).

The machine is hostile: `nvidia-smi` floods its output forever while a grandchild it
double-forked (in a new session) holds the pipe, `nvcc` never answers, and
$CUDA_HOME/version.json is a FIFO that would block any plain open().
"""

from __future__ import annotations

import os
import stat
import sys
import textwrap
import time

import pytest

from gpudoctor import proctree
from tests.conftest import run_gpudoctor

TIMEOUT = 2  # the stub floods the pipe, using a core, for all of it: kept short
SLACK = 8  # python start-up, judging and writing on a loaded 2-core machine

# The flood starts only once the grandchild has written its pid: gpudoctor stops reading a flood (and kills the
# command) within milliseconds, which could otherwise come before the grandchild exists and leave this test
# nothing to check. -S: no site import, so that the stub forks early on a loaded machine too.
SMI = textwrap.dedent("""\
    #!{python} -S
    import os, sys, time
    ready, told = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open({pids!r}, "a") as fh:
                fh.write("%d\\n" % os.getpid())
            os.write(told, b"x")
            time.sleep(120)
        os._exit(0)
    os.close(told)
    os.read(ready, 1)    # the grandchild has written its pid (or is gone: then b"")
    out = os.fdopen(1, "wb")
    while True:
        out.write(b"\\0" * 65536)
""")


@pytest.fixture
def hostile(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pids = tmp_path / "pids"
    for name, text in (("nvidia-smi", SMI.format(python=sys.executable, pids=str(pids))),
                       ("nvcc", "#!/bin/sh\nexec sleep 120\n"),
                       ("python-without-frameworks", f"#!/bin/sh\nexec {sys.executable} -S -I \"$@\"\n")):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755 | stat.S_IEXEC)
    home = tmp_path / "cuda"
    home.mkdir()
    os.mkfifo(home / "version.json")
    env = {"PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}", "CUDA_HOME": str(home)}
    return env, pids, tmp_path


@pytest.mark.parametrize("args", [
    ("check", "--no-frameworks", "--json"),
    ("snapshot", "--no-frameworks", "--out", "{tmp}/snap"),
    ("bundle", "--no-frameworks", "-o", "{tmp}/b.tar.gz"),
    ("devices", "--json"),
    # --here probes like check; its frameworks are spared as the others' are (--no-frameworks): an
    # interpreter that has none (the bound on a hung framework probe: test_robustness).
    ("explain", "--here", "--python", "{tmp}/bin/python-without-frameworks", "--json", "CUDA error: out of memory"),
], ids=lambda a: a[0])
def test_a_hostile_machine_costs_at_most_the_timeout(hostile, args):
    env, pids, tmp = hostile
    argv = [a.format(tmp=tmp) for a in args] + ["--timeout", str(TIMEOUT)]
    start = time.monotonic()
    proc = run_gpudoctor(*argv, env=env, timeout=TIMEOUT + SLACK + 30)
    elapsed = time.monotonic() - start
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert elapsed < TIMEOUT + SLACK, f"{elapsed:.1f} s for {args[0]} (bound {TIMEOUT + SLACK} s)"
    started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    assert started, "the nvidia-smi stub ran and left a grandchild to kill"
    assert proctree.alive(started) == []


@pytest.mark.parametrize("flag", ["--read", "--config"])
def test_memory_refuses_a_fifo_and_a_device_with_one_line(tmp_path, flag):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)  # a plain open() blocks here until a writer comes: forever
    for path, why in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file")):
        proc = run_gpudoctor("memory", flag, str(path), timeout=60)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert proc.stderr.startswith("gpudoctor: ") and why in proc.stderr and "Traceback" not in proc.stderr


def test_memory_read_caps_stdin_and_a_deep_config_is_one_line(tmp_path):
    from gpudoctor.commands import memory as memory_cmd
    from tests.conftest import invoke

    over = "x" * (memory_cmd.MAX_READ_BYTES + 1)
    ran = invoke("memory", "--read", "-", input=over)
    assert ran.returncode == 2 and f"over {memory_cmd.MAX_READ_BYTES} bytes on stdin" in ran.stderr
    deep = tmp_path / "config.json"
    deep.write_text('{"model_type": ' + "[" * 100000 + "]" * 100000 + "}")
    ran = invoke("memory", "--config", str(deep))
    assert ran.returncode == 2 and "nested too deeply" in ran.stderr
