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


def permutation(key, n):
    return _graft.random_permutation(key, n)
