"""jax.scipy.special's functions on graft arrays (graft/ops/special.h in C++): gamma-family functions, the
regularized incomplete gamma and beta functions, Hurwitz zeta, the normal CDF and its inverse, modified Bessel
functions, xlogy and friends. Every one is differentiable where JAX's is, and works under jit, vmap and grad."""
from .. import _graft

gammaln = _graft.special_gammaln
digamma = _graft.special_digamma
polygamma = _graft.special_polygamma
zeta = _graft.special_zeta
betaln = _graft.special_betaln
gammainc = _graft.special_gammainc
gammaincc = _graft.special_gammaincc
betainc = _graft.special_betainc
xlogy = _graft.special_xlogy
xlog1py = _graft.special_xlog1py
entr = _graft.special_entr
expit = _graft.special_expit
logit = _graft.special_logit
ndtr = _graft.special_ndtr
log_ndtr = _graft.special_log_ndtr
ndtri = _graft.special_ndtri
i0 = _graft.special_i0
i0e = _graft.special_i0e
i1 = _graft.special_i1
i1e = _graft.special_i1e
erf = _graft.erf
erfc = _graft.erfc
erfinv = _graft.erf_inv


def logsumexp(a, axis=None, keepdims=False):
    return _graft.logsumexp(a, axis, keepdims)


def softmax(x, axis=-1):
    return _graft.softmax(x, axis)


__all__ = ["betainc", "betaln", "gammainc", "gammaincc", "digamma", "entr", "erf", "erfc", "erfinv", "expit", "gammaln", "i0", "i0e", "i1", "i1e",
           "log_ndtr", "logit", "logsumexp", "ndtr", "ndtri", "polygamma", "softmax", "xlog1py", "xlogy", "zeta"]


gammasgn = _graft.special_gammasgn
gamma = _graft.special_gamma
loggamma = _graft.special_loggamma
beta = _graft.special_beta
poch = _graft.special_poch
rel_entr = _graft.special_rel_entr
kl_div = _graft.special_kl_div
boxcox = _graft.special_boxcox
boxcox1p = _graft.special_boxcox1p
bernoulli = _graft.special_bernoulli
exp1 = _graft.special_exp1
expi = _graft.special_expi
erfcx = _graft.special_erfcx


def factorial(n, exact=False):
    """n! as a float (Γ(n + 1)), 0 for n < 0; exact=True (arbitrary-precision integers) is not supported,
    as in JAX."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    return _graft.special_factorial(n)


def comb(N, k, *, exact=False, repetition=False):
    """N choose k as a float (0 where k > N, N < 0 or k < 0); repetition=True counts multisets."""
    if exact:
        raise NotImplementedError("comb with exact=True")
    return _graft.special_comb(N, k, repetition)


def multigammaln(a, d):
    """log of the multivariate gamma function of dimension d (a Python int)."""
    return _graft.special_multigammaln(a, int(d))


def log_softmax(x, axis=-1):
    return _graft.log_softmax(x, axis)
