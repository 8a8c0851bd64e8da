"""``explain`` output: terminal text (most likely diagnosis first) and JSON (gpudoctor.explain/5).

Schema 4 adds the vocabulary fallback: a diagnosis ``via`` "vocabulary" whose differential has a ``basis``.

Schema 2 adds, per diagnosis, ``differential`` (the ranked causes of a message the text alone
cannot decide, each with the command that tells it apart) and ``machine`` (the diagnosis
`gpudoctor check` reaches on the recorded machine), in place of 1's ``confirmed_by``."""

from __future__ import annotations

import json
import textwrap
from typing import Any, Dict, List

from gpudoctor.explain.values import display, jsonable
from gpudoctor.findings import Status
from gpudoctor.render.style import Style

SCHEMA = "gpudoctor.explain/5"
_CONFIDENCE = {"high": Status.FAIL, "medium": Status.WARN, "low": Status.SKIP}
_WIDTH = 100


def to_dict(result) -> Dict[str, Any]:
    ctx = result.context
    out = {
        "schema": SCHEMA,
        "inputs": result.inputs,
        "diagnoses": [d.to_dict() for d in result.diagnoses],
        "notes": [n.to_dict() for n in result.notes],
        "context": {"flags": sorted(ctx.flags),
                    "facts": {k: jsonable(v) for k, v in sorted(ctx.values.items())},
                    "sources": dict(sorted(ctx.sources.items()))},
        "warnings": list(result.warnings),
        "exit_code": result.exit_code,
    }
    if ctx.smi is not None:
        out["context"]["nvidia_smi"] = {"format": ctx.smi.format, "driver_version": ctx.smi.driver_version,
                                        "cuda_version": ctx.smi.cuda_version,
                                        "gpus": [g.name for g in ctx.smi.gpus]}
    return out


def dumps(result) -> str:
    return json.dumps(to_dict(result), indent=2, ensure_ascii=False) + "\n"


def _wrap(label: str, text: str, style: Style) -> List[str]:
    pad = " " * 15
    lines = textwrap.wrap(text, _WIDTH - len(pad)) or [""]
    return [f"    {style.dim(label.ljust(11))}{lines[0]}"] + [pad + line for line in lines[1:]]


def _lines(numbers: List[int], count: int) -> str:
    shown = ", ".join(str(n) for n in numbers[:8])
    more = count - min(len(numbers), 8)
    return shown + (f" (+{more} more)" if more > 0 else "")


def _diagnosis(d, style: Style) -> List[str]:
    head = f"{style.status(_CONFIDENCE[d.confidence])} {style.bold(d.family)}: {d.title}"
    out = [head + style.dim(f"   [{d.confidence}]")]
    where = f"{d.source}, line{'s' if len(d.lines) > 1 else ''} {_lines(d.lines, max(d.count, len(d.lines)))}"
    out += _wrap("signature", f"{d.id}" + (f" (also: {', '.join(d.also_matched)})" if d.also_matched else ""), style)
    out += _wrap("where", where, style)
    out += _wrap("excerpt", d.excerpt, style)
    if d.values:
        out += _wrap("values", " · ".join(f"{k} {display(v)}" for k, v in d.values.items()), style)
    if d.explanation:
        out += _wrap("why", " ".join(d.explanation), style)
    if d.machine:
        m = d.machine
        out += _wrap("machine", f"on this machine: {m['title']} (found by check {m['check']})", style)
    if d.fix is not None:
        out += _wrap("fix", d.fix.summary, style)
        for cmd in d.fix.commands:
            out.append(" " * 17 + cmd)
        flags = [x for x, on in (("needs root", d.fix.needs_root), ("needs a reboot", d.fix.needs_reboot)) if on]
        if flags:
            out.append(" " * 15 + style.dim("(" + ", ".join(flags) + ")"))
        for link in d.fix.links[:2]:
            out.append(" " * 15 + style.dim(link))
    if d.differential is not None:
        out += _differential(d.differential, style)
    return out


def _hanging(text: str, indent: int) -> List[str]:
    pad = " " * indent
    return textwrap.wrap(text, _WIDTH, initial_indent=pad, subsequent_indent=pad + "  ") or [pad]


def _differential(diff, style: Style) -> List[str]:
    """The ranked causes, each with its count among real threads, its clue or machine verdict, and its command."""
    if diff.basis is not None:
        head = (f"no known message matched; ranked by the text's words (how often each was the cause in "
                f"{diff.of} real threads with '{diff.basis}'):")
    else:
        head = (f"the message alone cannot decide; ranked by the rest of the text, then by how often each was "
                f"the cause in {diff.of} real threads with this message:")
    out = _wrap("causes", head, style)
    for n, c in enumerate(diff.candidates, 1):
        out += _hanging(f"{n}. {c.title} ({c.prior} of {diff.of})", 15)
        if c.clue:
            out += _hanging(f"clue: {c.clue}", 18)
        if c.verdict is not None and c.verdict.kind != "not_judged":
            out += _hanging(c.verdict.text, 18)
        out.append(" " * 18 + f"$ {c.tell_apart.command}")
        out += _hanging(f"-> {c.tell_apart.shows}", 20)
    return out


def _note(n, style: Style) -> List[str]:
    label = {"program_bug": "program bug", "cpu_only": "CPU only"}.get(n.kind, "harmless")
    out = [f"{style.status(Status.SKIP)} {style.bold(label)}: {n.title}"]
    out += _wrap("where", f"{n.source}, line {_lines(n.lines, len(n.lines))}", style)
    out += _wrap("excerpt", n.excerpt, style)
    out += _wrap("why", " ".join(n.explanation), style)
    return out


def render(result, style: Style) -> str:
    out: List[str] = []
    ctx = result.context
    if ctx.smi is not None:
        names = ", ".join(g.name for g in ctx.smi.gpus if g.name) or "no GPU rows"
        out.append(style.dim(f"pasted nvidia-smi: driver {ctx.smi.driver_version}, CUDA {ctx.smi.cuda_version}, {names}"))
    if ctx.flags:
        out.append(style.dim("context: " + ", ".join(sorted(ctx.flags))))
    for d in result.diagnoses:
        out += [""] + _diagnosis(d, style)
    for n in result.notes:
        out += [""] + _note(n, style)
    out.append("")
    out += [style.dim(f"{i['name']}: {i['stopped']}") for i in result.inputs if i.get("stopped")]
    if result.diagnoses:
        n = len(result.diagnoses)
        out.append(f"{n} diagnos{'is' if n == 1 else 'es'}, most likely first.")
    elif result.notes and any(n.kind == "program_bug" for n in result.notes):
        out.append("No environment problem found: this looks like a bug in the program, not the environment.")
    elif result.notes and any(n.kind == "cpu_only" for n in result.notes):
        out.append("No environment problem found: this is expected on a machine without a GPU. If you meant to use "
                   "one, run `gpudoctor check` on that machine.")
    else:
        out.append("No known GPU environment error found in the input. "
                   "Run `gpudoctor check` to examine this machine itself.")
    return "\n".join(out).lstrip("\n") + "\n"
