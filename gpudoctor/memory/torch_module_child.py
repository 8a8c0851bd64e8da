"""Build MODULE:CALLABLE on PyTorch's meta device and print its parameter shapes as one JSON line.

Run by ``gpudoctor memory --torch-module`` as ``python -c <this file> MODULE:CALLABLE`` in a
child of the user's interpreter, with CUDA_VISIBLE_DEVICES empty: under ``torch.device("meta")``
parameters have shapes and dtypes but no storage, so even a 70B model costs no memory.
Standard library and torch only; gpudoctor itself is not importable there.
"""

import contextlib
import importlib
import json
import sys

MARKER = "GPUDOCTOR-MODULE-JSON:"
# torch.nn.init's functions, which fill a parameter in place and return it. On the meta device there is
# nothing to fill, yet torch runs them through its Python reference ops, whose first call imports
# torch._dynamo (about 2 s of CPU): skipped while the model is built, as transformers' no_init_weights does.
INIT_FUNCTIONS = ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
                  "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
                  "sparse_")


def _emit(payload):
    print(MARKER + json.dumps(payload, default=str))


def _build(target):
    # The user's module first: a misspelt MODULE:CALLABLE is answered at once, not after torch's import
    # (about 2 s of CPU); a module that builds models imports torch itself anyway.
    module_name, _, attr = target.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    import torch

    with torch.device("meta"), _no_init(torch.nn.init):
        model = obj() if callable(obj) and not isinstance(obj, torch.nn.Module) else obj
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{target} returned {type(model).__name__}, not a torch.nn.Module")
    return torch, model


@contextlib.contextmanager
def _no_init(init):
    """torch.nn.init's fill functions as no-ops (each returns its tensor untouched), restored after."""
    saved = {name: getattr(init, name) for name in INIT_FUNCTIONS if hasattr(init, name)}
    for name in saved:
        setattr(init, name, lambda tensor, *args, **kwargs: tensor)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(init, name, fn)


def _describe(torch, model):
    params = list(model.parameters())
    config = getattr(model, "config", None)
    return {
        "torch": torch.__version__,
        "class": type(model).__name__,
        "params": sum(p.numel() for p in params),
        "trainable": sum(p.numel() for p in params if p.requires_grad),
        "matrices": [list(p.shape) for p in params if p.dim() == 2],
        "vector_params": sum(p.numel() for p in params if p.dim() != 2 and p.dim() <= 1),
        "other_params": sum(p.numel() for p in params if p.dim() > 2),
        "off_meta": sum(p.numel() for p in params if p.device.type != "meta"),
        "dtypes": sorted({str(p.dtype).replace("torch.", "") for p in params}),
        "buffers": sum(b.numel() * b.element_size() for b in model.buffers()),
        "config": config.to_dict() if hasattr(config, "to_dict") else None,
    }


def main(argv):
    try:
        torch, model = _build(argv[1])
        _emit(_describe(torch, model))
    except BaseException as exc:  # the user's code: whatever it raises is the answer
        _emit({"error": {"type": type(exc).__name__, "message": str(exc)[:2000]}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
