"""The record a judgment leaves, whole: where a diagnosis was read (source, lines, count, excerpt), which values it
shows, which message's reading a stronger message suppresses, how the machine's own checks decide and rank, and the
notes for a program's bug. Written from the survivors of bench/mutation.py's explain target."""

from __future__ import annotations

from gpudoctor.explain import catalog
from gpudoctor.explain.diagnose import DECIDED_BONUS
from gpudoctor.explain.pipeline import explain_text
from tests.test_explain_differential import SMI, facts

SIGS = {s.id: s for s in catalog.load().signatures}
NO_GPUS = "RuntimeError: No CUDA GPUs are available"


def test_a_message_twice_is_one_diagnosis_with_both_lines_and_the_first_excerpt():
    text = f"{SMI}\nsome other line\n{SMI}"
    d = explain_text(text).diagnoses
    assert len(d) == 1
    x = d[0]
    assert (x.id, x.family, x.via, x.source, x.lines, x.count) == (
        "smi_cannot_communicate", "driver_not_loaded", "signature", "<text>", [1, 3], 2)
    assert x.excerpt.startswith("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")
    assert x.score == SIGS["smi_cannot_communicate"].specificity


def test_a_diagnosis_shows_its_own_values_and_the_derived_ones_not_the_whole_context():
    text = "| NVIDIA-SMI 470.86       Driver Version: 470.86       CUDA Version: 11.4 |\n" + NO_GPUS
    r = explain_text(text)
    assert r.context.values["driver_version"] == "470.86"            # read from the header...
    d = r.diagnoses[0]
    assert (d.family, d.values) == ("cuda_visible_devices", {"driver_max_cuda": "11.4"})   # ...shown only derived
    assert d.lines == [2]


def test_a_family_suppressed_by_a_stronger_message_is_not_read_from_the_weaker_one():
    # Secure Boot's refusal says why the module is missing: the smi message's "module not loaded" reading goes
    text = "$ sudo modprobe nvidia\nmodprobe: ERROR: could not insert 'nvidia': Key was rejected by service\n" + SMI
    d = explain_text(text).diagnoses
    assert [(x.id, x.family) for x in d] == [("modprobe_key_rejected", "secure_boot_module_unsigned")]
    assert d[0].also_matched == ["smi_cannot_communicate"] and d[0].lines == [2, 3]


def test_every_message_with_a_differential_keeps_its_own():
    d = explain_text(SMI + "\n" + NO_GPUS).diagnoses
    assert [(x.family, x.differential.signature) for x in d] == [
        ("driver_not_loaded", "smi_cannot_communicate"), ("cuda_visible_devices", "no_cuda_gpus_available")]


def test_a_cause_the_machine_finds_and_the_text_only_ranks_is_read_from_the_machine():
    sig = SIGS["smi_cannot_communicate"]
    alt = next(a for a in sig.alternatives if a.family == "secure_boot_module_unsigned")
    d = explain_text(SMI, facts=facts("sys-secure-boot-unsigned")).diagnoses
    assert [x.family for x in d] == ["secure_boot_module_unsigned"]
    x = d[0]
    assert (x.id, x.via, x.recipe) == ("smi_cannot_communicate", "machine", alt.recipe)
    assert x.title == alt.title[0]
    assert x.explanation == list(sig.explanation)          # what the message means; the machine says which cause
    assert x.machine["check"] == "DRV001" and x.score == sig.specificity + DECIDED_BONUS


def test_the_machines_diagnosis_outranks_a_stronger_reading_of_the_text():
    # the text's strongest reading (no CUDA GPU visible, 62) against the smi message (62) the machine decides
    d = explain_text(NO_GPUS + "\n" + SMI, facts=facts("core-driver-not-loaded")).diagnoses
    assert d[0].family == "driver_not_loaded" and d[0].machine is not None
    assert d[0].score == SIGS["smi_cannot_communicate"].specificity + DECIDED_BONUS
    assert all(x.score < d[0].score for x in d[1:])


def test_an_application_xid_is_a_note_with_where_it_was_read():
    r = explain_text("some log line\nXid 31 / CUDA_ERROR_ILLEGAL_ADDRESS in SD1.5 pipeline")
    assert r.diagnoses == []
    n = r.notes[0]
    assert (n.id, n.kind, n.title, n.source, n.lines) == (
        "xid_mentioned", "program_bug", "Xid 31 was reported: GPU memory page fault", "<text>", [2])
    assert n.excerpt.startswith("Xid 31 / CUDA_ERROR_ILLEGAL_ADDRESS")
    assert "illegal memory access in the application" in n.explanation[0]


def test_a_cpu_only_note_says_where_it_was_read():
    text = ("loading\nRuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
            "False. If you are running on a CPU-only machine, please use torch.load with map_location")
    n = explain_text(text).notes[0]
    assert (n.id, n.kind, n.source, n.lines) == ("deserialize_cuda_without_cuda", "cpu_only", "<text>", [2])
    assert n.title == SIGS["deserialize_cuda_without_cuda"].title and n.excerpt.startswith("RuntimeError: Attempting")


# -- the differential, on a signature written for the test (the catalog's own data has none of these shapes) --

def _sig(**over):
    from gpudoctor.explain.signature import parse
    tell = lambda cmd: {"command": cmd, "shows": "what it shows"}                                   # noqa: E731
    raw = {"id": "made_up", "title": ["A made-up message"], "recipe": "driver_not_loaded", "patterns": ["made up"],
           "tell_apart": tell("own"), "prior": {"count": 5, "threads": []}, "prior_of": 20,
           "alternatives": [
               {"family": "oom", "recipe": "oom", "specificity": 40},                               # proposed, not ranked
               {"family": "no_nvidia_gpu", "recipe": "no_nvidia_gpu", "tell_apart": tell("lspci")},  # no prior at all
               {"family": "nouveau_conflict", "recipe": "nouveau_conflict", "tell_apart": tell("lsmod"),
                "prior": {"count": 3, "threads": []}, "excludes": ["container"]},
               {"family": "no_device_in_container", "recipe": "no_device_in_container", "requires": ["container"],
                "tell_apart": dict(tell("ls /dev"), only_in="container"), "prior": {"count": 9, "threads": []}},
               {"family": "no_nvidia_gpu", "recipe": "no_nvidia_gpu", "requires": ["macos"],
                "tell_apart": tell("uname"), "prior": {"count": 1, "threads": []}},
           ]}
    raw.update(over)
    return parse(raw, "driver_not_loaded", "test.json")


def test_the_differential_of_a_message_ranks_every_told_apart_cause():
    from gpudoctor.explain import differential
    from gpudoctor.explain.context import Context
    sig = _sig()
    assert differential.families(sig, set()) == ["driver_not_loaded", "oom", "no_nvidia_gpu", "nouveau_conflict",
                                                 "no_device_in_container"]
    assert differential.families(sig, {"container"}) == ["driver_not_loaded", "oom", "no_nvidia_gpu",
                                                         "no_device_in_container"]
    d = differential.build(sig, set(), {}, Context())
    # placed causes by prior (the alternative without tell_apart is no candidate, the one without a prior counts
    # 0), then the container's, which nothing places; nobody has a clue; of is the signature's own count
    assert [(c.family, c.recipe, c.prior, c.clue) for c in d.candidates] == [
        ("driver_not_loaded", "driver_not_loaded", 5, None), ("nouveau_conflict", "nouveau_conflict", 3, None),
        ("no_nvidia_gpu", "no_nvidia_gpu", 0, None), ("no_device_in_container", "no_device_in_container", 9, None)]
    assert (d.signature, d.of) == ("made_up", 20)
    assert differential.build(_sig(prior_of=0), set(), {}, Context()).of == 5 + 3 + 0 + 9


def test_a_clue_names_where_it_came_from_and_lifts_nothing_it_does_not_hold():
    from gpudoctor.explain import differential
    from gpudoctor.explain.context import Context
    ctx = Context()
    ctx.set_flag("container", "--context")
    d = differential.build(_sig(), {"container", "macos"}, {"no_device_in_container": 86}, ctx)
    clues = {c.family: c.clue for c in d.candidates}
    # no_nvidia_gpu's candidate comes from its first row (no requires); its second row's clue (a Mac) still holds
    assert clues == {"driver_not_loaded": None, "no_device_in_container": "container: --context",
                     "no_nvidia_gpu": "macos: context"}
    assert [c.family for c in d.candidates][0] == "no_device_in_container"       # proposed (86), placed
    assert "nouveau_conflict" not in clues                                       # excluded in a container
    d = differential.build(_sig(), {"docker"}, {}, Context())
    assert all(c.clue is None for c in d.candidates)


def test_a_clue_from_the_text_without_a_recorded_source_says_context():
    from gpudoctor.explain import differential
    from gpudoctor.explain.context import Context
    sig = _sig(alternatives=[{"family": "no_device_in_container", "recipe": "no_device_in_container",
                              "requires": ["container", "docker"], "tell_apart": {"command": "ls", "shows": "x"}}])
    ctx = Context()
    ctx.set_flag("container", "a docker line")
    d = differential.build(sig, {"container", "docker"}, {}, ctx)
    assert d.candidates[1].clue == "container: a docker line; docker: context"


def test_the_differentials_json_says_a_clue_and_a_basis_only_when_there_is_one():
    from gpudoctor.explain.render import to_dict
    d = to_dict(explain_text(NO_GPUS, flags=["container"]))["diagnoses"][0]["differential"]
    assert "basis" not in d and d["signature"] == "no_cuda_gpus_available"
    cands = {c["family"]: c for c in d["candidates"]}
    assert cands["no_device_in_container"]["clue"] == "container: --context"
    assert "clue" not in cands["cuda_visible_devices"]
    assert cands["cuda_visible_devices"]["recipe"] == "cuda_visible_devices"
    words = to_dict(explain_text("no cuda gpu available", flags=["container"]))["diagnoses"][0]["differential"]
    assert words["basis"] == "no cuda gpu available"


def test_on_a_machine_a_ruled_out_cause_ranks_below_one_it_cannot_judge():
    cands = explain_text(SMI, facts=facts("core-driver-not-loaded")).diagnoses[0].differential.candidates
    kinds = [c.verdict.kind if c.verdict else "" for c in cands]
    assert kinds[0] == "decided"
    assert "ruled_out" in kinds and any(k not in ("decided", "ruled_out") for k in kinds)
    first_ruled_out = kinds.index("ruled_out")
    assert all(k == "ruled_out" for k in kinds[first_ruled_out:]), kinds


def test_a_stronger_messages_family_suppression_reaches_messages_without_a_differential():
    # NVML could not load the driver because Secure Boot refused the module: one finding, not two with two fixes
    text = ("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service\n"
            "Failed to initialize NVML: Driver Not Loaded")
    assert [(x.id, x.family) for x in explain_text(text).diagnoses] == [
        ("modprobe_key_rejected", "secure_boot_module_unsigned")]


def test_the_machine_can_find_the_reading_a_value_replaced():
    # the text names the version mismatch; the recorded machine is a container started without the GPU: the
    # message's own reading comes back from the machine, with the message's own title and recipe
    text = "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown"
    sig = SIGS["container_cli_initialization_error"]
    d = explain_text(text, facts=facts("sys-container-no-gpu")).diagnoses
    assert [(x.family, x.via) for x in d] == [("no_device_in_container", "machine"),
                                              ("driver_library_mismatch", "alternative")]
    assert d[0].recipe == sig.recipe and d[0].title.startswith("The NVIDIA container runtime could not start")


def test_equal_scores_keep_the_order_of_the_lines():
    one = explain_text(NO_GPUS + "\n" + SMI).diagnoses
    two = explain_text(SMI + "\n" + NO_GPUS).diagnoses
    assert one[0].score == one[1].score
    assert [x.family for x in one] == ["cuda_visible_devices", "driver_not_loaded"]
    assert [x.family for x in two] == ["driver_not_loaded", "cuda_visible_devices"]


def test_the_fix_is_tailored_to_the_machine_the_snapshot_records():
    text = "AssertionError: Torch not compiled with CUDA enabled"
    alone = explain_text(text).diagnoses[0].fix.commands
    here = explain_text(text, facts=facts("core-healthy-workstation")).diagnoses[0].fix.commands
    assert "/opt/conda/bin/python -m pip uninstall -y torch" in here
    assert "/opt/conda/bin/python -m pip uninstall -y torch" not in alone
