"""A broken install, hostile settings or an unwritable stdout never look like a verdict.

Each attack from the hostile-input campaign (issue 15, "Cluster safety first") is run here
against a node that is healthy (a replayed recording), so any exit 1 would be a wrong drain:
`hook` must answer 2 ("unknown") with one `gpudoctor: ` line, the other commands 2 (input or
output) or 3 (gpudoctor broken), never a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.cli import run
from tests import hook_snapshots as hs

ROOT = Path(__file__).resolve().parent.parent
HEALTHY = ROOT / "fixtures" / "scenarios" / "core-healthy-workstation" / "snapshot"
BROKEN = ROOT / "fixtures" / "scenarios" / "core-driver-not-loaded" / "snapshot"
# What pip writes as the `gpudoctor` console script (entry point gpudoctor_entry:main).
CONSOLE_SCRIPT = "import sys\nfrom gpudoctor_entry import main\nsys.exit(main())\n"


def _launch(tmp_path, args, pythonpath=None, module=False):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUDOCTOR_DEBUG")}
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    script = tmp_path / "gpudoctor-script"
    script.write_text(CONSOLE_SCRIPT)
    argv = [sys.executable, "-m", "gpudoctor"] if module else [sys.executable, str(script)]
    return subprocess.run(argv + list(args), capture_output=True, text=True, env=env, timeout=60,
                          cwd=str(tmp_path))


BREAKAGES = {
    "click raises": {"click.py": 'raise RuntimeError("x")\n'},
    "click empty": {"click.py": ""},
    "click exits 1": {"click.py": "import sys\nsys.exit(1)\n"},
    "click exits with a gpudoctor line": {"click.py": 'import sys\nsys.exit("gpudoctor: fake reason")\n'},
    "packaging raises": {"packaging/__init__.py": 'raise ImportError("broken packaging")\n'},
    "stray gpudoctor package": {"gpudoctor/__init__.py": ""},
    "stray gpudoctor package raises": {"gpudoctor/__init__.py": 'raise RuntimeError("stray")\n'},
}


def _plant(tmp_path, files):
    where = tmp_path / "pythonpath"
    for name, text in files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text(text)
    return where


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_a_broken_install_makes_the_hook_unknown_never_a_problem(tmp_path, breakage):
    pythonpath = _plant(tmp_path, BREAKAGES[breakage])
    proc = _launch(tmp_path, ["hook", "--snapshot", str(HEALTHY), "--gpus", "1", "--min-driver", "525"], pythonpath)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("gpudoctor: internal error, not judging this node: ")
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_a_broken_install_is_exit_3_with_one_line_for_other_commands(tmp_path, breakage):
    pythonpath = _plant(tmp_path, BREAKAGES[breakage])
    proc = _launch(tmp_path, ["check", "--snapshot", str(HEALTHY)], pythonpath)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("gpudoctor: internal error: ") and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("breakage", ["click raises", "click empty", "click exits 1"])
def test_python_dash_m_is_guarded_the_same_way(tmp_path, breakage):
    proc = _launch(tmp_path, ["hook", "--snapshot", str(HEALTHY)], _plant(tmp_path, BREAKAGES[breakage]),
                   module=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gpudoctor: internal error, not judging this node: ")
    assert proc.stderr.count("\n") == 1


def test_a_raising_sitecustomize_leaves_the_verdict_alone(tmp_path):
    # Python reports the error itself and goes on; the hook then judges the node as usual.
    pythonpath = _plant(tmp_path, {"sitecustomize.py": 'raise RuntimeError("site")\n'})
    healthy = _launch(tmp_path, ["hook", "--snapshot", str(HEALTHY), "--gpus", "1"], pythonpath)
    broken = _launch(tmp_path, ["hook", "--snapshot", str(BROKEN), "--gpus", "1"], pythonpath)
    assert healthy.returncode == 0
    assert broken.returncode == 1
    assert broken.stderr.splitlines()[-1] == "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded"


def test_the_healthy_and_broken_recordings_still_get_their_verdicts(tmp_path):
    assert _launch(tmp_path, ["hook", "--snapshot", str(HEALTHY), "--gpus", "1"]).returncode == 0
    proc = _launch(tmp_path, ["hook", "--snapshot", str(BROKEN)])
    assert (proc.returncode, proc.stderr) == (1, "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded\n")


# --- settings that used to crash (exit 3) ---------------------------------------------------------

def _hook(capsys, *args):
    code = run(["hook", "--snapshot", str(HEALTHY), *args])
    return code, capsys.readouterr().err


def _config(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


NINES = "9" * 400


@pytest.mark.parametrize("make, message", [
    (lambda p: ["--min-free-mem", NINES], "gpudoctor: not a memory size: '99999"),
    (lambda p: ["--config", _config(p, "h.toml", f'[hook]\nmin_free_mem = "{NINES}"\n')],
     "gpudoctor: not a memory size: '99999"),
    (lambda p: ["--min-free-mem", "2000000TiB"], "gpudoctor: memory size '2000000TiB' is larger than any GPU"),
    (lambda p: ["--config", _config(p, "h.json", '{"timeout": %s}' % NINES)],
     "gpudoctor: timeout: expected seconds from 0.5 to 600, got 99999"),
    (lambda p: ["--min-driver", "9" * 5000], "gpudoctor: not a driver version: '99999"),
    (lambda p: ["--cuda", "1." + "9" * 5000], "gpudoctor: not a CUDA version: '1.9999"),
    (lambda p: ["--config", _config(p, "h.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n")],
     "nested too deeply to be a settings file"),
    (lambda p: ["--config", _config(p, "h.json", "[" * 100000 + "]" * 100000)],
     "nested too deeply to be a settings file"),
    (lambda p: ["--config", _config(p, "h.json", '{"allow_users": ' + "[" * 900 + "]" * 900 + "}")],
     "gpudoctor: allow_users: expected a list of names, got a list"),
    (lambda p: ["--config", _config(p, "h.toml", '[hook]\nprometheus = "/tmp/a\\u0000b"\n')],
     "gpudoctor: prometheus: expected a file name, got '/tmp/a\\x00b'"),
    (lambda p: ["--config", _config(p, "h.json", '{"python": "\\ud800"}')],
     "cannot be a file name on this system"),
    (lambda p: ["--config", _config(p, "h.toml", "[hook]\n")], "holds no settings, so no requirement would be checked"),
    (lambda p: ["--config", _config(p, "h.toml", "")], "holds no settings"),
    (lambda p: ["--config", _config(p, "h.ini", "[other]\ngpus = 8\n")],
     "no [hook] section, so no requirement would be checked"),
    (lambda p: ["--config", _config(p, "h.toml", "[hook]\npersistence = [1]\n")],
     "gpudoctor: persistence: expected true or false, got a list"),
    (lambda p: ["--config", _config(p, "h.toml", "[hook]\ngpus = 8.5\n")],
     "gpudoctor: gpus: expected a whole number from 0 to 4096, got 8.5"),
    (lambda p: ["--timeout", "nan"], "gpudoctor: timeout: expected seconds from 0.5 to 600, got nan"),
])
def test_hostile_settings_are_one_line_and_unknown(tmp_path, capsys, make, message):
    code, err = _hook(capsys, *make(tmp_path))
    assert code == 2
    assert message in err and err.count("\n") == 1 and err.startswith("gpudoctor: ")


def test_a_config_that_cannot_be_read_is_unknown_with_its_reason(tmp_path, capsys):
    code, err = _hook(capsys, "--config", str(tmp_path / "missing.toml"))
    assert (code, err) == (2, f"gpudoctor: {tmp_path / 'missing.toml'}: cannot read config (No such file or directory)\n")


@pytest.mark.parametrize("args", [["check"], ["devices"], ["snapshot", "--out", "never"], ["bundle", "-o", "never"],
                                  ["explain", "--here", "CUDA error"]])
def test_a_timeout_of_nan_seconds_is_refused(capsys, args):
    assert run([*args, "--timeout", "nan"]) == 2
    err = capsys.readouterr().err
    assert "Invalid value for '--timeout': 'nan' is not a number of seconds." in err and err.count("\n") == 1


def test_a_5000_digit_visible_devices_value_is_read_as_strtoul_reads_it(capsys):
    code = run(["devices", "--snapshot", str(HEALTHY), "--visible", "9" * 5000])
    out = capsys.readouterr().out
    assert code == 1
    assert "GPU 18446744073709551615 does not exist" in out


def test_a_crashing_textfile_writer_leaves_the_verdict(tmp_path, capsys, monkeypatch):
    import tempfile

    def boom(*a, **k):
        raise RuntimeError("mkstemp broke")

    monkeypatch.setattr(tempfile, "mkstemp", boom)
    prom = tmp_path / "g.prom"
    code = run(["hook", "--snapshot", str(BROKEN), "--prometheus", str(prom)])
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    assert err == [f"gpudoctor: cannot write {prom} (RuntimeError: mkstemp broke)",
                   "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded"]


# --- an unwritable stdout -----------------------------------------------------------------------

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")


def _to_dev_full(args):
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-m", "gpudoctor", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120, cwd=str(ROOT))


@needs_dev_full
@pytest.mark.parametrize("args, code, last", [
    (["hook", "--snapshot", str(HEALTHY), "--json"], 2, "gpudoctor: cannot write the output (No space left on device)"),
    (["hook", "--snapshot", str(HEALTHY), "--npd"], 2, "gpudoctor: cannot write the output (No space left on device)"),
    (["hook", "--snapshot", str(BROKEN), "--npd"], 1, "gpudoctor: nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded"),
    (["check", "--snapshot", str(HEALTHY), "--json"], 2, "gpudoctor: cannot write the output (No space left on device)"),
    (["parse-smi", "--json", str(ROOT / "fixtures" / "nvidia-smi" / "xml" / "rtx-4090_driver-535.86.05_cuda-12.2.xml")],
     2, "gpudoctor: cannot write the output (No space left on device)"),
])
def test_dev_full_is_one_line_and_exit_2_or_the_problem_found(args, code, last):
    proc = _to_dev_full(args)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.splitlines()[-1] == last
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


@pytest.mark.parametrize("command, code", [("hook", 1), ("check", 2)])
def test_output_still_buffered_at_exit_that_cannot_be_written_is_reported(command, code):
    # A command that wrote without flushing: the entry point flushes while it can still say so.
    script = ("import io, sys, gpudoctor.cli, gpudoctor_entry\n"
              "class Full(io.StringIO):\n"
              "    def flush(self):\n        raise OSError(28, 'No space left on device')\n"
              "sys.stdout = Full()\n"
              "gpudoctor.cli.run = lambda argv: (sys.stdout.write('verdict'), 1)[1]\n"
              f"gpudoctor_entry.main([{command!r}])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert proc.returncode == code
    assert proc.stderr == "gpudoctor: cannot write the output (No space left on device)\n"


# --- the entry point's own reading of argv ----------------------------------------------------------

@pytest.mark.parametrize("argv, name", [
    (["hook", "--gpus", "1"], "hook"), (["--version"], None), (["-h", "hook"], "hook"), ([], None),
    (["check", "--only", "hook"], "check"),
])
def test_the_entry_point_finds_the_subcommand(argv, name):
    from gpudoctor_entry import command_name

    assert command_name(argv) == name


def test_an_unexpected_exit_inside_a_command_is_not_a_verdict(monkeypatch, capsys):
    # sys.exit(1) deep inside (a dependency, a bug) must not reach Slurm as exit 1.
    import gpudoctor.engine as engine

    def bye(*a, **k):
        raise SystemExit(1)

    monkeypatch.setattr(engine, "run_checks", bye)
    import gpudoctor_entry

    with pytest.raises(SystemExit) as exc:
        gpudoctor_entry.main(["hook", "--snapshot", str(HEALTHY)])
    assert exc.value.code == 2
    assert capsys.readouterr().err == ("gpudoctor: internal error, not judging this node: exited with 1 before "
                                       "it finished\n")


def test_dev_zero_as_config_is_one_line(capsys):
    code, err = _hook(capsys, "--config", "/dev/zero")
    assert (code, err) == (2, "gpudoctor: /dev/zero: larger than 1 MiB, not a config file\n")
