#!/usr/bin/env python3
"""The main job from Python: the seeds' MLP (784-512-512-10) or the CNN on Fashion-MNIST with graft.nn,
graft.optim and a jitted training step (the C++ job is examples/train_fashion_mnist.cpp).

    python3 examples/train_fashion_mnist.py --model mlp --epochs 5
"""
import argparse
import os
import sys
import time

import numpy as np

import graft as gf
import graft.numpy as gnp
from graft import nn, optim


def mlp():
    net = nn.MLP([784, 512, 512, 10])
    return net.init, lambda p, x, key: net(p, x), (784,)


def cnn(rate):
    c1, c2 = nn.Conv2d(1, 32, 3), nn.Conv2d(32, 64, 3)
    d1, d2 = nn.Linear(1600, 128), nn.Linear(128, 10)

    def init(key):
        k = gf.random.split(key, 4)
        return {"conv1": c1.init(k[0]), "conv2": c2.init(k[1]), "dense1": d1.init(k[2]), "dense2": d2.init(k[3])}

    def apply(p, x, key):
        h = nn.max_pool2d(nn.relu(c1(p["conv1"], x)), (2, 2))
        h = nn.max_pool2d(nn.relu(c2(p["conv2"], h)), (2, 2))
        h = nn.relu(d1(p["dense1"], h.reshape(h.shape[0], -1)))
        if key is not None and rate > 0:
            h = nn.dropout(key, h, rate)
        return d2(p["dense2"], h)

    return init, apply, (1, 28, 28)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=None, help="128 for the MLP, 32 for the CNN")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--schedule", choices=["cosine", "constant"], default="cosine")
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images only")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--out", default=None, help="where the parameters go (default runs/python-<model>)")
    a = ap.parse_args()
    batch = a.batch_size or (128 if a.model == "mlp" else 32)
    if a.epochs < 1 or batch < 1 or not a.lr > 0:
        sys.exit("error: --epochs, --batch-size and --lr must be positive")

    ds = gf.data.load_fashion_mnist(a.data)
    train_u8, train_y = np.asarray(ds["train_images"]), np.asarray(ds["train_labels"])
    if a.limit:
        train_u8, train_y = train_u8[:a.limit], train_y[:a.limit]
    init, apply, shape = mlp() if a.model == "mlp" else cnn(a.dropout)
    # pixels scaled to [0, 1], standardized with the training set's mean and deviation
    train01 = train_u8.astype(np.float32) / 255.0
    mean, std = train01.mean(), train01.std()
    prep = lambda u8: ((u8.astype(np.float32) / 255.0 - mean) / std).reshape((len(u8),) + shape)
    x_train, x_test = prep(train_u8), prep(np.asarray(ds["test_images"]))
    y_test = np.asarray(ds["test_labels"])
    n = len(x_train)
    if batch > n:
        sys.exit(f"error: --batch-size {batch} is larger than the training set ({n} images)")
    steps = n // batch
    root = gf.random.key(a.seed)
    params = init(gf.random.fold_in(root, 0))
    lr = optim.cosine_decay(a.lr, a.epochs * steps) if a.schedule == "cosine" else a.lr
    opt = optim.adam(lr)
    state = opt.init(params)
    print(f"Fashion-MNIST: {n} training / {len(x_test)} test images; model {a.model} "
          f"({nn.num_params(params)} parameters), adam lr={a.lr:g} ({a.schedule}), batch {batch}, seed {a.seed}")

    def train_step(p, s, x, y, key):
        loss, grads = gf.value_and_grad(lambda q: nn.cross_entropy(apply(q, x, key), y))(p)
        updates, s = opt.update(grads, s, p)
        return optim.apply_updates(p, updates), s, loss

    step = gf.jit(train_step, donate_argnums=(0, 1))
    correct = gf.jit(lambda p, x, y: gnp.sum(gnp.argmax(apply(p, x, None), 1) == y))
    for epoch in range(1, a.epochs + 1):
        order = np.asarray(gf.random.permutation(gf.random.fold_in(root, epoch), n))
        t0 = time.perf_counter()
        total = 0.0
        for i in range(steps):
            idx = order[i * batch:(i + 1) * batch]
            key = gf.random.fold_in(gf.random.fold_in(root, 1000 + epoch), i)
            params, state, loss = step(params, state, x_train[idx], train_y[idx], key)
            total += float(loss)
            if (i + 1) % 20 == 0 or i + 1 == steps:
                done = (i + 1) * 30 // steps
                print(f"\repoch {epoch} [{'#' * done}{'.' * (30 - done)}] {100 * (i + 1) // steps:3d}%  "
                      f"loss {total / (i + 1):.4f}", end="", flush=True)
        secs = time.perf_counter() - t0
        right = sum(int(correct(params, x_test[k:k + 1000], y_test[k:k + 1000])) for k in range(0, len(x_test), 1000))
        print(f"\repoch {epoch}: {secs:.2f} s, {steps * batch / secs:.0f} examples/s, train loss {total / steps:.4f}, "
              f"test accuracy {right / len(x_test):.4f}" + " " * 20, flush=True)
    out = a.out or os.path.join("runs", "python-" + a.model)
    os.makedirs(out, exist_ok=True)
    flat, _ = gf.tree_flatten(params)
    tmp = os.path.join(out, "params.npz.tmp")
    with open(tmp, "wb") as f:
        np.savez(f, *[np.asarray(x) for x in flat])
    os.replace(tmp, os.path.join(out, "params.npz"))  # written atomically
    print(f"saved {os.path.join(out, 'params.npz')}")


if __name__ == "__main__":
    main()
