"""eval_shape and ShapeDtypeStruct, linearize, linear_transpose and block_until_ready (JAX's top-level API)."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp


def f64(x):
    return gnp.asarray(np.asarray(x, np.float64))


def test_eval_shape_computes_nothing():
    calls = []

    def f(x, y, scale=1.0):
        calls.append(1)
        return {"prod": (x @ y) * scale, "sum": gnp.sum(x, axis=0), "n": x.shape[0]}

    big = gf.ShapeDtypeStruct((100_000, 50_000), "float32")  # 20 GB were it allocated
    out = gf.eval_shape(f, big, np.ones((50_000, 3), np.float32), scale=2.0)
    assert out["prod"] == gf.ShapeDtypeStruct((100_000, 3), np.float32)
    assert out["sum"].shape == (50_000,) and out["sum"].dtype == np.float32 and out["sum"].ndim == 1
    assert out["n"].shape == () and out["n"].weak_type  # a Python int becomes a weak scalar
    assert len(calls) == 1
    s = gf.eval_shape(lambda x: x.astype("bfloat16"), gf.ShapeDtypeStruct((2, 3), "float32"))
    assert s.dtype == "bfloat16" and s.size == 6
    assert repr(gf.ShapeDtypeStruct((2,), "int32")) == "ShapeDtypeStruct(shape=(2,), dtype=int32)"
    assert gf.eval_shape(lambda x: x * 2, 3.0).weak_type
    with pytest.raises(gf.ShapeError):
        gf.eval_shape(lambda x, y: x @ y, gf.ShapeDtypeStruct((2, 3), "float32"), gf.ShapeDtypeStruct((4, 5), "float32"))


def test_linearize_matches_jvp_without_rerunning():
    calls = []
    rng = np.random.default_rng(0)
    x, w = f64(rng.normal(size=4)), f64(rng.normal(size=(3, 4)))

    def f(p):
        calls.append(1)
        return {"y": gnp.tanh(p["w"] @ p["x"]), "n": gnp.sum(p["x"] ** 2)}

    y, f_jvp = gf.linearize(f, {"x": x, "w": w})
    t = {"x": f64(rng.normal(size=4)), "w": f64(rng.normal(size=(3, 4)))}
    got = f_jvp(t)
    assert len(calls) == 1
    _, want = gf.jvp(f, ({"x": x, "w": w},), (t,))
    np.testing.assert_allclose(np.asarray(got["y"]), np.asarray(want["y"]), rtol=1e-12)
    np.testing.assert_allclose(float(got["n"]), float(want["n"]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(y["y"]), np.tanh(np.asarray(w) @ np.asarray(x)), rtol=1e-14)
    with pytest.raises(ValueError, match="structure of the primals"):
        f_jvp([t["x"]])


def test_linear_transpose_matches_vjp():
    rng = np.random.default_rng(1)
    m = f64(rng.normal(size=(3, 4)))

    def f(a, b):
        return m @ a * 2.0 + gnp.sum(b), a[0] - b[1]

    a, b = f64(rng.normal(size=4)), f64(rng.normal(size=2))
    f_t = gf.linear_transpose(f, a, b)
    ct = (f64(rng.normal(size=3)), f64(0.7))
    ta, tb = f_t(ct)
    _, pb = gf.vjp(f, a, b)
    va, vb = pb(ct)
    np.testing.assert_allclose(np.asarray(ta), np.asarray(va), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(tb), np.asarray(vb), rtol=1e-13)
    with pytest.raises(NotImplementedError, match="exp has no transpose rule"):
        gf.linear_transpose(lambda v: gnp.exp(v), a)(a)
    with pytest.raises(ValueError, match="structure of the output"):
        f_t(ct[0])


def test_block_until_ready_returns_the_tree():
    tree = {"a": gnp.ones(3), "b": [1, gnp.zeros(2)]}
    assert gf.block_until_ready(tree) is tree


def test_custom_gradient_closure_convert_disable_jit():
    @gf.custom_gradient
    def f(x):
        y = gnp.sin(x)
        return y, lambda g: (g * 3.0 * gnp.cos(x),)

    assert abs(float(f(f64(1.0))) - np.sin(1.0)) < 1e-15
    assert abs(float(gf.grad(f)(f64(1.0))) - 3 * np.cos(1.0)) < 1e-15
    assert abs(float(gf.jit(gf.grad(f))(f64(1.0))) - 3 * np.cos(1.0)) < 1e-15

    @gf.custom_gradient
    def clipped(x, y):
        return x * y, lambda g: (gnp.clip(g * y, -1.0, 1.0), g * x)

    gx, gy = gf.grad(clipped, argnums=(0, 1))(f64(2.0), f64(5.0))
    assert (float(gx), float(gy)) == (1.0, 2.0)
    x = f64(np.array([0.3, 0.7]))
    conv, consts = gf.closure_convert(lambda v: v * x, f64(np.ones(2)))
    np.testing.assert_allclose(np.asarray(conv(f64(np.ones(2)), *consts)), np.asarray(x))

    seen = []

    @gf.jit
    def g(v):
        seen.append(type(v).__name__)
        return v * 2

    with gf.disable_jit():
        out = g(f64(np.ones(2)))
        assert float(gnp.sum(out)) == 4.0
        g(f64(np.ones(2)))
    assert len(seen) == 2  # ran eagerly, once per call
    g(f64(np.ones(2)))
    g(f64(np.ones(2)))
    assert len(seen) == 3  # traced once, then cached
