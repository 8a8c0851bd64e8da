"""Secrets never leave the machine; --anonymize replaces identities with consistent pseudonyms.

The end-to-end tests plant secrets and identities in environment variables, in a file the
snapshot records, in pip's index URL and in command outputs (stubs on PATH), then read
every member of the archive decompressed.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields

import pytest

from gpudoctor.bundle.anonymize import Anonymizer
from gpudoctor.bundle.read import load_bundle
from gpudoctor.bundle.redact import SecretRedactor, is_secret_name
from gpudoctor.bundle.sanitize import Sanitizer
from gpudoctor.facts import Facts
from gpudoctor.snapshot import Snapshot
from gpudoctor.snapshot_folder import load
from tests.bundle_support import (ALL_SECRETS, GPU_SERIAL, GPU_UUID, HOST, IDENTIFIERS, IPS, MACS,
                                  PIP_PASSWORD, ROOT, SECRETS, make_root, make_stubs, members, planted_env,
                                  raw_tar, run_cli)
from tests.conftest import invoke

UUID_SHAPE = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# --- the redaction rules, on concrete text ------------------------------------------------

@pytest.mark.parametrize("text, kind", [
    ("token hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "huggingface-token"),
    ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "github-token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github-fine-grained-token"),
    ("key AKIAIOSFODNN7EXAMPLE here", "aws-access-key-id"),
    ("ASIAIOSFODNN7EXAMPLE", "aws-access-key-id"),
    ("sk-proj-abcdefghijklmnopqrstuvwx0123", "openai-style-key"),
    ("xoxp-1234567890-abcdefghij", "slack-token"),
    ("glpat-abcdefghij0123456789", "gitlab-token"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "jwt"),
    ("got Bearer abcdefghijklmnop0123456789 back", "bearer-token"),
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----", "private-key"),
    ("https://conda.anaconda.org/t/ab-0123456789xyz/chan/", "conda-channel-token"),
])
def test_token_formats_are_redacted_wherever_they_appear(text, kind):
    r = SecretRedactor()
    out = r.text(f"before {text} after")
    assert f"<redacted:{kind}>" in out
    assert out.startswith("before ") and out.endswith(" after")
    assert r.counts[kind] == 1


def test_url_credentials_and_secret_assignments():
    r = SecretRedactor()
    assert r.text("--index-url https://bob:hunter2@pypi.corp.example/simple") == \
        "--index-url https://<redacted:url-credentials>@pypi.corp.example/simple"
    assert r.text("password=hunter22 db_password: 'x9x9x9'") == \
        "password=<redacted:secret-assignment> db_password: '<redacted:secret-assignment>'"
    # Package pins and versions are not secrets.
    pins = "tokenizers==0.15.2 nvidia-cudnn-cu12==9.1.0.70 https://pypi.org/simple"
    assert r.text(pins) == pins


def test_secret_env_values_are_redacted_as_literals_but_short_or_public_values_are_not():
    r = SecretRedactor({"DB_PASSWORD": "correct-horse", "MY_TOKEN": "1", "XDG_SESSION_TYPE": "wayland"})
    assert r.text("connect with correct-horse as user 1 on wayland") == \
        "connect with <redacted:env:DB_PASSWORD> as user 1 on wayland"


@pytest.mark.parametrize("name, secret", [
    ("HF_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("WANDB_API_KEY", True), ("DB_PASSWD", True),
    ("GITHUBTOKEN", True), ("SESSION_COOKIE", True), ("NETRC_CREDENTIALS", True), ("MY_AUTH", True),
    ("PATH", False), ("PWD", False), ("CUDA_VISIBLE_DEVICES", False), ("KEYBOARD_LAYOUT", False),
    ("SSH_AUTH_SOCK", False),
])
def test_secret_looking_names(name, secret):
    assert is_secret_name(name) is secret


def test_hide_words_become_consistent_path_safe_names():
    r = SecretRedactor(hide=["ProjectX"])
    assert r.text("/data/projectx/venv and PROJECTX-2 and projectxy") == \
        "/data/hidden1/venv and hidden1-2 and projectxy"


def test_pseudonyms_are_consistent_and_keep_their_shape():
    a = Anonymizer(hostnames=["gpu-box-7"], users=["alice"], key=b"fixed")
    a.learn(f"<uuid>{GPU_UUID}</uuid><serial>{GPU_SERIAL}</serial>")
    xml = a.text(f"<uuid>{GPU_UUID}</uuid><serial>{GPU_SERIAL}</serial>")
    env = a.text(f"CUDA_VISIBLE_DEVICES={GPU_UUID[:12]}")
    log = a.text(f"gpu-box-7 alice /home/alice/x MIG-{GPU_UUID}/1/0 {IPS[0]} {MACS[0]}")
    fake = re.search(r"<uuid>(.*)</uuid>", xml).group(1)
    assert UUID_SHAPE.match(fake) and fake != GPU_UUID
    serial = re.search(r"<serial>(.*)</serial>", xml).group(1)
    assert serial.isdigit() and len(serial) == len(GPU_SERIAL) and serial != GPU_SERIAL
    assert env == f"CUDA_VISIBLE_DEVICES={fake[:12]}"  # the shortened UUID still names the same GPU
    assert log == f"host1 user1 /home/user1/x MIG-{fake}/1/0 192.0.2.1 02:00:00:00:00:01"
    assert a.text(xml) == xml and a.text(log) == log  # pseudonyms are never replaced again
    assert a.text("inet6 fe80::1ff:fe23:4567:890a/64 and 2a02:8108:1:2::10") == "inet6 2001:db8::1/64 and 2001:db8::2"
    other = Anonymizer(key=b"another bundle")
    assert other.text(GPU_UUID) != fake[4:] and other.text(GPU_UUID[4:]) != a.text(GPU_UUID[4:])


def test_anonymizing_keeps_versions_and_code():
    a = Anonymizer()
    text = ("VBIOS 92.00.45.00.03, cudnn==9.1.0.70, version: 1.2.3.4, c10::Error, tensorflow::Status, "
            "127.0.0.1, 00000000:07:00.0, 12:34:56")
    assert a.text(text) == text


def test_generic_or_short_names_are_not_hunted_in_free_text():
    a = Anonymizer(hostnames=["ubuntu", "vm"], users=["ubuntu", "ml"], key=b"k")
    text = 'ID=ubuntu\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\non a cloud VM, in a vm; ml.train() /home/ml/x'
    assert a.text(text) == text.replace("/home/ml/", "/home/user1/")  # a home path is certain
    snap = load(str(ROOT / "fixtures" / "scenarios" / "core-healthy-workstation" / "snapshot"))
    snap.meta["hostname"] = "ubuntu"
    out = Sanitizer(SecretRedactor(), Anonymizer()).snapshot(snap)
    assert out.meta["hostname"] == "host1"  # the recorded host name field is replaced all the same
    assert out.file("/etc/os-release").content == snap.file("/etc/os-release").content


def test_the_bundled_report_is_not_rewritten_after_it_is_built():
    from gpudoctor.bundle.make import _report_members
    from gpudoctor.report import build_report

    snap = load(str(ROOT / "fixtures" / "scenarios" / "core-gpu-less" / "snapshot"))
    expected = build_report(snap).to_dict()["findings"]
    assert "cloud" in json.dumps(expected)  # the no-GPU fix talks about a cloud VM
    sanitizer = Sanitizer(SecretRedactor(hide=["cloud"]), Anonymizer(hostnames=["cloud"]))
    report = json.loads(dict(_report_members(snap, sanitizer))["report.json"])
    assert report["findings"] == expected


def test_the_snapshot_walk_keeps_every_field():
    snap = load(str(ROOT / "fixtures" / "scenarios" / "core-8gpu-server" / "snapshot"))
    if any(f.name == "links" for f in fields(Snapshot)):
        snap.links = {"/home/alice/cuda": {"target": "/home/alice/cuda-12.4", "real": "/home/alice/cuda-12.4"}}
    snap.listings["/home/alice"] = ["cuda-12.4"]
    same = Sanitizer(SecretRedactor()).snapshot(snap)
    assert same.to_json() == snap.to_json() and same.files == snap.files and same.commands == snap.commands
    anon = Sanitizer(SecretRedactor(), Anonymizer(users=["alice"])).snapshot(snap)
    assert "/home/alice" not in json.dumps(anon.to_json())
    assert anon.listings["/home/user1"] == ["cuda-12.4"]
    if hasattr(anon, "links"):
        assert anon.links == {"/home/user1/cuda": {"target": "/home/user1/cuda-12.4", "real": "/home/user1/cuda-12.4"}}


# --- end to end: planted secrets through `gpudoctor bundle` -------------------------------

def _bundle(tmp, *args):
    bindir = make_stubs(tmp / "bin")
    root = make_root(tmp / "root")
    scratch = tmp / "scratch"
    scratch.mkdir()
    path = tmp / "b.tar.gz"
    res = run_cli("bundle", "--no-frameworks", "--root", str(root), "-o", str(path), *args,
                  env=planted_env(bindir, scratch))
    assert res.returncode == 0, res.stderr
    return path


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _bundle(tmp_path_factory.mktemp("plain"))


@pytest.fixture(scope="module")
def anonymized(tmp_path_factory):
    return _bundle(tmp_path_factory.mktemp("anon"), "--anonymize")


def _leaks(path, needles):
    """Needles found in any member, decompressed, or anywhere in the tar stream (names, headers)."""
    texts = {name: data.decode("utf-8", "replace") for name, data in members(path).items()}
    texts["<tar stream>"] = raw_tar(path).decode("utf-8", "replace")
    return {(name, n) for name, t in texts.items() for n in needles if n in t}


def test_no_planted_secret_is_in_any_member(plain):
    assert _leaks(plain, ALL_SECRETS) == set()


def test_secrets_were_redacted_where_they_were_not_dropped(plain):
    m = {k: v.decode() for k, v in members(plain).items()}
    nvcc = m["snapshot/commands/nvcc_version.out"]
    assert "HF <redacted:env:HF_TOKEN>; db <redacted:env:MY_DB_PASSWORD>" in nvcc
    assert "Cuda compilation tools, release 12.4, V12.4.131" in nvcc  # the rest of the output is intact
    assert "# github <redacted:github-token> gitlab <redacted:gitlab-token>" in m["snapshot/commands/nvcc_version.err"]
    modprobe = m["snapshot/files/etc/modprobe.d/nvidia.conf"]
    assert modprobe.startswith("options nvidia NVreg_PreserveVideoMemoryAllocations=1\n")
    assert "<redacted:gitlab-token>" in modprobe and "<redacted:private-key>" in modprobe
    assert "https://<redacted:url-credentials>@pypi.corp.example/simple" in m["python/pip-config.txt"]
    assert "<redacted:conda-channel-token>" in m["python/conda-list.json"]
    assert "session <redacted:jwt>" in m["kernel/nvidia-messages.txt"]
    env = json.loads(m["environment.json"])
    assert env["package_settings"]["PIP_INDEX_URL"] == "https://<redacted:url-credentials>@pypi.corp.example/simple"
    assert set(SECRETS) <= set(env["secret_variables"])
    counts = json.loads(m["manifest.json"])["redactions"]["secrets"]
    assert counts["env:HF_TOKEN"] >= 1 and counts["private-key"] >= 1 and counts["url-credentials"] >= 1
    assert PIP_PASSWORD not in json.dumps(counts)


def test_without_anonymize_identities_are_kept(plain):
    m = {k: v.decode() for k, v in members(plain).items()}
    assert f"{HOST} kernel: NVRM: Xid" in m["kernel/nvidia-messages.txt"]
    assert GPU_UUID in m["report.json"] and GPU_SERIAL in m["snapshot/commands/nvidia_smi_xml.out"]
    assert json.loads(m["snapshot/snapshot.json"])["env"]["CUDA_HOME"] == "/home/alice/cuda-12.4"


def test_anonymize_removes_every_planted_identity_and_secret(anonymized):
    assert _leaks(anonymized, IDENTIFIERS + ALL_SECRETS) == set()


def test_anonymized_replay_maps_the_same_gpu_everywhere(anonymized):
    from gpudoctor import visible_devices

    snap = load_bundle(str(anonymized))
    gpu = Facts(snap)["gpus"][0]
    assert UUID_SHAPE.match(gpu.uuid) and gpu.uuid != GPU_UUID
    assert snap.env["CUDA_VISIBLE_DEVICES"] == gpu.uuid[:12]
    mapping = visible_devices.resolve(visible_devices.parse(snap.env["CUDA_VISIBLE_DEVICES"]), Facts(snap)["gpus"])
    assert [(v.cuda_index, v.gpu.uuid) for v in mapping.visible] == [(0, gpu.uuid)]
    assert not [p for p in mapping.problems if p.hides_all]
    m = {k: v.decode() for k, v in members(anonymized).items()}
    for name in ("snapshot/commands/nvidia_smi_L.out", "kernel/nvidia-messages.txt", "report.json", "report.html"):
        assert gpu.uuid in m[name], name
    serial = re.search(r"<serial>(\d+)</serial>", m["snapshot/commands/nvidia_smi_xml.out"]).group(1)
    assert len(serial) == len(GPU_SERIAL) and f"serial {serial} via 192.0.2." in m["kernel/nvidia-messages.txt"]


def test_anonymized_bundle_replays_into_its_report(anonymized):
    bundled = json.loads(members(anonymized)["report.json"])
    res = invoke("check", "--snapshot", str(anonymized), "--json")
    replayed = json.loads(res.stdout)
    assert replayed["findings"] == bundled["findings"] and replayed["machine"] == bundled["machine"]


def test_anonymized_paths_names_and_addresses(anonymized):
    m = {k: v.decode() for k, v in members(anonymized).items()}
    assert "snapshot/files/home/user1/cuda-12.4/version.json" in m
    snap = json.loads(m["snapshot/snapshot.json"])
    assert snap["env"]["CUDA_HOME"] == "/home/user1/cuda-12.4" and snap["meta"]["hostname"] == "host1"
    assert "host2 kernel: NVRM: Xid (PCI:0000:07:00): 79" in m["kernel/nvidia-messages.txt"]
    assert "# built on host2 (192.0.2.1, 02:00:00:00:00:01) by user1;" in m["snapshot/commands/nvcc_version.out"]
    assert json.loads(m["report.json"])["machine"]["hostname"] == "host1"
    conda = json.loads(m["python/conda-list.json"])
    assert conda[1]["version"] == "9.1.0.70"  # a four-part version is not an IP address
    manifest = json.loads(m["manifest.json"])
    assert manifest["anonymized"] is True
    assert manifest["redactions"]["pseudonyms"]["uuid"] >= 3 and manifest["redactions"]["pseudonyms"]["ip"] >= 2
