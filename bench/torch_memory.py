"""PyTorch's MLP 784-512-512-10 training step (batch 128) measured like bench/bench_memory.cpp: one
warm-up step (which also creates the optimizer state), gradients released (zero_grad(set_to_none),
as each step does first), baseline = the live heap bytes, then the high-water mark over 20 steps, as
counted by bench/memshim.c (preloaded). Usage:
  LD_PRELOAD=memshim.so python3 bench/torch_memory.py sgd|adam
"""
import ctypes
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(2)
shim = ctypes.CDLL(None)
for f in ("memshim_live", "memshim_peak", "memshim_reset_peak"):
    getattr(shim, f).restype = ctypes.c_long

opt_name = sys.argv[1]
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3) if opt_name == "adam" else torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.rand(128, 784)
y = torch.randint(0, 10, (128,))


def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


step()
opt.zero_grad(set_to_none=True)
base = shim.memshim_reset_peak()
for _ in range(20):
    loss = step()
print(json.dumps({"name": f"torch_mlp_step_peak_heap_{opt_name}",
                  "value": round((shim.memshim_peak() - base) / 1048576.0, 4), "unit": "MiB",
                  "loss": float(loss)}))
