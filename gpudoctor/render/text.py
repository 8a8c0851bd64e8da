"""The doctor-style terminal report: the diagnoses first, each with its evidence, the findings it
explains and one fix; then the checks that passed, one line each. Everything shown (grouping,
order, which fix) comes from the report; this module only formats it."""

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
        elif fw.get("installed") is None and fw.get("why") and "not probed" not in fw["why"]:
            lines.append(_row(name, f"cannot tell: {fw['why']}"))
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


def render_fix(fix, style: Style, indent: str = INDENT) -> List[str]:
    flags = [t for t, on in (("needs root", fix.needs_root), ("needs a reboot", fix.needs_reboot)) if on]
    lines = [f"{indent}{style.bold('fix:')} {fix.summary}" + (f" ({', '.join(flags)})" if flags else "")]
    lines.extend(f"{indent}    $ {cmd}" if not cmd.startswith("#") else f"{indent}    {cmd}" for cmd in fix.commands)
    lines.extend(f"{indent}    see {link}" for link in fix.links[:3])
    return lines


def _evidence(f: Finding, style: Style, indent: str = INDENT) -> List[str]:
    lines = []
    for ev in f.evidence:
        excerpt = ev.excerpt.strip().splitlines()
        lines.append(f"{indent}{style.dim('evidence:')} {ev.source}" + (f": {excerpt[0]}" if excerpt else ""))
        lines.extend(f"{indent}    {x}" for x in excerpt[1:6])
    return lines


def render_diagnosis(n: int, d, style: Style, verbose: bool) -> List[str]:
    """One root cause: its title, what it is, its evidence, the findings it explains, one fix."""
    from gpudoctor.knowledge.families import family

    subject = f" [{d.subject}]" if d.subject else ""
    lines = [f"{style.status(d.status)} {style.bold(f'{n}.')} {d.title}{subject}",
             f"{INDENT}{style.dim(f'{family(d.family).title} ({d.family}), found by {d.cause.check_id}')}"]
    if d.cause.detail:
        lines.append(f"{INDENT}{d.cause.detail}")
    lines.extend(_evidence(d.cause, style))
    if d.symptoms:
        lines.append(f"{INDENT}{style.dim('this also explains:')}")
        for s in d.symptoms:
            lines.append(f"{INDENT}  {style.status(s.status)} {style.dim(s.check_id)} {s.title}")
            if verbose:
                lines.extend(_evidence(s, style, INDENT + "      "))
    if d.fix is not None:
        lines.extend(render_fix(d.fix, style))
    return lines


def render_finding(f: Finding, style: Style, verbose: bool) -> List[str]:
    subject = f" [{f.subject}]" if f.subject else ""
    lines = [f"{style.status(f.status)} {style.dim(f.check_id)} {f.title}{subject}"]
    problem = f.status in (Status.WARN, Status.FAIL, Status.ERROR)
    if f.detail and (problem or verbose):
        lines.append(f"{INDENT}{f.detail}")
    if problem or verbose:
        lines.extend(_evidence(f, style))
    if f.fix is not None and problem:
        lines.extend(render_fix(f.fix, style))
    if f.status is Status.ERROR and verbose and f.traceback:
        lines.extend(f"{INDENT}{x}" for x in f.traceback.rstrip().splitlines())
    return lines


def render(report: Report, style: Style, verbose: bool = False) -> str:
    lines = render_machine(report, style) + [""]
    if report.diagnoses:
        count = len(report.diagnoses)
        lines.append(style.bold(f"{count} problem{'s' * (count != 1)} found, most serious first:"))
        for n, d in enumerate(report.diagnoses, 1):
            lines += [""] + render_diagnosis(n, d, style, verbose)
        lines.append("")
    unknown = report.could_not_tell()
    if unknown:
        lines.append(style.bold("Could not tell:"))
        for f in unknown:
            lines.extend(render_finding(f, style, verbose=True))
            if f.fix is not None:
                lines.extend(render_fix(f.fix, style))
        lines.append("")
    errors = [f for f in report.findings if f.status is Status.ERROR]
    for f in errors:
        lines.extend(render_finding(f, style, verbose))
    passed = report.passed()
    if passed:
        lines.append(style.bold("Passed:") if report.diagnoses or errors else style.bold("Checks:"))
        for f in passed:
            lines.extend(render_finding(f, style, verbose))
    if verbose:
        skipped = [f for f in report.findings if f.status is Status.SKIP and f not in unknown]
        if skipped:
            lines.append(style.bold("Skipped:"))
            for f in skipped:
                lines.extend(render_finding(f, style, verbose))
    for p in report.plugin_problems:
        lines.append(f"{style.status(Status.WARN)} gpudoctor plugin {p.plugin}: {p.message}")
    lines += ["", summary_line(report, style)]
    return "\n".join(lines) + "\n"


def summary_line(report: Report, style: Style) -> str:
    c = report.counts()
    n = len(report.diagnoses)
    checks = " and ".join(x for x in (f"{c['fail']} check{'s' * (c['fail'] != 1)} failed" if c["fail"] else "",
                                       f"{c['warn']} warned" if c["warn"] else "") if x)
    lead = f"{n} problem{'s' * (n != 1)} ({checks})" if n else "no problems"
    parts = [lead, f"{c['ok']} passed"]
    if c["error"]:
        parts.append(f"{c['error']} check error{'s' * (c['error'] != 1)}")
    if c["skip"]:
        parts.append(f"{c['skip']} skipped" + ("" if "--verbose" in lead else " (--verbose shows why)"))
    verdict = ("No problems found." if not (n or c["error"])
               else "Fix the problems in the order shown: one fix each." if n else "A check failed to run.")
    return f"{style.bold('Summary:')} {', '.join(parts)}. {verdict}"
