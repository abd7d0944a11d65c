#!/usr/bin/python3
"""pytorch_ddp_buckets.py: the buckets PyTorch's own DDP builds for dtlab's models.

Builds dtlab's TinyGPT or MLP with the same parameters in the same registration
order (engine/src/core/ddp_buckets.cpp, parameterLayout), wraps it in
torch.nn.parallel.DistributedDataParallel on a one-rank Gloo group, runs two
training iterations, and prints what the Reducer reports through DDP's logging
data: the bucket sizes of the first iteration and those rebuilt after it (in
the order the gradients arrived). tests/unit/test_ddp_buckets.cpp holds the
table this prints for the shipped models; rerun it to regenerate the table.

Usage (needs python3-torch, which `tools/setup.sh bench` installs):
  tests/tools/pytorch_ddp_buckets.py tiny_gpt VOCAB CONTEXT D_MODEL LAYERS MLP_RATIO BUCKET_MB
  tests/tools/pytorch_ddp_buckets.py mlp HIDDEN1,HIDDEN2,... BUCKET_MB
Prints one line: initial=[bytes,...] rebuilt=[bytes,...] members=[[param index in ready order,...],...]
"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d, ratio):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ratio * d)
        self.fc2 = nn.Linear(ratio * d, d)
        self.heads = 4 if d % 4 == 0 else 1

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        h = self.heads
        q, k, v = (t.view(B, T, h, C // h).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (C // h) ** 0.5
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        y = att.masked_fill(mask, float("-inf")).softmax(-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab, context, d, layers, ratio):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, ratio) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.vocab, self.context = vocab, context

    def loss(self):
        idx = torch.randint(0, self.vocab, (2, self.context))
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(self.context))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln_f(x))
        return nn.functional.cross_entropy(logits.view(-1, self.vocab), idx.view(-1))


class Mlp(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        dims = [784] + hidden
        for i in range(len(hidden)):
            setattr(self, f"fc{i}", nn.Linear(dims[i], dims[i + 1]))
        self.out = nn.Linear(dims[-1], 10)
        self.layers = len(hidden)

    def loss(self):
        x = torch.randn(4, 784)
        for i in range(self.layers):
            x = torch.relu(getattr(self, f"fc{i}")(x))
        return nn.functional.cross_entropy(self.out(x), torch.randint(0, 10, (4,)))


class Wrapper(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self):
        return self.inner.loss()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if len(sys.argv) == 8 and sys.argv[1] == "tiny_gpt":
        inner = TinyGPT(*(int(a) for a in sys.argv[2:7]))
    elif len(sys.argv) == 4 and sys.argv[1] == "mlp":
        inner = Mlp([int(h) for h in sys.argv[2].split(",") if h])
    else:
        sys.exit(__doc__)
    bucket_mb = float(sys.argv[-1])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)
    model = nn.parallel.DistributedDataParallel(Wrapper(inner), bucket_cap_mb=bucket_mb)
    for _ in range(3):  # the rebuild happens at the 2nd forward; the 3rd iteration logs it
        model().backward()
    data = model._get_ddp_logging_data()
    initial = [int(b) for b in str(data.get("bucket_sizes", "")).split(",") if b.strip()]
    rebuilt = [int(b) for b in str(data.get("rebuilt_bucket_sizes", "")).split(",") if b.strip()]
    members = [[int(i) for i in b.split()] for b in str(data.get("rebuilt_per_bucket_param_indices", "")).split(",")]
    print(f"initial={initial} rebuilt={rebuilt} members={members}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
