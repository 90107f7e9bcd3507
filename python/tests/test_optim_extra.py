"""optax-style transformations, optimizers, wrappers and schedules in graft.optim against NumPy
re-implementations of optax's update rules, step by step; and a jitted training step."""
import math

import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft import optim

RNG = np.random.default_rng(0)
P0 = {"w": RNG.normal(size=(3, 4)), "b": RNG.normal(size=4)}
GRADS = [{"w": RNG.normal(size=(3, 4)), "b": RNG.normal(size=4)} for _ in range(4)]


def g64(tree):
    return {k: gnp.asarray(v) for k, v in tree.items()}


def run(opt, steps=4):
    p = g64(P0)
    s = opt.init(p)
    out = []
    for g in GRADS[:steps]:
        u, s = opt.update(g64(g), s, p)
        p = optim.apply_updates(p, u)
        out.append({k: np.asarray(v) for k, v in p.items()})
    return out


def run_ref(step_fn, state, steps=4):
    p = {k: v.copy() for k, v in P0.items()}
    out = []
    for t, g in enumerate(GRADS[:steps], 1):
        for k in p:
            u, state[k] = step_fn(g[k], state[k], p[k], t)
            p[k] = p[k] + u
        out.append({k: v.copy() for k, v in p.items()})
    return out


def check(opt, step_fn, init_state, rtol=1e-12):
    for got, want in zip(run(opt), run_ref(step_fn, {k: init_state(v) for k, v in P0.items()})):
        for k in got:
            np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=1e-13)


def test_adagrad_rmsprop_nadam_adabelief():
    lr = 0.05

    def adagrad(g, s, p, t):
        s = s + g * g
        return -lr * np.where(s > 0, g / np.sqrt(s + 1e-7), 0), s
    check(optim.adagrad(lr), adagrad, lambda v: np.full_like(v, 0.1))

    def rms(g, s, p, t):
        s = 0.9 * s + 0.1 * g * g
        return -lr * g / np.sqrt(s + 1e-8), s
    check(optim.rmsprop(lr), rms, np.zeros_like)

    def centered_momentum(g, s, p, t):
        mu, nu, tr = s
        mu, nu = 0.9 * mu + 0.1 * g, 0.9 * nu + 0.1 * g * g
        u = -lr * g / np.sqrt(nu - mu * mu + 1e-8)
        tr = u + 0.8 * tr
        return tr, (mu, nu, tr)
    check(optim.rmsprop(lr, centered=True, momentum=0.8), centered_momentum, lambda v: (0 * v, 0 * v, 0 * v))

    def nadam(g, s, p, t):
        mu, nu = s
        mu, nu = 0.9 * mu + 0.1 * g, 0.999 * nu + 0.001 * g * g
        mh = 0.9 * mu / (1 - 0.9 ** (t + 1)) + 0.1 * g / (1 - 0.9 ** t)
        return -lr * mh / (np.sqrt(nu / (1 - 0.999 ** t)) + 1e-8), (mu, nu)
    check(optim.nadam(lr), nadam, lambda v: (0 * v, 0 * v))

    def belief(g, s, p, t):
        mu, nu = s
        mu = 0.9 * mu + 0.1 * g
        nu = 0.999 * nu + 0.001 * (g - mu) ** 2 + 1e-16
        return -lr * (mu / (1 - 0.9 ** t)) / (np.sqrt(nu / (1 - 0.999 ** t)) + 1e-16), (mu, nu)
    check(optim.adabelief(lr), belief, lambda v: (0 * v, 0 * v))


def test_lion_lamb_adafactor():
    lr = 0.03

    def lion(g, m, p, t):
        u = np.sign(0.1 * g + 0.9 * m) + 0.01 * p
        return -lr * u, 0.01 * g + 0.99 * m
    check(optim.lion(lr, weight_decay=0.01), lion, np.zeros_like)

    def lamb(g, s, p, t):
        mu, nu = s
        mu, nu = 0.9 * mu + 0.1 * g, 0.999 * nu + 0.001 * g * g
        u = (mu / (1 - 0.9 ** t)) / (np.sqrt(nu / (1 - 0.999 ** t)) + 1e-6) + 0.1 * p
        pn, un = np.linalg.norm(p), np.linalg.norm(u)
        return -lr * u * (pn / un if pn > 0 and un > 0 else 1.0), (mu, nu)
    check(optim.lamb(lr, weight_decay=0.1), lamb, lambda v: (0 * v, 0 * v))

    def adafactor(g, s, p, t):
        rate = 1 - t ** -0.8
        g2 = g * g + 1e-30
        if g.ndim == 2:  # factored: rows over the larger dim (4, axis 1), columns over the smaller (axis 0)
            vr, vc = s
            vr = rate * vr + (1 - rate) * g2.mean(1)
            vc = rate * vc + (1 - rate) * g2.mean(0)
            u = g * (1 / np.sqrt(vr / vr.mean()))[:, None] * (1 / np.sqrt(vc))[None, :]
            s = (vr, vc)
        else:
            s = rate * s + (1 - rate) * g2
            u = g / np.sqrt(s)
        u = u / max(1.0, np.sqrt(np.mean(u * u)) / 1.0)
        u = u * lr * max(np.sqrt(np.mean(p * p)), 1e-3)
        return -u, s
    check(optim.adafactor(lr, min_dim_size_to_factor=2), adafactor,
          lambda v: (np.zeros(3), np.zeros(4)) if v.ndim == 2 else np.zeros_like(v), rtol=1e-11)


def test_clipping_masking_and_wrappers():
    g = g64(GRADS[0])
    n = math.sqrt(sum((v ** 2).sum() for v in GRADS[0].values()))
    u, _ = optim.clip_by_global_norm(1.0).update(g, ())
    for k in g:
        np.testing.assert_allclose(np.asarray(u[k]), GRADS[0][k] / n, rtol=1e-12)
    u, _ = optim.clip(0.5).update(g, ())
    np.testing.assert_allclose(np.asarray(u["w"]), np.clip(GRADS[0]["w"], -0.5, 0.5))
    # masked: only "w" is decayed; multi_transform: a different optimizer per label
    p = g64(P0)
    opt = optim.masked(optim.add_decayed_weights(0.5), {"w": True, "b": False})
    u, _ = opt.update(g, opt.init(p), p)
    np.testing.assert_allclose(np.asarray(u["w"]), GRADS[0]["w"] + 0.5 * P0["w"], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(u["b"]), GRADS[0]["b"])
    mt = optim.multi_transform({"fast": optim.sgd(1.0), "slow": optim.sgd(0.1)}, {"w": "fast", "b": "slow"})
    u, _ = mt.update(g, mt.init(p), p)
    np.testing.assert_allclose(np.asarray(u["w"]), -GRADS[0]["w"], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(u["b"]), -0.1 * GRADS[0]["b"], rtol=1e-12)
    with pytest.raises(ValueError, match="no transformation for labels"):
        optim.multi_transform({"fast": optim.sgd(1.0)}, {"w": "fast", "b": "slow"}).init(p)
    # MultiSteps: zero updates until the k-th gradient, then the inner step on their mean
    ms = optim.MultiSteps(optim.sgd(1.0), 2)
    s = ms.init(p)
    u1, s = ms.update(g64(GRADS[0]), s, p)
    u2, s = ms.update(g64(GRADS[1]), s, p)
    assert float(gnp.sum(gnp.abs(u1["w"]))) == 0
    np.testing.assert_allclose(np.asarray(u2["w"]), -(GRADS[0]["w"] + GRADS[1]["w"]) / 2, rtol=1e-12)
    u3, s = ms.update(g64(GRADS[2]), s, p)
    assert float(gnp.sum(gnp.abs(u3["w"]))) == 0 and int(s["gradient_step"]) == 1
    # inject_hyperparams: the learning rate lives in the state and can be changed between steps
    inj = optim.inject_hyperparams(optim.sgd)(learning_rate=0.1)
    s = inj.init(p)
    u, s = inj.update(g, s, p)
    np.testing.assert_allclose(np.asarray(u["b"]), -0.1 * GRADS[0]["b"], rtol=1e-6)
    s["hyperparams"]["learning_rate"] = gnp.asarray(np.float32(0.5))
    u, s = inj.update(g, s, p)
    np.testing.assert_allclose(np.asarray(u["b"]), -0.5 * GRADS[0]["b"], rtol=1e-6)
    # ema with debiasing
    e = optim.ema(0.9)
    s = e.init(p)
    u, s = e.update(g, s)
    np.testing.assert_allclose(np.asarray(u["b"]), GRADS[0]["b"], rtol=1e-6)


def test_schedules():
    counts = [0, 1, 5, 10, 20, 50]

    def at(f):
        return [float(f(gnp.asarray(np.int32(c)))) for c in counts]

    np.testing.assert_allclose(at(optim.linear_schedule(1.0, 0.0, 10, 5)),
                               [1.0, 1.0, 1.0, 0.5, 0.0, 0.0], rtol=1e-6)
    np.testing.assert_allclose(at(optim.exponential_decay(1.0, 10, 0.5)), [0.5 ** (c / 10) for c in counts], rtol=1e-6)
    np.testing.assert_allclose(at(optim.exponential_decay(1.0, 10, 0.5, staircase=True, end_value=0.1)),
                               [max(0.5 ** (c // 10), 0.1) for c in counts], rtol=1e-6)
    np.testing.assert_allclose(at(optim.piecewise_constant_schedule(1.0, {5: 0.5, 20: 0.1})),
                               [1, 1, 0.5, 0.5, 0.05, 0.05], rtol=1e-6)
    wc = optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 50, 0.1)
    want = [c / 10 if c < 10 else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(c - 10, 40) / 40)) for c in counts]
    np.testing.assert_allclose(at(wc), want, rtol=1e-6, atol=1e-7)
    oc = optim.onecycle(100, 1.0)
    assert abs(float(oc(gnp.asarray(np.int32(30)))) - 1.0) < 1e-6
    assert abs(float(oc(gnp.asarray(np.int32(0)))) - 0.04) < 1e-6
    assert abs(float(oc(gnp.asarray(np.int32(100)))) - 0.04 / 1e4) < 1e-9
    np.testing.assert_allclose(at(optim.polynomial_schedule(1.0, 0.0, 2, 20)),
                               [(1 - min(c, 20) / 20) ** 2 for c in counts], rtol=1e-6, atol=1e-7)


def test_jitted_training_step_with_a_chain():
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.add_decayed_weights(1e-3),
                      optim.scale_by_adam(), optim.scale_by_learning_rate(optim.warmup_cosine_decay_schedule(0.0, 0.1, 2, 10)))
    x = gnp.asarray(RNG.normal(size=(8, 3)))
    y = gnp.asarray(RNG.normal(size=(8, 4)))

    def loss(p):
        return gnp.mean((x @ p["w"] + p["b"] - y) ** 2)

    @gf.jit
    def step(p, s):
        g = gf.grad(loss)(p)
        u, s = opt.update(g, s, p)
        return optim.apply_updates(p, u), s

    p = g64(P0)
    s = opt.init(p)
    p_eager, s_eager = g64(P0), opt.init(g64(P0))
    first = float(loss(p))
    for _ in range(10):
        p, s = step(p, s)
        g = gf.grad(loss)(p_eager)
        u, s_eager = opt.update(g, s_eager, p_eager)
        p_eager = optim.apply_updates(p_eager, u)
    assert float(loss(p)) < first
    np.testing.assert_allclose(np.asarray(p["w"]), np.asarray(p_eager["w"]), rtol=1e-10)
