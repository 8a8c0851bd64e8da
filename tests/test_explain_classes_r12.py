"""Classes of real errors round 12 of issue 10 reads for the class (REAL texts of the tunable sets, named next to
each): NCCL's bootstrap finding no network interface, which NCCL_SOCKET_IFNAME decides."""

from __future__ import annotations

import pytest

from gpudoctor.explain.pipeline import explain_text


@pytest.mark.parametrize("text", [
    # round11-a nccl_errors-marin-6940 (before round 12: no answer): an exact-match NCCL_SOCKET_IFNAME nothing had
    "Bootstrap : no socket interface found",
    # round5 nccl_errors-open-r1-multimodal-7 (before round 12: NCCL's internal error): a launch script's eth0
    "[rank0]: ncclInternalError: Internal check failed.\n[rank0]: Last error:\n[rank0]: Bootstrap : no socket interface found",
    "host:123:456 [0] NCCL WARN Bootstrap : no socket interface found",
    "NET/ND : no socket interface found for out-of-band connections",
])
def test_no_socket_interface_is_nccls_interface_setting(text):
    r = explain_text(text)
    d = r.diagnoses
    assert [(x.id, x.family) for x in d] == [("nccl_no_socket_interface", "nccl_errors")]   # the category lines yield
    assert d[0].title == "NCCL found no network interface to bootstrap on: NCCL_SOCKET_IFNAME names none this machine has"
    assert d[0].recipe == "nccl_socket_interface"
    assert any("NCCL_SOCKET_IFNAME=<" in c for c in d[0].fix.commands)
    assert d[0].fix.commands[0].startswith("ip -br addr")


@pytest.mark.parametrize("text", [
    "host:123:456 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    "host:123:456 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
    "no socket interface was found by my own code",
])
def test_nccl_naming_its_interface_is_no_such_finding(text):
    assert "nccl_no_socket_interface" not in [x.id for x in explain_text(text).diagnoses]
