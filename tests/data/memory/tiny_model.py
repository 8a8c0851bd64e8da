"""Small nn.Module callables for `gpudoctor memory --torch-module` tests (built on the meta device)."""

import torch.nn as nn


class TinyNet(nn.Module):
    """64,000 + 16,640 + 2,570 + 128 + 224 = 83,562 parameters."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 64)       # 64,000
        self.fc1 = nn.Linear(64, 256)           # 16,384 + 256
        self.fc2 = nn.Linear(256, 10)           # 2,560 + 10
        self.norm = nn.LayerNorm(64)            # 128
        self.conv = nn.Conv2d(3, 8, 3)          # 216 + 8


def build():
    return TinyNet()


def build_frozen_embedding():
    model = TinyNet()
    model.emb.weight.requires_grad_(False)
    return model


def build_huge():
    """10,000,100,000 parameters: 40 GB in fp32 if it were allocated for real."""
    return nn.Linear(100_000, 100_000)


def not_a_module():
    return 42


def broken():
    raise RuntimeError("weights file missing")


MODULE = TinyNet        # a class is a callable too


def build_noting_dynamo():
    """TinyNet, in a class whose name says whether building it imported torch._dynamo (2 s of CPU)."""
    import sys

    TinyNet()
    name = "DynamoImported" if "torch._dynamo" in sys.modules else "NoDynamo"
    return type(name, (TinyNet,), {})()
