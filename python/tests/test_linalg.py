"""graft.numpy.linalg, graft.scipy.linalg and graft.lax.linalg against NumPy and SciPy (Debian's packages as
oracles) in float64: values, sign-invariant checks for eigenvectors and singular vectors, SciPy's defaults,
gradients against finite differences, jit and vmap."""
import numpy as np
import pytest

import graft as gf
import graft.lax.linalg as glax_linalg
import graft.numpy as gnp
import graft.numpy.linalg as gla
from graft.scipy import linalg as gsl

sla = pytest.importorskip("scipy.linalg")

RNG = np.random.default_rng(0)


def f64(x):
    return gnp.asarray(np.asarray(x, np.float64))


def well(*shape):
    a = RNG.uniform(-1, 1, shape)
    return a + 3 * np.eye(shape[-1])


def spd(n):
    b = RNG.uniform(-1, 1, (n, n))
    return b @ b.T + n * np.eye(n)


def close(x, y, tol=1e-10):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def test_numpy_linalg_values():
    a, b, v = well(4, 4), RNG.uniform(-1, 1, (4, 2)), RNG.uniform(-1, 1, 4)
    close(gla.solve(f64(a), f64(b)), np.linalg.solve(a, b))
    close(gla.solve(f64(a), f64(v)), np.linalg.solve(a, v))
    close(gla.inv(f64(a)), np.linalg.inv(a))
    close(gla.det(f64(a)), np.linalg.det(a))
    sign, logdet = gla.slogdet(f64(a))
    ns, nl = np.linalg.slogdet(a)
    close(sign, ns)
    close(logdet, nl)
    s = spd(5)
    close(gla.cholesky(f64(s)), np.linalg.cholesky(s))
    close(gla.cholesky(f64(s), upper=True), np.linalg.cholesky(s).T)
    w, vecs = gla.eigh(f64(s))
    nw, nv = np.linalg.eigh(s)
    close(w, nw)
    close(np.abs(np.sum(np.asarray(vecs) * nv, 0)), np.ones(5))  # the same vectors up to sign
    close(gla.eigvalsh(f64(s)), nw)
    m = RNG.uniform(-1, 1, (5, 3))
    close(gla.svd(f64(m), compute_uv=False), np.linalg.svd(m, compute_uv=False))
    u, sv, vh = gla.svd(f64(m), full_matrices=False)
    close(np.asarray(u) * np.asarray(sv) @ np.asarray(vh), m)
    q, r = gla.qr(f64(m))
    nq, nr = np.linalg.qr(m)
    close(np.abs(np.asarray(r)), np.abs(nr))
    close(np.asarray(q) @ np.asarray(r), m)
    close(gla.pinv(f64(m)), np.linalg.pinv(m))
    assert int(gla.matrix_rank(f64(m @ RNG.uniform(-1, 1, (3, 2)) @ RNG.uniform(-1, 1, (2, 4))))) == 2
    bb = RNG.uniform(-1, 1, 5)
    x, resid, rank, svals = gla.lstsq(f64(m), f64(bb))
    nx, nres, nrank, ns = np.linalg.lstsq(m, bb, rcond=None)
    close(x, nx)
    close(resid, nres[0])
    assert int(rank) == nrank
    close(gla.matrix_power(f64(a), 3), np.linalg.matrix_power(a, 3))
    close(gla.matrix_power(f64(a), -2), np.linalg.matrix_power(a, -2))
    close(gla.multi_dot([f64(a), f64(b), f64(b.T)]), np.linalg.multi_dot([a, b, b.T]))
    for ord_ in [None, 1, 2, -1, -2, np.inf, -np.inf, "fro", "nuc"]:
        close(gla.norm(f64(m), ord_), np.linalg.norm(m, ord_))
    for ord_ in [None, 0, 1, 2, 3, np.inf, -np.inf]:
        close(gla.norm(f64(v), ord_), np.linalg.norm(v, ord_))
    t = RNG.uniform(-1, 1, (2, 3, 4))
    close(gla.norm(f64(t), axis=(0, 2), keepdims=True), np.linalg.norm(t, axis=(0, 2), keepdims=True))
    close(gla.cond(f64(a)), np.linalg.cond(a))
    close(gla.cond(f64(a), "fro"), np.linalg.cond(a, "fro"))
    close(gnp.tril(f64(a), -1), np.tril(a, -1))
    close(gnp.triu(f64(a), 1), np.triu(a, 1))


def test_scipy_linalg_defaults():
    s, b = spd(4), RNG.uniform(-1, 1, (4, 3))
    close(gsl.cholesky(f64(s)), sla.cholesky(s))  # upper by default, as SciPy
    close(gsl.cholesky(f64(s), lower=True), sla.cholesky(s, lower=True))
    close(gsl.cho_solve(gsl.cho_factor(f64(s)), f64(b)), sla.cho_solve(sla.cho_factor(s), b))
    a = well(4, 4)
    for lower in (False, True):
        for trans in (0, 1, "T"):
            close(gsl.solve_triangular(f64(a), f64(b), trans=trans, lower=lower),
                  sla.solve_triangular(a, b, trans=trans, lower=lower))
    close(gsl.solve_triangular(f64(a), f64(b), lower=True, unit_diagonal=True),
          sla.solve_triangular(a, b, lower=True, unit_diagonal=True))
    lu, piv = gsl.lu_factor(f64(a))
    nlu, npiv = sla.lu_factor(a)
    close(lu, nlu)
    np.testing.assert_array_equal(np.asarray(piv), npiv)
    close(gsl.lu_solve((lu, piv), f64(b)), sla.lu_solve((nlu, npiv), b))
    close(gsl.lu_solve((lu, piv), f64(b), trans=1), sla.lu_solve((nlu, npiv), b, trans=1))
    for shape in [(4, 4), (3, 5), (5, 3)]:
        m = RNG.uniform(-1, 1, shape)
        for got, want in zip(gsl.lu(f64(m)), sla.lu(m)):
            close(got, want)
    q, r = gsl.qr(f64(RNG.uniform(-1, 1, (5, 3))))
    assert q.shape == (5, 5) and r.shape == (5, 3)  # SciPy's default mode is 'full'
    w = gsl.eigh(f64(s), eigvals_only=True)
    close(w, sla.eigh(s, eigvals_only=True))
    close(gsl.solve(f64(s), f64(b), assume_a="pos"), np.linalg.solve(s, b))
    close(gsl.det(f64(a)), sla.det(a))


def test_lax_linalg():
    a = well(3, 3)
    lu, piv, perm = glax_linalg.lu(f64(a))
    np.testing.assert_array_equal(np.asarray(glax_linalg.lu_pivots_to_permutation(piv, 3)), np.asarray(perm))
    l_factor = np.tril(np.asarray(lu), -1) + np.eye(3)
    close(l_factor @ np.triu(np.asarray(lu)), a[np.asarray(perm)])
    b = RNG.uniform(-1, 1, (3, 2))
    x = glax_linalg.triangular_solve(f64(a), f64(b.T))  # JAX's defaults: right side, upper
    close(np.asarray(x) @ np.triu(a), b.T)
    v, w = glax_linalg.eigh(f64(a + a.T))
    close(np.asarray(v) @ np.diag(np.asarray(w)) @ np.asarray(v).T, a + a.T)
    u, s, vh = glax_linalg.svd(f64(a))
    close(np.asarray(u) * np.asarray(s) @ np.asarray(vh), a)
    s3 = spd(3)
    close(glax_linalg.cholesky(f64(s3)), np.linalg.cholesky(s3))


def test_gradients_jit_vmap():
    a = well(4, 4)

    def f(x):
        sign, logdet = gla.slogdet(x)
        return logdet + gnp.sum(gla.solve(x, gnp.ones(4, dtype="float64")) ** 2) + gnp.sum(gla.eigvalsh(x) ** 3)

    g = np.asarray(gf.grad(f)(f64(a)))
    eps = 1e-6
    num = np.zeros_like(a)
    for i in range(4):
        for j in range(4):
            d = np.zeros_like(a)
            d[i, j] = eps
            num[i, j] = (float(f(f64(a + d))) - float(f(f64(a - d)))) / (2 * eps)
    close(g, num, 1e-6)
    close(gf.jit(f)(f64(a)), f(f64(a)), 1e-12)
    stack = np.stack([well(4, 4) for _ in range(3)])
    close(gf.vmap(f)(f64(stack)), np.array([float(f(f64(m))) for m in stack]), 1e-12)
    # no derivative of svd with full matrices, as JAX
    with pytest.raises(NotImplementedError):
        gf.grad(lambda x: gnp.sum(gla.svd(x)[0]))(f64(a))


def test_expm_matches_scipy():
    for scale in (1e-4, 0.3, 2.0, 30.0):
        a = RNG.normal(size=(6, 6)) * scale
        want = sla.expm(a)
        got = np.asarray(gsl.expm(f64(a)))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
        if scale <= 2:  # within f32's range
            got32 = np.asarray(gsl.expm(gnp.asarray(a.astype(np.float32))))
            np.testing.assert_allclose(got32, want, rtol=0, atol=2e-6 * np.abs(want).max())
    batch = RNG.normal(size=(3, 4, 4)) * np.array([0.01, 1.0, 10.0])[:, None, None]
    np.testing.assert_allclose(np.asarray(gsl.expm(f64(batch))), np.stack([sla.expm(b) for b in batch]), rtol=1e-11,
                               atol=1e-13)
    np.testing.assert_allclose(np.asarray(gf.jit(gsl.expm)(f64(batch))), np.asarray(gsl.expm(f64(batch))), rtol=1e-14)
    # the derivative: the Fréchet derivative L(A, E) = d/dt e^(A + tE), from SciPy
    a, e = RNG.normal(size=(4, 4)) * 1.5, RNG.normal(size=(4, 4))
    _, frechet = sla.expm_frechet(a, e)
    _, tangent = gf.jvp(gsl.expm, (f64(a),), (f64(e),))
    np.testing.assert_allclose(np.asarray(tangent), frechet, rtol=1e-10, atol=1e-12)
    assert np.isnan(np.asarray(gsl.expm(f64(np.eye(2) * 1e4), max_squarings=4))).all()


def test_errors():
    with pytest.raises(ValueError, match="needs square"):
        gla.inv(gnp.ones((3, 4)))
    with pytest.raises(TypeError, match="f32, f64, c64 or c128"):
        glax_linalg.cholesky(gnp.ones((2, 2), dtype="bfloat16"))
    with pytest.raises(ValueError, match="mode must be"):
        gsl.qr(gnp.ones((2, 2)), mode="bogus")
