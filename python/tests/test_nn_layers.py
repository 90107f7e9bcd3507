"""nn's C++ layers from Python (LayerNorm, BatchNorm, Embedding, MultiHeadAttention, TransformerBlock,
TransformerLM) against NumPy written out from their parameters, under jit and grad, and a few SGD steps
of the language model that lower its loss."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
import graft.nn as nn
import graft.random as gr


def np_of(tree):
    return gf.tree_map(np.asarray, tree)


def test_layer_norm_and_batch_norm():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 4))
    ln = nn.LayerNorm(4)
    p = ln.init("float64")
    p = {"scale": gnp.asarray(rng.normal(size=4)), "bias": gnp.asarray(rng.normal(size=4))}
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    want = (x - mu) / np.sqrt(var + 1e-5) * np.asarray(p["scale"]) + np.asarray(p["bias"])
    np.testing.assert_allclose(np.asarray(ln(p, x)), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(gf.jit(ln)(p, x)), want, rtol=1e-10, atol=1e-12)
    g = gf.grad(lambda s: gnp.sum(ln({"scale": s, "bias": p["bias"]}, x) ** 2))(p["scale"])
    xh = (x - mu) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(np.asarray(g), (2 * (xh * np.asarray(p["scale"]) + np.asarray(p["bias"])) * xh).sum(0),
                               rtol=1e-10)
    bn = nn.BatchNorm(4, axis=-1, momentum=0.8)
    bp, bs = bn.init("float64"), bn.init_state("float64")
    y, s2 = bn(bp, bs, x, True)
    np.testing.assert_allclose(np.asarray(y), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(s2["mean"]), 0.2 * x.mean(0), rtol=1e-10)
    y_eval, s3 = bn(bp, s2, x, False)
    np.testing.assert_allclose(np.asarray(y_eval), (x - np.asarray(s2["mean"])) / np.sqrt(np.asarray(s2["var"]) + 1e-5),
                               rtol=1e-10)
    np.testing.assert_array_equal(np.asarray(s3["mean"]), np.asarray(s2["mean"]))


def test_embedding_lookup_and_gradient():
    e = nn.Embedding(10, 3)
    p = e.init(gr.key(1), "float64")
    ids = np.array([[1, 3], [3, 9]])
    np.testing.assert_array_equal(np.asarray(e(p, ids)), np.asarray(p["table"])[ids])
    g = gf.grad(lambda t: gnp.sum(e({"table": t}, ids)))(p["table"])
    want = np.zeros((10, 3))
    np.add.at(want, ids.ravel(), 1.0)
    np.testing.assert_array_equal(np.asarray(g), want)


def np_attention(p, x, heads, causal):
    b, t, d = x.shape
    hd = d // heads
    lin = lambda q, v: v @ np.asarray(q["w"]) + np.asarray(q["b"])  # noqa: E731
    split = lambda y: y.reshape(b, t, heads, hd).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(lin(p["query"], x)), split(lin(p["key"], x)), split(lin(p["value"], x))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    if causal:
        s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    o = (w @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
    return lin(p["out"], o)


@pytest.mark.parametrize("attention", ["fused", "composite"])
@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention(attention, causal):
    rng = np.random.default_rng(2)
    a = nn.MultiHeadAttention(8, heads=2, causal=causal, attention=attention)
    p = a.init(gr.key(3), "float64")
    x = rng.normal(size=(2, 5, 8))
    want = np_attention(np_of(p), x, 2, causal)
    np.testing.assert_allclose(np.asarray(a(p, x)), want, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(np.asarray(gf.jit(a)(p, x)), want, rtol=1e-9, atol=1e-11)
    # gradients: the fused attention's equal the composite's
    loss = lambda layer: (lambda q: gnp.sum(layer(q, x) ** 2))  # noqa: E731
    g = gf.grad(loss(a))(p)
    g_ref = gf.grad(loss(nn.MultiHeadAttention(8, heads=2, causal=causal, attention="composite")))(p)
    for name in ("query", "key", "value", "out"):
        np.testing.assert_allclose(np.asarray(g[name]["w"]), np.asarray(g_ref[name]["w"]), rtol=1e-8, atol=1e-10)
    with pytest.raises(ValueError, match="attention"):
        nn.MultiHeadAttention(8, attention="flash")


def test_transformer_block_and_language_model():
    rng = np.random.default_rng(4)
    blk = nn.TransformerBlock(8, heads=2, mlp_ratio=2)
    p = blk.init(gr.key(5), "float64")
    x = rng.normal(size=(2, 4, 8))
    # the pre-norm block written out from its parameters
    pn = np_of(p)

    def ln(q, v):
        return (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + 1e-5) * q["scale"] + q["bias"]

    def gelu(v):
        return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))

    h = x + np_attention(pn["attn"], ln(pn["ln1"], x), 2, True)
    want = h + (gelu(ln(pn["ln2"], h) @ pn["fc1"]["w"] + pn["fc1"]["b"]) @ pn["fc2"]["w"] + pn["fc2"]["b"])
    np.testing.assert_allclose(np.asarray(blk(p, x)), want, rtol=1e-8, atol=1e-10)  # (GELU by tanh, JAX's default)
    lm = nn.TransformerLM(vocab=13, dim=8, heads=2, layers=2, max_len=8)
    lp = lm.init(gr.key(6))
    ids = rng.integers(0, 13, size=(4, 7))
    assert lm(lp, ids).shape == (4, 7, 13)

    def loss(q):
        logits = lm(q, ids[:, :-1])
        return -gnp.mean(gnp.sum(gf.nn.log_softmax(logits, -1) * gf.nn.one_hot(ids[:, 1:], 13), -1))

    step = gf.jit(lambda q: gf.tree_map(lambda w, d: w - 0.5 * d, q, gf.grad(loss)(q)))
    l0 = float(loss(lp))
    for _ in range(30):
        lp = step(lp)
    assert float(loss(lp)) < 0.7 * l0
