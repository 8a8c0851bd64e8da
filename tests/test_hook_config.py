"""The hook's config file (TOML, JSON, INI), flag precedence and validation."""

from __future__ import annotations

import json

import pytest

from gpudoctor.cli import main
from gpudoctor.hook.config import ConfigError, Settings, merge, parse_size_mib, read_file
from gpudoctor.requirements import Requirements
from tests import hook_snapshots as hs

TOML = """
[hook]
gpus = 8
min_driver = "535.104.05"
min_free_mem = "70GiB"
no_foreign_processes = true
allow_processes = ["nvidia-cuda-mps-server", "dcgm"]
cuda = "12.4"
max_temp = 85
timeout = 5
"""


def test_toml_file_gives_settings(tmp_path):
    path = tmp_path / "hook.toml"
    path.write_text(TOML)
    s = merge(read_file(str(path)), {})
    assert s.timeout == 5.0
    assert s.requirements == Requirements(gpus=8, min_driver="535.104.05", min_free_mem_mib=71680,
                                          no_foreign_processes=True,
                                          allow_processes=("nvidia-cuda-mps-server", "dcgm"),
                                          cuda="12.4", max_temp=85,
                                          explicit=("gpus", "min_driver", "min_free_mem_mib", "no_foreign_processes",
                                                    "allow_processes", "cuda", "max_temp"))


def test_json_and_ini_give_the_same_settings(tmp_path):
    j = tmp_path / "hook.json"
    j.write_text(json.dumps({"gpus": 4, "persistence": True, "allow_users": ["root", "slurm"],
                             "min_free_mem": "40960MiB"}))
    i = tmp_path / "hook.ini"
    i.write_text("[hook]\ngpus = 4\npersistence = yes\nallow_users = root, slurm\nmin_free_mem = 40GiB\n")
    a, b = merge(read_file(str(j)), {}), merge(read_file(str(i)), {})
    assert a == b
    assert a.requirements.allow_users == ("root", "slurm") and a.requirements.min_free_mem_mib == 40960


def test_flags_override_the_file(tmp_path):
    path = tmp_path / "hook.toml"
    path.write_text(TOML)
    s = merge(read_file(str(path)), {"gpus": 4, "max_temp": None, "allow_processes": (), "timeout": 2.0})
    assert (s.requirements.gpus, s.requirements.max_temp, s.timeout) == (4, 85, 2.0)
    assert s.requirements.allow_processes == ("nvidia-cuda-mps-server", "dcgm")


@pytest.mark.parametrize("values, message", [
    ({"gpu": 8}, "unknown setting 'gpu'"),
    ({"gpus": "eight"}, "gpus: expected a whole number from 0 to 4096, got 'eight'"),
    ({"min_driver": "latest"}, "not a driver version: 'latest'"),
    ({"persistence": "maybe"}, "persistence: expected true or false, got 'maybe'"),
    ({"timeout": 0}, "timeout: expected seconds from 0.5 to 600, got 0"),
    ({"min_free_mem": "70 apples"}, "not a memory size: '70 apples'"),
])
def test_bad_values_name_the_key(values, message):
    with pytest.raises(ConfigError) as exc:
        merge(values, {})
    assert message in str(exc.value)


@pytest.mark.parametrize("text, mib", [("70GiB", 71680), ("512MiB", 512), ("80GB", 76293), ("1024", 1024),
                                       ("1.5GiB", 1536), ("1TiB", 1048576)])
def test_sizes(text, mib):
    assert parse_size_mib(text) == mib


def test_config_from_the_environment_drives_the_cli(tmp_path, capsys, monkeypatch):
    cfg = tmp_path / "hook.toml"
    cfg.write_text("[hook]\ngpus = 2\nmax_temp = 30\n")
    monkeypatch.setenv("GPUDOCTOR_HOOK_CONFIG", str(cfg))
    monkeypatch.setenv("GPUDOCTOR_SNAPSHOT", str(hs.recording(tmp_path / "s", hs.HEALTHY)))
    with pytest.raises(SystemExit) as exc:
        main(["hook"])
    assert exc.value.code == 1
    assert capsys.readouterr().err == "gpudoctor: 1 of 2 GPUs visible; GPU 0 at 40C > 30C\n"
    with pytest.raises(SystemExit) as exc:
        main(["hook", "--gpus", "1", "--max-temp", "45"])  # flags win
    assert exc.value.code == 0 and capsys.readouterr().err == ""


def test_unreadable_config_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "hook.toml"
    bad.write_text("[hook\ngpus = 2\n")
    with pytest.raises(SystemExit) as exc:
        main(["hook", "--config", str(bad)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith(f"gpudoctor: {bad}: ") and err.count("\n") == 1
    with pytest.raises(SystemExit) as exc:
        main(["hook", "--config", str(tmp_path / "missing.toml")])
    assert exc.value.code == 2
    assert capsys.readouterr().err == f"gpudoctor: {tmp_path / 'missing.toml'}: cannot read config (No such file or directory)\n"


def test_defaults():
    s = Settings()
    assert s.timeout == 10.0 and s.requirements.pending_retirement is True
    assert not s.requirements.needs_frameworks()


def test_xid_actions_fabric_manager_and_nvlink_settings(tmp_path):
    path = tmp_path / "hook.toml"
    path.write_text('[hook]\ndrain_xid_actions = ["reset_gpu", "RESTART_BM"]\nfabric_manager = false\nnvlink = true\n')
    r = merge(read_file(str(path)), {}).requirements
    assert (r.drain_xid_actions, r.fabric_manager, r.nvlink) == (("RESET_GPU", "RESTART_BM"), False, True)
    ini = tmp_path / "hook.ini"
    ini.write_text("[hook]\ndrain_xid_actions = none\n")
    assert merge(read_file(str(ini)), {}).requirements.drain_xid_actions == ()
    # The flag wins over the file; the default drains what needs a reset, a reboot or NVIDIA.
    assert merge(read_file(str(path)), {"drain_xid_actions": "RESTART_APP"}).requirements.drain_xid_actions == \
        ("RESTART_APP",)
    assert Requirements().drain_xid_actions == ("RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT")
    with pytest.raises(ConfigError) as exc:
        merge({"drain_xid_actions": "RESET_GPU,REBOOT"}, {})
    assert "drain_xid_actions: unknown Xid action 'REBOOT' (known: " in str(exc.value)
