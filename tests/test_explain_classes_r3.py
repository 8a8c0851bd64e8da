"""Classes of real errors round 3 of issue 10 reads better (the texts are real ones from the tuning sets,
named next to each): a missing NVIDIA module on an akmod system (Fedora, RPM Fusion) is first of all
Secure Boot refusing the module signed with an unenrolled key; a DKMS failure elsewhere stays a module
not built for the kernel."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text

MODULE_MISSING = [
    # round1 secure_boot_module_unsigned-fedora-autoinstaller-107: RPM Fusion's nvidia-fallback message
    ("nvidia kernel module missing falling back to nouveau", "secure_boot_module_unsigned",
     "Secure Boot most likely refuses the akmod-built NVIDIA module (it is signed with a key that must be enrolled)"),
    # round2-a secure_boot_module_unsigned-nvidia-fedora-guide-6: the reporter says Secure Boot is on
    ("NVIDIA kernel module missing\n\nmy system:\n- secure boot enabled\n- disk encryption enabled",
     "secure_boot_module_unsigned", "Secure Boot refuses the NVIDIA kernel module, so it is missing for the running kernel"),
    # the signature's own example (Frogging-Family/nvidia-all#70): a DKMS build error, no clue of Secure Boot
    ("a quick `modprobe nvidia` showed that the module does not exist.\nseems to be a DKMS error.", "driver_not_loaded",
     "The NVIDIA kernel module is missing for the running kernel (its DKMS build failed or never ran)"),
]


@pytest.mark.parametrize("text,family,title", MODULE_MISSING, ids=[t[1] + str(i) for i, t in enumerate(MODULE_MISSING)])
def test_a_missing_module_is_ranked_by_its_clues(text, family, title):
    first = explain_text(text).diagnoses[0]
    assert (first.family, first.title) == (family, title)
    assert [c.family for c in first.differential.candidates][:2] == (
        [family, "driver_not_loaded"] if family != "driver_not_loaded" else ["driver_not_loaded",
                                                                             "secure_boot_module_unsigned"])
    assert {c.tell_apart.command for c in first.differential.candidates} >= {"mokutil --sb-state",
                                                                             "uname -r && dkms status"}
