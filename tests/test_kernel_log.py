"""The kernel log: parsing real NVIDIA lines, recording them, and the faults they mean (sources: fixtures/kernel-log)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gpudoctor import kernlog
from gpudoctor.facts import Facts, Missing, NotApplicable
from gpudoctor.knowledge import xid as catalog
from gpudoctor.probes import kernel_log
from gpudoctor.runner import CommandResult
from gpudoctor.snapshot import FileRecord, Snapshot
from tests.builders import ran
from tests.conftest import invoke

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "kernel-log"
XML = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi" / "xml"

# Real lines, each from the thread or file named beside it (fixtures/kernel-log/SOURCES.md).
XID154 = ("192.168.11.119: kern: warning: [2026-04-22T21:30:51.870495804Z]: NVRM: Xid (PCI:0000:0b:00): 154, GPU "
          "recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")       # open-gpu-kernel-modules#446
XID45 = ("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous "
         "Xid 149")                                                                       # open-gpu-kernel-modules#1150
NVL5 = ["NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 "
        "0x00000000 0x00000000 0x00000000)",                                              # leptonai/gpud#1160
        "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 0x00000000 "
        "0x00000000 0x00000000 0x00000000)"]                                              # leptonai/gpud#1174
MIG94 = ("NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, "
         "D-RST: No")                                                                     # the driver's own example
LOST_NO_XID = ["[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0",                       # NVSentinel#155
               "               NVRM: (PCI ID: 10de:26b5) installed in this system has",
               "               NVRM: fallen off the bus and is not responding to commands.",
               "[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).",
               "[ 1843.439669] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  "
               "(dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025"]
LOAD_535 = ("[Sun Jul 28 09:15:27 2024] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 "
            "19:39:15 UTC 2024")                                                          # akash-network/support#244


def lines(name: str):
    return (LOGS / name).read_text().splitlines()


# --- parsing -----------------------------------------------------------------------------------

def test_xid_79_sxid_and_the_lost_gpu_line_of_one_incident():
    events = kernlog.parse(lines("gpud-sxid-readme_xid79-sxid20034.txt"))
    assert [(e.kind, e.pci, e.code, e.fatal) for e in events] == [
        ("xid", "0000:91:00", 79, None), ("lost", "0000:91:00", None, None),
        ("sxid", "0000:06:00", 20034, True), ("sxid", "0000:05:00", 20034, True),
        ("sxid", "0000:07:00", 20034, True), ("sxid", "0000:05:00", 20034, True)]  # "Severity"/"Data" lines continue
    assert events[2].detail == "nvidia-nvswitch1"


def test_each_log_format_is_read_the_same():
    for name, code, pci in (("gpu-operator-1146_xid48-xid64.txt", 48, "0000:07:00"),          # syslog
                            ("akash-support-244_xid43-xid31-xid94.txt", 43, "0000:00:05"),    # dmesg -T
                            ("m4-logs-chronicles_xid63.txt", 63, "0000:10:1c"),              # journal line
                            ("gpud-testdata_xe9680-h100_xid119_dmesg-T.log", 119, "0000:9b:00")):
        first = next(e for e in kernlog.parse(lines(name)) if e.kind == "xid")
        assert (first.code, first.pci) == (code, pci), name


def test_mig_nvlink5_and_recovery_action_lines():
    mig, nonfatal, fatal, rec = (kernlog.parse([x])[0] for x in [MIG94] + NVL5 + [XID154])
    assert (mig.code, mig.pci) == (94, "0000:01:00")
    assert (nonfatal.code, nonfatal.fatal, fatal.code, fatal.fatal) == (144, False, 149, True)
    assert (rec.code, rec.recovery) == (154, "GPU Reset Required")


def test_the_three_line_lost_gpu_message_and_the_driver_load():
    events = kernlog.parse(LOST_NO_XID)
    assert [(e.kind, e.pci, e.detail) for e in events] == [("lost", "0000:b3:00", None),
                                                           ("driver_load", None, "570.158.01")]


def test_nvswitch_probes_and_the_boot_banner_of_an_hgx_a100():
    events = kernlog.parse(lines("m4-logs_hgx-a100_dmesg-T_nvidia-lines.txt"))
    assert events[0].kind == "boot"
    assert [e.detail for e in events if e.kind == "switch"] == ["10de:1af1"] * 6
    assert [e.detail for e in events if e.kind == "driver_load"] == ["525.60.13"]
    assert not [e for e in events if e.kind in ("xid", "sxid", "lost")]


def test_pci_addresses_compare_in_one_spelling():
    assert {kernlog.pci_key(a) for a in ("00000000:3B:00.0", "0000:3b:00", "3b:00.0", "GPU0000:3B:00.0")} == \
        {"0000:3b:00"}
    assert kernlog.pci_key("not an address") is None


# --- recording ---------------------------------------------------------------------------------

def test_keep_holds_the_first_line_and_the_drivers_lines_only():
    text = (LOGS / "gpud-testdata_xe9680-h100_xid119_dmesg-T.log").read_text()
    kept = kernel_log.keep(text).splitlines()
    assert kept[0] == text.splitlines()[0]
    assert not any("Call Trace" in ln or "clocksource" in ln for ln in kept)
    assert sum("Xid (PCI:0000:9b:00): 119" in ln for ln in kept) == 5
    assert kernel_log.keep("") == ""


def test_a_dracut_file_listing_is_not_an_nvidia_line():
    text = ("[Wed Mar  1 17:38:27 2023] Linux version 4.18.0\n"
            "[Wed Mar  1 17:43:21 2023] dracut[3150] drwxr-xr-x  17 root root 0 Oct 20 02:15 usr/lib/firmware/nvidia\n"
            "[Wed Mar  1 17:44:21 2023] nvidia-nvswitch0: using MSI\n")
    assert kernel_log.keep(text).splitlines()[1:] == ["[Wed Mar  1 17:44:21 2023] nvidia-nvswitch0: using MSI"]


def test_kmsg_is_read_without_blocking_and_its_dictionary_lines_dropped(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kmsg").write_text(
        "6,0,0,-;Linux version 5.15.0\n 3,1,2,-;\n"
        "4,812,4254197860,-;NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
        "the bus.\n SUBSYSTEM=pci\n DEVICE=+pci:0000:5d:00.0\n")
    rec = kernel_log.read_kmsg(str(tmp_path), time.monotonic() + 2)
    assert rec.content.splitlines() == ["6,0,0,-;Linux version 5.15.0",
                                        "4,812,4254197860,-;NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', "
                                        "name=<unknown>, GPU has fallen off the bus."]
    assert kernel_log.read_kmsg(str(tmp_path / "nowhere")).error == "missing"


def test_a_kmsg_that_keeps_logging_cannot_hold_the_reader(tmp_path):
    r, w = os.pipe()  # an open pipe with nothing to read answers EAGAIN, like a drained /dev/kmsg
    os.write(w, b"6,0,0,-;Linux version 6.1\n")
    (tmp_path / "dev").mkdir()
    os.symlink(f"/proc/self/fd/{r}", tmp_path / "dev" / "kmsg")
    start = time.monotonic()
    rec = kernel_log.read_kmsg(str(tmp_path), time.monotonic() + 5)
    assert time.monotonic() - start < 2.5 and rec.content  # well before the 5 s deadline == "6,0,0,-;Linux version 6.1\n"
    os.close(r), os.close(w)


def test_commands_keep_their_exit_and_error_but_only_nvidia_lines():
    res = CommandResult(("dmesg",), 1, "", "dmesg: read kernel buffer failed: Operation not permitted\n", 0.01)
    assert kernel_log.trimmed(res) == res
    out = kernel_log.trimmed(ran(["dmesg"], "[0.0] Linux version 6\n[1.0] usb 1-1: new device\n[2.0] NVRM: x\n"))
    assert out.stdout == "[0.0] Linux version 6\n[2.0] NVRM: x\n"


# --- which log, and why none ---------------------------------------------------------------------

def _snap(**commands) -> Snapshot:
    return Snapshot(commands=dict(commands))


def test_the_journal_wins_when_it_reaches_back_to_the_boot():
    s = _snap(kernel_journal=ran(["journalctl"], "[    0.000000] host kernel: Linux version 6.5\n"),
              kernel_dmesg=ran(["dmesg"], "[ 9.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.1\n"))
    s.files["/dev/kmsg"] = FileRecord("/dev/kmsg", error="permission denied")
    log = Facts(s)["kernel_log"]
    assert (log.source, log.name, log.from_boot) == ("command:kernel_journal", "journalctl -k", True)


def test_nothing_readable_says_what_was_refused_and_how_to_grant_it():
    s = _snap(kernel_journal=ran(["journalctl"], "-- No entries --\n", 0, "No journal files were found.\n"),
              kernel_dmesg=ran(["dmesg"], "", 1, "dmesg: read kernel buffer failed: Operation not permitted\n"))
    s.files["/dev/kmsg"] = FileRecord("/dev/kmsg", error="permission denied")
    s.commands["nvidia_smi_xml"] = ran(["nvidia-smi", "-q", "-x"], (XML / "rtx-3090_driver-525.147.05_cuda-12.0.xml")
                                       .read_text())
    with pytest.raises(Missing) as exc:
        Facts(s)["kernel_log"]
    assert str(exc.value) == (
        "the kernel log could not be read (journalctl -k -b printed no kernel message of this boot (No journal files "
        "were found.); /dev/kmsg: permission denied; `dmesg` exited 1: dmesg: read kernel buffer failed: Operation not "
        "permitted): run gpudoctor as root, or let it read the log: `sudo sysctl kernel.dmesg_restrict=0` (dmesg, "
        "/dev/kmsg) or `sudo usermod -aG systemd-journal $USER` (journalctl; the adm group on Debian/Ubuntu)")


def test_a_machine_without_an_nvidia_gpu_has_no_kernel_log_to_judge():
    s = _snap(nvidia_smi_xml=CommandResult(("nvidia-smi", "-q", "-x"), error="not found"))
    s.listings["/dev"] = []
    s.files["/dev/kmsg"] = FileRecord("/dev/kmsg", error="permission denied")
    with pytest.raises(NotApplicable):
        Facts(s)["kernel_log"]


# --- faults: the catalog's action, and what clears it ----------------------------------------------

def _faults(log_lines, **extra):
    s = _snap(kernel_dmesg=ran(["dmesg"], "\n".join(log_lines) + "\n"), **extra)
    return Facts(s)["gpu_faults"]


def test_a_later_driver_load_clears_a_reset_but_not_a_lost_gpu():
    xid119 = lines("gpud-testdata_xe9680-h100_xid119_dmesg-T.log")[2]
    (reset,) = _faults([xid119, LOAD_535])
    assert (reset.what, reset.bucket, reset.cleared) == ("Xid 119", "RESET_GPU", "the NVIDIA driver was loaded again "
                                                         "after it, which re-initialised every GPU")
    (stays,) = _faults(lines("nolebase_hgx-h100_xid79-then-reload_dmesg.txt"))
    assert (stays.what, stays.bucket, stays.cleared) == ("Xid 79", "RESTART_BM", None)
    (before,) = _faults([LOAD_535, xid119])
    assert before.cleared is None


def test_a_gpu_without_a_recovery_action_left_was_reset_on_a_linked_xid_only():
    xml = (XML / "rtx-3060_driver-570.124.04_cuda-12.8.xml").read_text()  # driver 570, GPU Recovery Action: None
    smi = ran(["nvidia-smi", "-q", "-x"], xml)
    bus = Facts(_snap(nvidia_smi_xml=smi))["gpus"][0].pci_bus_id           # that GPU is at 00000000:2D:00.0
    # The real Xid 95 and Xid 119 lines, moved to this GPU's address: a composed case, the lines' words unchanged.
    xid95 = lines("nvidia-driver-source_xid95-example.txt")[0].replace("0000:01:00", "0000:2d:00")  # linked R565
    xid119 = lines("gpud-testdata_xe9680-h100_xid119_dmesg-T.log")[2].replace("0000:9b:00", "0000:2d:00")
    linked, unlinked = _faults([xid95, xid119], nvidia_smi_xml=smi)
    assert bus == "00000000:2D:00.0" and linked.device == "GPU 0 (00000000:2D:00.0)" and linked.gpu_index == 0
    assert linked.cleared.startswith("the driver reports no recovery action for this GPU now")
    assert unlinked.cleared is None  # Xid 119 has no recovery-action linkage in the catalog


def test_workflows_resolve_from_what_the_line_says():
    assert [(f.what, f.bucket) for f in _faults(NVL5)] == [("Xid 144", "IGNORE"), ("Xid 149", "RESET_GPU")]
    assert [(f.what, f.bucket) for f in _faults([XID154])] == [("Xid 154", "RESET_GPU")]
    solo, = _faults([XID45])
    after = _faults([NVL5[1].replace("0000:00:00", "0000:dc:00"), XID45])
    assert solo.bucket == "RESTART_FM" and [f.bucket for f in after] == ["RESET_GPU", "IGNORE"]


def test_a_lost_gpu_with_its_xid_79_is_one_fault_and_sxids_one_per_code():
    faults = _faults(lines("gpud-sxid-readme_xid79-sxid20034.txt"))
    assert [(f.what, f.device, f.count, f.klass) for f in faults] == [
        ("Xid 79", "GPU at PCI 0000:91:00", 1, "reboot"),
        ("SXid 20034", "3 NVSwitches (PCI 0000:05:00, 0000:06:00, 0000:07:00)", 4, "reboot")]
    lost, = _faults(LOST_NO_XID[:3])
    assert (lost.what, lost.bucket, lost.nvidia) == ("GPU lost", "RESTART_BM", "RESTART_BM")


# --- the catalog ---------------------------------------------------------------------------------

@pytest.mark.parametrize("code, immediate, acts", [
    (13, "RESTART_APP", "RESTART_APP"), (31, "RESTART_APP", "RESTART_APP"), (32, "RESTART_APP", "RESTART_APP"),
    (43, "IGNORE", "IGNORE"), (45, "WORKFLOW_XID_45", "RESTART_FM"), (48, "WORKFLOW_XID_48", "RESET_GPU"),
    (61, "CONTACT_SUPPORT", "CONTACT_SUPPORT"), (62, "RESET_GPU", "RESET_GPU"), (63, "IGNORE", "IGNORE"),
    (64, "RESET_GPU", "RESET_GPU"), (68, "RESTART_APP", "RESTART_APP"), (69, "RESTART_APP", "RESTART_APP"),
    (74, "WORKFLOW_NVLINK_ERR", "RESET_GPU"), (79, "RESTART_BM", "RESTART_BM"), (92, "IGNORE", "IGNORE"),
    (94, "RESTART_APP", "RESTART_APP"), (95, "RESET_GPU", "RESET_GPU"), (109, "RESET_GPU", "RESET_GPU"),
    (119, "RESET_GPU", "RESET_GPU"), (120, "RESET_GPU", "RESET_GPU"), (121, "IGNORE", "IGNORE"),
    (123, "CONTACT_SUPPORT", "CONTACT_SUPPORT"), (140, "RESET_GPU", "RESET_GPU"), (143, "RESET_GPU", "RESET_GPU"),
    (145, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"), (150, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    (171, None, "UNLISTED"), (175, None, "UNKNOWN")])
def test_the_catalog_names_nvidias_actions(code, immediate, acts):
    info = catalog.xid(code)
    assert (info.immediate if info else None) == immediate
    assert catalog.acts_as(code) == acts
    assert catalog.bucket(acts).klass in ("reset", "reboot", "service", "application", "informational")


def test_every_bucket_the_catalog_uses_is_known_or_resolved():
    import json

    data = json.loads((Path(catalog.__file__).parent / "data" / "xid.json").read_text())
    resolved = {w["bucket"] for w in data["workflows"]}
    for row in data["xids"]:
        assert row["immediate"] is None or row["immediate"] in catalog.known_buckets() or row["immediate"] in resolved
    assert [r["code"] for r in data["xids"]] == list(range(1, 173))


# --- explain reads the same table ------------------------------------------------------------------

@pytest.mark.parametrize("line, said", [
    (lines("gpud-testdata_xe9680-h100_xid119_dmesg-T.log")[2],
     "NVIDIA's Xid catalog: RESET_GPU, stop the GPU's processes and reset it (nvidia-smi -r), or reboot"),
    (XID154, "NVIDIA's Xid catalog: XID_154, that is RESET_GPU, stop the GPU's processes and reset it"),
    (NVL5[0], "NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR, that is IGNORE, no action"),
])
def test_explain_names_the_catalogs_action_for_an_xid_line(line, said):
    proc = invoke("explain", "--json", line)
    (d,) = json.loads(proc.stdout)["diagnoses"]
    assert d["family"] == "xid_or_hardware" and said in d["explanation"]
