"""graft.random's samplers against SciPy's distributions (Kolmogorov-Smirnov over 20,000 draws with fixed
keys), discrete ones by frequency; jit and vmap give the same values."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft import random as gr

stats = pytest.importorskip("scipy.stats")
N = 20000

CONTINUOUS = [
    ("exponential", lambda k: gr.exponential(k, (N,)), stats.expon().cdf),
    ("laplace", lambda k: gr.laplace(k, (N,)), stats.laplace().cdf),
    ("logistic", lambda k: gr.logistic(k, (N,)), stats.logistic().cdf),
    ("cauchy", lambda k: gr.cauchy(k, (N,)), stats.cauchy().cdf),
    ("pareto", lambda k: gr.pareto(k, 3.0, (N,)), stats.pareto(3.0).cdf),
    ("maxwell", lambda k: gr.maxwell(k, (N,)), stats.maxwell().cdf),
    ("rayleigh", lambda k: gr.rayleigh(k, 2.0, (N,)), stats.rayleigh(scale=2.0).cdf),
    ("weibull_min", lambda k: gr.weibull_min(k, 1.5, 0.8, (N,)), stats.weibull_min(0.8, scale=1.5).cdf),
    ("wald", lambda k: gr.wald(k, 1.0, (N,)), stats.wald().cdf),
    ("gumbel", lambda k: gr.gumbel(k, (N,)), stats.gumbel_r().cdf),
    ("gamma_small", lambda k: gr.gamma(k, 0.4, (N,)), stats.gamma(0.4).cdf),
    ("gamma", lambda k: gr.gamma(k, 3.0, (N,)), stats.gamma(3.0).cdf),
    ("beta", lambda k: gr.beta(k, 2.0, 0.7, (N,)), stats.beta(2.0, 0.7).cdf),
    ("chisquare", lambda k: gr.chisquare(k, 5.0, (N,)), stats.chi2(5.0).cdf),
    ("t", lambda k: gr.t(k, 4.0, (N,)), stats.t(4.0).cdf),
    ("f", lambda k: gr.f(k, 3.0, 9.0, (N,)), stats.f(3.0, 9.0).cdf),
    ("generalized_normal", lambda k: gr.generalized_normal(k, 1.5, (N,)), stats.gennorm(1.5).cdf),
    ("truncated_normal", lambda k: gr.truncated_normal(k, -1.0, 2.0, (N,)), stats.truncnorm(-1.0, 2.0).cdf),
]


@pytest.mark.parametrize("name,draw,cdf", CONTINUOUS, ids=[c[0] for c in CONTINUOUS])
def test_continuous_samplers_follow_scipy(name, draw, cdf):
    x = np.asarray(draw(gr.key(3)), np.float64)
    assert x.shape == (N,)
    assert stats.kstest(x, cdf).statistic < 1.95 / np.sqrt(N)
    np.testing.assert_array_equal(np.asarray(gf.jit(draw)(gr.key(3))), np.asarray(draw(gr.key(3))))


def test_discrete_and_multivariate():
    x = np.asarray(gr.randint(gr.key(1), (N,), 2, 9, dtype=gnp.int32))
    assert x.dtype == np.int32 and x.min() == 2 and x.max() == 8
    np.testing.assert_allclose(np.bincount(x - 2) / N, np.full(7, 1 / 7), atol=0.012)
    c = np.asarray(gr.choice(gr.key(2), 4, (N,), p=gnp.asarray([0.1, 0.2, 0.3, 0.4])))
    np.testing.assert_allclose(np.bincount(c) / N, [0.1, 0.2, 0.3, 0.4], atol=0.012)
    d = np.asarray(gr.choice(gr.key(2), gnp.arange(10), (5,), replace=False))
    assert len(set(d.tolist())) == 5
    r = np.asarray(gr.rademacher(gr.key(3), (N,)))
    assert set(np.unique(r).tolist()) == {-1, 1}
    cov = np.array([[1.0, 0.5], [0.5, 2.0]])
    s = np.asarray(gr.multivariate_normal(gr.key(4), gnp.asarray([1.0, -1.0]), gnp.asarray(cov), (N,)), np.float64)
    np.testing.assert_allclose(s.mean(0), [1.0, -1.0], atol=0.04)
    np.testing.assert_allclose(np.cov(s.T), cov, atol=0.06)
    q = np.asarray(gr.orthogonal(gr.key(5), 3, (10,)), np.float64)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(3), (10, 3, 3)), atol=1e-5)
    p = np.asarray(gr.permutation(gr.key(6), gnp.arange(12).reshape(3, 4), axis=1, independent=True))
    np.testing.assert_array_equal(np.sort(p, 1), np.arange(12).reshape(3, 4))
    keys = gr.split(gr.key(7), 3)
    batched = np.asarray(gf.vmap(lambda k: gr.laplace(k, (4,)))(keys))
    for i in range(3):
        np.testing.assert_array_equal(batched[i], np.asarray(gr.laplace(keys[i], (4,))))


def test_gamma_gradient_against_scipy():
    sp = pytest.importorskip("scipy.special")
    a = np.array([0.3, 1.0, 2.5, 9.0])
    x = np.array([0.2, 1.7, 2.0, 12.0])
    got = np.asarray(gf.lax.random_gamma_grad(gnp.asarray(a), gnp.asarray(x)), np.float64)
    h = 1e-6
    dp = (sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)
    want = -dp / stats.gamma(a).pdf(x)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    g = gf.grad(lambda a: gnp.sum(gr.gamma(gr.key(1), a, (N,), dtype="float64")))(gnp.asarray(2.0, dtype="float64"))
    assert abs(float(g) / N - 1.0) < 0.03
    d = np.asarray(gr.dirichlet(gr.key(2), gnp.asarray([1.0, 2.0, 3.0]), (1000,)))
    np.testing.assert_allclose(d.sum(-1), np.ones(1000), rtol=1e-5)


@pytest.mark.parametrize("lam", [1.5, 30.0])
def test_poisson_and_binomial_pmfs(lam):
    x = np.asarray(gr.poisson(gr.key(5), lam, (N,)))
    ks = np.arange(int(lam * 3) + 10)
    np.testing.assert_allclose(np.bincount(x, minlength=len(ks))[:len(ks)] / N, stats.poisson(lam).pmf(ks), atol=0.012)
    n, p = (20, 0.3) if lam < 10 else (200, 0.7)
    b = np.asarray(gr.binomial(gr.key(6), float(n), p, (N,))).astype(int)
    ks = np.arange(n + 1)
    np.testing.assert_allclose(np.bincount(b, minlength=n + 1) / N, stats.binom(n, p).pmf(ks), atol=0.012)
    m = np.asarray(gr.multinomial(gr.key(7), 12.0, np.array([0.1, 0.6, 0.3], np.float32), shape=(N, 3)))
    np.testing.assert_array_equal(m.sum(-1), np.full(N, 12.0))
    g = np.asarray(gr.geometric(gr.key(8), 0.25, (N,)))
    np.testing.assert_allclose(np.bincount(g, minlength=20)[1:20] / N, stats.geom(0.25).pmf(np.arange(1, 20)), atol=0.012)
    assert stats.kstest(np.asarray(gr.triangular(gr.key(9), 0.0, 0.3, 2.0, (N,)), np.float64),
                        stats.triang(0.15, loc=0, scale=2).cdf).statistic < 1.95 / np.sqrt(N)
    assert stats.kstest(np.asarray(gr.lognormal(gr.key(10), 0.7, (N,)), np.float64),
                        stats.lognorm(0.7).cdf).statistic < 1.95 / np.sqrt(N)


def test_typed_keys():
    k = gr.key(7)
    assert k.shape == () and str(k.dtype) == "key<fry>" and gr.key_impl(k).name == "threefry2x32"
    raw = gr.PRNGKey(7)
    assert raw.shape == (2,) and str(raw.dtype) == "uint32"
    np.testing.assert_array_equal(np.asarray(gr.key_data(k)), np.asarray(raw))
    assert gr.key_dtype() == k.dtype and gr.key_dtype("threefry2x32") == k.dtype
    w = gr.wrap_key_data(raw, dtype=gr.key_dtype())
    assert w.dtype == k.dtype and np.array_equal(np.asarray(gr.key_data(w)), np.asarray(raw))
    with pytest.raises(ValueError, match="rbg"):
        gr.key_dtype("rbg")
    with pytest.raises(ValueError, match="key dtype"):
        gr.wrap_key_data(raw, dtype="uint32")
    # the same draws from a typed key and its raw words, through split and fold_in too
    np.testing.assert_array_equal(np.asarray(gr.normal(k, (3,))), np.asarray(gr.normal(raw, (3,))))
    ks = gr.split(k, 4)
    assert ks.shape == (4,) and isinstance(ks, gr.KeyArray)
    np.testing.assert_array_equal(np.asarray(gr.key_data(ks)), np.asarray(gr.split(raw, 4)))
    np.testing.assert_array_equal(np.asarray(gr.key_data(gr.fold_in(k, 3))), np.asarray(gr.fold_in(raw, 3)))
    assert ks[1:3].shape == (2,) and ks[0].shape == () and len(list(ks)) == 4
    # through vmap, jit and scan as pytree leaves
    per_key = gf.vmap(lambda kk: gr.uniform(kk, (2,)))(ks)
    for i in range(4):
        np.testing.assert_array_equal(np.asarray(per_key[i]), np.asarray(gr.uniform(ks[i], (2,))))
    np.testing.assert_array_equal(np.asarray(gf.jit(lambda kk: gr.normal(kk, (2,)))(k)), np.asarray(gr.normal(k, (2,))))
    out = gf.jit(lambda kk: gr.split(kk, 2))(k)
    assert isinstance(out, gr.KeyArray) and out.shape == (2,)

    def step(c, _):
        a, b = gr.split(c)
        return a, gr.normal(b, ())

    last, draws = gf.lax.scan(step, k, None, length=3)
    assert isinstance(last, gr.KeyArray) and draws.shape == (3,)
    assert gr.wrap_key_data(gr.key_data(ks)).shape == (4,)
    with pytest.raises(TypeError, match="uint32 words"):
        gr.wrap_key_data(gnp.zeros((3,), "float32"))


def _gamma_fd(a, x, rel=1e-5):
    """dx/da of a Gamma(a) draw x with its quantile u = P(a, x) held fixed: differences of the inverse CDF."""
    sp = pytest.importorskip("scipy.special")
    u = sp.gammainc(a, x)
    h = rel * a
    return (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h), u


def test_sample_gradients_follow_the_inverse_cdf():
    # implicit reparameterization (JAX's): each draw's derivative is -(dF/da) / f at the draw, which is the
    # derivative of the inverse CDF with the draw's quantile held fixed; checked draw by draw
    rng = np.random.default_rng(0)
    a = rng.uniform(0.2, 12.0, 64)
    key = gr.key(21)
    x = np.asarray(gr.gamma(key, gnp.asarray(a), dtype="float64"))
    g = np.asarray(gf.grad(lambda v: gnp.sum(gr.gamma(key, v, dtype="float64")))(gnp.asarray(a)))
    fd, u = _gamma_fd(a, x)
    ok = (u > 1e-8) & (u < 1 - 1e-8)  # the inverse CDF's own differences lose digits in the far tails
    assert ok.sum() > 50
    np.testing.assert_allclose(g[ok], fd[ok], rtol=1e-4)
    # loggamma: d log(x) / da = (dx / da) / x, also for small a (drawn through Gamma(a + 1) u^(1/a))
    small = rng.uniform(0.05, 1.0, 32)
    lx = np.asarray(gr.loggamma(key, gnp.asarray(small), dtype="float64"))
    lg = np.asarray(gf.grad(lambda v: gnp.sum(gr.loggamma(key, v, dtype="float64")))(gnp.asarray(small)))
    fd, u = _gamma_fd(small, np.exp(lx))
    ok = (u > 1e-8) & (u < 1 - 1e-8)
    assert ok.sum() > 25
    np.testing.assert_allclose(lg[ok], (fd / np.exp(lx))[ok], rtol=1e-4)


def test_beta_and_dirichlet_gradients_follow_their_gammas():
    # beta(a, b) = Ga / (Ga + Gb) and dirichlet(alpha) = G / sum(G), with the gammas drawn from the split
    # keys as JAX draws them: the values are those ratios, and each draw's derivative is the chain rule
    # through the gammas' inverse-CDF derivatives
    rng = np.random.default_rng(1)
    n = 48
    a, b = rng.uniform(0.3, 6.0, n), rng.uniform(0.3, 6.0, n)
    key = gr.key(22)
    ka, kb = gr.split(key, 2)
    ga = np.exp(np.asarray(gr.loggamma(ka, gnp.asarray(a), dtype="float64")))
    gb = np.exp(np.asarray(gr.loggamma(kb, gnp.asarray(b), dtype="float64")))
    x = np.asarray(gr.beta(key, gnp.asarray(a), gnp.asarray(b), dtype="float64"))
    np.testing.assert_allclose(x, ga / (ga + gb), rtol=1e-12)
    da, ua = _gamma_fd(a, ga)
    db, ub = _gamma_fd(b, gb)
    s = ga + gb
    beta_sum = lambda p, q: gnp.sum(gr.beta(key, p, q, dtype="float64"))  # noqa: E731
    g_a = np.asarray(gf.grad(beta_sum, argnums=0)(gnp.asarray(a), gnp.asarray(b)))
    g_b = np.asarray(gf.grad(beta_sum, argnums=1)(gnp.asarray(a), gnp.asarray(b)))
    ok = (ua > 1e-8) & (ua < 1 - 1e-8) & (ub > 1e-8) & (ub < 1 - 1e-8)
    assert ok.sum() > 40
    np.testing.assert_allclose(g_a[ok], (gb / s ** 2 * da)[ok], rtol=1e-4)
    np.testing.assert_allclose(g_b[ok], (-ga / s ** 2 * db)[ok], rtol=1e-4)

    alpha = rng.uniform(0.3, 5.0, (16, 3))
    w = rng.uniform(-1, 1, (16, 3))
    g = np.exp(np.asarray(gr.loggamma(key, gnp.asarray(alpha), dtype="float64")))
    d = np.asarray(gr.dirichlet(key, gnp.asarray(alpha), dtype="float64"))
    np.testing.assert_allclose(d, g / g.sum(-1, keepdims=True), rtol=1e-12)
    grad = np.asarray(gf.grad(lambda v: gnp.sum(gr.dirichlet(key, v, dtype="float64") * gnp.asarray(w)))(
        gnp.asarray(alpha)))
    dg, u = _gamma_fd(alpha, g)
    want = (w - (w * d).sum(-1, keepdims=True)) / g.sum(-1, keepdims=True) * dg
    ok = (u > 1e-8) & (u < 1 - 1e-8)
    assert ok.sum() > 40
    np.testing.assert_allclose(grad[ok], want[ok], rtol=1e-4, atol=1e-10)


def test_dirichlet_multinomial_and_permutation_frequencies():
    # dirichlet's marginals are Beta(alpha_j, sum(alpha) - alpha_j): Kolmogorov-Smirnov per component
    alpha = np.array([0.5, 1.5, 3.0])
    d = np.asarray(gr.dirichlet(gr.key(30), gnp.asarray(alpha), (N,)), np.float64)
    for j in range(3):
        marginal = stats.beta(alpha[j], alpha.sum() - alpha[j]).cdf
        assert stats.kstest(d[:, j], marginal).statistic < 1.95 / np.sqrt(N), f"component {j}"
    # multinomial: the joint counts of 3 trials over 3 categories against the pmf (chi-squared)
    p = np.array([0.2, 0.5, 0.3])
    m = np.asarray(gr.multinomial(gr.key(31), 3.0, gnp.asarray(p), shape=(N, 3))).astype(int)
    outcomes = [(i, j, 3 - i - j) for i in range(4) for j in range(4 - i)]
    seen = np.array([np.sum(np.all(m == o, axis=1)) for o in outcomes])
    assert seen.sum() == N
    expected = np.array([stats.multinomial(3, p).pmf(o) for o in outcomes]) * N
    assert stats.chisquare(seen, expected).pvalue > 1e-3
    # permutation: the 24 orders of 4 elements equally often
    perms = np.asarray(gf.vmap(lambda k: gr.permutation(k, 4))(gr.split(gr.key(32), 12000)))
    codes = perms @ np.array([64, 16, 4, 1])
    counts = np.unique(codes, return_counts=True)[1]
    assert len(counts) == 24
    assert stats.chisquare(counts).pvalue > 1e-3
