"""node_exporter textfile output: format (parsed by a small strict parser) and atomic writes."""

from __future__ import annotations

import os
import re
import stat

import pytest

from gpudoctor.cli import main
from gpudoctor.hook import prometheus
from tests import hook_snapshots as hs

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def parse(text):
    """Text exposition format -> {name: {"help", "type", "samples": [(labels, value)]}}; strict."""
    assert text.endswith("\n")
    metrics = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, help_text = line[7:].split(" ", 1)
            metrics.setdefault(name, {"samples": []})["help"] = help_text
        elif line.startswith("# TYPE "):
            name, kind = line[7:].split(" ")
            assert kind in ("gauge", "counter")
            metrics.setdefault(name, {"samples": []})["type"] = kind
        else:
            m = SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"  # also rejects a trailing timestamp
            name, _, labels, value = m.groups()
            assert "type" in metrics.get(name, {}), f"{name} sample before its TYPE"
            parsed = {}
            rest = labels or ""
            while rest:
                lm = LABEL.match(rest)
                assert lm, f"bad labels: {labels!r}"
                parsed[lm.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), lm.group(2))
                rest = rest[lm.end():]
            metrics[name]["samples"].append((parsed, float(value)))
    return metrics


# The recordings carry a kernel log without NVIDIA errors (tests/hook_snapshots.py): the Xid checks pass.
KERNEL_LOG_OK = {"XID001": 0, "XID002": 0, "XID003": 0, "XID004": 0, "SXID001": 0}


def run_hook(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(["hook", *args])
    capsys.readouterr()
    return exc.value.code


def test_textfile_has_a_gauge_per_check_and_gpu(tmp_path, capsys):
    prom = tmp_path / "gpudoctor.prom"
    snap = hs.recording(tmp_path / "s", hs.RETIRED)
    code = run_hook(capsys, "--snapshot", str(snap), "--prometheus", str(prom), "--gpus", "1", "--max-temp", "85")
    assert code == 1
    m = parse(prom.read_text())
    assert m["gpudoctor_hook_status"]["samples"] == [({}, 1.0)]
    assert dict((s[0]["check"], s[1]) for s in m["gpudoctor_check_status"]["samples"]) == {
        "DRV001": 0, "DRV003": 1, "DRV006": 0, "NOD001": 0, "NOD002": 0, **KERNEL_LOG_OK, "FAB001": 0}
    assert m["gpudoctor_gpu_info"]["samples"] == [(
        {"index": "0", "name": "Tesla V100-SXM3-32GB", "uuid": "GPU-ef23ffa6-c9fd-93d5-aeb8-612c087255ff",
         "driver": "410.104"}, 1.0)]
    assert m["gpudoctor_gpu_temperature_celsius"]["samples"] == [({"index": "0"}, 33.0)]
    assert 0 < m["gpudoctor_hook_duration_seconds"]["samples"][0][1] < 5
    assert m["gpudoctor_last_run_timestamp_seconds"]["samples"][0][1] > 1.6e9
    assert all(v.get("type") == "gauge" and v.get("help") for v in m.values())
    assert stat.S_IMODE(prom.stat().st_mode) == 0o644


def test_unknown_and_driver_failure_values(tmp_path, capsys):
    prom = tmp_path / "g.prom"
    run_hook(capsys, "--snapshot", str(hs.hung(tmp_path / "s")), "--prometheus", str(prom), "--gpus", "8")
    m = parse(prom.read_text())
    assert dict((s[0]["check"], s[1]) for s in m["gpudoctor_check_status"]["samples"]) == {
        "DRV001": 1, "DRV003": 2, "DRV006": 2, "NOD001": 2, **KERNEL_LOG_OK, "FAB001": 2}
    assert m["gpudoctor_gpu_info"]["samples"] == []


def test_label_values_are_escaped():
    from gpudoctor.hook.outcome import Outcome
    from gpudoctor.exitcodes import HookExit

    class Gpu:
        index, name, uuid, temperature_c = 0, 'Odd "GPU"\\name\n', "GPU-1", None

    text = prometheus.render(Outcome(HookExit.OK), 1.7e9, [Gpu()], "550.54.15")
    assert parse(text)["gpudoctor_gpu_info"]["samples"][0][0]["name"] == 'Odd "GPU"\\name\n'


def test_write_replaces_atomically_and_leaves_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "gpudoctor.prom"
    target.write_text("old\n")
    prometheus.write(str(target), "new\n")
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpudoctor.prom"]

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        prometheus.write(str(target), "partial\n")
    assert target.read_text() == "new\n"  # readers never see a half-written file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpudoctor.prom"]


def test_unwritable_textfile_does_not_change_the_verdict(tmp_path, capsys):
    snap = hs.recording(tmp_path / "s", hs.HEALTHY)
    with pytest.raises(SystemExit) as exc:
        main(["hook", "--snapshot", str(snap), "--prometheus", str(tmp_path / "no" / "such" / "dir.prom")])
    err = capsys.readouterr().err
    assert exc.value.code == 0
    assert err.startswith(f"gpudoctor: cannot write {tmp_path / 'no' / 'such' / 'dir.prom'} (")
