"""XID001-XID004 and SXID001 findings in full on real kernel-log lines (fixtures/kernel-log/SOURCES.md):
title with Xid, device, name, action and count; the catalog's words; the verdict from the drain actions;
evidence lines; the fix aimed at the device; what a later driver load clears.
"""

from __future__ import annotations

from gpudoctor.engine import run_one
from gpudoctor.facts import Facts
from gpudoctor.requirements import Requirements
from gpudoctor_checks import kernel_log as xid
from tests.test_kernel_log import LOAD_535, _snap, lines, ran

X119 = lines("gpud-testdata_xe9680-h100_xid119_dmesg-T.log")[2]
SXID = lines("gpud-sxid-readme_xid79-sxid20034.txt")


def judged(check, log_lines, **req):
    facts = Facts(_snap(kernel_dmesg=ran(["dmesg"], "\n".join(log_lines) + "\n")), requirements=Requirements(**req))
    return run_one(check, facts)


def test_a_reset_xid_fails_with_the_catalogs_words_and_a_reset_of_that_gpu():
    [f] = judged(xid.xid_reset, [X119])
    assert (f.status.value, f.title, f.subject, f.family, f.symptom_of) == (
        "fail", "Xid 119 on GPU at PCI 0000:9b:00: GSP RPC Timeout; action RESET_GPU", "GPU at PCI 0000:9b:00",
        "xid_or_hardware", ())
    assert f.detail == ("NVIDIA's Xid catalog: GSP_RPC_TIMEOUT, immediate action RESET_GPU, investigatory action "
                        "INVESTIGATE_SW, listed for A100, H100, B100, GB200. RESET_GPU: stop the GPU's processes and "
                        "reset it (nvidia-smi -r), or reboot.")
    assert [(e.source, e.excerpt) for e in f.evidence] == [("command:kernel_dmesg", X119)]
    assert f.fix.kb_id == "xid_reset_gpu"
    assert f.fix.commands[1:3] == (
        "nvidia-smi --query-compute-apps=pid,process_name --format=csv -i 0000:9b:00.0    # must list no process",
        "sudo nvidia-smi -r -i 0000:9b:00.0    # GPU reset; or reboot the node")
    assert 'reason="Xid 119 on GPU at PCI 0000:9b:00"' in f.fix.commands[0]


def test_a_repeated_xid_is_counted_and_each_line_kept():
    [f] = judged(xid.xid_reset, [X119, X119])
    assert f.title.endswith("; action RESET_GPU (2 times)") and len(f.evidence) == 2


def test_an_action_the_node_does_not_drain_on_warns():
    [f] = judged(xid.xid_reset, [X119], drain_xid_actions=("RESTART_BM",))
    assert (f.status.value, f.title) == ("warn", "Xid 119 on GPU at PCI 0000:9b:00: GSP RPC Timeout; action RESET_GPU")


def test_a_driver_load_after_it_clears_the_fault_and_says_so():
    [f] = judged(xid.xid_reset, [X119, LOAD_535])
    assert (f.status.value, f.title, f.detail, f.fix) == (
        "ok", "Xid 119 on GPU at PCI 0000:9b:00: GSP RPC Timeout; action RESET_GPU; cleared: the NVIDIA driver was "
              "loaded again after it, which re-initialised every GPU", None, None)
    assert [e.excerpt for e in f.evidence] == [X119]


def test_nothing_found_names_the_log_and_how_far_it_reaches():
    [f] = judged(xid.xid_reset, [LOAD_535])
    assert (f.status.value, f.title) == ("ok", "no Xid that needs a GPU reset in the part of this boot dmesg still holds")
    assert [e.excerpt for e in f.evidence] == [LOAD_535]
    [g] = judged(xid.nvswitch_sxid, [LOAD_535])
    assert g.title == "no NVSwitch SXid error in the part of this boot dmesg still holds"


def test_application_xids_warn_or_pass_as_the_catalog_says():
    found = judged(xid.xid_application, lines("akash-support-244_xid43-xid31-xid94.txt"))
    assert [(f.status.value, f.title) for f in found] == [
        ("ok", "Xid 43 on GPU at PCI 0000:00:05: GPU stopped processing; action IGNORE (2 times)"),
        ("warn", "Xid 31 on GPU at PCI 0000:00:07: GPU memory page fault; action RESTART_APP"),
        ("warn", "Xid 94 on GPU at PCI 0000:00:08: Contained memory error; action RESTART_APP")]
    assert {f.family for f in found} == {"xid_application"}
    assert found[1].detail.endswith("RESTART_APP: the application that hit it must be restarted; the GPU is fine.")
    assert found[1].fix.commands[2] == ("dcgmi diag -r 3 -i 0000:00:07.0    # when several programs hit the same "
                                        "Xid on this GPU")


def test_a_lost_gpu_fails_xid002_and_its_switches_fail_sxid001_as_its_symptom():
    [lost] = judged(xid.xid_reboot, SXID)
    assert (lost.status.value, lost.title) == (
        "fail", "Xid 79 on GPU at PCI 0000:91:00: GPU has fallen off the bus; action RESTART_BM")
    assert lost.fix.kb_id == "xid_reboot" and lost.fix.commands[2] == "sudo reboot"
    [switch] = judged(xid.nvswitch_sxid, SXID)
    assert (switch.status.value, switch.title, switch.symptom_of) == (
        "fail", "SXid 20034 on 3 NVSwitches (PCI 0000:05:00, 0000:06:00, 0000:07:00): Fatal NVSwitch error; "
                "action RESTART_BM (4 times)", ("XID002",))
    assert switch.detail == ("a fatal NVSwitch error stops NVLink traffic through that switch; the GPUs and "
                             "NVSwitches must be reset together, in practice a reboot.")
    assert switch.fix.kb_id == "nvswitch_sxid"
    assert judged(xid.xid_reset, SXID)[0].status.value == "ok"  # an SXid is never an Xid finding


def test_an_xid_the_catalog_does_not_list_needs_a_person_and_says_only_what_its_action_means():
    line = "[ 12.5] NVRM: Xid (PCI:0000:3b:00): 999, pid=77, name=python, something new"
    [f] = judged(xid.xid_service, [line])
    assert (f.status.value, f.title, f.detail) == (
        "warn", "Xid 999 on GPU at PCI 0000:3b:00: an Xid NVIDIA's catalog does not list; action UNKNOWN",
        "UNKNOWN: an Xid NVIDIA's catalog (as gpudoctor has it) does not list.")  # UNKNOWN is not a drain action
