"""Counter-based random numbers (threefry keys, as jax.random). `key(seed)` returns a typed key array (JAX's
new-style keys: shape () for one key, dtype key<fry>); `PRNGKey(seed)` the raw uint32[2] words. Every sampler takes
either; split and fold_in return keys of the kind they are given."""
import math

from . import _graft
from ._tree import register_pytree_node as _register


class _KeyDType:
    """The dtype of typed key arrays (threefry2x32's, printed as JAX prints it)."""
    name = "key<fry>"

    def __repr__(self):
        return "key<fry>"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, _KeyDType) or other == "key<fry>"

    def __hash__(self):
        return hash("key<fry>")


_KEY_DTYPE = _KeyDType()


class PRNGImpl:
    """A key implementation (graft has one: threefry2x32)."""
    name = "threefry2x32"
    key_shape = (2,)

    def __repr__(self):
        return "PRNGImpl(threefry2x32)"

    __str__ = __repr__


_THREEFRY = PRNGImpl()


class KeyArray:
    """An array of PRNG keys: its shape leaves out the two uint32 words each key holds (key_data gives them).
    A pytree node over those words, so keys pass through jit, vmap, scan and the rest."""

    __slots__ = ("_graft_key_data",)

    def __init__(self, data):
        data = _graft.asarray(data)
        if str(data.dtype) != "uint32" or data.ndim < 1 or data.shape[-1] != 2:
            raise TypeError(f"wrap_key_data: threefry keys are uint32 words of shape (..., 2), got "
                            f"{data.dtype}{tuple(data.shape)}")
        self._graft_key_data = data

    @property
    def shape(self):
        return tuple(self._graft_key_data.shape[:-1])

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def dtype(self):
        return _KEY_DTYPE

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a single key")
        return self.shape[0]

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        return KeyArray(self._graft_key_data[idx + (slice(None),)])

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        return f"Array({self.shape}, dtype=key<fry>) overlaying:\n{self._graft_key_data}"


_register(KeyArray, lambda k: ((k._graft_key_data,), None), lambda _, ch: _wrap_unchecked(ch[0]))


def _wrap_unchecked(data):
    # unflatten may see placeholders (vmap's axis specs, tracers): no checks
    k = object.__new__(KeyArray)
    k._graft_key_data = data
    return k


def key(seed, *, impl=None):
    """A typed key (shape ()) from an integer seed."""
    return KeyArray(_graft.random_key(int(seed)))


def PRNGKey(seed, *, impl=None):
    """A raw key: uint32 words of shape (2,)."""
    return _graft.random_key(int(seed))


def key_data(keys):
    """The uint32 words under typed keys (raw keys are returned as they are)."""
    return keys._graft_key_data if isinstance(keys, KeyArray) else _graft.asarray(keys)


def _check_impl(impl, op):
    if impl not in (None, "threefry2x32", _THREEFRY):
        raise ValueError(f"{op}: graft's keys are threefry2x32's, got impl={impl!r}")


def key_dtype(impl_spec=None):
    """The dtype of typed keys of an implementation (graft's: threefry2x32, printed key<fry>)."""
    _check_impl(impl_spec, "key_dtype")
    return _KEY_DTYPE


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    _check_impl(impl, "wrap_key_data")
    if dtype is not None and dtype != _KEY_DTYPE:
        raise ValueError(f"wrap_key_data: dtype must be a key dtype (key<fry>), got {dtype!r}")
    return KeyArray(key_bits_array)


def key_impl(keys):
    return _THREEFRY


def clone(key):
    return key


def _like(key, raw):
    return KeyArray(raw) if isinstance(key, KeyArray) else raw


def split(key, num=2):
    """num new keys; a tuple num gives keys of that shape (JAX's)."""
    if isinstance(num, (tuple, list)):
        shape = tuple(int(n) for n in num)
        count = 1
        for n in shape:
            count *= n
        words = _graft.random_split(key_data(key), count)
        return _like(key, words.reshape(shape + (2,)))
    return _like(key, _graft.random_split(key_data(key), num))


def fold_in(key, data):
    return _like(key, _graft.random_fold_in(key_data(key), int(data)))


def normal(key, shape=(), dtype=float):
    return _graft.random_normal(key, shape, dtype)


def uniform(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
    if isinstance(minval, (int, float)) and isinstance(maxval, (int, float)):
        return _graft.random_uniform(key, shape, dtype, minval, maxval)
    return _graft.random_uniform_between(key, tuple(shape), dtype, minval, maxval)


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """True with probability p. mode="high" draws twice the bits (for p below the dtype's resolution,
    ~1e-7 in float32), as JAX's."""
    if mode not in ("low", "high"):
        raise ValueError(f"random.bernoulli: mode must be 'low' or 'high', got {mode!r}")
    return _graft.random_bernoulli(key, p, shape, mode == "high")


def permutation(key, x, axis=0, independent=False):
    """A permutation of range(x) for an integer x, else of x along axis (each vector on its own with
    independent=True)."""
    if isinstance(x, int):
        return _graft.random_permutation(key, x)
    return _graft.random_permutation_of(key, x, axis, independent)


def bits(key, shape=(), dtype=None):
    """Random bits; the default dtype is JAX's default unsigned int (uint64 under x64, else uint32)."""
    if dtype is None:
        dtype = "uint64" if _graft._x64_enabled() else "uint32"
    return _graft.random_bits(key, shape, dtype)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    return _graft.random_categorical(key, logits, axis, shape, replace, mode)


def gumbel(key, shape=(), dtype=float, mode=None):
    return _graft.random_gumbel(key, shape, dtype, mode)


def truncated_normal(key, lower, upper, shape=None, dtype=float):
    """Normal values truncated to (lower, upper); the bounds may be arrays (the shape defaults to theirs)."""
    if isinstance(lower, (int, float)) and isinstance(upper, (int, float)):
        return _graft.random_truncated_normal(key, float(lower), float(upper), () if shape is None else shape, dtype)
    return _graft.random_truncated_normal_arrays(key, lower, upper, None if shape is None else tuple(shape), dtype)


def randint(key, shape, minval, maxval, dtype=int):
    return _graft.random_randint(key, shape, minval, maxval, dtype)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    return _graft.random_choice(key, a, tuple(shape), replace, p, axis, mode)


def exponential(key, shape=(), dtype=float):
    return _graft.random_exponential(key, shape, dtype)


def laplace(key, shape=(), dtype=float):
    return _graft.random_laplace(key, shape, dtype)


def logistic(key, shape=(), dtype=float):
    return _graft.random_logistic(key, shape, dtype)


def cauchy(key, shape=(), dtype=float):
    return _graft.random_cauchy(key, shape, dtype)


def maxwell(key, shape=(), dtype=float):
    return _graft.random_maxwell(key, shape, dtype)


def rademacher(key, shape, dtype=int):
    return _graft.random_rademacher(key, shape, dtype)


def pareto(key, b, shape=None, dtype=float):
    return _graft.random_pareto(key, b, shape, dtype)


def rayleigh(key, scale, shape=None, dtype=float):
    return _graft.random_rayleigh(key, scale, shape, dtype)


def wald(key, mean, shape=None, dtype=float):
    return _graft.random_wald(key, mean, shape, dtype)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=float):
    return _graft.random_double_sided_maxwell(key, loc, scale, shape, dtype)


def weibull_min(key, scale, concentration, shape=(), dtype=float):
    return _graft.random_weibull_min(key, scale, concentration, shape, dtype)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    return _graft.random_multivariate_normal(key, mean, cov, shape, dtype, method)


def orthogonal(key, n, shape=(), dtype=float, m=None):
    """Matrices (*shape, n, m) (m = n by default) with orthonormal columns (n >= m) or rows (n < m)."""
    return _graft.random_orthogonal(key, n, shape, dtype, m)



def gamma(key, a, shape=None, dtype=float):
    """Gamma(a, 1); differentiable in a (implicit reparameterization, as JAX)."""
    return _graft.random_gamma(key, a, shape, dtype)


def loggamma(key, a, shape=None, dtype=float):
    return _graft.random_loggamma(key, a, shape, dtype)


def beta(key, a, b, shape=None, dtype=float):
    return _graft.random_beta(key, a, b, shape, dtype)


def dirichlet(key, alpha, shape=None, dtype=float):
    return _graft.random_dirichlet(key, alpha, shape, dtype)


def chisquare(key, df, shape=None, dtype=float):
    return _graft.random_chisquare(key, df, shape, dtype)


def t(key, df, shape=None, dtype=float):
    return _graft.random_t(key, df, shape, dtype)


def f(key, dfnum, dfden, shape=None, dtype=float):
    return _graft.random_f(key, dfnum, dfden, shape, dtype)


def generalized_normal(key, p, shape=(), dtype=float):
    return _graft.random_generalized_normal(key, float(p), shape, dtype)


def ball(key, d, p=2, shape=(), dtype=float):
    return _graft.random_ball(key, d, float(p), shape, dtype)


def poisson(key, lam, shape=None, dtype=int):
    return _graft.random_poisson(key, lam, shape, dtype)


def binomial(key, n, p, shape=None, dtype=float):
    return _graft.random_binomial(key, n, p, shape, dtype)


def multinomial(key, n, p, *, shape=None, dtype=float, unroll=1):
    return _graft.random_multinomial(key, n, p, shape, dtype)


def geometric(key, p, shape=None, dtype=int):
    return _graft.random_geometric(key, p, shape, dtype)


def triangular(key, left, mode, right, shape=None, dtype=float):
    return _graft.random_triangular(key, left, mode, right, shape, dtype)


def lognormal(key, sigma=1.0, shape=None, dtype=float):
    return _graft.random_lognormal(key, sigma, shape, dtype)
