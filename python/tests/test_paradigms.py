"""The seeds' examples (Theano, TensorFlow 1 and 2, PyTorch, JAX), almost word for word on graft."""
import numpy as np

import graft as gf
import graft.numpy as gnp
from graft import lax


def test_theano_and_tf1_explicit_graph():
    # a = at.dscalar("a"); b = at.dscalar("b"); c = a * b; dc = grad(c, a); f_dc = function([a, b], dc)
    with gf.Graph("mul") as g:
        a = g.placeholder((), "float64")  # placeholders: no values
        b = g.placeholder((), "float64")
        c = a * b  # c holds the IR of an expression
        f = g.function([a, b], [c])
    f_dc = gf.graph_grad(f, 0)  # the IR of the derivative, as a callable
    assert f_dc(1.5, 2.5)[0] == 2.5
    assert f(2.0, 3.0)[0] == 6.0
    assert "mul" in f.jaxpr and "{ lambda" in f_dc.jaxpr
    # TF1: feed values to the graph of a 2x2 product
    with gf.Graph() as g:
        x = g.placeholder((2, 2))
        y = g.placeholder((2, 2))
        z = g.function([x, y], [x @ y])
    ones = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(np.asarray(z(ones, ones)[0]), ones @ ones)


def test_pytorch_tape():
    a = gf.Array(1.0).requires_grad_()  # values, not placeholders
    b = gf.Array(2.0)
    c = a * b  # evaluates c and records the backward
    c.backward()
    assert float(a.grad) == 2.0
    c2 = a * b
    c2.backward()  # gradients accumulate, as in PyTorch
    assert float(a.grad) == 4.0
    a.zero_grad_()
    (a * a).backward()
    assert float(a.grad) == 2.0


def test_tf2_gradient_tape_and_second_order():
    a, b = gf.Array(1.0), gf.Array(2.0)
    with gf.GradientTape() as tape:
        tape.watch(a)
        c = a * b
    assert float(tape.gradient(c, a)) == 2.0
    assert float(a) == 1.0  # a is a plain value again after the block
    x = gf.Array(1.0)
    with gf.GradientTape() as outer_tape:
        outer_tape.watch(x)
        with gf.GradientTape() as tape:
            tape.watch(x)
            y = 2 * x ** 3 + 8
        dy_dx = tape.gradient(y, x)
        assert float(dy_dx) == 6.0 and "6." in repr(dy_dx)
    d2y_dx2 = outer_tape.gradient(dy_dx, x)
    assert float(d2y_dx2) == 12.0


def test_jax_grad_jit_and_make_jaxpr():
    a, b = 2.0, 3.0
    assert gf.grad(lax.mul)(a, b) == 3.0  # c = a * b w.r.t. a: the result is b
    assert gf.jit(gf.grad(lax.mul))(a, b) == 3.0
    assert str(gf.make_jaxpr(lax.mul)(2.0, 3.0)) == "{ lambda ; a:f64[] b:f64[]. let c:f64[] = mul a b in (c,) }"
    g = str(gf.make_jaxpr(gf.grad(lax.mul))(2.0, 3.0))
    assert "mul 1.0:f64[] b" in g

    def f(a):
        return 2 * a ** 3 + 8

    assert gf.grad(f)(1.0) == 6.0
    assert gf.grad(gf.grad(f))(1.0) == 12.0


def test_functorch_style_grad_of_dot():
    a, b = gnp.asarray([2.0]), gnp.asarray([3.0])
    np.testing.assert_array_equal(np.asarray(gf.grad(gnp.dot)(a, b)), [3.0])
