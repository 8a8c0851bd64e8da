"""Measure `gpudoctor memory`'s plan against PyTorch on a CUDA GPU: a few training steps of small GPT-2-shaped models.

    python bench/memory_bench.py            # the table; on a machine without a CUDA GPU, the plan side only
    python bench/memory_bench.py --json     # the rows as JSON
    python bench/memory_bench.py --fake     # also PyTorch's MemTracker estimate on fake tensors (no GPU needed)

Each case is a GPT-2 block stack written here in plain PyTorch (LayerNorm, fused qkv, softmax
attention with dropout, GELU MLP, tied head - the layer Korthikanti et al. count), with the
exact parameter count gpudoctor computes from the same config. Per case, after the first
optimizer step (gradients kept): torch.cuda.memory_allocated() against the plan's weights +
gradients + optimizer states (goal: within 10%); over three more steps,
torch.cuda.max_memory_allocated() against the plan's total without the CUDA context (goal:
within 25%). Exit 1 if a measured case misses a goal.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpudoctor.memory.hf_config import spec_from_config  # noqa: E402
from gpudoctor.memory.plan import Settings, make_plan  # noqa: E402

CASES = [  # name, GPT-2 config, settings
    ("L4 h512 fp32 b8 s512", dict(n_layer=4, n_embd=512, n_head=8, vocab_size=8192, n_positions=512),
     Settings(train=True, optimizer="adamw", batch=8, seq_len=512)),
    ("L4 h512 amp-bf16 b8 s512", dict(n_layer=4, n_embd=512, n_head=8, vocab_size=8192, n_positions=512),
     Settings(train=True, optimizer="adamw", mixed_precision=True, batch=8, seq_len=512)),
    ("L4 h512 fp32 ckpt b8 s512", dict(n_layer=4, n_embd=512, n_head=8, vocab_size=8192, n_positions=512),
     Settings(train=True, optimizer="adamw", grad_checkpointing=True, batch=8, seq_len=512)),
    ("L6 h768 fp32 sgd b4 s256", dict(n_layer=6, n_embd=768, n_head=12, vocab_size=16384, n_positions=256),
     Settings(train=True, optimizer="momentum", batch=4, seq_len=256)),
]
STATE_GOAL, TOTAL_GOAL = 0.10, 0.25


def plan_side(cfg, settings):
    spec = spec_from_config(dict(cfg, model_type="gpt2"))
    plan = make_plan(spec, settings)
    b = plan.breakdown
    return spec, plan, b["weights_bytes"] + b["gradients_bytes"] + b["optimizer_bytes"], plan.model_bytes


def build_model(torch, cfg):
    nn, F = torch.nn, torch.nn.functional
    h, heads = cfg["n_embd"], cfg["n_head"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.c_fc, self.mlp_proj = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
            q, k, v = (t.view(b, s, heads, h // heads).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / (h // heads) ** 0.5
            att = att.masked_fill(torch.ones(s, s, device=x.device, dtype=torch.bool).triu(1), float("-inf"))
            att = F.dropout(att.softmax(-1), 0.1, self.training)
            y = (att @ v).transpose(1, 2).reshape(b, s, h)
            x = x + F.dropout(self.c_proj(y), 0.1, self.training)
            return x + F.dropout(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))), 0.1, self.training)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(cfg["vocab_size"], h), nn.Embedding(cfg["n_positions"], h)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg["n_layer"]))
            self.ln_f = nn.LayerNorm(h)
            self.checkpoint = False

        def forward(self, ids):
            x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
            for block in self.blocks:
                x = (torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) if self.checkpoint
                     else block(x))
            return self.ln_f(x) @ self.wte.weight.t()          # tied head, as GPT-2

    return GPT()


def measure(torch, cfg, settings):
    torch.cuda.empty_cache()
    warm = torch.ones(64, 64, device="cuda", requires_grad=True)
    (warm @ warm).sum().backward()           # cuBLAS's workspace is allocated here, before the baseline
    del warm
    base = torch.cuda.memory_allocated()
    model = build_model(torch, cfg).cuda()
    model.checkpoint = settings.grad_checkpointing
    opt = (torch.optim.AdamW(model.parameters()) if settings.optimizer == "adamw"
           else torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    ids = torch.randint(0, cfg["vocab_size"], (settings.batch, settings.seq_len), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=settings.mixed_precision):
            logits = model(ids)
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, cfg["vocab_size"]), ids.view(-1))
        loss.backward()
        opt.step()

    step()
    torch.cuda.synchronize()
    states = torch.cuda.memory_allocated() - base - ids.numel() * ids.element_size()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    params = sum(p.numel() for p in model.parameters())
    return params, states, peak


def fake_peak(torch, cfg, settings):
    """PyTorch's own estimate without a GPU: MemTracker over fake CPU tensors (a private API, torch 2.5+)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker

    with FakeTensorMode():
        model = build_model(torch, cfg)
        model.checkpoint = settings.grad_checkpointing
        opt = (torch.optim.AdamW(model.parameters()) if settings.optimizer == "adamw"
               else torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
        ids = torch.randint(0, cfg["vocab_size"], (settings.batch, settings.seq_len))
        tracker = MemTracker()
        tracker.track_external(model, opt)
        with tracker:
            for _ in range(2):
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=settings.mixed_precision):
                    logits = model(ids)
                torch.nn.functional.cross_entropy(logits.float().view(-1, cfg["vocab_size"]), ids.view(-1)).backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                tracker.reset_mod_stats()
        return tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]


def _torch():
    try:
        import torch
    except ImportError as exc:
        return None, f"torch cannot be imported ({exc})"
    if not torch.cuda.is_available():
        return None, f"no CUDA GPU here (torch {torch.__version__}: torch.cuda.is_available() is False)"
    return torch, f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"


def run_case(torch, name, cfg, settings, fake=None):
    spec, plan, plan_states, plan_total = plan_side(cfg, settings)
    row = {"case": name, "params": spec.params, "plan_states": plan_states, "plan_total": plan_total,
           "formula": plan.formulas[0]}
    if fake is not None:
        row["fake_peak"] = fake_peak(fake, cfg, settings)
        row["fake_error"] = plan_total / row["fake_peak"] - 1
    if torch is not None:
        params, states, peak = measure(torch, cfg, settings)
        assert params == spec.params, f"{name}: the bench model has {params} parameters, the plan {spec.params}"
        row.update(measured_states=states, measured_peak=peak, states_error=plan_states / states - 1,
                   total_error=plan_total / peak - 1)
    return row


def _mib(n):
    return f"{n / 2 ** 20:9.1f}"


def print_table(rows, where, measured):
    print(f"gpudoctor memory plan vs torch.cuda on {where}")
    head = f"{'case':28} {'params':>10} {'plan states':>12} {'measured':>9} {'err':>6} {'plan total':>11} " \
           f"{'peak':>9} {'err':>6}"
    print(head + "\n" + "-" * len(head))
    for r in rows:
        m = (f"{_mib(r['measured_states'])} {r['states_error']:+6.1%}", f"{_mib(r['measured_peak'])} "
             f"{r['total_error']:+6.1%}") if measured else ("  skipped    ", "  skipped    ")
        print(f"{r['case']:28} {r['params']:>10,} {_mib(r['plan_states']):>12} {m[0]} {_mib(r['plan_total']):>11} "
              f"{m[1]}")
    print("MiB; err = plan / measured - 1; goals: states within 10%, total within 25%")
    if rows and "fake_peak" in rows[0]:
        print("\nWithout a GPU: PyTorch's MemTracker over fake tensors (peak of two steps) against the plan's total")
        for r in rows:
            print(f"{r['case']:28} plan {_mib(r['plan_total'])}  MemTracker {_mib(r['fake_peak'])}  "
                  f"err {r['fake_error']:+6.1%}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--fake", action="store_true", help="also estimate the peaks with PyTorch's MemTracker on fake "
                                                        "CPU tensors (no GPU needed; a private torch API)")
    args = ap.parse_args(argv)
    torch, where = _torch()
    fake = __import__("torch") if args.fake else None
    rows = [run_case(torch, *case, fake=fake) for case in CASES]
    if args.json:
        print(json.dumps({"device": where, "measured": torch is not None, "rows": rows}, indent=2))
    else:
        print_table(rows, where, torch is not None)
        if torch is None:
            print(f"Skipped the measurement: {where}. The plan side above ran; run this on a CUDA GPU to compare.")
    missed = [r["case"] for r in rows if torch is not None and
              (abs(r["states_error"]) > STATE_GOAL or abs(r["total_error"]) > TOTAL_GOAL)]
    if missed:
        print("missed the goal: " + ", ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
