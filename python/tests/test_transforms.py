"""Transformations of Python callables: values checked against NumPy references and finite
differences, and against the values JAX documents."""
import os
import subprocess
import sys

import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft import lax


def num_grad(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(f(gnp.asarray(x + d))) - float(f(gnp.asarray(x - d)))) / (2 * eps)
    return g


def loss(w, x, y):
    return gnp.mean((gnp.tanh(x @ w) - y) ** 2)


def data():
    rng = np.random.default_rng(1)
    return (gnp.asarray(rng.standard_normal((3, 2))), gnp.asarray(rng.standard_normal((5, 3))),
            gnp.asarray(rng.standard_normal((5, 2))))


def test_grad_of_lax_mul_is_the_other_factor():
    # the seeds' example (JAX's documentation): grad(lax.mul)(2.0, 3.0) == 3.0
    assert gf.grad(lax.mul)(2.0, 3.0) == 3.0
    assert gf.grad(lax.mul, argnums=1)(2.0, 3.0) == 2.0
    assert gf.grad(lambda x: x ** 3)(2.0) == 12.0


def test_grad_matches_finite_differences():
    w, x, y = data()
    g = gf.grad(loss)(w, x, y)
    np.testing.assert_allclose(np.asarray(g), num_grad(lambda v: loss(v, x, y), w), rtol=1e-6, atol=1e-8)
    gw, gx = gf.grad(loss, argnums=(0, 1))(w, x, y)
    np.testing.assert_allclose(np.asarray(gx), num_grad(lambda v: loss(w, v, y), x), rtol=1e-6, atol=1e-8)
    v, g2 = gf.value_and_grad(loss)(w, x, y)
    assert abs(float(v) - float(loss(w, x, y))) < 1e-12
    np.testing.assert_allclose(np.asarray(g2), np.asarray(g))


def test_grad_of_pytrees_and_aux():
    w, x, y = data()
    params = {"w": w, "b": gnp.zeros(2, dtype=gnp.float64)}

    def f(p):
        out = gnp.tanh(x @ p["w"] + p["b"])
        return gnp.sum((out - y) ** 2), {"out": out}

    g, aux = gf.grad(f, has_aux=True)(params)
    assert set(g) == {"w", "b"} and g["b"].shape == (2,)
    np.testing.assert_allclose(np.asarray(g["b"]),
                               num_grad(lambda b: f({"w": w, "b": b})[0], params["b"]), rtol=1e-6, atol=1e-8)
    assert aux["out"].shape == (5, 2)


def test_grad_errors():
    with pytest.raises(TypeError, match="scalar"):
        gf.grad(lambda v: v * 2)(gnp.ones(3))
    with pytest.raises(TypeError, match="real- or complex-valued inputs"):  # JAX's words
        gf.grad(lambda v: v * 2.0)(3)


def test_jvp_and_vjp():
    w, x, y = data()
    t = gnp.ones_like(w)
    out, tan = gf.jvp(lambda v: loss(v, x, y), (w,), (t,))
    g = gf.grad(loss)(w, x, y)
    assert abs(float(tan) - float(gnp.sum(g * t))) < 1e-10
    out2, pull = gf.vjp(lambda v: gnp.tanh(x @ v), w)
    (ct,) = pull(gnp.ones_like(out2))
    np.testing.assert_allclose(np.asarray(ct), num_grad(lambda v: gnp.sum(gnp.tanh(x @ v)), w), rtol=1e-6, atol=1e-8)


def test_jacobians_and_hessian():
    x = gnp.asarray([0.5, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(gf.jacfwd(gnp.sin)(x)), np.diag(np.cos([0.5, 1.0, 2.0])), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gf.jacrev(gnp.sin)(x)), np.diag(np.cos([0.5, 1.0, 2.0])), rtol=1e-6)
    A = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]])
    np.testing.assert_allclose(np.asarray(gf.jacrev(lambda v: gnp.asarray(A) @ v)(x.astype("float64"))), A)
    np.testing.assert_allclose(np.asarray(gf.hessian(lambda v: gnp.sum(v ** 3))(x)), np.diag(6 * np.asarray(x)),
                               rtol=1e-6)


def test_vmap_matches_a_loop():
    w, x, y = data()
    xs = gnp.stack([x, x * 2, x - 1])
    got = gf.vmap(loss, in_axes=(None, 0, None))(w, xs, y)
    want = [float(loss(w, x_i, y)) for x_i in (x, x * 2, x - 1)]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    # per-example gradients, out_axes, a dict argument
    per = gf.vmap(gf.grad(loss), in_axes=(None, 0, 0))(w, x[:, None, :], y[:, None, :])
    assert per.shape == (5, 3, 2)
    np.testing.assert_allclose(np.asarray(per.sum(axis=0) / 5), np.asarray(gf.grad(loss)(w, x, y)), rtol=1e-10)
    t = gf.vmap(lambda d: d["a"] * 2, in_axes=({"a": 1},), out_axes=1)({"a": gnp.ones((2, 3))})
    assert t.shape == (2, 3)


def test_vmap_with_a_named_axis_and_psum():
    xs = gnp.arange(12.0).reshape(4, 3)
    got = gf.vmap(lambda v: v - lax.pmean(v, "i"), axis_name="i")(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(xs) - np.asarray(xs).mean(0))
    # JAX issue 3970: grad of a psum'd loss is the full-batch gradient, not axis-size times it
    w, x, y = data()
    xb, yb = x.reshape(5, 1, 3), y.reshape(5, 1, 2)
    g = gf.vmap(gf.grad(lambda v, a, b: lax.psum(loss(v, a, b), "i")), in_axes=(None, 0, 0), out_axes=None,
                axis_name="i")(w, xb, yb)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gf.grad(loss)(w, x, y)) * 5, rtol=1e-10)


def test_jit_traces_once_and_matches_eager():
    w, x, y = data()
    f = gf.jit(loss)
    assert abs(float(f(w, x, y)) - float(loss(w, x, y))) < 1e-12
    f(w * 2, x, y)
    assert f._num_traces() == 1
    f(w.astype("float32"), x, y)  # a new type: a new trace
    assert f._num_traces() == 2
    g = gf.jit(gf.grad(loss))(w, x, y)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gf.grad(loss)(w, x, y)), rtol=1e-12)

    def scale(v, n, mode="twice"):
        return v * n if mode == "twice" else v

    s = gf.jit(scale, static_argnums=1, static_argnames="mode")
    assert float(s(gnp.asarray(2.0), 3)) == 6.0
    assert float(s(gnp.asarray(2.0), 3, mode="same")) == 2.0
    assert s._num_traces() == 2


def test_jit_donation():
    # in a fresh interpreter: once any array in a process has called requires_grad_(), eager code runs
    # under that thread's tape, where a jitted call is staged and donates nothing
    code = """
import numpy as np, graft as gf, graft.numpy as gnp
step = gf.jit(lambda p, g: p - 0.1 * g, donate_argnums=0)
p = gnp.ones(256) * 1.0  # large enough to have storage of its own (tiny arrays live inline)
p2 = step(p, gnp.ones(256))
np.testing.assert_allclose(np.asarray(p2), 0.9)
try:
    np.asarray(p)
except ValueError as e:
    print("deleted:", e)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "deleted:" in r.stdout and "donat" in r.stdout, r.stdout


def test_make_jaxpr_prints_the_program():
    text = str(gf.make_jaxpr(lambda a, b: lax.mul(a, b) + 1.0)(2.0, 3.0))
    assert text.startswith("{ lambda ; a:f64[] b:f64[]. let")
    assert "c:f64[] = mul a b" in text
    assert "add c 1.0" in text
    jt = str(gf.make_jaxpr(gf.grad(lambda v: gnp.sum(gnp.sin(v))))(gnp.ones(3)))
    assert "cos" in jt


def test_concretization_error_names_the_problem():
    with pytest.raises(gf.ConcretizationError):
        gf.jit(lambda v: v if v > 0 else -v)(1.0)
    with pytest.raises(TypeError):  # a ConcretizationError is a TypeError, as in JAX
        gf.jit(lambda v: float(v))(1.0)


def test_python_errors_propagate_through_transformations():
    def bad(v):
        raise KeyError("from python")

    with pytest.raises(KeyError, match="from python"):
        gf.jit(bad)(1.0)
    with pytest.raises(KeyError):
        gf.grad(bad)(1.0)


def test_control_flow():
    assert float(lax.cond(True, lambda a: a + 1, lambda a: a - 1, 5.0)) == 6.0
    assert float(lax.cond(gnp.asarray(False), lambda a: a + 1, lambda a: a - 1, 5.0)) == 4.0
    assert float(lax.switch(2, [lambda a: a, lambda a: a * 2, lambda a: a * 3], 5.0)) == 15.0
    assert float(lax.while_loop(lambda c: c < 100, lambda c: c * 2, 1.0)) == 128.0
    assert float(lax.fori_loop(0, 5, lambda i, v: v * 2, 1.0)) == 32.0
    carry, ys = lax.scan(lambda c, x: (c + x, c * x), 0.0, gnp.arange(4.0))
    assert float(carry) == 6.0
    np.testing.assert_allclose(np.asarray(ys), [0.0, 0.0, 2.0, 9.0])
    # through jit and grad: d/dx of x^(2^3) by a loop of squarings
    f = lambda x: lax.fori_loop(0, 3, lambda i, v: v * v, x)
    assert abs(float(gf.grad(f)(1.1)) - 8 * 1.1 ** 7) < 1e-9
    assert abs(float(gf.jit(gf.grad(f))(1.1)) - 8 * 1.1 ** 7) < 1e-9
    g = gf.grad(lambda x: lax.cond(x > 0, lambda a: a * a, lambda a: -a, x))
    assert float(g(3.0)) == 6.0 and float(g(-3.0)) == -1.0


def test_random():
    k = gf.random.key(0)
    a = gf.random.normal(k, (1000,))
    assert a.shape == (1000,) and abs(float(a.mean())) < 0.1
    k1, k2 = gf.random.split(k)
    assert not np.array_equal(np.asarray(gf.random.uniform(k1, (4,))), np.asarray(gf.random.uniform(k2, (4,))))
    np.testing.assert_array_equal(np.asarray(gf.random.normal(k, (3,))), np.asarray(gf.random.normal(k, (3,))))


def test_custom_jvp_and_vjp():
    @gf.custom_jvp
    def softplus(x):
        return gnp.log1p(gnp.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * lax.logistic(x) * 2.0  # deliberately twice the true derivative

    assert abs(float(softplus(0.5)) - np.log1p(np.exp(0.5))) < 1e-12
    assert abs(float(gf.grad(softplus)(0.5)) - 2 / (1 + np.exp(-0.5))) < 1e-12  # the rule is used
    assert abs(float(gf.jit(gf.grad(softplus))(0.5)) - 2 / (1 + np.exp(-0.5))) < 1e-12

    @gf.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (gnp.clip(g, -1.0, 1.0),))
    assert float(gf.grad(lambda v: 10.0 * clip_gradient(v))(2.0)) == 1.0
    assert float(gf.grad(lambda v: 0.5 * clip_gradient(v))(2.0)) == 0.5


def test_checkpoint_recomputes_and_keeps_the_gradient():
    f = lambda v: gnp.sin(gnp.sin(v))
    g = gf.checkpoint(f)
    assert float(gf.grad(g)(0.3)) == float(gf.grad(f)(0.3))
    text = str(gf.make_jaxpr(gf.grad(g))(0.3))
    assert text.count("checkpoint[") == 2 and "policy=nothing_saveable" in text
    h = gf.checkpoint(f, policy="dots_saveable")
    assert abs(float(gf.grad(h)(0.3)) - float(gf.grad(f)(0.3))) < 1e-15


def test_custom_jvp_may_branch_on_concrete_values():
    """As in JAX: under grad or jvp of an eager call the primal values are concrete, so the function and
    its rule may branch on them in Python; under jit the branch needs a concrete value and says so."""
    @gf.custom_jvp
    def f(x):
        return x * x if x > 0 else -x

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (dx,) = primals, tangents
        return f(x), (2 * x * dx if x > 0 else -dx)

    assert float(gf.grad(f)(3.0)) == 6.0 and float(gf.grad(f)(-2.0)) == -1.0
    assert float(gf.jvp(f, (3.0,), (1.0,))[1]) == 6.0
    assert float(gf.grad(gf.grad(f))(3.0)) == 2.0
    with pytest.raises(gf.ConcretizationError):
        gf.jit(f)(1.0)
