"""jax.nn's activations, helpers, dot_product_attention and initializers in graft.nn, against NumPy formulas
and a direct attention, with gradients by finite differences."""
import math

import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft import nn
from graft import random as gr

RNG = np.random.default_rng(0)
X = np.linspace(-3, 3, 25)


def a(x):
    return gnp.asarray(np.asarray(x))


def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


@pytest.mark.parametrize("name,ref", [
    ("elu", lambda x: np.where(x > 0, x, np.expm1(x))),
    ("celu", lambda x: np.where(x > 0, x, 0.5 * np.expm1(x / 0.5))),
    ("selu", lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("leaky_relu", lambda x: np.where(x >= 0, x, 0.01 * x)),
    ("hard_tanh", lambda x: np.clip(x, -1, 1)),
    ("hard_sigmoid", lambda x: np.clip(x + 3, 0, 6) / 6),
    ("hard_silu", lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("soft_sign", lambda x: x / (np.abs(x) + 1)),
    ("squareplus", lambda x: (x + np.sqrt(x * x + 4)) / 2),
    ("mish", lambda x: x * np.tanh(softplus(x))),
    ("sparse_plus", lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4))),
    ("sparse_sigmoid", lambda x: 0.5 * np.clip(x + 1, 0, 2)),
    ("swish", lambda x: x / (1 + np.exp(-x))),
    ("identity", lambda x: x),
])
def test_activations(name, ref):
    kwargs = {"alpha": 0.5} if name == "celu" else {}
    np.testing.assert_allclose(np.asarray(getattr(nn, name)(a(X), **kwargs)), ref(X), rtol=1e-12, atol=1e-14)
    f = lambda v: gnp.sum(getattr(nn, name)(v, **kwargs) ** 2)  # noqa: E731
    x0 = X[X != 0][::3] + 0.013  # away from kinks
    g = np.asarray(gf.grad(f)(a(x0)))
    eps = 1e-6
    fd = [(float(f(a(x0 + eps * e))) - float(f(a(x0 - eps * e)))) / (2 * eps) for e in np.eye(len(x0))]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_helpers():
    x = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(np.asarray(nn.glu(a(x))), x[:, :2] / (1 + np.exp(-x[:, 2:])), rtol=1e-12)
    sps = pytest.importorskip("scipy.special")
    b = RNG.uniform(-1, 1, size=(3, 4))
    got, sign = nn.logsumexp(a(x), axis=1, b=a(b), return_sign=True)
    want, wsign = sps.logsumexp(x, axis=1, b=b, return_sign=True)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(sign), wsign)
    np.testing.assert_allclose(float(nn.logsumexp(a(x))), sps.logsumexp(x), rtol=1e-12)
    s = np.asarray(nn.standardize(a(x), axis=1))
    np.testing.assert_allclose(s, (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5), rtol=1e-12)
    oh = nn.one_hot(a(np.array([2, 0], np.int32)), 3, axis=0)
    np.testing.assert_array_equal(np.asarray(oh), np.eye(3)[[2, 0]].T)


def attention_ref(q, k, v, bias=None, mask=None, causal=False, window=None, q_len=None, kv_len=None):
    b, t, n, h = q.shape
    kh = k.shape[2]
    k, v = np.repeat(k, n // kh, axis=2), np.repeat(v, n // kh, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q, k) / math.sqrt(h)
    if bias is not None:
        logits = logits + bias
    keep = np.ones(logits.shape, bool)
    if mask is not None:
        keep &= mask
    ti, si = np.arange(t)[:, None], np.arange(k.shape[1])[None, :]
    if causal:
        keep &= si <= ti
    if window is not None:
        keep &= (si >= ti - window[0]) & (si <= ti + window[1])
    if q_len is not None:
        keep &= ti[None, None] < q_len[:, None, None, None]
    if kv_len is not None:
        keep &= si[None, None] < kv_len[:, None, None, None]
    logits = np.where(keep, logits, np.finfo(np.float64).min)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", w, v)


def test_dot_product_attention():
    q = RNG.normal(size=(2, 5, 4, 8))
    k = RNG.normal(size=(2, 6, 2, 8))  # grouped: two query heads per key head
    v = RNG.normal(size=(2, 6, 2, 8))
    bias = RNG.normal(size=(1, 4, 5, 6))
    mask = RNG.uniform(size=(2, 1, 5, 6)) > 0.2
    mask[..., 0] = True
    cases = [dict(), dict(bias=bias), dict(mask=mask), dict(is_causal=True), dict(local_window_size=(1, 1)),
             dict(key_value_seq_lengths=np.array([4, 6], np.int32))]
    for kw in cases:
        got = nn.dot_product_attention(a(q), a(k), a(v), **{kk: a(vv) if isinstance(vv, np.ndarray) else vv
                                                          for kk, vv in kw.items()})
        want = attention_ref(q, k, v, bias=kw.get("bias"), mask=kw.get("mask"), causal=kw.get("is_causal", False),
                             window=kw.get("local_window_size"), kv_len=kw.get("key_value_seq_lengths"))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12, err_msg=str(list(kw)))
    # unbatched [T, N, H], and the gradient against finite differences
    np.testing.assert_allclose(np.asarray(nn.dot_product_attention(a(q[0]), a(k[0]), a(v[0]))),
                               attention_ref(q[:1], k[:1], v[:1])[0], rtol=1e-10)
    f = lambda qq: gnp.sum(nn.dot_product_attention(qq, a(k), a(v), is_causal=True) ** 2)  # noqa: E731
    g = np.asarray(gf.grad(f)(a(q)))
    e = np.zeros_like(q)
    e[1, 2, 3, 4] = 1e-6
    fd = (float(f(a(q + e))) - float(f(a(q - e)))) / 2e-6
    assert abs(g[1, 2, 3, 4] - fd) < 1e-6 * (1 + abs(fd))


def test_initializers():
    key = gr.key(0)
    init = nn.initializers
    for fn, want_var in [(init.glorot_uniform(), 2 / (300 + 200)), (init.glorot_normal(), 2 / (300 + 200)),
                         (init.he_normal(), 2 / 300), (init.he_uniform(), 2 / 300), (init.lecun_normal(), 1 / 300),
                         (init.lecun_uniform(), 1 / 300),
                         (init.variance_scaling(1.0, "fan_geo_avg", "normal"), 1 / math.sqrt(300 * 200))]:
        w = np.asarray(fn(key, (300, 200)), np.float64)
        assert abs(w.var() / want_var - 1) < 0.05, (fn, w.var(), want_var)
    t = np.asarray(init.truncated_normal(0.5)(key, (10000,)))
    assert t.min() >= -1.0 and t.max() <= 1.0
    u = np.asarray(init.uniform(0.3)(key, (1000,)))
    assert u.min() >= 0 and u.max() <= 0.3
    np.testing.assert_array_equal(np.asarray(init.constant(2.5)(key, (2, 2))), np.full((2, 2), 2.5))
    assert np.asarray(init.zeros(key, (3,))).sum() == 0 and np.asarray(init.ones(key, (3,))).sum() == 3
    for shape in [(6, 4), (4, 6), (3, 2, 5)]:
        w = np.asarray(init.orthogonal()(key, shape), np.float64).reshape(-1, shape[-1])
        small = min(w.shape)
        gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
        np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)
    k = np.asarray(init.delta_orthogonal()(key, (3, 3, 4, 4)), np.float64)
    assert np.abs(k[0, 0]).max() == 0
    np.testing.assert_allclose(k[1, 1].T @ k[1, 1], np.eye(4), atol=1e-5)
    with pytest.raises(ValueError, match="mode must be"):
        init.variance_scaling(1.0, "fan_bad", "normal")(key, (2, 2))
