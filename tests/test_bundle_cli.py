"""`gpudoctor bundle`: what is inside, the manifest, and that the bundle replays into the same report."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import pty
import re
import subprocess
import sys
from importlib import metadata

import pytest

import gpudoctor
from tests.bundle_support import ROOT, make_root, make_stubs, members, planted_env, run_cli
from tests.conftest import invoke

REQUIRED = ("snapshot/snapshot.json", "snapshot/commands/nvidia_smi_xml.out", "report.json", "report.txt",
            "report.html", "python/pip-list.json", "python/pip-config.txt", "python/conda-list.json",
            "kernel/nvidia-messages.txt", "environment.json", "manifest.json")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    scratch = tmp / "scratch"
    scratch.mkdir()
    env = planted_env(make_stubs(tmp / "bin"), scratch)
    out = tmp / "out"
    out.mkdir()
    res = run_cli("bundle", "--no-frameworks", "--root", str(make_root(tmp / "root")), "-o", str(out), "--json",
                  env=env)
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    return {"info": info, "path": info["bundle"], "members": members(info["bundle"]), "env": env, "tmp": tmp,
            "stderr": res.stderr, "scratch": scratch}


def test_default_name_json_summary_and_quiet_stderr(made):
    info = made["info"]
    host = re.sub(r"[^A-Za-z0-9._-]", "_", os.uname().nodename)
    name = os.path.basename(info["bundle"])
    assert re.fullmatch(rf"gpudoctor-bundle-{re.escape(host)}-\d{{8}}T\d{{6}}Z\.tar\.gz", name)
    assert info["size_bytes"] == os.path.getsize(info["bundle"])
    assert oct(os.stat(info["bundle"]).st_mode & 0o777) == "0o600"
    assert info["replay"] == f"gpudoctor check --snapshot {info['bundle']}"
    assert made["stderr"] == ""  # no progress line when stderr is not a terminal
    assert os.listdir(made["scratch"]) == []  # the staging folder is gone


def test_the_bundle_holds_every_part(made):
    m = made["members"]
    for name in REQUIRED:
        assert name in m, name
    assert sorted(made["info"]["members"]) == sorted(m)


def test_manifest_hashes_versions_and_commands(made):
    m = made["members"]
    manifest = json.loads(m["manifest.json"])
    assert manifest["schema"] == "gpudoctor.bundle/1" and manifest["gpudoctor_version"] == gpudoctor.__version__
    assert manifest["command_line"][:2] == ["gpudoctor", "bundle"] and "--no-frameworks" in manifest["command_line"]
    listed = {row["name"]: row for row in manifest["members"]}
    assert set(listed) == set(m) - {"manifest.json"}
    for name, row in listed.items():
        assert row["size"] == len(m[name]) and row["sha256"] == hashlib.sha256(m[name]).hexdigest(), name
    cmds = {c["key"]: c for c in manifest["commands"]}
    assert cmds["pip_list"]["argv"] == [sys.executable, "-m", "pip", "list", "--format=json"]
    assert cmds["pip_list"]["returncode"] == 0 and isinstance(cmds["pip_list"]["duration_s"], float)
    assert cmds["dmesg"]["returncode"] == 1 and cmds["journalctl"]["argv"][1:] == ["-k", "-b", "--no-pager", "-q"]
    assert cmds["nvidia_smi_xml"] == {"key": "nvidia_smi_xml", "part": "snapshot", "argv": ["nvidia-smi", "-q", "-x"],
                                      "returncode": 0, "duration_s": cmds["nvidia_smi_xml"]["duration_s"],
                                      "timed_out": False, "error": None}
    assert cmds["nvml"]["argv"][1:] == ["-m", "gpudoctor.probes.nvml_child"]


def test_pip_list_is_the_interpreters_real_one(made):
    pkgs = {p["name"].lower(): p["version"] for p in json.loads(made["members"]["python/pip-list.json"])}
    assert pkgs["click"] == metadata.version("click") and pkgs["packaging"] == metadata.version("packaging")


def test_kernel_messages_keep_nvidia_lines_and_say_why_dmesg_failed(made):
    text = made["members"]["kernel/nvidia-messages.txt"].decode()
    assert "dmesg: read kernel buffer failed: Operation not permitted" in text
    assert re.search(r"# not readable: `\S*dmesg` exited 1", text)
    assert "kernel: NVRM: Xid (PCI:0000:07:00): 79, pid=4242, name=python, GPU has fallen off the bus." in text
    assert "e1000e" not in text  # not an NVIDIA line
    assert "# 2 NVIDIA line(s) of 3 read" in text


def test_replay_gives_the_same_report(made):
    bundled = json.loads(made["members"]["report.json"])
    res = invoke("check", "--snapshot", made["path"], "--json", env=made["env"])
    assert res.returncode in (0, 1), res.stderr
    replayed = json.loads(res.stdout)
    assert replayed["findings"] == bundled["findings"] and len(bundled["findings"]) >= 3
    assert replayed["machine"] == bundled["machine"] and replayed["summary"] == bundled["summary"]
    assert replayed["source"] == made["path"] and bundled["source"] == "live"
    drv = [f for f in bundled["findings"] if f["check_id"] == "DRV001"][0]
    assert drv["status"] == "ok" and drv["title"].startswith("driver 535.54.03 answers")


def test_report_txt_is_the_verbose_text_report(made):
    res = invoke("check", "--snapshot", made["path"], "--verbose", "--no-color", env=made["env"])
    bundled = made["members"]["report.txt"].decode().splitlines()
    replayed = res.stdout.splitlines()
    assert bundled[0].endswith("(this machine)") and replayed[0].endswith(f"(replay of {made['path']})")
    assert bundled[1:] == replayed[1:]


def test_explain_uses_the_bundle(made):
    if importlib.util.find_spec("gpudoctor.commands.explain") is None:
        pytest.skip("`gpudoctor explain` is not in this tree yet")
    log = made["tmp"] / "err.log"
    log.write_text("RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    res = invoke("explain", "--snapshot", made["path"], str(log), env=made["env"])
    assert res.returncode in (0, 1) and not res.stderr.startswith("gpudoctor: "), res.stderr


def test_progress_is_shown_on_a_terminal(tmp_path):
    env = planted_env(make_stubs(tmp_path / "bin"), tmp_path)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gpudoctor", "bundle", "--no-frameworks", "--root",
                             str(make_root(tmp_path / "root")), "-o", str(tmp_path / "b.tar.gz")],
                            cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0
    assert "gpudoctor: collecting (" in shown and "waiting for" in shown
    assert "gpudoctor: redacting and writing the bundle" in shown
    assert shown.endswith("\r\x1b[2K")  # the line is cleared before the summary


def test_anonymized_default_name_uses_the_pseudonym(tmp_path):
    env = planted_env(make_stubs(tmp_path / "bin"), tmp_path)
    res = run_cli("bundle", "--no-frameworks", "--anonymize", "--root", str(make_root(tmp_path / "root")),
                  "-o", str(tmp_path), env=env)
    assert res.returncode == 0, res.stderr
    names = [n for n in os.listdir(tmp_path) if n.endswith(".tar.gz")]
    assert len(names) == 1 and names[0].startswith("gpudoctor-bundle-host1-")
    assert "anonymized" in res.stdout and f"replay   gpudoctor check --snapshot {tmp_path / names[0]}" in res.stdout


def test_help_has_examples():
    res = invoke("bundle", "--help")
    assert res.returncode == 0
    for text in ("--anonymize", "--output", "--timeout", "--json", "gpudoctor check --snapshot", "Examples:"):
        assert text in res.stdout
    assert "--root" not in res.stdout


def test_the_bundle_keeps_the_kernel_lines_the_snapshot_keeps():
    from gpudoctor.bundle.collect import kernel_lines
    from gpudoctor.probes.kernel_log import keep
    log = ("[ 1.0] Linux version 6.8.0\n"
           "[ 2.0] NVRM: Xid (PCI:0000:07:00): 79, pid=1, name=python, GPU has fallen off the bus.\n"
           "[ 2.1] nvidia-nvswitch3: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up\n"
           "[ 2.2] nvidia_uvm: module uses symbols from proprietary module nvidia, inheriting taint.\n"
           "[ 3.0] audit: op=exec path=/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so\n"  # a path, no driver line
           "[ 4.0] e1000e: eth0 NIC Link is Up\n")
    kept, read = kernel_lines(log)
    assert read == 6
    assert kept == keep(log).splitlines()[1:] and [line[:6] for line in kept] == ["[ 2.0]", "[ 2.1]", "[ 2.2]"]
