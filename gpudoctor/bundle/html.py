"""report.html: the report as one self-contained page that opens straight from the archive.

No network, ever: inline CSS only, no scripts, images, fonts or external style sheets,
and a Content-Security-Policy that forbids loading anything. The diagnoses come first, most
serious first (the same glyphs and colours as the terminal report; each fix's alternatives
in their own blocks, commands without a prompt so they copy as they are), then the checks
that passed (collapsed), the GPU table, the CUDA_VISIBLE_DEVICES mapping and the framework
builds. Everything shown comes from the report; this module decides nothing.
"""

from __future__ import annotations

import re
from html import escape
from typing import Dict, Iterable, List, Optional

from gpudoctor.findings import Status
from gpudoctor.render.style import GLYPHS

CSP = "default-src 'none'; style-src 'unsafe-inline'"
COLOURS = {"ok": "#1a7f37", "warn": "#9a6700", "fail": "#cf222e", "skip": "#6e7781", "error": "#8250df"}
LABELS = {"ok": "ok", "warn": "warning", "fail": "failure", "skip": "skipped", "error": "check error"}
CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid #d0d7de}
.meta,.note{color:#57606a;font-size:13px} .note{margin:4px 0}
.badges span{display:inline-block;margin:8px 8px 0 0;padding:3px 10px;border-radius:12px;color:#fff;font-weight:600}
.finding{background:#fff;border:1px solid #d0d7de;border-left:5px solid var(--c);border-radius:6px;
 margin:10px 0;padding:10px 14px}
.finding h3{font-size:15px;margin:0} .glyph{color:var(--c);font-family:ui-monospace,monospace;font-weight:700}
.id{color:#57606a;font-family:ui-monospace,monospace;font-size:13px} .subject{color:#57606a}
.detail{margin:6px 0} .evidence{margin:6px 0;padding-left:18px;font-size:13px}
.fix{background:#f6f8fa;border-radius:6px;padding:8px 12px;margin-top:8px}
.flag{font-size:12px;background:#fff8c5;border:1px solid #d4a72c;border-radius:10px;padding:0 6px;margin-left:6px}
pre{background:#0d1117;color:#e6edf3;padding:10px 12px;border-radius:6px;overflow-x:auto;white-space:pre-wrap;
 font:13px/1.5 ui-monospace,SFMono-Regular,Menlo,monospace;margin:6px 0}
.evidence pre{background:#eaeef2;color:#1f2328;padding:4px 8px}
table{border-collapse:collapse;background:#fff;width:100%;font-size:14px}
th,td{border:1px solid #d0d7de;padding:5px 8px;text-align:left;vertical-align:top} th{background:#eaeef2}
code{font-family:ui-monospace,monospace;font-size:13px} details{margin:10px 0}
"""


def render(report: Dict, notice: Optional[str] = None) -> str:
    """The page for ``report`` (a ``gpudoctor.report/2`` dict); ``notice`` says what was redacted."""
    m = report.get("machine") or {}
    host = m.get("hostname") or "unknown host"
    meta = report.get("snapshot") or {}
    body = [f"<h1>gpudoctor report: {escape(host)}</h1>",
            f'<p class="meta">recorded {escape(str(meta.get("created") or "?"))} with gpudoctor '
            f'{escape(str(meta.get("gpudoctor_version") or report.get("gpudoctor_version")))}</p>']
    if notice:
        body.append(f'<p class="note">{escape(notice)}</p>')
    body.append(_badges(report.get("summary") or {}))
    body += _diagnoses(report.get("diagnoses") or [], report.get("findings") or [])
    body += _findings(report.get("findings") or [])
    body += _gpus(m.get("gpus") or [], m.get("no_gpu_reason"))
    body += _visible(m.get("env") or {}, report.get("devices"))
    body += _frameworks(m.get("frameworks") or {})
    body += _machine(m)
    for p in report.get("plugin_problems") or []:
        body.append(f'<p class="note">plugin {escape(str(p.get("plugin")))}: {escape(str(p.get("message")))}</p>')
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>gpudoctor report: {escape(host)}</title>\n<style>{CSS}</style></head>\n"
            "<body><main>\n" + "\n".join(body) + "\n</main></body></html>\n")


def _glyph(status: str) -> str:
    return f'<span class="glyph">[{GLYPHS[Status(status)]}]</span>'


def _badges(summary: Dict[str, int]) -> str:
    n = summary.get("diagnoses", 0)
    parts = [f'<span style="background:{COLOURS["fail"] if n else COLOURS["ok"]}">'
             f'{n} problem{"s" if n != 1 else ""}</span>']
    for s in ("fail", "error", "warn", "ok", "skip"):
        n = summary.get(s, 0)
        if not n and s in ("error", "skip"):
            continue
        label = LABELS[s] + ("s" if n != 1 and s in ("fail", "warn", "error") else "")
        colour = COLOURS[s] if n else "#8c959f"  # a zero count is grey, not an alarming red
        parts.append(f'<span style="background:{colour}">{GLYPHS[Status(s)]} {n} {label}</span>')
    return f'<div class="badges">{"".join(parts)}</div>'


def _diagnoses(diagnoses: List[Dict], findings: List[Dict]) -> List[str]:
    out = ["<h2>Problems, most serious first</h2>"]
    if not diagnoses:
        return out + ['<p class="note">No problem found.</p>']
    by_ref = {(f["check_id"], f["title"]): f for f in findings}
    for n, d in enumerate(diagnoses, 1):
        cause = by_ref.get((d["cause"]["check_id"], d["cause"]["title"]), {})
        subject = f' <span class="subject">[{escape(d["subject"])}]</span>' if d.get("subject") else ""
        parts = [f'<article class="finding {d["status"]}" style="--c:{COLOURS[d["status"]]}">',
                 f'<h3>{_glyph(d["status"])} {n}. {escape(d["title"])}{subject}</h3>',
                 f'<p class="note">{escape(d.get("family_title") or d["family"])} ({escape(d["family"])}), '
                 f'found by <span class="id">{escape(d["cause"]["check_id"])}</span></p>']
        if cause.get("detail"):
            parts.append(f'<p class="detail">{escape(cause["detail"])}</p>')
        parts.append(_evidence(cause.get("evidence") or []))
        if d.get("symptoms"):
            items = "".join(f'<li>{_glyph(s["status"])} <span class="id">{escape(s["check_id"])}</span> '
                            f'{escape(s["title"])}</li>' for s in d["symptoms"])
            parts.append(f'<p class="note">This also explains:</p><ul class="evidence">{items}</ul>')
        if d.get("fix"):
            parts.append(_fix(d["fix"]))
        parts.append("</article>")
        out.append("\n".join(p for p in parts if p))
    return out


def _findings(findings: List[Dict]) -> List[str]:
    """The checks not already shown under a diagnosis: errors open, passes and skips collapsed."""
    out = []
    unknown = [f for f in findings if f["status"] == "skip" and f.get("cannot_tell") and f.get("fix")]
    if unknown:
        out += ["<h2>Could not tell</h2>"] + [_finding(f) + _fix(f["fix"]) for f in unknown]
    errors = [f for f in findings if f["status"] == "error"]
    if errors:
        out += ["<h2>Checks that crashed</h2>"] + [_finding(f) for f in errors]
    for status, label in (("ok", "passed"), ("skip", "skipped, and why")):
        group = [f for f in findings if f["status"] == status]
        if group:
            out.append(f"<details><summary>{len(group)} check(s) {label}</summary>")
            out += [_finding(f) for f in group]
            out.append("</details>")
    return out or ['<p class="note">No check ran.</p>']


def _evidence(evidence: List[Dict]) -> str:
    if not evidence:
        return ""
    items = "".join(f'<li><code>{escape(e["source"])}</code>'
                    + (f'<pre>{escape(e["excerpt"].strip())}</pre>' if (e.get("excerpt") or "").strip() else "")
                    + "</li>" for e in evidence)
    return f'<ul class="evidence">{items}</ul>'


def fix_blocks(commands: List[str]) -> List[tuple]:
    """(caption, commands) blocks: a "# way N: ..." or "# or ..." comment starts a new alternative, so
    each can be copied on its own; other comments stay in their block (harmless when pasted)."""
    blocks: List[tuple] = [("", [])]
    for cmd in commands:
        if re.match(r"#\s*(way \d+\b|or\b)", cmd, re.IGNORECASE):
            blocks.append((cmd.lstrip("# ").strip(), []))
        else:
            blocks[-1][1].append(cmd)
    return [b for b in blocks if b[0] or b[1]]


def _finding(f: Dict) -> str:
    subject = f' <span class="subject">[{escape(f["subject"])}]</span>' if f.get("subject") else ""
    parts = [f'<article class="finding {f["status"]}" style="--c:{COLOURS[f["status"]]}">',
             f'<h3>{_glyph(f["status"])} <span class="id">{escape(f["check_id"])}</span> '
             f'{escape(f["title"])}{subject}</h3>']
    if f.get("detail"):
        parts.append(f'<p class="detail">{escape(f["detail"])}</p>')
    if f.get("evidence"):
        parts.append(_evidence(f["evidence"]))
    if f.get("traceback"):
        parts.append(f'<details><summary>traceback</summary><pre>{escape(f["traceback"])}</pre></details>')
    parts.append("</article>")
    return "\n".join(parts)


def _fix(fix: Dict) -> str:
    flags = "".join(f'<span class="flag">{t}</span>' for t, on in (("needs root", fix.get("needs_root")),
                                                                    ("needs a reboot", fix.get("needs_reboot"))) if on)
    html = [f'<div class="fix"><b>Fix:</b> {escape(fix.get("summary") or "")}{flags}']
    for caption, cmds in fix_blocks(list(fix.get("commands") or [])):
        if caption:
            html.append(f'<div class="note"><b>{escape(caption)}</b></div>')
        if cmds:
            html.append(f"<pre>{escape(chr(10).join(cmds))}</pre>")
    for link in fix.get("links") or []:
        html.append(f'<div class="note">see <a href="{escape(link)}" rel="noreferrer">{escape(link)}</a></div>')
    html.append("</div>")
    return "".join(html)


def _table(head: Optional[Iterable[str]], rows: Iterable[Iterable]) -> str:
    th = "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>" if head else ""
    trs = "".join("<tr>" + "".join(f"<td>{escape('' if c is None else str(c))}</td>" for c in r) + "</tr>"
                  for r in rows)
    return f"<table>{th}{trs}</table>"


def _gpus(gpus: List[Dict], why_none: Optional[str]) -> List[str]:
    out = ["<h2>GPUs</h2>"]
    if not gpus:
        return out + [f'<p class="note">No GPU was reported: {escape(why_none or "unknown reason")}</p>']
    rows = []
    for g in gpus:
        mem = f"{g['memory_total_mib']} MiB" if g.get("memory_total_mib") else None
        migs = len(g.get("mig_devices") or [])
        mig = (g.get("mig_mode") or "") + (f" ({migs} instances)" if migs else "")
        rows.append((g.get("index"), g.get("name"), g.get("uuid"), g.get("pci_bus_id"), mem,
                     g.get("compute_cap"), mig or None))
    return out + [_table(("#", "name", "UUID", "PCI bus", "memory", "compute capability", "MIG"), rows)]


def _visible(env: Dict[str, str], devices: Optional[Dict]) -> List[str]:
    out = ["<h2>CUDA_VISIBLE_DEVICES</h2>"]
    names = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES")
    out.append(_table(("variable", "value"), [(n, env[n] if n in env else "(not set)") for n in names]))
    if not devices:
        return out
    rows = [(v["cuda_index"], v["entry"] or "(all)", v["gpu_index"], v["name"], v["mig_uuid"] or v["uuid"])
            for v in devices["visible"]]
    out.append(_table(("CUDA index", "selected by", "nvidia-smi GPU", "name", "UUID"), rows))
    note = ORDER_NOTES.get(devices.get("order_source"))
    if note:
        out.append(f'<p class="note">{escape(note)}</p>')
    out += [f'<p class="note">{escape(p["message"])}</p>' for p in devices.get("problems") or []]
    return out


# Why the CUDA order shown above may not be certain (visible_devices.cuda_order).
ORDER_NOTES = {
    "compute_capability": "These GPUs differ in model and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers the "
                          "fastest first; gpudoctor ranked them by compute capability. Set "
                          "CUDA_DEVICE_ORDER=PCI_BUS_ID to make the order certain.",
    "unknown": "These GPUs differ in model but share a compute capability and CUDA_DEVICE_ORDER is not PCI_BUS_ID: "
               "which one CUDA numbers first cannot be told from what was recorded. Set "
               "CUDA_DEVICE_ORDER=PCI_BUS_ID to make the order certain.",
}


def _frameworks(fws: Dict[str, Dict]) -> List[str]:
    rows = []
    for name, fw in fws.items():
        if not fw.get("installed"):
            unknown = fw.get("installed") is None
            rows.append((name, None, None, (f"cannot tell: {fw.get('why')}" if unknown else fw.get("why"))
                         or "not installed"))
            continue
        cuda = fw.get("cuda") or ("CPU-only build" if name in ("torch", "tensorflow") else None)
        state = fw.get("import_error") and f"import fails: {fw['import_error']}"
        if not state and name == "torch":
            state = (f"GPU available, {fw.get('device_count')} device(s)" if fw.get("available")
                     else "no GPU usable")
        elif not state and name == "tensorflow":
            state = f"sees {fw.get('gpus', 0)} GPU(s)"
        elif not state:
            state = f"backend {fw.get('backend')}"
        rows.append((name, fw.get("version"), cuda, state))
    return ["<h2>Framework builds</h2>", _table(("framework", "version", "CUDA", "state"), rows)]


def _machine(m: Dict) -> List[str]:
    rows = [("system", m.get("os")), ("kernel", m.get("kernel")), ("container", m.get("container")),
            ("WSL", "yes" if m.get("wsl") else None), ("driver", m.get("driver_version") or "none found"),
            ("kernel module", m.get("kernel_module_version")),
            ("driver supports CUDA up to", m.get("cuda_driver_max")), ("nvcc", m.get("nvcc"))]
    rows += sorted((m.get("env") or {}).items())
    return ["<h2>Machine</h2>", _table(None, [r for r in rows if r[1] is not None])]
