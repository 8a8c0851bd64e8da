"""Conventions users and tools expect: node-problem-detector reads stdout, shells complete commands."""

from __future__ import annotations

import pytest

from tests.conftest import invoke
from tests.scenarios import SCENARIOS

SERVER = SCENARIOS / "core-8gpu-server"


@pytest.mark.parametrize("args,stdout", [
    (["--gpus", "x"], "gpudoctor: Invalid value for --gpus: x is not a valid integer.\n"),
    (["--snapshot", ""], "gpudoctor: --snapshot needs a snapshot folder or bundle, got an empty value\n"),
    (["--snapshot", SERVER, "--json"], "gpudoctor: --npd prints the verdict alone on stdout; leave out --json and -v\n"),
])
def test_npd_usage_errors_give_a_reason_on_stdout(args, stdout):
    """NPD shows the plugin's stdout as the condition message; stderr is lost."""
    proc = invoke("hook", "--npd", *args)
    assert proc.returncode == 2  # NPD: unknown
    assert proc.stdout == stdout
    assert proc.stderr.startswith("gpudoctor: ") and proc.stderr.count("\n") == 1


def test_npd_unknown_option_is_named_on_stdout_within_80_bytes():
    proc = invoke("hook", "--no-such-flag-at-all", "--npd")
    assert proc.returncode == 2
    line = proc.stdout.rstrip("\n")
    assert line.startswith("gpudoctor: No such option") and "--no-such-flag-at-all" in line
    assert len(line.encode()) <= 80 and proc.stdout.count("\n") == 1


def _cut_copy_of_stderr(proc):
    """The stdout line is stderr's line, cut to NPD's 80 bytes (ending "...") when longer."""
    line, err = proc.stdout.rstrip("\n"), proc.stderr.rstrip("\n")
    assert proc.stdout.count("\n") == 1 and len(line.encode()) <= 80
    assert line == err or (line.endswith("...") and err.startswith(line[:-3])), (line, err)
    return line


def test_npd_config_and_snapshot_errors_give_a_reason_on_stdout(tmp_path):
    cfg = tmp_path / "h.toml"
    cfg.write_text("gpus = \n")
    proc = invoke("hook", "--npd", "--snapshot", SERVER, "--config", cfg)
    assert proc.returncode == 2 and proc.stderr.startswith(f"gpudoctor: {cfg}: ")
    assert _cut_copy_of_stderr(proc).startswith("gpudoctor: /")
    missing = invoke("hook", "--npd", "--snapshot", tmp_path / "none")
    assert missing.returncode == 2
    assert missing.stderr == f"gpudoctor: {tmp_path / 'none'}: not a snapshot folder (no such directory)\n"
    _cut_copy_of_stderr(missing)


def test_without_npd_stdout_stays_empty_on_usage_errors():
    proc = invoke("hook", "--gpus", "x")
    assert proc.returncode == 2 and proc.stdout == ""


def test_bash_completion_script_is_produced():
    proc = invoke(env={"_GPUDOCTOR_COMPLETE": "bash_source"})
    assert proc.returncode == 0
    assert "_gpudoctor_completion() {" in proc.stdout
    assert "complete -o nosort -F _gpudoctor_completion gpudoctor" in proc.stdout


@pytest.mark.parametrize("words,cword,expected", [
    ("gpudoctor ch", "1", "plain,check"),
    ("gpudoctor hook --np", "2", "plain,--npd"),
])
def test_completion_answers_commands_and_options(words, cword, expected):
    proc = invoke(env={"_GPUDOCTOR_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": cword})
    assert proc.returncode == 0 and proc.stdout.splitlines() == [expected]


@pytest.mark.parametrize("shell,first", [("zsh_source", "#compdef gpudoctor"),
                                         ("fish_source", "function _gpudoctor_completion")])
def test_zsh_and_fish_completion_scripts(shell, first):
    proc = invoke(env={"_GPUDOCTOR_COMPLETE": shell})
    assert proc.returncode == 0 and proc.stdout.lstrip().startswith(first)
