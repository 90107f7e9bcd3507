"""graft.scipy.stats against scipy.stats (Debian's python3-scipy as the oracle) in float64, inside and
outside each support; derivatives against finite differences; jit and vmap against eager."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft.scipy import stats as gst

ss = pytest.importorskip("scipy.stats")
RNG = np.random.default_rng(0)


def f64(x):
    return gnp.asarray(np.asarray(x, np.float64))


def close(got, want, rtol=1e-11, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


X = np.linspace(-3, 6, 37)
POS = np.linspace(0.05, 0.95, 19)

# (name, graft args, scipy frozen-distribution args, points, the functions to compare)
CONTINUOUS = [
    ("norm", (0.5, 2.0), (0.5, 2.0), X, ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    ("t", (3.5, 0.5, 1.5), (3.5, 0.5, 1.5), X, ["logpdf", "pdf", "cdf", "sf"]),
    ("beta", (2.5, 0.7), (2.5, 0.7), np.concatenate([POS, [-0.5, 1.5]]), ["logpdf", "pdf", "cdf", "sf"]),
    ("beta", (2.0, 3.0, -1.0, 4.0), (2.0, 3.0, -1.0, 4.0), X, ["logpdf", "pdf", "cdf", "sf"]),
    ("gamma", (2.5,), (2.5,), X, ["logpdf", "pdf", "cdf", "sf"]),
    ("gamma", (0.6, 0.5, 2.0), (0.6, 0.5, 2.0), X, ["logpdf", "pdf", "cdf", "sf", "logsf"]),
    ("chi2", (3.0,), (3.0,), X, ["logpdf", "pdf", "cdf", "sf"]),
    ("expon", (0.5, 2.0), (0.5, 2.0), X, ["logpdf", "pdf", "cdf", "sf", "logsf"]),
    ("uniform", (-1.0, 3.0), (-1.0, 3.0), X, ["logpdf", "pdf", "cdf"]),
    ("laplace", (0.5, 2.0), (0.5, 2.0), X, ["logpdf", "pdf", "cdf"]),
    ("cauchy", (0.5, 2.0), (0.5, 2.0), X, ["logpdf", "pdf", "cdf", "sf"]),
    ("logistic", (0.5, 2.0), (0.5, 2.0), X, ["logpdf", "pdf", "cdf", "sf"]),
    ("pareto", (2.5, 0.0, 1.5), (2.5, 0.0, 1.5), X, ["logpdf", "pdf"]),
]


@pytest.mark.parametrize("name,args,sargs,pts,fns", CONTINUOUS, ids=[f"{c[0]}{i}" for i, c in enumerate(CONTINUOUS)])
def test_continuous_match_scipy(name, args, sargs, pts, fns):
    dist, ref = getattr(gst, name), getattr(ss, name)(*sargs)
    for fn in fns:
        got = np.asarray(getattr(dist, fn)(f64(pts), *args))
        want = getattr(ref, fn)(pts)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13, err_msg=f"{name}.{fn}")


def test_quantiles_match_scipy():
    q = np.linspace(0.01, 0.99, 25)
    close(gst.norm.ppf(f64(q), 0.5, 2.0), ss.norm.ppf(q, 0.5, 2.0), rtol=1e-10)
    close(gst.norm.isf(f64(q), 0.5, 2.0), ss.norm.isf(q, 0.5, 2.0), rtol=1e-10)
    close(gst.expon.ppf(f64(q), 0.5, 2.0), ss.expon.ppf(q, 0.5, 2.0))
    close(gst.cauchy.ppf(f64(q), 0.5, 2.0), ss.cauchy.ppf(q, 0.5, 2.0), rtol=1e-9)
    close(gst.logistic.ppf(f64(q), 0.5, 2.0), ss.logistic.ppf(q, 0.5, 2.0))
    close(gst.uniform.ppf(f64(q), -1.0, 3.0), ss.uniform.ppf(q, -1.0, 3.0))
    close(gst.bernoulli.ppf(f64(q), 0.3), ss.bernoulli.ppf(q, 0.3))


def test_discrete_match_scipy():
    k = np.arange(-2, 15).astype(np.float64)
    kh = np.concatenate([k, [2.5]])  # a non-integer has probability 0
    close(gst.poisson.logpmf(f64(kh), 3.5), ss.poisson.logpmf(kh, 3.5))
    close(gst.poisson.pmf(f64(kh), 3.5, 1.0), ss.poisson.pmf(kh, 3.5, 1.0))
    close(gst.poisson.cdf(f64(k + 0.5), 3.5), ss.poisson.cdf(k + 0.5, 3.5))
    close(gst.bernoulli.logpmf(f64(k), 0.3), ss.bernoulli.logpmf(k, 0.3))
    close(gst.bernoulli.cdf(f64(k / 4), 0.3), ss.bernoulli.cdf(k / 4, 0.3))
    close(gst.binom.logpmf(f64(kh), 10, 0.3), ss.binom.logpmf(kh, 10, 0.3))
    close(gst.binom.pmf(f64(k), 12.0, 0.65), ss.binom.pmf(k, 12, 0.65))
    close(gst.binom.cdf(f64(k), 12.0, 0.65), ss.binom.cdf(k, 12, 0.65), rtol=1e-10)
    close(gst.geom.logpmf(f64(kh), 0.3), ss.geom.logpmf(kh, 0.3))
    close(gst.geom.cdf(f64(k), 0.3), ss.geom.cdf(k, 0.3))
    x = np.array([[2.0, 3.0, 5.0], [0.0, 10.0, 0.0], [1.0, 1.0, 1.0]])
    p = np.array([0.2, 0.5, 0.3])
    got = np.asarray(gst.multinomial.logpmf(f64(x), 10.0, f64(p)))
    close(got[:2], ss.multinomial.logpmf(x[:2], 10, p))
    assert got[2] == -np.inf  # the counts do not sum to n
    # integer counts promote to the default float, as JAX's
    assert str(gst.poisson.logpmf(gnp.asarray(np.arange(4, dtype=np.int32)), 2.0).dtype) == "float32"


def test_multivariate_normal_and_dirichlet_match_scipy():
    d = 4
    m = RNG.normal(size=d)
    a = RNG.normal(size=(d, d))
    cov = a @ a.T + d * np.eye(d)
    x = RNG.normal(size=(5, 3, d))
    close(gst.multivariate_normal.logpdf(f64(x), f64(m), f64(cov)), ss.multivariate_normal(m, cov).logpdf(x))
    close(gst.multivariate_normal.pdf(f64(x[0, 0]), f64(m), f64(cov)), ss.multivariate_normal(m, cov).pdf(x[0, 0]))
    # a batch of covariances broadcast against the points; a scalar variance; one dimension
    covs = np.stack([cov, 2 * cov, 0.5 * cov])
    got = np.asarray(gst.multivariate_normal.logpdf(f64(x), f64(m), f64(covs)))
    want = np.stack([ss.multivariate_normal(m, c).logpdf(x[:, i]) for i, c in enumerate(covs)], axis=1)
    close(got, want)
    close(gst.multivariate_normal.logpdf(f64(x), f64(m), 2.0), ss.multivariate_normal(m, 2.0 * np.eye(d)).logpdf(x))
    close(gst.multivariate_normal.logpdf(f64(0.3), 0.1, 2.0), ss.norm(0.1, np.sqrt(2.0)).logpdf(0.3))
    with pytest.raises(ValueError, match="does not match mean"):
        gst.multivariate_normal.logpdf(f64(x), f64(m), f64(np.eye(3)))

    alpha = np.array([0.7, 2.0, 3.5])
    pts = RNG.dirichlet(alpha, size=6).T  # (K, N)
    close(gst.dirichlet.logpdf(f64(pts), f64(alpha)), ss.dirichlet(alpha).logpdf(pts))
    close(gst.dirichlet.logpdf(f64(pts[:2]), f64(alpha)), ss.dirichlet(alpha).logpdf(pts))  # K - 1 entries
    assert float(gst.dirichlet.logpdf(f64([0.5, 0.6, 0.1]), f64(alpha))) == -np.inf  # off the simplex
    with pytest.raises(ValueError, match="entries along its first axis"):
        gst.dirichlet.logpdf(f64(np.ones(5) / 5), f64(alpha))


def fd(f, x, eps=1e-6):
    return (float(f(x + eps)) - float(f(x - eps))) / (2 * eps)


@pytest.mark.parametrize("f,x", [
    (lambda v: gst.norm.logcdf(-3.0, v, 1.5), 0.4),
    (lambda v: gst.t.logpdf(1.2, v), 2.5),
    (lambda v: gst.t.cdf(v, 4.0), 0.8),
    (lambda v: gst.beta.logpdf(0.3, v, 2.0), 1.7),
    (lambda v: gst.beta.cdf(v, 1.5, 2.5), 0.35),
    (lambda v: gst.gamma.cdf(2.0, v, scale=1.5), 2.2),
    (lambda v: gst.gamma.logpdf(v, 2.2, scale=1.5), 1.3),
    (lambda v: gst.poisson.logpmf(3.0, v), 2.5),
    (lambda v: gst.poisson.cdf(4.0, v), 2.5),
    (lambda v: gst.binom.logpmf(3.0, 10.0, v), 0.35),
    (lambda v: gst.binom.cdf(3.0, 10.0, v), 0.35),
    (lambda v: gst.multivariate_normal.logpdf(gnp.asarray(np.array([0.3, -0.2])), gnp.asarray(np.zeros(2)),
                                              f64([[0.0, 0.3], [0.3, 1.0]]) + v * f64([[1.0, 0.0], [0.0, 0.0]])), 1.4),
    (lambda v: gst.dirichlet.logpdf(gnp.asarray(np.array([0.2, 0.3, 0.5])), gnp.stack([v, 1.5 + 0 * v, 2.0 + 0 * v])), 0.8),
], ids=["norm.logcdf", "t.logpdf", "t.cdf", "beta.logpdf", "beta.cdf", "gamma.cdf", "gamma.logpdf", "poisson.logpmf",
        "poisson.cdf", "binom.logpmf", "binom.cdf", "multivariate_normal", "dirichlet"])
def test_gradients_match_finite_differences(f, x):
    want = fd(f, x)
    got = float(gf.grad(f)(x))
    assert abs(got - want) <= 1e-7 * (1 + abs(want)), (got, want)


def test_jit_and_vmap_match_eager():
    x = f64(RNG.uniform(0.1, 3, (4, 5)))

    def f(v):
        return (gst.norm.logpdf(v, 1.0, 2.0) + gst.gamma.cdf(v, 2.0) + gst.t.cdf(v - 1, 3.0) + gst.beta.logpdf(v / 4, 2.0, 3.0)
                + gst.poisson.logpmf(gnp.floor(v * 3), 2.0))
    want = np.asarray(f(x))
    close(gf.jit(f)(x), want, rtol=1e-12)
    close(gf.vmap(f)(x), want, rtol=1e-12)
    mvn = lambda v: gst.multivariate_normal.logpdf(v, gnp.zeros(5, "float64"), gnp.eye(5, dtype="float64"))  # noqa: E731
    close(gf.vmap(mvn)(x), np.asarray(mvn(x)), rtol=1e-12)
    close(gf.jit(mvn)(x), np.asarray(mvn(x)), rtol=1e-12)
