"""graft.numpy.linalg, graft.scipy.linalg and graft.lax.linalg on complex64 / complex128 matrices, and eig on
general ones, against NumPy and SciPy: values, phase-free checks for eigenvectors and singular vectors
(projectors, a v = v w), gradients of real losses against finite differences in the real and imaginary
directions (JAX's convention), jit and vmap."""
import numpy as np
import pytest

import graft as gf
import graft.lax.linalg as glax_linalg
import graft.numpy as gnp
import graft.numpy.linalg as gla
from graft.scipy import linalg as gsl

sla = pytest.importorskip("scipy.linalg")

RNG = np.random.default_rng(7)


def crand(*shape):
    return RNG.uniform(-1, 1, shape) + 1j * RNG.uniform(-1, 1, shape)


def cwell(*shape):
    return crand(*shape) + 3 * np.eye(shape[-1])


def hpd(n):
    b = crand(n, n)
    return b @ b.conj().T + n * np.eye(n)


def g(x):
    return gnp.asarray(np.asarray(x))


def close(x, y, tol=1e-10):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def test_solve_inv_det_slogdet_match_numpy():
    a, b = cwell(4, 4), crand(4, 2)
    close(gla.solve(g(a), g(b)), np.linalg.solve(a, b))
    close(gla.inv(g(a)), np.linalg.inv(a))
    close(gla.det(g(a)), np.linalg.det(a))
    sign, logdet = gla.slogdet(g(a))
    ns, nl = np.linalg.slogdet(a)
    close(sign, ns)
    close(logdet, nl)
    assert np.asarray(logdet).dtype == np.float64
    stack = cwell(3, 4, 4)
    close(gla.det(g(stack)), np.linalg.det(stack))
    close(gla.matrix_power(g(a), -2), np.linalg.matrix_power(a, -2))
    a64 = a.astype(np.complex64)
    r = gla.inv(g(a64))
    assert np.asarray(r).dtype == np.complex64
    close(r, np.linalg.inv(a), 1e-5)


def test_cholesky_triangular_lu_match_scipy():
    a, b = hpd(5), crand(5, 3)
    close(gla.cholesky(g(a)), np.linalg.cholesky(a))
    close(gla.cholesky(g(a), upper=True), np.linalg.cholesky(a).conj().T)
    close(gsl.cholesky(g(a)), sla.cholesky(a))
    close(gsl.cho_solve(gsl.cho_factor(g(a)), g(b)), sla.cho_solve(sla.cho_factor(a), b))
    close(gsl.cho_solve(gsl.cho_factor(g(a), lower=True), g(b)), sla.cho_solve(sla.cho_factor(a, lower=True), b))
    u = np.triu(cwell(5, 5))
    for trans in (0, 1, 2, "N", "T", "C"):
        close(gsl.solve_triangular(g(u), g(b), trans=trans), sla.solve_triangular(u, b, trans=trans))
    m = cwell(5, 5)
    lu, piv = gsl.lu_factor(g(m))
    slu, spiv = sla.lu_factor(m)
    close(lu, slu)
    close(piv, spiv)
    for trans in (0, 1, 2):
        close(gsl.lu_solve((lu, piv), g(b), trans=trans), sla.lu_solve((slu, spiv), b, trans=trans))
    p, l, uu = gsl.lu(g(m))
    close(np.asarray(p) @ np.asarray(l) @ np.asarray(uu), m)
    x = glax_linalg.triangular_solve(g(u), g(b[:, :2].T.copy()), left_side=False, lower=False, transpose_a=True,
                                     conjugate_a=True)
    close(np.asarray(x) @ u.conj().T, b[:, :2].T)


def test_eigh_qr_svd_phase_free():
    h0 = crand(5, 5)
    h = h0 + h0.conj().T
    w, v = gla.eigh(g(h))
    nw, nv = np.linalg.eigh(h)
    close(w, nw)
    assert np.asarray(w).dtype == np.float64
    # projectors v_k v_k^H do not depend on each vector's phase
    proj = lambda vv: np.einsum("ik,jk->kij", vv, vv.conj())  # noqa: E731
    close(proj(np.asarray(v)), proj(nv))
    close(gla.eigvalsh(g(h)), np.linalg.eigvalsh(h))
    a = crand(6, 4)
    q, r = gla.qr(g(a))
    close(np.asarray(q) @ np.asarray(r), a)
    close(np.asarray(q).conj().T @ np.asarray(q), np.eye(4))
    nq, nr = np.linalg.qr(a)
    # the same factorization up to a unit phase per column of q / row of r
    ph = np.diag(np.asarray(r)) / np.diag(nr)
    close(np.abs(ph), np.ones(4))
    close(np.asarray(q), nq * ph)
    for full in (False, True):
        u, s, vh = gla.svd(g(a), full_matrices=full)
        nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
        close(s, ns)
        assert np.asarray(s).dtype == np.float64
        terms = lambda uu, vv: np.einsum("ik,kj->kij", uu[:, :4], vv[:4])  # noqa: E731
        close(terms(np.asarray(u), np.asarray(vh)), terms(nu, nvh))
    close(gla.svdvals(g(a)), np.linalg.svd(a, compute_uv=False))
    close(gla.pinv(g(a)), np.linalg.pinv(a))
    assert int(gla.matrix_rank(g(a))) == np.linalg.matrix_rank(a)
    b = crand(6, 2)
    x, resid, rank, sv = gla.lstsq(g(a), g(b))
    nx, nres, nrank, nsv = np.linalg.lstsq(a, b, rcond=None)
    close(x, nx)
    close(resid, nres)
    close(sv, nsv)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32, np.complex64])
def test_eig_matches_numpy(dtype):
    a = (crand(5, 5) if np.issubdtype(dtype, np.complexfloating) else RNG.uniform(-1, 1, (5, 5))).astype(dtype)
    w, v = gla.eig(g(a))
    nw = np.linalg.eigvals(a)
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    assert np.asarray(w).dtype == np.result_type(dtype, np.complex64)
    key = lambda z: np.lexsort((np.round(z.imag, 6), np.round(z.real, 6)))  # noqa: E731
    wg = np.asarray(w)
    close(wg[key(wg)], nw[key(nw)], tol)
    vg = np.asarray(v)
    close(a @ vg, vg * wg, tol)
    close(np.linalg.norm(vg, axis=0), np.ones(5), tol)
    close(gla.eigvals(g(a)), wg, tol)
    wl, vl, vr = glax_linalg.eig(g(a))
    close(wl, wg, tol)
    vlg = np.asarray(vl)
    close(vlg.conj().T @ a, wg[:, None] * vlg.conj().T, tol)
    (only_w,) = glax_linalg.eig(g(a), compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    close(only_w, wg, tol)


def test_eig_derivatives():
    a = RNG.uniform(-1, 1, (4, 4)) + np.diag([0.0, 3.0, 6.0, 9.0])
    gr = gf.grad(lambda x: gnp.real(gnp.sum(gla.eigvals(x))))(g(a))
    close(gr, np.eye(4))
    # w' = diag(V^-1 A' V): against finite differences of NumPy's eigenvalues along a direction
    t = RNG.uniform(-1, 1, (4, 4))
    _, tw = gf.jvp(gla.eigvals, (g(a),), (g(t),))
    eps = 1e-6
    srt = lambda z: z[np.argsort(z.real)]  # noqa: E731
    fd = (srt(np.linalg.eigvals(a + eps * t)) - srt(np.linalg.eigvals(a - eps * t))) / (2 * eps)
    w0 = np.asarray(gla.eigvals(g(a)))
    close(np.asarray(tw)[np.argsort(w0.real)], fd, 1e-6)
    with pytest.raises(NotImplementedError, match="eigenvectors"):
        gf.grad(lambda x: gnp.real(gnp.sum(gla.eig(x)[1])))(g(a))


def test_gradient_of_real_loss_of_complex_matrix():
    a, b = cwell(3, 3), crand(3, 2)

    def loss(x):
        h = x @ gnp.conj(gnp.swapaxes(x, -1, -2)) + gnp.eye(3)
        ll = gla.cholesky(h)
        w = gla.eigvalsh(h)
        s = gla.svd(x, compute_uv=False)
        return (gnp.sum(gnp.abs(gla.solve(x, g(b))) ** 2) + gnp.sum(gnp.real(ll)) + gnp.sum(gnp.imag(ll))
                + gnp.sum(w) + gnp.sum(s * s) + gnp.real(gla.det(x)) + gla.slogdet(x)[1])

    gr = np.asarray(gf.grad(loss)(g(a)))
    eps = 1e-6
    for idx in np.ndindex(3, 3):
        for d in (1, 1j):
            p, m = a.copy(), a.copy()
            p[idx] += eps * d
            m[idx] -= eps * d
            fd = (float(loss(g(p))) - float(loss(g(m)))) / (2 * eps)
            got = gr[idx].real if d == 1 else -gr[idx].imag
            assert abs(got - fd) < 1e-6 * (1 + abs(fd)), (idx, d, got, fd)


def test_norms_and_expm():
    x = crand(3, 4)
    for ord_ in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        close(gla.norm(g(x), ord_), np.linalg.norm(x, ord_))
    v = crand(5)
    for ord_ in (None, 0, 1, 2, 3, np.inf, -np.inf):
        close(gla.norm(g(v), ord_), np.linalg.norm(v, ord_))
    sq = cwell(4, 4)
    close(gla.cond(g(sq)), np.linalg.cond(sq))
    close(gla.cond(g(sq), 1), np.linalg.cond(sq, 1))
    close(gsl.expm(g(sq * 0.8)), sla.expm(sq * 0.8), 1e-9)


def test_jit_and_vmap():
    stack, b = cwell(3, 4, 4), crand(3, 4, 2)
    f = lambda a, c: gla.solve(a, c) * gla.det(a)[..., None, None]  # noqa: E731
    eager = np.asarray(f(g(stack), g(b)))
    close(gf.jit(f)(g(stack), g(b)), eager)
    close(gf.vmap(f)(g(stack), g(b)), eager)
    ws = gf.vmap(gla.eigvals)(g(stack))
    for i in range(3):
        close(np.sort_complex(np.asarray(ws[i])), np.sort_complex(np.linalg.eigvals(stack[i])))
