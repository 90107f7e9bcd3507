"""graft.nn layers and graft.optim optimizers against NumPy references; the Python main job runs."""
import os
import subprocess
import sys

import numpy as np

import graft as gf
import graft.numpy as gnp
from graft import nn, optim


def test_linear_and_mlp():
    lin = nn.Linear(3, 2)
    p = lin.init(gf.random.key(0))
    assert p["w"].shape == (3, 2) and p["b"].shape == (2,)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(lin(p, x)), x @ np.asarray(p["w"]) + np.asarray(p["b"]), rtol=1e-6)
    net = nn.MLP([4, 8, 3])
    q = net.init(gf.random.key(1))
    assert nn.num_params(q) == 4 * 8 + 8 + 8 * 3 + 3
    xs = np.ones((5, 4), np.float32)
    h = np.maximum(xs @ np.asarray(q[0]["w"]) + np.asarray(q[0]["b"]), 0)
    np.testing.assert_allclose(np.asarray(net(q, xs)), h @ np.asarray(q[1]["w"]) + np.asarray(q[1]["b"]), rtol=1e-5)


def conv_ref(x, w):
    n, c, hh, ww = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, hh - kh + 1, ww - kw + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.einsum("nchw,ochw->no", x[:, :, i:i + kh, j:j + kw], w)
    return out


def test_conv_and_pool():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 6, 5))
    conv = nn.Conv2d(3, 4, 3)
    p = conv.init(gf.random.key(2), "float64")
    got = np.asarray(conv(p, x))
    np.testing.assert_allclose(got, conv_ref(x, np.asarray(p["w"])) + np.asarray(p["b"]).reshape(1, 4, 1, 1),
                               rtol=1e-10, atol=1e-12)
    pooled = np.asarray(nn.max_pool2d(gnp.asarray(x), (2, 2)))
    np.testing.assert_allclose(pooled, x[:, :, :6, :4].reshape(2, 3, 3, 2, 2, 2).max(axis=(3, 5)))
    # its gradient against finite differences of the sum of squares
    f = lambda w: gnp.sum(conv({"w": w, "b": p["b"]}, x) ** 2)
    g = np.asarray(gf.grad(f)(p["w"]))
    w0 = np.asarray(p["w"]).copy()
    d = np.zeros_like(w0)
    d[1, 2, 0, 1] = 1e-6
    fd = (float(f(gnp.asarray(w0 + d))) - float(f(gnp.asarray(w0 - d)))) / 2e-6
    assert abs(g[1, 2, 0, 1] - fd) < 1e-5 * max(1, abs(fd))


def test_losses():
    logits = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
    labels = np.array([0, 2], np.int32)
    ls = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    assert abs(float(nn.cross_entropy(logits, labels)) + ls[[0, 1], labels].mean()) < 1e-12
    assert float(nn.accuracy(logits, labels)) == 1.0


def test_adam_matches_its_definition():
    params = {"w": gnp.asarray([1.0, -2.0])}
    grads = {"w": gnp.asarray([0.5, 0.25])}
    opt = optim.adam(0.1)
    state = opt.init(params)
    m = v = np.zeros(2)
    w = np.array([1.0, -2.0])
    for t in range(1, 4):
        updates, state = opt.update(grads, state, params)
        params = optim.apply_updates(params, updates)
        g = np.array([0.5, 0.25])
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w = w - 0.1 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    np.testing.assert_allclose(np.asarray(params["w"]), w, rtol=1e-5)  # the step size is computed in f32


def test_sgd_momentum_and_cosine():
    opt = optim.sgd(0.1, momentum=0.9)
    p = {"w": gnp.asarray([1.0])}
    s = opt.init(p)
    u1, s = opt.update({"w": gnp.asarray([1.0])}, s)
    u2, s = opt.update({"w": gnp.asarray([1.0])}, s)
    assert abs(float(u1["w"][0]) + 0.1) < 1e-7 and abs(float(u2["w"][0]) + 0.19) < 1e-7
    sched = optim.cosine_decay(1.0, 10)
    assert abs(float(sched(gnp.asarray(0))) - 1.0) < 1e-7 and abs(float(sched(gnp.asarray(10)))) < 1e-7


def test_the_python_main_job_trains():
    if not os.path.exists("/usr/share/datasets/fashion-mnist"):
        raise AssertionError("Fashion-MNIST is missing: apt-get install dataset-fashion-mnist (tools/deps.sh)")
    job = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_fashion_mnist.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, job, "--epochs", "2", "--limit", "4096", "--out",
                          os.path.join(os.environ.get("TMPDIR", "/tmp"), f"graft-pyjob-{os.getpid()}")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stdout.replace("\r", "\n").splitlines() if l.startswith("epoch ") and "accuracy" in l]
    assert len(lines) == 2, out.stdout
    acc = [float(l.split("test accuracy ")[1].split()[0]) for l in lines]
    loss = [float(l.split("train loss ")[1].split(",")[0]) for l in lines]
    assert loss[1] < loss[0] and acc[1] > 0.7, out.stdout
