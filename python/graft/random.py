"""Counter-based random numbers (threefry keys, as jax.random)."""
from . import _graft


def key(seed):
    return _graft.random_key(int(seed))


PRNGKey = key


def split(key, num=2):
    return _graft.random_split(key, num)


def fold_in(key, data):
    return _graft.random_fold_in(key, int(data))


def normal(key, shape=(), dtype="float32"):
    return _graft.random_normal(key, shape, dtype)


def uniform(key, shape=(), dtype="float32", minval=0.0, maxval=1.0):
    return _graft.random_uniform(key, shape, dtype, minval, maxval)


def bernoulli(key, p=0.5, shape=None):
    return _graft.random_bernoulli(key, p, shape)


def permutation(key, x, axis=0, independent=False):
    """A permutation of range(x) for an integer x, else of x along axis (each vector on its own with
    independent=True)."""
    if isinstance(x, int):
        return _graft.random_permutation(key, x)
    return _graft.random_permutation_of(key, x, axis, independent)


def bits(key, shape=(), dtype="uint32"):
    return _graft.random_bits(key, shape, dtype)


def categorical(key, logits, axis=-1, shape=None):
    return _graft.random_categorical(key, logits, axis, shape)


def gumbel(key, shape=(), dtype="float32"):
    return _graft.random_gumbel(key, shape, dtype)


def truncated_normal(key, lower, upper, shape=(), dtype="float32"):
    return _graft.random_truncated_normal(key, float(lower), float(upper), shape, dtype)


def randint(key, shape, minval, maxval, dtype="int32"):
    return _graft.random_randint(key, shape, minval, maxval, dtype)


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    return _graft.random_choice(key, a, tuple(shape), replace, p, axis)


def exponential(key, shape=(), dtype="float32"):
    return _graft.random_exponential(key, shape, dtype)


def laplace(key, shape=(), dtype="float32"):
    return _graft.random_laplace(key, shape, dtype)


def logistic(key, shape=(), dtype="float32"):
    return _graft.random_logistic(key, shape, dtype)


def cauchy(key, shape=(), dtype="float32"):
    return _graft.random_cauchy(key, shape, dtype)


def maxwell(key, shape=(), dtype="float32"):
    return _graft.random_maxwell(key, shape, dtype)


def rademacher(key, shape, dtype="int32"):
    return _graft.random_rademacher(key, shape, dtype)


def pareto(key, b, shape=None, dtype="float32"):
    return _graft.random_pareto(key, b, shape, dtype)


def rayleigh(key, scale, shape=None, dtype="float32"):
    return _graft.random_rayleigh(key, scale, shape, dtype)


def wald(key, mean, shape=None, dtype="float32"):
    return _graft.random_wald(key, mean, shape, dtype)


def double_sided_maxwell(key, loc, scale, shape=(), dtype="float32"):
    return _graft.random_double_sided_maxwell(key, loc, scale, shape, dtype)


def weibull_min(key, scale, concentration, shape=(), dtype="float32"):
    return _graft.random_weibull_min(key, scale, concentration, shape, dtype)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    return _graft.random_multivariate_normal(key, mean, cov, shape, dtype, method)


def orthogonal(key, n, shape=(), dtype="float32"):
    return _graft.random_orthogonal(key, n, shape, dtype)



def gamma(key, a, shape=None, dtype="float32"):
    """Gamma(a, 1); differentiable in a (implicit reparameterization, as JAX)."""
    return _graft.random_gamma(key, a, shape, dtype)


def loggamma(key, a, shape=None, dtype="float32"):
    return _graft.random_loggamma(key, a, shape, dtype)


def beta(key, a, b, shape=None, dtype="float32"):
    return _graft.random_beta(key, a, b, shape, dtype)


def dirichlet(key, alpha, shape=None, dtype="float32"):
    return _graft.random_dirichlet(key, alpha, shape, dtype)


def chisquare(key, df, shape=None, dtype="float32"):
    return _graft.random_chisquare(key, df, shape, dtype)


def t(key, df, shape=None, dtype="float32"):
    return _graft.random_t(key, df, shape, dtype)


def f(key, dfnum, dfden, shape=None, dtype="float32"):
    return _graft.random_f(key, dfnum, dfden, shape, dtype)


def generalized_normal(key, p, shape=(), dtype="float32"):
    return _graft.random_generalized_normal(key, float(p), shape, dtype)


def ball(key, d, p=2, shape=(), dtype="float32"):
    return _graft.random_ball(key, d, float(p), shape, dtype)


def poisson(key, lam, shape=None, dtype="int32"):
    return _graft.random_poisson(key, lam, shape, dtype)


def binomial(key, n, p, shape=None, dtype="float32"):
    return _graft.random_binomial(key, n, p, shape, dtype)


def multinomial(key, n, p, *, shape=None, dtype="float32", unroll=1):
    return _graft.random_multinomial(key, n, p, shape, dtype)


def geometric(key, p, shape=None, dtype="int32"):
    return _graft.random_geometric(key, p, shape, dtype)


def triangular(key, left, mode, right, shape=None, dtype="float32"):
    return _graft.random_triangular(key, left, mode, right, shape, dtype)


def lognormal(key, sigma=1.0, shape=None, dtype="float32"):
    return _graft.random_lognormal(key, sigma, shape, dtype)
