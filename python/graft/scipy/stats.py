"""jax.scipy.stats on graft arrays: log densities, densities and distribution functions of the common
distributions, with SciPy's signatures (loc and scale where SciPy has them). Every function is a composite of
graft operations, so it differentiates, batches and compiles; outside a distribution's support a log density
is -inf (and a density 0), as in JAX.

    from graft.scipy.stats import norm, gamma
    lp = norm.logpdf(x, loc=mu, scale=sigma)
    import graft.scipy.stats.poisson  # each distribution is also a module

Beyond JAX: cdf/sf for t and binom (through the incomplete beta function), gamma's and chi2's through the
incomplete gamma function, and isf/logsf wherever SciPy has them for these families."""
import math as _math
import sys as _sys
import types as _types

from .. import _graft
from .. import numpy as _np
from .. import _numpy_linalg as _nl
from . import special as _sp

_LOG_2PI = _math.log(2 * _math.pi)


def _float(*xs):
    """The operands as graft arrays that promote to a floating dtype, as JAX's promote_dtypes_inexact: Python
    numbers stay weakly typed (they take the arrays' dtype), integer and boolean arrays become the default
    float."""
    out = []
    for x in xs:
        if isinstance(x, (bool, int, float)):
            out.append(_np.asarray(float(x)))
            continue
        a = _np.asarray(x)
        out.append(a.astype("float32") if str(a.dtype) in _INTEGRAL else a)
    return out


_INTEGRAL = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


def _neg_inf_where(cond, x):
    return _np.where(cond, -_np.inf, x)


def _module(name, doc, **fns):
    m = _types.ModuleType(__name__ + "." + name, doc)
    for k, f in fns.items():
        f.__name__ = k
        f.__qualname__ = name + "." + k
        setattr(m, k, f)
    m.__all__ = sorted(fns)
    _sys.modules[m.__name__] = m
    return m


def _pdf_from(logpdf):
    return lambda *a, **k: _np.exp(logpdf(*a, **k))


def _is_int(k):
    return _np.equal(k, _np.floor(k))


# ---- continuous --------------------------------------------------------------------------------------
def _norm_logpdf(x, loc=0, scale=1):
    x, loc, scale = _float(x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * z * z - _np.log(scale) - 0.5 * _LOG_2PI


def _std(x, loc, scale):
    x, loc, scale = _float(x, loc, scale)
    return (x - loc) / scale


def _ppf_of(inv):
    def ppf(q, loc=0, scale=1):
        q, loc, scale = _float(q, loc, scale)
        return inv(q) * scale + loc
    return ppf


norm = _module(
    "norm", "The normal distribution N(loc, scale²).",
    logpdf=_norm_logpdf, pdf=_pdf_from(_norm_logpdf),
    cdf=lambda x, loc=0, scale=1: _sp.ndtr(_std(x, loc, scale)),
    logcdf=lambda x, loc=0, scale=1: _sp.log_ndtr(_std(x, loc, scale)),
    sf=lambda x, loc=0, scale=1: _sp.ndtr(-_std(x, loc, scale)),
    logsf=lambda x, loc=0, scale=1: _sp.log_ndtr(-_std(x, loc, scale)),
    ppf=_ppf_of(_sp.ndtri), isf=_ppf_of(lambda q: -_sp.ndtri(q)))


def _t_logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _float(x, df, loc, scale)
    z = (x - loc) / scale
    half = 0.5 * (df + 1)
    return (_sp.gammaln(half) - _sp.gammaln(0.5 * df) - 0.5 * _np.log(df * _math.pi) - _np.log(scale)
            - half * _np.log1p(z * z / df))


def _t_cdf(x, df, loc=0, scale=1, upper=False):
    x, df, loc, scale = _float(x, df, loc, scale)
    z = (x - loc) / scale
    # P(T > |z|) = I_{df/(df+z²)}(df/2, 1/2) / 2
    tail = 0.5 * _sp.betainc(0.5 * df, _np.full_like(df, 0.5), df / (df + z * z))
    below = z < 0 if not upper else z > 0
    return _np.where(below, tail, 1 - tail)


t = _module(
    "t", "Student's t distribution with df degrees of freedom.",
    logpdf=_t_logpdf, pdf=_pdf_from(_t_logpdf),
    cdf=lambda x, df, loc=0, scale=1: _t_cdf(x, df, loc, scale),
    sf=lambda x, df, loc=0, scale=1: _t_cdf(x, df, loc, scale, upper=True))


def _beta_logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _float(x, a, b, loc, scale)
    y = (x - loc) / scale
    lp = _sp.xlogy(a - 1, y) + _sp.xlog1py(b - 1, -y) - _sp.betaln(a, b) - _np.log(scale)
    return _neg_inf_where((y < 0) | (y > 1), lp)


def _beta_cdf(x, a, b, loc=0, scale=1, upper=False):
    x, a, b, loc, scale = _float(x, a, b, loc, scale)
    y = _np.clip((x - loc) / scale, 0, 1)
    return _sp.betainc(b, a, 1 - y) if upper else _sp.betainc(a, b, y)


beta = _module(
    "beta", "The beta distribution on [loc, loc + scale].",
    logpdf=_beta_logpdf, pdf=_pdf_from(_beta_logpdf),
    cdf=lambda x, a, b, loc=0, scale=1: _beta_cdf(x, a, b, loc, scale),
    logcdf=lambda x, a, b, loc=0, scale=1: _np.log(_beta_cdf(x, a, b, loc, scale)),
    sf=lambda x, a, b, loc=0, scale=1: _beta_cdf(x, a, b, loc, scale, upper=True),
    logsf=lambda x, a, b, loc=0, scale=1: _np.log(_beta_cdf(x, a, b, loc, scale, upper=True)))


def _gamma_logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = _float(x, a, loc, scale)
    y = (x - loc) / scale
    return _neg_inf_where(y < 0, _sp.xlogy(a - 1, y) - y - _sp.gammaln(a) - _np.log(scale))


def _gamma_cdf(x, a, loc=0, scale=1, upper=False):
    x, a, loc, scale = _float(x, a, loc, scale)
    y = _np.maximum((x - loc) / scale, 0)
    return _sp.gammaincc(a, y) if upper else _sp.gammainc(a, y)


gamma = _module(
    "gamma", "The gamma distribution with shape a.",
    logpdf=_gamma_logpdf, pdf=_pdf_from(_gamma_logpdf),
    cdf=lambda x, a, loc=0, scale=1: _gamma_cdf(x, a, loc, scale),
    logcdf=lambda x, a, loc=0, scale=1: _np.log(_gamma_cdf(x, a, loc, scale)),
    sf=lambda x, a, loc=0, scale=1: _gamma_cdf(x, a, loc, scale, upper=True),
    logsf=lambda x, a, loc=0, scale=1: _np.log(_gamma_cdf(x, a, loc, scale, upper=True)))


def _chi2_logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _float(x, df, loc, scale)
    return _gamma_logpdf(x, 0.5 * df, loc, 2 * scale)


chi2 = _module(
    "chi2", "The chi-squared distribution with df degrees of freedom.",
    logpdf=_chi2_logpdf, pdf=_pdf_from(_chi2_logpdf),
    cdf=lambda x, df, loc=0, scale=1: _gamma_cdf(x, 0.5 * _float(df)[0], loc, 2 * _float(scale)[0]),
    sf=lambda x, df, loc=0, scale=1: _gamma_cdf(x, 0.5 * _float(df)[0], loc, 2 * _float(scale)[0], upper=True))


def _expon_logpdf(x, loc=0, scale=1):
    y = _std(x, loc, scale)
    return _neg_inf_where(y < 0, -y - _np.log(_float(scale)[0] * _np.ones_like(y)))


expon = _module(
    "expon", "The exponential distribution.",
    logpdf=_expon_logpdf, pdf=_pdf_from(_expon_logpdf),
    cdf=lambda x, loc=0, scale=1: -_np.expm1(-_np.maximum(_std(x, loc, scale), 0)),
    sf=lambda x, loc=0, scale=1: _np.exp(-_np.maximum(_std(x, loc, scale), 0)),
    logsf=lambda x, loc=0, scale=1: -_np.maximum(_std(x, loc, scale), 0),
    ppf=lambda q, loc=0, scale=1: _ppf_of(lambda p: -_np.log1p(-p))(q, loc, scale))


def _uniform_logpdf(x, loc=0, scale=1):
    x, loc, scale = _float(x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return _neg_inf_where(~inside, -_np.log(scale) * _np.ones_like(x))


uniform = _module(
    "uniform", "The uniform distribution on [loc, loc + scale].",
    logpdf=_uniform_logpdf, pdf=_pdf_from(_uniform_logpdf),
    cdf=lambda x, loc=0, scale=1: _np.clip(_std(x, loc, scale), 0, 1),
    ppf=lambda q, loc=0, scale=1: _ppf_of(lambda p: _np.where((p < 0) | (p > 1), _np.nan, p))(q, loc, scale))


def _laplace_logpdf(x, loc=0, scale=1):
    y = _std(x, loc, scale)
    return -_np.abs(y) - _np.log(2 * _float(scale)[0] * _np.ones_like(y))


def _laplace_cdf(x, loc=0, scale=1):
    y = _std(x, loc, scale)
    return _np.where(y < 0, 0.5 * _np.exp(y), 1 - 0.5 * _np.exp(-y))


laplace = _module("laplace", "The Laplace (double exponential) distribution.",
                  logpdf=_laplace_logpdf, pdf=_pdf_from(_laplace_logpdf), cdf=_laplace_cdf)


def _cauchy_logpdf(x, loc=0, scale=1):
    y = _std(x, loc, scale)
    return -_math.log(_math.pi) - _np.log(_float(scale)[0] * _np.ones_like(y)) - _np.log1p(y * y)


cauchy = _module(
    "cauchy", "The Cauchy distribution.",
    logpdf=_cauchy_logpdf, pdf=_pdf_from(_cauchy_logpdf),
    cdf=lambda x, loc=0, scale=1: 0.5 + _np.arctan(_std(x, loc, scale)) / _math.pi,
    sf=lambda x, loc=0, scale=1: 0.5 - _np.arctan(_std(x, loc, scale)) / _math.pi,
    ppf=lambda q, loc=0, scale=1: _ppf_of(lambda p: _np.tan(_math.pi * (p - 0.5)))(q, loc, scale))


def _logistic_logpdf(x, loc=0, scale=1):
    y = _std(x, loc, scale)
    # -y - 2 log(1 + e^-y), written with |y| so that neither tail overflows
    return -_np.abs(y) - 2 * _np.log1p(_np.exp(-_np.abs(y))) - _np.log(_float(scale)[0] * _np.ones_like(y))


logistic = _module(
    "logistic", "The logistic distribution.",
    logpdf=_logistic_logpdf, pdf=_pdf_from(_logistic_logpdf),
    cdf=lambda x, loc=0, scale=1: _sp.expit(_std(x, loc, scale)),
    sf=lambda x, loc=0, scale=1: _sp.expit(-_std(x, loc, scale)),
    ppf=lambda q, loc=0, scale=1: _ppf_of(_sp.logit)(q, loc, scale))


def _pareto_logpdf(x, b, loc=0, scale=1):
    x, b, loc, scale = _float(x, b, loc, scale)
    y = (x - loc) / scale
    safe = _np.where(y >= 1, y, _np.ones_like(y))
    return _neg_inf_where(y < 1, _np.log(b) - _np.log(scale) - (b + 1) * _np.log(safe))


pareto = _module("pareto", "The Pareto distribution with shape b.",
                 logpdf=_pareto_logpdf, pdf=_pdf_from(_pareto_logpdf))


def _broadcast_shapes(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(max(x, y) for x, y in zip(a, b))


def _mvn_logpdf(x, mean, cov, allow_singular=None):
    x, mean, cov = _float(x, mean, cov)
    if mean.ndim == 0:
        return -0.5 * (x - mean) ** 2 / cov - 0.5 * (_LOG_2PI + _np.log(cov))
    n = mean.shape[-1]
    y = x - mean
    if cov.ndim == 0:
        return -0.5 * _np.sum(y * y, axis=-1) / cov - 0.5 * n * (_LOG_2PI + _np.log(cov))
    if cov.ndim < 2 or tuple(cov.shape[-2:]) != (n, n):
        raise ValueError(f"multivariate_normal.logpdf: cov of shape {tuple(cov.shape)} does not match mean of "
                         f"shape {tuple(mean.shape)}")
    lower = _nl.cholesky(cov)
    logdet_half = _np.sum(_np.log(_nl.diagonal(lower)), axis=-1)
    if cov.ndim == 2:
        # one factor for every x: solve L Z = Y^T for all rows of y at once
        flat = _np.reshape(y, (-1, n))
        z = _graft.linalg_solve_triangular(lower, _np.transpose(flat), True, 0, False)
        maha = _np.reshape(_np.sum(z * z, axis=0), tuple(y.shape[:-1]))
    else:
        batch = _broadcast_shapes(tuple(y.shape[:-1]), tuple(cov.shape[:-2]))
        lb = _np.broadcast_to(lower, batch + (n, n))
        yb = _np.broadcast_to(y, batch + (n,))[..., None]
        z = _graft.linalg_solve_triangular(lb, yb, True, 0, False)
        maha = _np.sum(z * z, axis=(-2, -1))
    return -0.5 * maha - 0.5 * n * _LOG_2PI - logdet_half


multivariate_normal = _module("multivariate_normal", "The multivariate normal distribution N(mean, cov).",
                              logpdf=_mvn_logpdf, pdf=_pdf_from(_mvn_logpdf))


def _dirichlet_logpdf(x, alpha):
    x, alpha = _float(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet.logpdf: alpha must be one-dimensional, got shape {tuple(alpha.shape)}")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ValueError(f"dirichlet.logpdf: x must have {k} or {k - 1} entries along its first axis (alpha has "
                         f"{k}), got shape {tuple(x.shape)}")
    if x.shape[0] == k - 1:
        x = _np.concatenate([x, 1 - _np.sum(x, axis=0, keepdims=True)], axis=0)
    a = _np.reshape(alpha, (k,) + (1,) * (x.ndim - 1))
    norm_term = _np.sum(_sp.gammaln(alpha)) - _sp.gammaln(_np.sum(alpha))
    lp = _np.sum(_sp.xlogy(a - 1, x), axis=0) - norm_term
    simplex = _np.all(x > 0, axis=0) & (_np.abs(_np.sum(x, axis=0) - 1) < 1e-6)
    return _neg_inf_where(~simplex, lp)


dirichlet = _module("dirichlet", "The Dirichlet distribution over the simplex (x's first axis).",
                    logpdf=_dirichlet_logpdf, pdf=_pdf_from(_dirichlet_logpdf))


# ---- discrete ----------------------------------------------------------------------------------------
def _poisson_logpmf(k, mu, loc=0):
    k, mu, loc = _float(k, mu, loc)
    j = k - loc
    lp = _sp.xlogy(j, mu) - _sp.gammaln(j + 1) - mu
    return _neg_inf_where((j < 0) | ~_is_int(j), lp)


def _poisson_cdf(k, mu, loc=0):
    k, mu, loc = _float(k, mu, loc)
    j = _np.floor(k - loc)
    return _np.where(j < 0, 0.0, _sp.gammaincc(_np.maximum(j, 0) + 1, mu))


poisson = _module("poisson", "The Poisson distribution with mean mu.",
                  logpmf=_poisson_logpmf, pmf=_pdf_from(_poisson_logpmf), cdf=_poisson_cdf)


def _bernoulli_logpmf(k, p, loc=0):
    k, p, loc = _float(k, p, loc)
    j = k - loc
    lp = _np.where(j == 1, _np.log(p), _np.log1p(-p))
    return _neg_inf_where((j != 0) & (j != 1), lp)


def _bernoulli_cdf(k, p):
    k, p = _float(k, p)
    return _np.where(k < 0, 0.0, _np.where(k < 1, 1 - p, 1.0))


def _bernoulli_ppf(q, p):
    q, p = _float(q, p)
    return _np.where((q < 0) | (q > 1), _np.nan, _np.where(q <= 1 - p, 0.0, 1.0))


bernoulli = _module("bernoulli", "The Bernoulli distribution.",
                    logpmf=_bernoulli_logpmf, pmf=_pdf_from(_bernoulli_logpmf), cdf=_bernoulli_cdf,
                    ppf=_bernoulli_ppf)


def _binom_logpmf(k, n, p, loc=0):
    k, n, p, loc = _float(k, n, p, loc)
    j = k - loc
    log_comb = _sp.gammaln(n + 1) - _sp.gammaln(j + 1) - _sp.gammaln(n - j + 1)
    lp = log_comb + _sp.xlogy(j, p) + _sp.xlog1py(n - j, -p)
    return _neg_inf_where((j < 0) | (j > n) | ~_is_int(j), lp)


def _binom_cdf(k, n, p, loc=0):
    k, n, p, loc = _float(k, n, p, loc)
    j = _np.floor(k - loc)
    # P(K <= j) = I_{1-p}(n - j, j + 1) for 0 <= j < n
    inside = _np.clip(j, 0, n - 1)
    v = _sp.betainc(_np.maximum(n - inside, 1e-30), inside + 1, 1 - p)
    return _np.where(j < 0, 0.0, _np.where(j >= n, 1.0, v))


binom = _module("binom", "The binomial distribution of n trials with success probability p.",
                logpmf=_binom_logpmf, pmf=_pdf_from(_binom_logpmf), cdf=_binom_cdf)


def _geom_logpmf(k, p, loc=0):
    k, p, loc = _float(k, p, loc)
    j = k - loc
    return _neg_inf_where((j < 1) | ~_is_int(j), _sp.xlog1py(j - 1, -p) + _np.log(p))


geom = _module("geom", "The geometric distribution (trials up to the first success, from 1).",
               logpmf=_geom_logpmf, pmf=_pdf_from(_geom_logpmf),
               cdf=lambda k, p, loc=0: _geom_cdf(k, p, loc))


def _geom_cdf(k, p, loc=0):
    k, p, loc = _float(k, p, loc)
    j = _np.floor(k - loc)
    return _np.where(j < 1, 0.0, -_np.expm1(j * _np.log1p(-p)))


def _multinomial_logpmf(x, n, p):
    x, n, p = _float(x, n, p)
    lp = _sp.gammaln(n + 1) + _np.sum(_sp.xlogy(x, p) - _sp.gammaln(x + 1), axis=-1)
    return _neg_inf_where(_np.sum(x, axis=-1) != n, lp)


multinomial = _module("multinomial", "The multinomial distribution of n draws over the categories of p's last axis.",
                      logpmf=_multinomial_logpmf, pmf=_pdf_from(_multinomial_logpmf))

__all__ = ["bernoulli", "beta", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma", "geom", "laplace",
           "logistic", "multinomial", "multivariate_normal", "norm", "pareto", "poisson", "t", "uniform"]
