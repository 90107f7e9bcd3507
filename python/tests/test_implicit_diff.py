"""closure_convert, linear_call, lax.custom_linear_solve and lax.custom_root: implicit differentiation
that never differentiates the solver (here loops that reverse mode could not go through), in forward and
reverse mode and to second order, checked against the derivatives of the closed forms."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft import lax


def test_closure_convert_hoists_traced_values():
    hoisted = []

    def outer(t):
        f = lambda x: x * t + gnp.sin(t) + 2.0  # noqa: E731
        cf, consts = gf.closure_convert(f, 1.0)
        hoisted.append(len(consts))
        return cf(3.0, *consts)

    np.testing.assert_allclose(float(outer(0.5)), 3.0 * 0.5 + np.sin(0.5) + 2.0, rtol=1e-12)
    np.testing.assert_allclose(float(gf.grad(outer)(0.5)), 3.0 + np.cos(0.5), rtol=1e-12)
    np.testing.assert_allclose(float(gf.jit(gf.grad(outer))(0.5)), 3.0 + np.cos(0.5), rtol=1e-12)
    # eagerly t is concrete and stays inside; under grad it is a tracer, hoisted (the constant 2.0 never is)
    assert hoisted[0] == 0 and hoisted[1] >= 1 and hoisted[2] >= 1
    # nothing traced: nothing hoisted
    cf, consts = gf.closure_convert(lambda x: 2 * x, 1.0)
    assert consts == [] and float(cf(4.0)) == 8.0


def test_closure_convert_lets_a_custom_vjp_see_closed_over_values():
    def outer(t):
        g, consts = gf.closure_convert(lambda x: x * t, 2.0)

        @gf.custom_vjp
        def f(x, *cs):
            return g(x, *cs)

        f.defvjp(lambda x, *cs: (g(x, *cs), (x, cs)),
                 lambda r, ct: (ct * r[1][0], *[ct * r[0] * 10.0 for _ in r[1]]))  # a marked gradient for t
        return f(2.0, *consts)

    np.testing.assert_allclose(float(gf.grad(outer)(3.0)), 20.0)  # 10 * x, from the custom rule


def cg(matvec, b, iters=60):
    """Conjugate gradients in a fori_loop: a solver that reverse mode does not go through."""
    def body(_, s):
        x, r, p, rs = s
        ap = matvec(p)
        alpha = rs / gnp.maximum(gnp.vdot(p, ap), 1e-300)
        x, r = x + alpha * p, r - alpha * ap
        rs_new = gnp.vdot(r, r)
        return x, r, r + (rs_new / gnp.maximum(rs, 1e-300)) * p, rs_new

    x0 = gnp.zeros_like(b)
    return lax.fori_loop(0, iters, body, (x0, b, b, gnp.vdot(b, b)))[0]


def spd(m):
    return m @ m.T + 4 * gnp.eye(m.shape[0])


def test_custom_linear_solve_symmetric_matches_the_closed_form():
    rng = np.random.default_rng(0)
    m0, b0 = rng.normal(size=(4, 4)), rng.normal(size=4)

    def via_cg(m, b):
        a = spd(m)
        return gnp.sum(gnp.sin(lax.custom_linear_solve(lambda v: a @ v, b, cg, symmetric=True)))

    def closed(m, b):
        return gnp.sum(gnp.sin(gnp.linalg.solve(spd(m), b)))

    np.testing.assert_allclose(float(via_cg(m0, b0)), float(closed(m0, b0)), rtol=1e-10)
    for i in (0, 1):
        np.testing.assert_allclose(np.asarray(gf.grad(via_cg, argnums=i)(m0, b0)),
                                   np.asarray(gf.grad(closed, argnums=i)(m0, b0)), rtol=1e-8, atol=1e-10)
    # under jit too
    # under jit, called again: the cached program runs the solves (linear_call steps) without the caller's GIL
    jg = gf.jit(gf.grad(via_cg))
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(jg(m0, b0)), np.asarray(gf.grad(closed)(m0, b0)), rtol=1e-8, atol=1e-10)


def test_custom_linear_solve_with_a_transpose_solve():
    rng = np.random.default_rng(1)
    a0, b0 = rng.normal(size=(3, 3)) + 3 * np.eye(3), rng.normal(size=3)

    def dense(mv, n=3):
        return gf.vmap(mv, out_axes=1)(gnp.eye(n))

    solve = lambda mv, r: gnp.linalg.solve(gf.lax.stop_gradient(dense(mv)), r)  # noqa: E731

    def f(a, b):
        x = lax.custom_linear_solve(lambda v: a @ v, b, solve, transpose_solve=solve)
        return gnp.sum(x * gnp.arange(1.0, 4.0))

    def closed(a, b):
        return gnp.sum(gnp.linalg.solve(a, b) * gnp.arange(1.0, 4.0))

    for i in (0, 1):
        np.testing.assert_allclose(np.asarray(gf.grad(f, argnums=i)(a0, b0)),
                                   np.asarray(gf.grad(closed, argnums=i)(a0, b0)), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="transpose_solve"):
        gf.grad(lambda a, b: gnp.sum(lax.custom_linear_solve(lambda v: a @ v, b, solve)))(a0, b0)


def newton_sqrt(f, x0):
    # Newton's method on f(x) = x^2 - a, in a while loop (f' from a forward-mode jvp)
    def body(s):
        x, i = s
        fx, dfx = gf.jvp(f, (x,), (gnp.ones_like(x),))
        return x - fx / dfx, i + 1

    return lax.while_loop(lambda s: s[1] < 30, body, (x0, 0))[0]


def test_custom_root_scalar_and_vector():
    def root(a):
        return lax.custom_root(lambda x: x * x - a, gnp.ones_like(a), newton_sqrt, lambda g, y: y / g(1.0))

    np.testing.assert_allclose(float(root(2.0)), np.sqrt(2.0), rtol=1e-12)
    np.testing.assert_allclose(float(gf.grad(root)(2.0)), 0.5 / np.sqrt(2.0), rtol=1e-10)
    np.testing.assert_allclose(float(gf.jit(gf.grad(root))(3.0)), 0.5 / np.sqrt(3.0), rtol=1e-10)
    # the reverse rule is itself differentiable: the second derivative -a^(-3/2) / 4
    np.testing.assert_allclose(float(gf.grad(gf.grad(root))(2.0)), -0.25 * 2.0 ** -1.5, rtol=1e-10)
    # elementwise vector roots: the transposed Jacobian is diagonal; a dense tangent_solve
    a0 = np.array([1.5, 4.0, 9.0])

    def dense_solve(g, y):
        return gnp.linalg.solve(gf.vmap(g, out_axes=1)(gnp.eye(y.shape[0])), y)

    def roots(a):
        return gnp.sum(lax.custom_root(lambda x: x * x - a, gnp.ones_like(a), newton_sqrt, dense_solve) * a)

    # d/da sum(sqrt(a) * a) = 1.5 sqrt(a)
    np.testing.assert_allclose(np.asarray(gf.grad(roots)(a0)), 1.5 * np.sqrt(a0), rtol=1e-10)


# Forward mode (JAX's too): the tangent is one more solve, A x' = b' - A' x, through linear_call; the
# CG solver in a fori_loop is never differentiated. jacfwd equals jacrev and the closed form's; jvp under
# vmap and jit; a Hessian (forward over reverse) through the solve.
def test_custom_linear_solve_forward_mode():
    rng = np.random.default_rng(2)
    m0, b0 = rng.normal(size=(4, 4)), rng.normal(size=4)

    def via_cg(m, b):
        a = spd(m)
        return lax.custom_linear_solve(lambda v: a @ v, b, cg, symmetric=True)

    def closed(m, b):
        return gnp.linalg.solve(spd(m), b)

    for i in (0, 1):
        want = np.asarray(gf.jacfwd(closed, argnums=i)(m0, b0))
        np.testing.assert_allclose(np.asarray(gf.jacfwd(via_cg, argnums=i)(m0, b0)), want, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(np.asarray(gf.jacrev(via_cg, argnums=i)(m0, b0)), want, rtol=1e-8, atol=1e-10)
    dm, db = rng.normal(size=(4, 4)), rng.normal(size=4)
    _, t = gf.jit(lambda m, b: gf.jvp(via_cg, (m, b), (dm, db)))(m0, b0)
    np.testing.assert_allclose(np.asarray(t), np.asarray(gf.jvp(closed, (m0, b0), (dm, db))[1]), rtol=1e-8, atol=1e-10)
    bs = rng.normal(size=(3, 4))
    got = gf.vmap(lambda b: gf.jvp(via_cg, (m0, b), (dm, b))[1])(bs)
    want = np.stack([np.asarray(gf.jvp(closed, (m0, b), (dm, b))[1]) for b in bs])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-8, atol=1e-10)
    h = gf.hessian(lambda b: gnp.sum(via_cg(m0, b) ** 3))(b0)
    np.testing.assert_allclose(np.asarray(h), np.asarray(gf.hessian(lambda b: gnp.sum(closed(m0, b) ** 3))(b0)),
                               rtol=1e-7, atol=1e-9)


def test_custom_root_forward_mode():
    def root(a):
        return lax.custom_root(lambda x: x * x - a, gnp.ones_like(a), newton_sqrt, lambda g, y: y / g(1.0))

    np.testing.assert_allclose(float(gf.jacfwd(root)(2.0)), 0.5 / np.sqrt(2.0), rtol=1e-10)
    np.testing.assert_allclose(float(gf.jvp(root, (3.0,), (2.0,))[1]), 2.0 * 0.5 / np.sqrt(3.0), rtol=1e-10)
    # second derivatives forward over forward and forward over reverse
    np.testing.assert_allclose(float(gf.jacfwd(gf.jacfwd(root))(2.0)), -0.25 * 2.0 ** -1.5, rtol=1e-8)
    np.testing.assert_allclose(float(gf.jacfwd(gf.grad(root))(2.0)), -0.25 * 2.0 ** -1.5, rtol=1e-8)
    a0 = np.array([1.5, 4.0, 9.0])
    got = gf.vmap(lambda a: gf.jvp(root, (a,), (1.0,))[1])(a0)
    np.testing.assert_allclose(np.asarray(got), 0.5 / np.sqrt(a0), rtol=1e-10)


# linear_call: fun applied forward, fun_transpose used by reverse mode (never fun's derivative), the
# transposed call transposable again, residuals as a pytree, vmap of both.
def test_linear_call():
    from graft.custom_derivatives import linear_call
    calls = {"t": 0}

    def fun(res, x):  # x -> s * (A x)
        return res["s"] * (res["a"] @ x)

    def fun_t(res, ct):
        calls["t"] += 1
        return res["s"] * (res["a"].T @ ct)

    rng = np.random.default_rng(3)
    a, x = gnp.asarray(rng.normal(size=(3, 4))), gnp.asarray(rng.normal(size=4))
    res = {"a": a, "s": gnp.asarray(2.0)}
    f = lambda x: linear_call(fun, fun_t, res, x)  # noqa: E731
    np.testing.assert_allclose(np.asarray(f(x)), 2.0 * np.asarray(a) @ np.asarray(x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gf.jvp(f, (x,), (x,))[1]), np.asarray(f(x)), rtol=1e-12)
    ct = gnp.asarray(rng.normal(size=3))
    _, pull = gf.vjp(f, x)
    np.testing.assert_allclose(np.asarray(pull(ct)[0]), 2.0 * np.asarray(a).T @ np.asarray(ct), rtol=1e-12)
    assert calls["t"] >= 1
    # the transpose of the transpose is fun again
    back = gf.linear_transpose(lambda c: gf.vjp(f, x)[1](c)[0], ct)
    np.testing.assert_allclose(np.asarray(back(x)[0]), np.asarray(f(x)), rtol=1e-12)
    # a transpose that does not match fun shows in the gradient: reverse mode uses it, not fun's derivative
    g = gf.grad(lambda x: gnp.sum(linear_call(fun, lambda r, c: 0.0 * (r["a"].T @ c), res, x)))(x)
    np.testing.assert_allclose(np.asarray(g), np.zeros(4))
    xs = gnp.asarray(rng.normal(size=(5, 4)))
    np.testing.assert_allclose(np.asarray(gf.vmap(f)(xs)), 2.0 * np.asarray(xs) @ np.asarray(a).T, rtol=1e-12)
    gv = gf.vmap(gf.grad(lambda x: gnp.sum(f(x) ** 2)))(xs)
    want = np.stack([2.0 * np.asarray(a).T @ (2 * (2.0 * np.asarray(a) @ v)) for v in np.asarray(xs)])
    np.testing.assert_allclose(np.asarray(gv), want, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(gf.jit(gf.grad(lambda x: gnp.sum(f(x) ** 2)))(x)),
                               2.0 * np.asarray(a).T @ (2 * (2.0 * np.asarray(a) @ np.asarray(x))), rtol=1e-10)


# Second derivatives in the matrix (the point the tangent solve linearizes at moves) in all three
# orders, with CG, whose own derivative past convergence is NaN: the implicit d(A^-1) = -A^-1 A' A^-1
# is used at every order, never the solver's. A root's Hessian likewise.
def test_second_derivatives_never_differentiate_the_solver():
    rng = np.random.default_rng(4)
    m0, b0 = rng.normal(size=(3, 3)), rng.normal(size=3)

    def via_cg(m):
        return gnp.sum(lax.custom_linear_solve(lambda v: spd(m) @ v, b0, cg, symmetric=True) ** 2)

    def closed(m):
        return gnp.sum(gnp.linalg.solve(spd(m), b0) ** 2)

    for name, h in [("forward over reverse", gf.hessian), ("reverse over reverse", lambda f: gf.jacrev(gf.jacrev(f))),
                    ("forward over forward", lambda f: gf.jacfwd(gf.jacfwd(f)))]:
        np.testing.assert_allclose(np.asarray(h(via_cg)(m0)), np.asarray(h(closed)(m0)), rtol=1e-8, atol=1e-12,
                                   err_msg=name)
    a0 = np.array([1.5, 4.0, 9.0])

    def dense_solve(g, y):
        return gnp.linalg.solve(gf.vmap(g, out_axes=1)(gnp.eye(y.shape[0])), y)

    def cubes(a):
        return gnp.sum(lax.custom_root(lambda x: x * x - a, gnp.ones_like(a), newton_sqrt, dense_solve) ** 3)

    # sum(a^(3/2)): its Hessian is diag(0.75 / sqrt(a))
    np.testing.assert_allclose(np.asarray(gf.hessian(cubes)(a0)), np.diag(0.75 / np.sqrt(a0)), rtol=1e-9, atol=1e-12)
