"""graft.scipy.special against SciPy (Debian's python3-scipy as the oracle), in float64 over ranges
that reach every branch of each function; derivatives against finite differences; jit and vmap."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft.scipy import special as gsp

sps = pytest.importorskip("scipy.special")

RNG = np.random.default_rng(0)


def f64(x):
    return gnp.asarray(np.asarray(x, np.float64))


UNARY = [
    ("gammaln", sps.gammaln, [(0.05, 30), (-4.9, -0.1)]),
    ("digamma", sps.digamma, [(0.05, 30), (-4.9, -0.1), (50, 1e4)]),
    ("entr", sps.entr, [(0, 5)]),
    ("expit", sps.expit, [(-30, 30)]),
    ("logit", sps.logit, [(1e-6, 1 - 1e-6)]),
    ("ndtr", sps.ndtr, [(-30, 30)]),
    ("log_ndtr", sps.log_ndtr, [(-60, -20), (-20, 8), (8, 30)]),
    ("ndtri", sps.ndtri, [(1e-12, 1e-3), (1e-3, 1 - 1e-3)]),
    ("i0", sps.i0, [(-30, 30)]),
    ("i0e", sps.i0e, [(-300, 300)]),
    ("i1", sps.i1, [(-30, 30)]),
    ("i1e", sps.i1e, [(-300, 300)]),
    ("erf", sps.erf, [(-5, 5)]),
    ("erfc", sps.erfc, [(-5, 25)]),
    ("erfinv", sps.erfinv, [(-0.999, 0.999)]),
]


@pytest.mark.parametrize("name,ref,ranges", UNARY, ids=[u[0] for u in UNARY])
def test_unary_matches_scipy(name, ref, ranges):
    for lo, hi in ranges:
        x = RNG.uniform(lo, hi, 200)
        got = np.asarray(getattr(gsp, name)(f64(x)))
        # log_ndtr below -20 is JAX's asymptotic series of order 3 (relative error ~ 105 / x^8 / x^2 / 2)
        rtol = {"ndtri": 1e-11, "log_ndtr": 5e-11}.get(name, 2e-13)
        np.testing.assert_allclose(got, ref(x), rtol=rtol, atol=1e-300, err_msg=name)


def test_binary_match_scipy():
    x = RNG.uniform(0.1, 10, 100)
    for n in (0, 1, 2, 5):
        np.testing.assert_allclose(np.asarray(gsp.polygamma(float(n), f64(x))), sps.polygamma(n, x), rtol=1e-12)
    for s in (1.5, 2.0, 4.5, 10.0):
        np.testing.assert_allclose(np.asarray(gsp.zeta(s, f64(x))), sps.zeta(s, x), rtol=1e-13)
    a, b = RNG.uniform(0.1, 20, 100), RNG.uniform(0.1, 20, 100)
    np.testing.assert_allclose(np.asarray(gsp.betaln(f64(a), f64(b))), sps.betaln(a, b), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(gsp.xlogy(f64(a), f64(b))), sps.xlogy(a, b), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(gsp.xlog1py(f64(a), f64(b))), sps.xlog1py(a, b), rtol=1e-15)
    assert float(gsp.xlogy(0.0, 0.0)) == 0.0


def test_float32_is_computed_accurately():
    x = RNG.uniform(0.1, 10, 100).astype(np.float32)
    got = gsp.gammaln(gnp.asarray(x))
    assert str(got.dtype) == "float32"
    np.testing.assert_allclose(np.asarray(got), sps.gammaln(x.astype(np.float64)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name,x", [("gammaln", 2.3), ("digamma", 0.7), ("log_ndtr", -25.0), ("log_ndtr", 9.0),
                                    ("ndtri", 0.02), ("i0e", -3.0), ("i1e", 0.4), ("entr", 0.3), ("logit", 0.8)])
def test_grad_matches_finite_differences(name, x):
    f = getattr(gsp, name)
    eps = 1e-6
    want = (float(f(x + eps)) - float(f(x - eps))) / (2 * eps)
    got = float(gf.grad(lambda v: f(v))(x))
    assert abs(got - want) <= 1e-7 * (1 + abs(want)), (name, got, want)


def test_grad_in_the_second_argument_only():
    got = float(gf.grad(lambda q: gsp.zeta(3.0, q))(1.5))
    assert abs(got - (-3 * sps.zeta(4, 1.5))) < 1e-12
    got = float(gf.grad(lambda x: gsp.polygamma(1.0, x))(2.0))
    assert abs(got - sps.polygamma(2, 2.0)) < 1e-12
    with pytest.raises(NotImplementedError, match="with respect to m"):
        gf.grad(lambda n: gsp.polygamma(n, 2.0))(1.0)


def test_jit_vmap_and_lax_names():
    x = gnp.asarray(RNG.uniform(0.5, 4, (3, 4)))
    f = lambda v: gsp.gammaln(v) + gsp.log_ndtr(v - 3) + gsp.i1e(v)  # noqa: E731
    np.testing.assert_allclose(np.asarray(gf.jit(f)(x)), np.asarray(f(x)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gf.vmap(f)(x)), np.asarray(f(x)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gf.lax.lgamma(x)), sps.gammaln(np.asarray(x)), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(gf.lax.bessel_i0e(x)), sps.i0e(np.asarray(x)), rtol=1e-13)


def test_incomplete_gamma_and_beta_match_scipy():
    # shapes from small to large (the series, the continued fraction and Stirling's form of the density)
    for lo, hi in [(0.01, 2), (0.5, 20), (50, 2000)]:
        a = RNG.uniform(lo, hi, 300)
        x = a * RNG.uniform(0.2, 2.5, 300)
        p, q = np.asarray(gsp.gammainc(f64(a), f64(x))), np.asarray(gsp.gammaincc(f64(a), f64(x)))
        np.testing.assert_allclose(p, sps.gammainc(a, x), rtol=1e-11, atol=1e-300)
        np.testing.assert_allclose(q, sps.gammaincc(a, x), rtol=1e-11, atol=1e-300)
    for lo, hi in [(0.05, 2), (1, 50), (100, 1000)]:
        a, b, x = RNG.uniform(lo, hi, 300), RNG.uniform(lo, hi, 300), RNG.uniform(0, 1, 300)
        np.testing.assert_allclose(np.asarray(gsp.betainc(f64(a), f64(b), f64(x))), sps.betainc(a, b, x),
                                   rtol=1e-10, atol=1e-300)
    assert np.isnan(float(gsp.gammainc(-1.0, 2.0))) and np.isnan(float(gsp.betainc(1.0, 1.0, 2.0)))
    # lax's names: igamma, igammac, igamma_grad_a (∂P/∂a against a central difference), betainc
    a, x = f64([0.7, 3.0, 30.0]), f64([0.4, 5.0, 28.0])
    np.testing.assert_allclose(np.asarray(gf.lax.igamma(a, x)), sps.gammainc(np.asarray(a), np.asarray(x)), rtol=1e-13)
    eps = 1e-6
    fd = (sps.gammainc(np.asarray(a) + eps, np.asarray(x)) - sps.gammainc(np.asarray(a) - eps, np.asarray(x))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(gf.lax.igamma_grad_a(a, x)), fd, rtol=1e-7)
    np.testing.assert_allclose(np.asarray(gf.lax.betainc(f64(2.0), f64(3.0), f64(0.5))), 11 / 16, rtol=1e-14)


def test_incomplete_gamma_and_beta_gradients():
    eps = 1e-6
    for a, x in [(0.6, 0.3), (4.0, 6.0), (40.0, 35.0)]:
        want_a = (sps.gammainc(a + eps, x) - sps.gammainc(a - eps, x)) / (2 * eps)
        want_x = (sps.gammaincc(a, x + eps) - sps.gammaincc(a, x - eps)) / (2 * eps)
        assert abs(float(gf.grad(lambda v: gsp.gammainc(v, x))(a)) - want_a) < 1e-8
        assert abs(float(gf.grad(lambda v: gsp.gammaincc(a, v))(x)) - want_x) < 1e-8
    want = (sps.betainc(2.5, 0.7, 0.6 + eps) - sps.betainc(2.5, 0.7, 0.6 - eps)) / (2 * eps)
    assert abs(float(gf.grad(lambda v: gsp.betainc(2.5, 0.7, v))(0.6)) - want) < 1e-8
    with pytest.raises(NotImplementedError, match="with respect to a and b"):
        gf.grad(lambda v: gsp.betainc(v, 2.0, 0.5))(1.0)


def test_gamma_family_and_entropies_match_scipy():
    # away from the poles and signed zeros, where JAX's conventions and SciPy's agree
    x = np.concatenate([RNG.uniform(0.05, 30, 200), RNG.uniform(-4.9, -0.1, 200)])
    x = x[np.abs(x - np.round(x)) > 1e-3]
    for name in ("gamma", "gammasgn"):
        np.testing.assert_allclose(np.asarray(getattr(gsp, name)(f64(x))), getattr(sps, name)(x), rtol=2e-13,
                                   err_msg=name)
    pos = x[x > 0]
    np.testing.assert_allclose(np.asarray(gsp.loggamma(f64(pos))), sps.loggamma(pos), rtol=2e-13)
    a, b = RNG.uniform(0.1, 8, 100), RNG.uniform(-3.9, 8, 100)
    b = b[np.abs(b - np.round(b)) > 1e-3][:50]
    a = a[:len(b)]
    np.testing.assert_allclose(np.asarray(gsp.beta(f64(a), f64(b))), sps.beta(a, b), rtol=1e-11)
    np.testing.assert_allclose(np.asarray(gsp.poch(f64(a), f64(np.abs(b)))), sps.poch(a, np.abs(b)), rtol=1e-11)
    n = np.array([-2.0, 0, 1, 4, 7.5, 20])
    np.testing.assert_allclose(np.asarray(gsp.factorial(f64(n))), sps.factorial(n), rtol=1e-13)
    N, k = RNG.integers(-2, 30, 100).astype(float), RNG.integers(-2, 30, 100).astype(float)
    np.testing.assert_allclose(np.asarray(gsp.comb(f64(N), f64(k))), sps.comb(N, k), rtol=1e-12)
    Np, kp = np.abs(N), np.abs(k)
    np.testing.assert_allclose(np.asarray(gsp.comb(f64(Np), f64(kp), repetition=True)),
                               sps.comb(Np, kp, repetition=True), rtol=1e-11)
    p = np.concatenate([RNG.uniform(0, 3, 50), [0.0, 0.0, 1.0, -1.0]])
    q = np.concatenate([RNG.uniform(0, 3, 50), [0.0, 2.0, 0.0, 1.0]])
    for name in ("rel_entr", "kl_div"):
        np.testing.assert_allclose(np.asarray(getattr(gsp, name)(f64(p), f64(q))), getattr(sps, name)(p, q),
                                   rtol=1e-14, err_msg=name)
    xb, lb = RNG.uniform(0.01, 10, 100), RNG.uniform(-2, 2, 100)
    lb[:5] = 0
    np.testing.assert_allclose(np.asarray(gsp.boxcox(f64(xb), f64(lb))), sps.boxcox(xb, lb), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(gsp.boxcox1p(f64(xb), f64(lb))), sps.boxcox1p(xb, lb), rtol=1e-13)
    for d in (1, 2, 5):
        np.testing.assert_allclose(float(gsp.multigammaln(7.3, d)), sps.multigammaln(7.3, d), rtol=1e-14)
    # exact rationals: graft's Bernoulli numbers are within 3e-15 of them (SciPy's within 2e-12)
    from fractions import Fraction
    from math import comb as icomb
    exact = [Fraction(1)]
    for m in range(1, 41):
        exact.append(-sum(icomb(m + 1, j) * exact[j] for j in range(m)) / (m + 1))
    got = np.asarray(gsp.bernoulli(40))
    want = np.array([float(e) for e in exact])
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    xs = np.array([0.5, 2.0, -1.0])
    np.testing.assert_allclose(np.asarray(gsp.log_softmax(f64(xs))), sps.log_softmax(xs), rtol=1e-15)


def test_gamma_family_conventions_jit_vmap_and_grads():
    # JAX's values at the poles and signed zeros (SciPy's differ)
    assert np.isnan(float(gsp.gammasgn(-2.0))) and float(gsp.gammasgn(-0.0)) == -1.0 and float(gsp.gammasgn(0.0)) == 1.0
    assert float(gsp.gamma(-0.0)) == -np.inf and np.isnan(float(gsp.gamma(-np.inf)))
    assert np.isnan(float(gsp.loggamma(0.0)))
    with pytest.raises(NotImplementedError):
        gsp.factorial(3, exact=True)
    with pytest.raises(ValueError, match="bernoulli"):
        gsp.bernoulli(-1)
    x = gnp.asarray(RNG.uniform(0.5, 4, (3, 4)))
    f = lambda v: gsp.gamma(v) + gsp.poch(v, 1.5) + gsp.kl_div(v, 2.0) + gsp.boxcox1p(v, 0.3)  # noqa: E731
    np.testing.assert_allclose(np.asarray(gf.jit(f)(x)), np.asarray(f(x)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gf.vmap(f)(x)), np.asarray(f(x)), rtol=1e-12)
    # poch's derivatives in z and m (its custom rule), and the composites' through autodiff
    for fn, at in [(lambda z: gsp.poch(z, 1.7), 2.3), (lambda m: gsp.poch(2.3, m), 1.7), (gsp.gamma, -1.3),
                   (lambda a: gsp.beta(a, 2.5), 1.4), (lambda k: gsp.comb(7.5, k), 2.2),
                   (lambda q: gsp.rel_entr(0.7, q), 0.4), (lambda lm: gsp.boxcox(2.5, lm), 0.3)]:
        eps = 1e-6
        want = (float(fn(at + eps)) - float(fn(at - eps))) / (2 * eps)
        got = float(gf.grad(fn)(at))
        assert abs(got - want) <= 1e-7 * (1 + abs(want)), (got, want)


def test_exponential_integrals_and_erfcx_match_scipy():
    # each branch and its boundaries: E1's series / continued fraction at 1, Ei's series / asymptotic
    # series at 50, erfcx's e^(x^2) erfc(x) / continued fraction at 2; Ei near its root (x ~ 0.3725) is
    # accurate in absolute terms
    for name, lo, hi, rtol in [("exp1", 1e-6, 1, 3e-15), ("exp1", 1, 700, 3e-15), ("expi", -700, -1e-6, 3e-15),
                               ("expi", 0.5, 50, 5e-14), ("expi", 50, 700, 1e-14), ("erfcx", -26, 2, 2e-15),
                               ("erfcx", 2, 1e8, 2e-15)]:
        x = np.concatenate([RNG.uniform(lo, hi, 300), [lo, hi]])
        np.testing.assert_allclose(np.asarray(getattr(gsp, name)(f64(x))), getattr(sps, name)(x), rtol=rtol,
                                   err_msg=f"{name} on [{lo}, {hi}]")
    x = np.linspace(0.3, 0.45, 200)
    np.testing.assert_allclose(np.asarray(gsp.expi(f64(x))), sps.expi(x), rtol=1e-13, atol=1e-16)
    assert float(gsp.exp1(0.0)) == np.inf and np.isnan(float(gsp.exp1(-1.0)))
    assert float(gsp.expi(0.0)) == -np.inf and float(gsp.erfcx(-30.0)) == np.inf
    for fn, at, want in [(gsp.exp1, 1.3, -np.exp(-1.3) / 1.3), (gsp.expi, 2.2, np.exp(2.2) / 2.2),
                         (gsp.erfcx, 2.5, 2 * 2.5 * sps.erfcx(2.5) - 2 / np.sqrt(np.pi))]:
        assert abs(float(gf.grad(fn)(at)) - want) <= 1e-13 * abs(want)
    v = gnp.asarray(RNG.uniform(0.1, 5, (2, 3)))
    f = lambda u: gsp.exp1(u) + gsp.expi(u) + gsp.erfcx(u)  # noqa: E731
    np.testing.assert_allclose(np.asarray(gf.jit(f)(v)), np.asarray(f(v)), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(gf.vmap(f)(v)), np.asarray(f(v)), rtol=1e-13)
