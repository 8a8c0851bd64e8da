"""Assemble the ``gpudoctor.memory/1`` document: the plan, its judgement per GPU, the ranked changes.

The document is the result; the text renderer (``render``) only formats it, and the exit
code follows ``fits``. Sizes are bytes (integers); per GPU, when the job spans several.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Dict, List, Optional

from gpudoctor.memory import changes as chg
from gpudoctor.memory import fit
from gpudoctor.memory.model import ModelSpec
from gpudoctor.memory.plan import Plan, Settings, make_plan
from gpudoctor.memory.targets import context_for
from gpudoctor.memory.units import MIB

SCHEMA = "gpudoctor.memory/1"


def _model(spec: ModelSpec) -> Dict:
    return {"params": spec.params, "trainable_params": spec.trainable_params, "source": spec.source,
            "shape": asdict(spec.transformer) if spec.transformer else None}


def _gpu(v: fit.Verdict) -> Dict:
    t = v.target
    return {"label": t.label, "index": t.index, "name": t.name, "count": t.count, "compute_cap": t.compute_cap,
            "architecture": t.architecture, "source": t.source, "total_bytes": t.total_bytes,
            "used_bytes": t.used_bytes, "context_bytes": round(v.context.mib * MIB),
            "context_basis": v.context.basis, "context_source": v.context.source,
            "available_bytes": round(v.available_bytes), "need_bytes": round(v.need_bytes + v.context.mib * MIB),
            "fits": v.fits, "headroom_bytes": round(v.headroom_bytes), "max_batch": v.max_batch}


def build(spec: ModelSpec, settings: Settings, targets: List[fit.GpuTarget], lazy: bool, lazy_why: str,
          measured_context_mib: Optional[float] = None) -> Dict:
    plan = make_plan(spec, settings)
    verdicts = [fit.judge(plan, t, context_for(t.architecture, lazy, lazy_why, measured_context_mib))
                for t in targets]
    decide = fit.binding(verdicts, settings.gpus)
    context = decide.context if decide else context_for(None, lazy, lazy_why, measured_context_mib)
    breakdown = {k: round(v) for k, v in plan.breakdown.items()}
    breakdown["context_bytes"] = round(context.mib * MIB)

    def fits_after(p: Plan) -> Optional[bool]:
        return None if decide is None else p.model_bytes <= decide.available_bytes

    cc = decide.target.compute_cap if decide else None
    ranked = chg.rank(spec, settings, plan, cc, fits_after)
    return {"schema": SCHEMA, "model": _model(spec), "settings": _settings(settings, plan),
            "breakdown": breakdown, "total_bytes": sum(breakdown.values()),
            "per_sample_bytes": round(plan.per_sample), "context_basis": context.basis,
            "formulas": plan.formulas, "notes": plan.notes + list(spec.notes),
            "gpus": [_gpu(v) for v in verdicts], "fits": fit.fits_all(verdicts, settings.gpus),
            "gpus_needed": settings.gpus, "changes": [_change(c) for c in ranked],
            "advice": _advice(settings, verdicts)}


def _settings(s: Settings, plan: Plan) -> Dict:
    d = asdict(s)
    d["seq_len"] = plan.seq_len
    d["mode"] = "training" if s.train else "inference"
    return d


def _change(c: chg.Change) -> Dict:
    return {"id": c.id, "title": c.title, "flags": c.flags, "saves_bytes": round(c.saves_bytes),
            "need_bytes": round(c.need_bytes), "fits": c.fits}


def _advice(s: Settings, verdicts: List[fit.Verdict]) -> List[str]:
    seen, out = set(), []
    for v in verdicts:
        for line in chg.precision_advice(s, v.target.compute_cap, v.target.label):
            key = line.split(": ", 1)[1]
            if key not in seen:
                seen.add(key)
                out.append(line)
    return out

