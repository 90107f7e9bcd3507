"""pure_callback, io_callback, debug.callback and debug.print from Python: eagerly, under jit (called at each
execution with that call's values), vmap (once per example), grad (no derivative; debug sees primals), and the
errors for results that do not match what was promised."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp


def f64(x):
    return gnp.asarray(np.asarray(x, np.float64))


def test_pure_callback():
    seen = []

    def host(v, scale=1.0):
        seen.append(type(v))
        return {"s": np.sin(v) * scale, "n": np.float64(v.sum())}

    spec = {"s": gf.ShapeDtypeStruct((2,), "float64"), "n": gf.ShapeDtypeStruct((), "float64")}
    f = gf.jit(lambda x: gf.pure_callback(host, spec, x, scale=2.0))
    out = f(f64([0.5, 1.0]))
    np.testing.assert_allclose(np.asarray(out["s"]), 2 * np.sin([0.5, 1.0]), rtol=1e-15)
    assert float(out["n"]) == 1.5 and seen[-1] is np.ndarray
    out = f(f64([1.0, 2.0]))
    assert float(out["n"]) == 3.0 and len(seen) == 2
    ys = gf.vmap(lambda x: gf.pure_callback(lambda v: v * 3, gf.ShapeDtypeStruct((), "float64"), x))(f64([1, 2, 3]))
    np.testing.assert_array_equal(np.asarray(ys), [3.0, 6.0, 9.0])
    with pytest.raises(NotImplementedError, match="no derivative"):
        gf.grad(lambda x: gf.pure_callback(np.sin, gf.ShapeDtypeStruct((), "float64"), x))(1.0)
    with pytest.raises(TypeError, match="f32\\[2\\] was promised"):
        gf.pure_callback(lambda v: v, gf.ShapeDtypeStruct((2,), "float32"), f64([1, 2]))
    with pytest.raises(TypeError, match="result_shape_dtypes is"):
        gf.pure_callback(lambda v: (v, v), gf.ShapeDtypeStruct((2,), "float64"), f64([1, 2]))


def test_custom_jvp_gives_a_callback_a_derivative():
    @gf.custom_jvp
    def host_sin(x):
        return gf.pure_callback(np.sin, gf.ShapeDtypeStruct((), "float64"), x)

    @host_sin.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return host_sin(x), gnp.cos(x) * t

    assert abs(float(gf.grad(host_sin)(f64(0.3))) - np.cos(0.3)) < 1e-15
    assert abs(float(gf.jit(gf.grad(host_sin))(f64(0.3))) - np.cos(0.3)) < 1e-15


def test_io_callback_and_debug(capsys):
    log = []
    f = gf.jit(lambda x: (gf.io_callback(lambda v: log.append(float(v)) or np.float64(0), gf.ShapeDtypeStruct((), "float64"),
                                         x), x * 2)[1])
    f(f64(1.0))
    f(f64(2.0))
    assert log == [1.0, 2.0]  # kept although its result is unused, called at each execution

    @gf.jit
    def g(x):
        gf.debug.print("x={} total={t}", x, t=gnp.sum(x))
        gf.debug.callback(lambda v: log.append(v.shape), x)
        return x + 1

    g(f64([1.0, 2.0]))
    assert capsys.readouterr().out == "x=[1. 2.] total=3.0\n" and log[-1] == (2,)
    gf.vmap(lambda v: gf.debug.print("row {}", v))(f64([[0, 1], [2, 3]]))
    assert capsys.readouterr().out == "row [0. 1.]\nrow [2. 3.]\n"
    grad = gf.grad(lambda v: (gf.debug.print("primal {}", v), v * v)[1])(f64(3.0))
    assert float(grad) == 6.0 and capsys.readouterr().out == "primal 3.0\n"
