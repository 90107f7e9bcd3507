"""PyTorch's peer of the main job for bench/run_load.sh: the MLP 784-512-512-10 trained with Adam
(lr 1e-3, batch 128) on Fashion-MNIST, one warm-up epoch then `--epochs` timed ones; prints the
seconds of each timed epoch, one per line."""
import argparse, gzip, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()
torch.set_num_threads(2)
torch.manual_seed(0)

def idx(path):
    raw = gzip.open(path).read()
    nd = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * nd).reshape(dims)

d = "/usr/share/datasets/fashion-mnist"
x = torch.from_numpy(idx(f"{d}/train-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255.0)
y = torch.from_numpy(idx(f"{d}/train-labels-idx1-ubyte.gz").astype(np.int64))
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

def epoch():
    perm = torch.randperm(x.shape[0])
    for i in range(0, x.shape[0] - 127, 128):
        b = perm[i:i + 128]
        opt.zero_grad()
        F.cross_entropy(model(x[b]), y[b]).backward()
        opt.step()

epoch()
for _ in range(args.epochs):
    t0 = time.perf_counter()
    epoch()
    print(f"{time.perf_counter() - t0:.4f}", flush=True)
