"""`gpudoctor devices`: which physical GPU each CUDA device index stands for.

Reads CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER the way the CUDA runtime does and maps
every index a CUDA program sees (cuda:0, cuda:1, ...) to nvidia-smi's GPU: index, name,
PCI bus id, UUID. `--visible` tries a value without exporting it.
"""

from __future__ import annotations

import sys
from typing import Dict, List, Optional

import click

from gpudoctor.commands.common import (TIMEOUT_SECONDS, InputError, color_option, json_option, load_snapshot,
                                       python_option, snapshot_option)
from gpudoctor.exitcodes import ExitCode

SCHEMA = "gpudoctor.devices/2"


def _live(timeout: float, python: Optional[str], torch: bool):
    from gpudoctor.probes.collect import CollectOptions, collect

    opts = CollectOptions(timeout=timeout, commands=("nvidia_smi_xml", "nvidia_smi_L"),
                          frameworks=("torch",) if torch else ())
    if python:
        opts.python = python
    return collect(opts)


def build_view(snap, visible: Optional[str] = None, order: Optional[str] = None) -> Dict:
    """The --json document, read off the report of the device checks (CVD001, CVD002) over ``snap``;
    ``visible``/``order`` replace the recorded CUDA_VISIBLE_DEVICES/CUDA_DEVICE_ORDER first."""
    import dataclasses

    from gpudoctor.facts import Facts
    from gpudoctor.report import build_report

    env = dict(snap.env)
    for name, value in (("CUDA_VISIBLE_DEVICES", visible), ("CUDA_DEVICE_ORDER", order)):
        if value is not None:
            env[name] = value
    tried = dataclasses.replace(snap, env=env)
    report = build_report(tried, only=["CVD001", "CVD002"])
    raw, order_raw = env.get("CUDA_VISIBLE_DEVICES"), env.get("CUDA_DEVICE_ORDER")
    view: Dict = {"schema": SCHEMA, "source": snap.source or "live", "cuda_visible_devices": raw,
                  "cuda_device_order": order_raw,
                  "verdicts": [{"check": f.check_id, "status": f.status.value, "title": f.title}
                               for f in report.findings]}
    m = report.devices
    if m is None:
        facts = Facts(tried)
        view.update(mode=facts["visible_devices_spec"].mode,
                    error=facts.why_missing("gpus") or "no GPU inventory", devices=[], hidden=[],
                    problems=[_problem(p) for p in facts["visible_devices_spec"].problems], physical_count=0,
                    order_known=True, order_source="pci_order")
        return view
    devices = [{"cuda_index": v["cuda_index"], "entry": v["entry"], **_gpu(v), "mig": v["mig"]} for v in m["visible"]]
    # torch was probed under the recorded settings: its answers only describe those, not a --visible/--order guess.
    if visible is None and order is None:
        _add_torch(Facts(snap), devices)
    view.update(mode=m["mode"], order=m["order"], order_known=m["order_known"], order_source=m["order_source"],
                physical_count=len(m["visible"]) + len(m["hidden"]), devices=devices,
                hidden=[_gpu(g) for g in m["hidden"]], problems=m["problems"],
                mig_enabled=sorted({v["gpu_index"] for v in m["visible"] if v["mig_enabled"]}))
    return view


def _gpu(g: Dict) -> Dict:
    return {"nvidia_smi_index": g["gpu_index"], "name": g["name"], "pci_bus_id": g["pci_bus_id"],
            "uuid": g["uuid"], "compute_cap": g["compute_cap"]}


def _problem(p) -> Dict:
    return {"code": p.code, "message": p.message, "hides_all": p.hides_all}


def _add_torch(f, devices: List[Dict]) -> None:
    """What torch itself reported for each index, when it was probed and could use CUDA."""
    tb = f.get("torch_build")
    if tb is None or not tb.available:
        return
    by_index = {d.index: d for d in tb.devices}
    for d in devices:
        t = by_index.get(d["cuda_index"])
        if t is not None:
            d["torch"] = {"name": t.name, "uuid": t.uuid, "capability": t.capability}


def render(view: Dict, style) -> str:
    lines = [_header(view)]
    if view.get("error"):
        lines.append(f"no GPU inventory: {view['error']}")
    elif view["devices"]:
        lines += ["", *_table(view)]
    else:
        lines += ["", style.bold(f"CUDA programs see no GPU (of {view['physical_count']}).")]
    if view.get("hidden"):
        lines.append("")
        lines += [f"hidden from CUDA: GPU {g['nvidia_smi_index']} {g['name'] or '?'} ({g['pci_bus_id'] or '?'})"
                  for g in view["hidden"]]
    order = next((v for v in view.get("verdicts") or () if v["check"] == "CVD002" and v["status"] == "warn"), None)
    if view["devices"] and order is not None:  # the CVD002 verdict, as `check` words it
        lines += ["", style.status_word("warn", "note:") + f" {order['title']}; export CUDA_DEVICE_ORDER=PCI_BUS_ID "
                  "to make the table above certain."]
    if view.get("mig_enabled") and view.get("mode") != "mig":
        gpus = ", ".join(f"GPU {i}" for i in view["mig_enabled"])
        lines += ["", style.status_word("warn", "note:") + f" MIG is enabled on {gpus}: CUDA sees its MIG "
                  "instances, not the whole GPU; pick one with CUDA_VISIBLE_DEVICES=MIG-<uuid> (nvidia-smi -L)."]
    if view.get("problems"):
        lines.append("")
    for p in view.get("problems") or []:
        word = "fail" if p["hides_all"] else "warn"
        lines.append(style.status_word(word, "problem:") + f" {p['message']}")
    return "\n".join(lines) + "\n"


def _header(view: Dict) -> str:
    raw = view["cuda_visible_devices"]
    cvd = "CUDA_VISIBLE_DEVICES is not set (every GPU)" if raw is None else f"CUDA_VISIBLE_DEVICES={raw!r}"
    order = view.get("cuda_device_order")
    order_text = f"CUDA_DEVICE_ORDER={order}" if order else "CUDA_DEVICE_ORDER not set (FASTEST_FIRST)"
    count = "" if view.get("error") else f"; CUDA sees {len(view['devices'])} of {view['physical_count']} GPU(s)"
    return f"{cvd}; {order_text}{count}"


def _table(view: Dict) -> List[str]:
    torch = any("torch" in d for d in view["devices"])
    head = ["cuda", "nvidia-smi", "name", "PCI bus id", "UUID"] + (["torch sees"] if torch else [])
    rows = []
    for d in view["devices"]:
        uuid = d["mig"]["uuid"] if d.get("mig") else d["uuid"]
        name = (d["name"] or "?") + (f" MIG {d['mig']['profile']}" if d.get("mig") and d["mig"]["profile"] else "")
        row = [f"cuda:{d['cuda_index']}", f"GPU {d['nvidia_smi_index']}", name, d["pci_bus_id"] or "-", uuid or "-"]
        if torch:
            row.append((d.get("torch") or {}).get("name") or "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head] + rows]


@click.command("devices")
@snapshot_option
@json_option
@click.option("--visible", "visible", metavar="VALUE", default=None,
              help="Try this CUDA_VISIBLE_DEVICES value instead of the one in the environment "
                   "(\"\" hides every GPU).")
@click.option("--order", "order", type=click.Choice(["FASTEST_FIRST", "PCI_BUS_ID"]), default=None,
              help="Try this CUDA_DEVICE_ORDER instead of the one in the environment.")
@click.option("--torch", "probe_torch", is_flag=True,
              help="Also ask torch (in --python) which GPU each index is (slower: imports torch in a child).")
@python_option
@click.option("--timeout", type=TIMEOUT_SECONDS, default=15.0, show_default=True,
              help="Seconds the live collection may take.")
@color_option
def command(snapshot_path, as_json, visible, order, probe_torch, python, timeout, color):
    """Show which physical GPU each CUDA device index (cuda:0, cuda:1, ...) is.

    CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER are read as CUDA reads them: indices,
    GPU-/MIG- UUIDs and unique UUID prefixes, -1 and the empty value, duplicates, and
    the first invalid entry that silently ends the list.

    \b
    Examples:
      gpudoctor devices                          # this machine, this shell's environment
      gpudoctor devices --visible 2,0            # what would CUDA_VISIBLE_DEVICES=2,0 select?
      gpudoctor devices --visible GPU-ef1d --json
      gpudoctor devices --torch                  # also ask torch which GPU each index is
      gpudoctor devices --snapshot DIR           # a recorded snapshot or support bundle

    Exit codes: 0 the mapping has no problem, 1 CUDA_VISIBLE_DEVICES hides or drops GPUs or
    there is no GPU inventory, 2 bad input.
    """
    from gpudoctor.render.json import dumps
    from gpudoctor.render.style import Style

    if snapshot_path and probe_torch:
        raise InputError("--torch asks torch on this machine; it cannot be combined with --snapshot")
    snap = load_snapshot(snapshot_path) if snapshot_path else _live(timeout, python, probe_torch)
    view = build_view(snap, visible, order)
    if as_json:
        click.echo(dumps(view), nl=False)
    else:
        style = Style.for_stream(sys.stdout, color)
        # click.echo strips escape codes off a non-terminal unless told the colour was decided.
        click.echo(render(view, _Words(style)), nl=False, color=style.colour)
    costly = [p for p in view["problems"] if p["code"] not in ("lenient", "spaces", "bad_order")]
    return ExitCode.PROBLEM if view.get("error") or costly else ExitCode.OK


class _Words:
    """Style plus coloured words ("problem:") for lines that are not findings."""

    def __init__(self, style):
        self.style = style

    def bold(self, text: str) -> str:
        return self.style.bold(text)

    def status_word(self, status: str, word: str) -> str:
        from gpudoctor.findings import Status
        from gpudoctor.render.style import COLOURS

        return self.style.paint(word, COLOURS[Status(status)])
