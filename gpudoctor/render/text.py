"""The doctor-style terminal report: one line per check, evidence and fix under problems."""

from __future__ import annotations

from typing import List

from gpudoctor.findings import Finding, Status
from gpudoctor.render.style import Style
from gpudoctor.report import Report

INDENT = "    "


def render_machine(report: Report, style: Style) -> List[str]:
    m = report.machine
    where = f"replay of {report.source}" if report.source else "this machine"
    lines = [style.bold(f"gpudoctor: {m.get('hostname') or 'unknown host'} ({where})")]
    os_line = ", ".join(x for x in (m.get("os"), m.get("kernel") and f"kernel {m['kernel']}",
                                    m.get("container") and f"in a {m['container']} container",
                                    m.get("wsl") and "WSL") if x)
    if os_line:
        lines.append(_row("system", os_line))
    if m.get("driver_version"):
        cuda = f", supports CUDA up to {m['cuda_driver_max']}" if m.get("cuda_driver_max") else ""
        lines.append(_row("driver", f"{m['driver_version']}{cuda}"))
    else:
        lines.append(_row("driver", f"none found ({m.get('no_gpu_reason') or 'no NVIDIA driver answered'})"))
    for g in m.get("gpus") or []:
        mem = f", {g['memory_total_mib']} MiB" if g.get("memory_total_mib") else ""
        cc = f", compute {g['compute_cap']}" if g.get("compute_cap") else ""
        mig = ", MIG on" if g.get("mig_mode") == "Enabled" else ""
        lines.append(_row(f"gpu {g['index']}", f"{g.get('name') or 'unknown'}{mem}{cc}{mig}"))
    if m.get("nvcc"):
        lines.append(_row("nvcc", m["nvcc"]))
    frameworks = m.get("frameworks") or {}
    for name, fw in frameworks.items():
        if fw.get("installed"):
            lines.append(_row(name, _framework_line(name, fw)))
    py = m.get("python") or {}
    if py.get("path") and py.get("version") and not any(fw.get("installed") for fw in frameworks.values()):
        lines.append(_row("python", f"{py['path']} ({py['version']}): no torch, TensorFlow or JAX installed"))
    return lines


def _row(label: str, value: str) -> str:
    return f"  {label:<11}{value}"


def _framework_line(name: str, fw: dict) -> str:
    if fw.get("import_error"):
        return f"{fw.get('version') or ''} import fails: {fw['import_error']}".strip()
    version = fw.get("version") or "?"
    if name == "torch":
        if not fw.get("cuda"):
            return f"{version} (CPU-only build)"
        return f"{version} (CUDA {fw['cuda']}, {'GPU available' if fw.get('available') else 'no GPU usable'})"
    if name == "tensorflow":
        if not fw.get("cuda_build"):
            return f"{version} (CPU build)"
        return f"{version} (CUDA {fw.get('cuda')}, sees {fw.get('gpus', 0)} GPU(s))"
    return f"{version} (backend {fw.get('backend') or '?'})"


def render_finding(f: Finding, style: Style, verbose: bool) -> List[str]:
    subject = f" [{f.subject}]" if f.subject else ""
    lines = [f"{style.status(f.status)} {style.dim(f.check_id)} {f.title}{subject}"]
    problem = f.status in (Status.WARN, Status.FAIL, Status.ERROR)
    if f.detail and (problem or verbose):
        lines.append(f"{INDENT}{f.detail}")
    if problem or verbose:
        for ev in f.evidence:
            excerpt = ev.excerpt.strip().splitlines()
            lines.append(f"{INDENT}{style.dim('evidence:')} {ev.source}" + (f": {excerpt[0]}" if excerpt else ""))
            lines.extend(f"{INDENT}    {x}" for x in excerpt[1:6])
    if f.fix is not None and problem:
        flags = [t for t, on in (("needs root", f.fix.needs_root), ("needs a reboot", f.fix.needs_reboot)) if on]
        lines.append(f"{INDENT}{style.bold('fix:')} {f.fix.summary}" + (f" ({', '.join(flags)})" if flags else ""))
        lines.extend(f"{INDENT}    $ {cmd}" if not cmd.startswith("#") else f"{INDENT}    {cmd}"
                     for cmd in f.fix.commands)
        lines.extend(f"{INDENT}    see {link}" for link in f.fix.links[:3])
    if f.status is Status.ERROR and verbose and f.traceback:
        lines.extend(f"{INDENT}{x}" for x in f.traceback.rstrip().splitlines())
    return lines


def render(report: Report, style: Style, verbose: bool = False) -> str:
    lines = render_machine(report, style) + [""]
    for f in report.findings:
        if f.status is Status.SKIP and not verbose:
            continue
        lines.extend(render_finding(f, style, verbose))
    for p in report.plugin_problems:
        lines.append(f"{style.status(Status.WARN)} gpudoctor plugin {p.plugin}: {p.message}")
    lines += ["", summary_line(report, style)]
    return "\n".join(lines) + "\n"


def summary_line(report: Report, style: Style) -> str:
    c = report.counts()
    parts = [f"{c['ok']} ok", f"{c['warn']} warning{'s' * (c['warn'] != 1)}",
             f"{c['fail']} failure{'s' * (c['fail'] != 1)}"]
    if c["error"]:
        parts.append(f"{c['error']} check error{'s' * (c['error'] != 1)}")
    if c["skip"]:
        parts.append(f"{c['skip']} skipped (--verbose shows why)")
    verdict = ("No problems found." if not (c["fail"] or c["warn"] or c["error"])
               else "Problems found: the fixes are above.")
    return f"{style.bold('Summary:')} {', '.join(parts)}. {verdict}"
