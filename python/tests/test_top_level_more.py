"""ensure_compile_time_eval, typeof / ShapedArray, checkpoint_policies, nn.log1mexp / logmeanexp."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp


def test_ensure_compile_time_eval():
    seen = {}

    @gf.jit
    def f(x):
        with gf.ensure_compile_time_eval():
            n = gnp.sum(gnp.arange(4.0))  # computed now, not traced
            y = x * n
        seen["concrete"] = float(n)  # a concrete value while tracing
        return y if float(n) > 5 else -y

    np.testing.assert_allclose(np.asarray(f(gnp.ones(2))), [6.0, 6.0])
    assert seen["concrete"] == 6.0

    @gf.jit
    def g(x):
        return x if float(gnp.sum(gnp.arange(4.0))) > 5 else -x

    with pytest.raises(gf.ConcretizationError):
        g(gnp.ones(2))
    # under grad: constants concrete, the differentiated value traced
    d = gf.grad(lambda x: (lambda k: gnp.sum(x * x) * k)(float(gnp.exp(gnp.asarray(0.0)))))(gnp.ones(2))
    np.testing.assert_allclose(np.asarray(d), [2.0, 2.0])


def test_typeof():
    t = gf.typeof(gnp.ones((2, 3), gnp.float32))
    assert str(t) == "float32[2,3]" and t.shape == (2, 3) and t.ndim == 2 and not t.weak_type
    assert repr(gf.typeof(1.0)).startswith("ShapedArray(") and gf.typeof(1.0).weak_type
    seen = []
    gf.jit(lambda x: seen.append(gf.typeof(x)) or x)(gnp.ones(4, gnp.int32))
    assert seen == [gf.ShapedArray((4,), "int32")]


def test_checkpoint_policies():
    def f(x):
        h = gf.checkpoint_name(gnp.sin(x) * 2.0, "h")
        return gnp.sum(gnp.cos(h @ h.T))

    x = gnp.asarray(np.random.default_rng(0).normal(size=(3, 3)))
    want = np.asarray(gf.grad(f)(x))
    for policy in (gf.checkpoint_policies.everything_saveable, gf.checkpoint_policies.nothing_saveable,
                   gf.checkpoint_policies.dots_saveable, gf.checkpoint_policies.dots_with_no_batch_dims_saveable,
                   gf.checkpoint_policies.save_only_these_names("h")):
        np.testing.assert_allclose(np.asarray(gf.grad(gf.checkpoint(f, policy=policy))(x)), want, rtol=1e-12)


def test_log1mexp_and_logmeanexp():
    x = np.array([1e-10, 1e-3, 0.5, np.log(2.0), 3.0, 50.0])
    # the reference in the form accurate on each side of log 2 (log(-expm1(-50)) rounds to 0)
    want = np.where(x < np.log(2.0), np.log(-np.expm1(-x)), np.log1p(-np.exp(-x)))
    np.testing.assert_allclose(np.asarray(gf.nn.log1mexp(x)), want, rtol=1e-13)
    assert float(gf.nn.log1mexp(gnp.asarray(50.0))) < 0
    a = np.random.default_rng(1).normal(size=(3, 5)) * 10
    np.testing.assert_allclose(np.asarray(gf.nn.logmeanexp(a, axis=1)), np.log(np.mean(np.exp(a), axis=1)),
                               rtol=1e-12)
    np.testing.assert_allclose(float(gf.nn.logmeanexp(a)), np.log(np.mean(np.exp(a))), rtol=1e-12)
    w = a > 0
    got = np.asarray(gf.nn.logmeanexp(a, axis=1, where=w, keepdims=True))
    want = np.array([[np.log(np.mean(np.exp(r[m])))] for r, m in zip(a, w)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    g = gf.grad(lambda v: gf.nn.logmeanexp(v))(gnp.asarray(a[0]))
    np.testing.assert_allclose(np.asarray(g), np.exp(a[0]) / np.exp(a[0]).sum(), rtol=1e-12)


def test_named_scope_and_named_call():
    def layer(w, x):
        return gnp.tanh(x @ w)

    def f(w, x):
        with gf.named_scope("model"):
            h = gf.named_call(layer, name="dense")(w, x)
            with gf.named_scope("head"):
                h = h * 2.0
        return gnp.sum(h)

    j = gf.make_jaxpr(f)(gnp.ones((3, 3)), gnp.ones((2, 3)))
    assert "#" not in str(j)
    text = j.pretty_print(name_stack=True)
    assert "# [model/dense]" in text and "# [model/head]" in text
    assert [l for l in text.splitlines() if "reduce_sum" in l and "#" in l] == []
    assert "# [helper]" in gf.make_jaxpr(gf.named_call(lambda v: v + 1.0, name="helper"))(1.0).pretty_print(
        name_stack=True)
    with pytest.raises(TypeError):
        gf.named_scope(3)
    np.testing.assert_allclose(float(gf.jit(f)(gnp.ones((3, 3)), gnp.ones((2, 3)))), 12 * np.tanh(3.0), rtol=1e-12)
