"""Text for a ``gpudoctor.memory/1`` plan document: a breakdown table, the GPUs, the ranked changes."""

from __future__ import annotations

from typing import Dict, List

from gpudoctor.memory.units import fmt_bytes, fmt_count

ROWS = (("weights_bytes", "weights"), ("gradients_bytes", "gradients"), ("optimizer_bytes", "optimizer states"),
        ("activations_bytes", "activations"), ("kv_cache_bytes", "KV cache"), ("context_bytes", "CUDA context"))


def table(rows: List[List[str]], right=()) -> List[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    cell = lambda i, c: c.rjust(widths[i]) if i in right else c.ljust(widths[i])  # noqa: E731
    return ["  " + "  ".join(cell(i, c) for i, c in enumerate(r)).rstrip() for r in rows]


def _headline(doc: Dict) -> str:
    s, m = doc["settings"], doc["model"]
    what = [f"{fmt_count(m['params'])} parameters ({m['source']})", s["mode"], s["dtype"]
            + (" mixed precision" if s["mixed_precision"] else "")]
    if s["mode"] == "training":
        what.append(s["optimizer"] + (f", LoRA rank {s['lora_rank']}" if s["lora_rank"] else "")
                    + (", gradient checkpointing" if s["grad_checkpointing"] else ""))
    what.append(f"batch {s['batch']} × {s['seq_len']} tokens")
    if s["gpus"] > 1:
        what.append(f"{s['gpus']} GPUs, ZeRO stage {s['zero']}")
    return "gpudoctor memory: " + ", ".join(what)


def _why(doc: Dict, key: str) -> str:
    s, m = doc["settings"], doc["model"]
    if key == "weights_bytes":
        return f"{fmt_count(m['params'])} × {s['dtype']}"
    if key == "optimizer_bytes" and s["mode"] == "training":
        return s["optimizer"] + (" + fp32 master weights" if s["mixed_precision"] and s["dtype"] not in ("fp32", "tf32")
                                 else "")
    if key == "activations_bytes" and doc["breakdown"][key]:
        return f"batch {s['batch']}, {s['seq_len']} tokens (formula below)"
    if key == "context_bytes":
        return doc["context_basis"]
    return ""


def _breakdown(doc: Dict) -> List[str]:
    rows = [[label, fmt_bytes(doc["breakdown"][key]), _why(doc, key)] for key, label in ROWS]
    rows.append(["total", fmt_bytes(doc["total_bytes"]), "per GPU" if doc["settings"]["gpus"] > 1 else ""])
    return table(rows, right=(1,))


def group_label(indexes: List[int], name: str) -> str:
    """"GPU 3 (A10)", "GPUs 0-7 (H100)", "GPUs 0, 2 (T4)": identical GPUs share one line."""
    if len(indexes) == 1:
        return f"GPU {indexes[0]} ({name})"
    run = indexes == list(range(indexes[0], indexes[0] + len(indexes)))
    return f"GPUs {indexes[0]}-{indexes[-1]} ({name})" if run else f"GPUs {', '.join(map(str, indexes))} ({name})"


def _grouped(gpus: List[Dict]) -> List[Dict]:
    groups: List[Dict] = []
    for g in gpus:
        same = {k: v for k, v in g.items() if k not in ("label", "index")}
        if groups and g["index"] is not None and groups[-1]["same"] == same:
            groups[-1]["indexes"].append(g["index"])
        else:
            groups.append({"same": same, "indexes": [g["index"]], "g": g})
    for grp in groups:
        if grp["g"]["index"] is not None:
            grp["g"] = dict(grp["g"], label=group_label(grp["indexes"], grp["g"]["name"] or "unknown GPU"))
    return [grp["g"] for grp in groups]


def _gpus(doc: Dict) -> List[str]:
    rows = [["GPU", "total", "in use", "context", "available", "needs", "fits", "headroom", "largest batch"]]
    for g in _grouped(doc["gpus"]):
        rows.append([g["label"] + (f" ×{g['count']}" if g["count"] > 1 else ""), fmt_bytes(g["total_bytes"]),
                     fmt_bytes(g["used_bytes"]), fmt_bytes(g["context_bytes"]), fmt_bytes(g["available_bytes"]),
                     fmt_bytes(g["need_bytes"]), "yes" if g["fits"] else "NO", fmt_bytes(g["headroom_bytes"]),
                     "-" if g["max_batch"] is None else str(g["max_batch"] or "none")])
    return table(rows, right=(1, 2, 3, 4, 5, 7, 8))


def _verdict(doc: Dict) -> str:
    n = doc["gpus_needed"]
    if doc["fits"] is None:
        return "No GPU to compare with: name one with --gpu (e.g. --gpu \"RTX 4090\") or --gpu-memory 24GiB."
    if doc["fits"]:
        return "It fits." if n == 1 else f"It fits on {n} of these GPUs."
    return "It does not fit." if n == 1 else f"It does not fit on {n} of these GPUs."


def _changes(doc: Dict) -> List[str]:
    lines = []
    for i, c in enumerate(doc["changes"], 1):
        after = "" if c["fits"] is None else ("  -> fits" if c["fits"] else "  -> still too big")
        lines.append(f"  {i}. {c['title']} ({c['flags']}): saves {fmt_bytes(c['saves_bytes'])}, "
                     f"needs {fmt_bytes(c['need_bytes'] + doc['breakdown']['context_bytes'])}{after}")
    return lines


def render_plan(doc: Dict) -> str:
    out = [_headline(doc), "", *_breakdown(doc), ""]
    if doc["gpus"]:
        out += [*_gpus(doc), ""]
    out.append(_verdict(doc))
    if doc["changes"] and doc["fits"] is not True:
        out += ["", "Changes, largest saving first (each alone, on one GPU):", *_changes(doc)]
    for title, key in (("Precision", "advice"), ("Formulas", "formulas"), ("Notes", "notes")):
        if doc[key]:
            out += ["", f"{title}:", *(f"  {line}" for line in doc[key])]
    return "\n".join(out) + "\n"
