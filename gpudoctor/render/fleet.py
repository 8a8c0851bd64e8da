"""The fleet summary as terminal text: problems by check, version spread, outliers."""

from __future__ import annotations

from typing import Dict, List

from gpudoctor.findings import Status
from gpudoctor.render.style import Style

SPREAD_LABELS = (("driver_version", "driver"), ("cuda_driver_max", "CUDA (driver)"),
                 ("gpu_count", "GPUs per node"), ("gpu_model", "GPU model"), ("torch", "torch"))
ATTRIBUTE_LABELS = {"driver": "driver", "cuda": "CUDA", "gpus": "GPUs", "torch": "torch"}


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _counts(values: Dict[str, int], limit: int = 5) -> str:
    items = list(values.items())
    shown = "  ".join(f"{v} ({n})" for v, n in items[:limit])
    return shown + (f"  +{len(items) - limit} more" if len(items) > limit else "")


def render(summary: Dict, style: Style, limit: int = 20) -> str:
    s = summary["status"]
    lines = [style.bold(f"{summary['nodes']} nodes: {s['ok']} ok, {s['warn']} warn, {s['error']} error, "
                        f"{s['fail']} fail")]
    count = summary.get("unreadable_count", len(summary["unreadable"]))
    if count:
        first = summary["unreadable"][0] if summary["unreadable"] else {}
        where = f"; first: {first['source']} line {first.get('line', '?')}: {first['reason']}" if first else ""
        lines.append(style.dim(f"{count} input stretch(es) skipped (not a readable gpudoctor report{where}); "
                               "--json names them"))
    if summary["duplicates"]:
        lines.append(style.dim(f"{len(summary['duplicates'])} host(s) reported more than once; "
                               "the last report counts"))
    lines += ["", style.bold("Problems")] + _problems(summary["problems"], style, limit)
    lines += ["", style.bold("Versions")]
    for key, label in SPREAD_LABELS:
        lines.append(f"  {label:<15} {_counts(summary['spread'][key])}")
    lines += ["", style.bold("Outliers") + style.dim(" (differ from most nodes with the same GPU model)")]
    lines += _outliers(summary["outliers"], limit)
    return "\n".join(lines) + "\n"


def _problems(groups: List[Dict], style: Style, limit: int) -> List[str]:
    if not groups:
        return ["  none"]
    out = []
    for g in groups[:limit]:
        title = g["example"] + (f" (+{g['variants'] - 1} similar)" if g["variants"] > 1 else "")
        out.append(f"  {style.status(Status(g['status']))} {g['check_id']:<7} {_cut(title, 64):<64} "
                   f"{g['count']:>6}  {_cut(g['hosts'], 48)}")
    if len(groups) > limit:
        out.append(f"  ... {len(groups) - limit} more groups (--limit, or --json for all)")
    return out


def _outliers(rows: List[Dict], limit: int) -> List[str]:
    """One line per (GPU model, attribute, odd value): how many nodes, which, and the majority."""
    if not rows:
        return ["  none"]
    from gpudoctor.fleet.summary import hostlist

    groups: Dict[tuple, List[str]] = {}
    for o in rows:
        key = (o["model"], o["attribute"], o["value"], o["majority"], o["majority_count"], o["peers"])
        groups.setdefault(key, []).append(o["host"])
    out = []
    for (model, attr, value, majority, count, peers), hosts in list(groups.items())[:limit]:
        shown = "none" if value is None else value
        out.append(f"  {ATTRIBUTE_LABELS[attr]} {shown} on {len(hosts)} node(s): {_cut(hostlist(hosts), 60)}"
                   f"  (most {model} nodes: {'none' if majority is None else majority}, {count} of {peers})")
    if len(groups) > limit:
        out.append(f"  ... {len(groups) - limit} more (--limit, or --json for all)")
    return out
