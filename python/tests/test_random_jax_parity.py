"""graft.random's samplers follow JAX 0.11's algorithms where a line-by-line comparison found them
apart, and take JAX's newer arguments (mode=, replace=False, array bounds, m=, tuple splits)."""
import numpy as np
import pytest
import scipy.stats

import graft
from graft import random
import graft.numpy as jnp


def _np(x):
    return np.asarray(x)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint16"])
def test_randint_small_ints_sample_in_int32(dtype):
    k = random.PRNGKey(3)
    info = np.iinfo(dtype)
    got = random.randint(k, (1000,), 0, 200, dtype=dtype)
    assert str(got.dtype) == dtype
    want = random.randint(k, (1000,), 0, min(200, int(info.max) + 1), dtype="int32")
    np.testing.assert_array_equal(_np(got), _np(want).astype(dtype))
    # bounds clipped to the dtype: maxval past its largest value covers the top of the range
    full = _np(random.randint(k, (4000,), int(info.min), int(info.max) + 1, dtype=dtype))
    assert full.min() >= info.min and full.max() <= info.max


def test_logistic_is_log_u_minus_log1p():
    k = random.PRNGKey(5)
    u = _np(random.uniform(k, (1000,), minval=np.finfo(np.float32).tiny, maxval=1.0))
    x = _np(random.logistic(k, (1000,)))
    np.testing.assert_allclose(x, np.log(u) - np.log1p(-u), rtol=1e-6, atol=1e-6)


def test_gumbel_f16_has_no_infinities():
    x = _np(random.gumbel(random.PRNGKey(1), (20000,), dtype=jnp.float16)).astype(np.float32)
    assert np.isfinite(x).all()


@pytest.mark.parametrize("mode", ["low", "high", "highest"])
def test_gumbel_modes_are_gumbel(mode):
    x = _np(random.gumbel(random.PRNGKey(2), (20000,), mode=mode)).astype(np.float64)
    assert scipy.stats.kstest(x, "gumbel_r").pvalue > 1e-3
    if mode != "low":  # the upper tail goes past what 2^-24-spaced uniforms reach
        assert np.isfinite(x).all()


def test_gumbel_mode_rejects_unknown():
    with pytest.raises(ValueError, match="mode"):
        random.gumbel(random.PRNGKey(0), (3,), mode="fast")


def test_bernoulli_high_mode():
    k = random.PRNGKey(4)
    b = _np(random.bernoulli(k, 0.3, (20000,), mode="high"))
    assert abs(b.mean() - 0.3) < 0.015
    assert not _np(random.bernoulli(k, 0.0, (1000,), mode="high")).any()
    assert _np(random.bernoulli(k, 1.0, (1000,), mode="high")).all()


def test_geometric_never_overflows():
    # a zero uniform (2^-7 of bf16 draws) gives 1, as JAX, not +inf cast to INT_MAX
    g = _np(random.geometric(random.PRNGKey(7), jnp.asarray(0.5, dtype=jnp.bfloat16), (5000,)))
    assert g.min() >= 1 and g.max() < 64


def test_categorical_without_replacement():
    logits = jnp.asarray(np.log(np.array([[0.1, 0.2, 0.3, 0.25, 0.15], [0.5, 0.1, 0.1, 0.2, 0.1]], np.float32)))
    s = _np(random.categorical(random.PRNGKey(9), logits, axis=-1, shape=(4, 2), replace=False))
    assert s.shape == (4, 2)
    for b in range(2):
        assert len(set(s[:, b].tolist())) == 4  # distinct classes per batch entry
    # the first draw is distributed as the categorical itself
    firsts = np.array([_np(random.categorical(random.PRNGKey(i), logits[0], shape=(3,), replace=False))[0]
                       for i in range(1500)])
    freq = np.bincount(firsts, minlength=5) / len(firsts)
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.25, 0.15], atol=0.04)
    with pytest.raises(ValueError, match="cannot exceed"):
        random.categorical(random.PRNGKey(0), logits, shape=(6, 2), replace=False)


def test_choice_with_p_large_population():
    # searchsorted, not a [draws, n] comparison
    p = np.ones(200000, np.float32) / 200000
    c = _np(random.choice(random.PRNGKey(1), 200000, (100000,), p=jnp.asarray(p)))
    assert c.min() >= 0 and c.max() < 200000
    assert 0.45 < (c < 100000).mean() < 0.55


def test_uniform_and_truncated_normal_with_array_bounds():
    lo = jnp.asarray([0.0, 10.0, -5.0])
    hi = jnp.asarray([1.0, 20.0, -4.0])
    u = _np(random.uniform(random.PRNGKey(1), (1000, 3), minval=lo, maxval=hi))
    assert (u >= _np(lo)).all() and (u < _np(hi)).all()
    t = _np(random.truncated_normal(random.PRNGKey(2), lo, hi))
    assert t.shape == (3,)
    t = _np(random.truncated_normal(random.PRNGKey(2), lo, hi, (2000, 3)))
    assert (t > _np(lo)).all() and (t < _np(hi)).all()
    # the scalar form draws the same values
    np.testing.assert_array_equal(_np(random.truncated_normal(random.PRNGKey(3), -1.0, 2.0, (50,))),
                                  _np(random.truncated_normal(random.PRNGKey(3), jnp.asarray(-1.0), jnp.asarray(2.0), (50,))))


@pytest.mark.parametrize("n, m", [(5, 3), (3, 5), (4, 4)])
def test_orthogonal_rectangular(n, m):
    q = _np(random.orthogonal(random.PRNGKey(0), n, (2,), m=m)).astype(np.float64)
    assert q.shape == (2, n, m)
    small = min(n, m)
    gram = q.transpose(0, 2, 1) @ q if n >= m else q @ q.transpose(0, 2, 1)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-5)


def test_split_with_a_shape():
    k = random.key(0)
    ks = random.split(k, (2, 3))
    assert ks.shape == (2, 3)
    flat = _np(random.key_data(random.split(k, 6)))
    np.testing.assert_array_equal(_np(random.key_data(ks)).reshape(6, 2), flat)
    raw = random.split(random.PRNGKey(0), (2, 3))
    assert _np(raw).shape == (2, 3, 2)


def test_x64_default_dtypes():
    prev = graft.config.jax_enable_x64
    try:
        graft.config.update("jax_enable_x64", True)
        assert str(random.bits(random.PRNGKey(0), (3,)).dtype) == "uint64"
        assert str(random.permutation(random.PRNGKey(0), 5).dtype) == "int64"
        assert str(random.choice(random.PRNGKey(0), 5, (3,)).dtype) == "int64"
        # bernoulli with a Python float draws 64-bit uniforms: the same as comparing them by hand
        k = random.PRNGKey(1)
        np.testing.assert_array_equal(_np(random.bernoulli(k, 0.5, (100,))),
                                      _np(random.uniform(k, (100,), dtype=jnp.float64)) < 0.5)
        graft.config.update("jax_enable_x64", False)
        assert str(random.bits(random.PRNGKey(0), (3,)).dtype) == "uint32"
        assert str(random.permutation(random.PRNGKey(0), 5).dtype) == "int32"
    finally:
        graft.config.update("jax_enable_x64", prev)


def test_categorical_batch_shape_broadcasts_with_replacement():
    # JAX's _check_shape: logits (1, 4) against shape (3,) broadcast (with replacement only)
    logits = jnp.zeros((1, 4))
    s = _np(random.categorical(random.PRNGKey(0), logits, axis=-1, shape=(3,)))
    assert s.shape == (3,) and s.min() >= 0 and s.max() < 4
    with pytest.raises(Exception, match="batch shape"):
        random.categorical(random.PRNGKey(0), logits, axis=-1, shape=(3,), replace=False)


def test_multinomial_computes_in_p_dtype_under_x64():
    prev = graft.config.jax_enable_x64
    try:
        graft.config.update("jax_enable_x64", True)
        p = jnp.asarray(np.array([0.2, 0.3, 0.5], np.float32))
        c = random.multinomial(random.PRNGKey(0), 10, p, dtype=jnp.float32)
        assert _np(c).sum() == 10
        # a weak n takes p's float32, as JAX's promote_dtypes_inexact(n, p)
        np.testing.assert_array_equal(_np(c), _np(random.multinomial(random.PRNGKey(0), jnp.asarray(10.0, jnp.float32), p,
                                                                     dtype=jnp.float32)))
    finally:
        graft.config.update("jax_enable_x64", prev)
