"""jax.nn's activations and helpers beyond the C++ ones, dot_product_attention, and jax.nn.initializers, as
composites of graft operations (differentiable, batchable, compilable)."""
import math as _math

from . import _graft
from . import numpy as _np
from . import random as _random


def _a(x):
    return _np.asarray(x)


def identity(x):
    return _a(x)


def elu(x, alpha=1.0):
    x = _a(x)
    return _np.where(x > 0, x, alpha * _np.expm1(_np.minimum(x, 0)))


def celu(x, alpha=1.0):
    x = _a(x)
    return _np.where(x > 0, x, alpha * _np.expm1(_np.minimum(x, 0) / alpha))


def selu(x):
    return 1.0507009873554804934193349852946 * elu(x, 1.6732632423543772848170429916717)


def leaky_relu(x, negative_slope=0.01):
    x = _a(x)
    return _np.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    return _np.clip(x, -1.0, 1.0)


def hard_sigmoid(x):
    return _graft.relu6(_a(x) + 3.0) / 6.0


def hard_silu(x):
    return _a(x) * hard_sigmoid(x)


hard_swish = hard_silu


def soft_sign(x):
    x = _a(x)
    return x / (_np.abs(x) + 1)


def squareplus(x, b=4):
    x = _a(x)
    return (x + _np.sqrt(x * x + b)) / 2


def mish(x):
    x = _a(x)
    return x * _np.tanh(_graft.softplus(x))


def sparse_plus(x):
    x = _a(x)
    return _np.where(x <= -1, 0 * x, _np.where(x >= 1, x, (x + 1) ** 2 / 4))


def sparse_sigmoid(x):
    return 0.5 * _np.clip(_a(x) + 1.0, 0.0, 2.0)


def swish(x):
    return _graft.silu(x)


def glu(x, axis=-1):
    """The gated linear unit: the first half of x along axis times the sigmoid of the second."""
    a, b = _np.split(_a(x), 2, axis=axis)
    return a * _graft.sigmoid(b)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    if b is None and not return_sign:
        return _graft.logsumexp(a, axis, keepdims)
    a = _a(a)
    w = _np.ones_like(a) if b is None else _np.broadcast_to(_a(b), a.shape)
    m = _np.max(a, axis=axis, keepdims=True)
    m = _np.where(_np.isfinite(m), m, _np.zeros_like(m))
    s = _np.sum(w * _np.exp(a - m), axis=axis, keepdims=True)
    sign = _np.sign(s)
    out = _np.log(_np.abs(s)) + m
    if not keepdims:
        out = _np.squeeze(out, axis=axis) if axis is not None else _np.reshape(out, ())
        sign = _np.squeeze(sign, axis=axis) if axis is not None else _np.reshape(sign, ())
    return (out, sign) if return_sign else out


def log1mexp(x):
    """log(1 - exp(-x)) for x >= 0, accurate near 0 and for large x (the expm1 form below log 2)."""
    x = _a(x)
    return _np.where(x < _math.log(2.0), _np.log(-_np.expm1(-x)), _np.log1p(-_np.exp(-x)))


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) over axis, stably (entries where `where` is False left out)."""
    x = _a(x)
    if where is None:
        n = x.size if axis is None else _math.prod(x.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
        return logsumexp(x, axis=axis, keepdims=keepdims) - _math.log(n)
    w = _np.broadcast_to(_a(where), x.shape)
    masked = _np.where(w, x, -_np.inf)
    n = _np.sum(w.astype(x.dtype), axis=axis, keepdims=keepdims)
    return logsumexp(masked, axis=axis, keepdims=keepdims) - _np.log(n)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5):
    """(x - mean) / sqrt(variance + epsilon), the statistics over axis unless given."""
    x = _a(x)
    if mean is None:
        mean = _np.mean(x, axis=axis, keepdims=True)
    if variance is None:
        variance = _np.mean(_np.square(x - mean), axis=axis, keepdims=True)
    return (x - mean) / _np.sqrt(variance + epsilon)


def one_hot(x, num_classes, *, dtype=float, axis=-1):
    r = _graft.one_hot(x, num_classes, dtype)
    return r if axis in (-1, r.ndim - 1) else _np.moveaxis(r, -1, axis)


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None, is_causal=False,
                          query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None,
                          implementation=None):
    """JAX's jax.nn.dot_product_attention: query [B, T, N, H], key and value [B, S, K, H] (K divides N: grouped
    queries share a key head), optional bias and boolean mask broadcastable to [B, N, T, S], causal masking,
    sequence lengths and a local window; softmax in f32 at least. Returns [B, T, N, H]."""
    q, k, v = _a(query), _a(key), _a(value)
    squeeze = q.ndim == 3
    if squeeze:
        q, k, v = (_np.expand_dims(t, 0) for t in (q, k, v))
    b_, t_, n_, h_ = q.shape
    s_, kh = k.shape[1], k.shape[2]
    if n_ % kh:
        raise ValueError(f"dot_product_attention: {n_} query heads do not divide into {kh} key heads")
    if kh != n_:
        k = _np.repeat(k, n_ // kh, axis=2)
        v = _np.repeat(v, n_ // kh, axis=2)
    scale = 1 / _math.sqrt(h_) if scale is None else scale
    logits = _np.einsum("btnh,bsnh->bnts", q, k) * scale
    compute = "float32" if str(logits.dtype) in ("float16", "bfloat16") else str(logits.dtype)
    logits = logits.astype(compute)
    if bias is not None:
        logits = logits + _a(bias).astype(compute)
    keep = None

    def both(m):
        return m if keep is None else keep & m

    if mask is not None:
        keep = both(_a(mask).astype("bool"))
    ti = _np.arange(t_)[:, None]
    si = _np.arange(s_)[None, :]
    if is_causal:
        keep = both(si <= ti)
    if local_window_size is not None:
        left, right = (local_window_size, local_window_size) if isinstance(local_window_size, int) else local_window_size
        keep = both((si >= ti - left) & (si <= ti + right))
    if query_seq_lengths is not None:
        keep = both(_np.reshape(ti, (1, 1, t_, 1)) < _np.reshape(_a(query_seq_lengths), (-1, 1, 1, 1)))
    if key_value_seq_lengths is not None:
        keep = both(_np.reshape(si, (1, 1, 1, s_)) < _np.reshape(_a(key_value_seq_lengths), (-1, 1, 1, 1)))
    if keep is not None:
        logits = _np.where(keep, logits, _np.finfo(compute).min)
    w = _graft.softmax(logits, -1).astype(str(v.dtype))
    out = _np.einsum("bnts,bsnh->btnh", w, v)
    return out[0] if squeeze else out


# ---- initializers: f(key, shape, dtype) ---------------------------------------------------------------
def zeros(key, shape, dtype=float):
    return _np.zeros(shape, dtype)


def ones(key, shape, dtype=float):
    return _np.ones(shape, dtype)


def constant(value, dtype=float):
    def init(key, shape, dtype=dtype):
        return _np.full(shape, value, dtype)
    return init


def normal(stddev=1e-2, dtype=float):
    def init(key, shape, dtype=dtype):
        return _random.normal(key, shape, dtype) * stddev
    return init


def uniform(scale=1e-2, dtype=float):
    def init(key, shape, dtype=dtype):
        return _random.uniform(key, shape, dtype, 0.0, scale)
    return init


def truncated_normal(stddev=1e-2, dtype=float, lower=-2.0, upper=2.0):
    def init(key, shape, dtype=dtype):
        return _random.truncated_normal(key, lower, upper, shape, dtype) * stddev
    return init


def _fans(shape, in_axis, out_axis, batch_axis=()):
    if len(shape) < 2:
        n = shape[0] if shape else 1
        return n, n
    nd = len(shape)
    ia = [a % nd for a in ((in_axis,) if isinstance(in_axis, int) else in_axis)]
    oa = [a % nd for a in ((out_axis,) if isinstance(out_axis, int) else out_axis)]
    ba = [a % nd for a in ((batch_axis,) if isinstance(batch_axis, int) else batch_axis)]
    rf = 1
    for i, n in enumerate(shape):
        if i not in ia and i not in oa and i not in ba:
            rf *= n
    fan_in = rf
    for a in ia:
        fan_in *= shape[a]
    fan_out = rf
    for a in oa:
        fan_out *= shape[a]
    return fan_in, fan_out


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=float):
    """JAX's variance_scaling: variance scale / fan (fan_in, fan_out, fan_avg or fan_geo_avg), drawn from a
    truncated normal (in [-2, 2] standard deviations, rescaled to the variance), a normal or a uniform."""
    def init(key, shape, dtype=dtype):
        fan_in, fan_out = _fans(tuple(shape), in_axis, out_axis, batch_axis)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
             "fan_geo_avg": _math.sqrt(fan_in * fan_out)}.get(mode)
        if n is None:
            raise ValueError(f"variance_scaling: mode must be fan_in, fan_out, fan_avg or fan_geo_avg, got {mode!r}")
        var = scale / n
        if distribution == "truncated_normal":
            # the standard deviation of a unit normal truncated to [-2, 2]
            std = _math.sqrt(var) / 0.87962566103423978
            return _random.truncated_normal(key, -2.0, 2.0, shape, dtype) * std
        if distribution == "normal":
            return _random.normal(key, shape, dtype) * _math.sqrt(var)
        if distribution == "uniform":
            lim = _math.sqrt(3 * var)
            return _random.uniform(key, shape, dtype, -lim, lim)
        raise ValueError(f"variance_scaling: distribution must be truncated_normal, normal or uniform, got "
                         f"{distribution!r}")
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=float):
    """Matrices (over every axis but column_axis, flattened) with orthonormal rows or columns."""
    def init(key, shape, dtype=dtype):
        if len(shape) < 2:
            raise ValueError("orthogonal: needs at least two dimensions")
        n_cols = shape[column_axis]
        n_rows = 1
        for i, d in enumerate(shape):
            if i != column_axis % len(shape):
                n_rows *= d
        big, small = max(n_rows, n_cols), min(n_rows, n_cols)
        a = _random.normal(key, (big, small), "float32" if dtype == "bfloat16" else dtype)
        q, r = _np.linalg.qr(a)
        d = _np.sign(_np.diagonal(r))
        q = q * _np.where(d == 0, 1.0, d)
        if n_rows < n_cols:
            q = _np.transpose(q)
        rest = [d_ for i, d_ in enumerate(shape) if i != column_axis % len(shape)]
        q = _np.reshape(q, tuple(rest) + (n_cols,))
        q = _np.moveaxis(q, -1, column_axis)
        return (q * scale).astype(dtype)
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=float):
    """Convolution kernels [*spatial, in, out] zero except at the spatial center, an orthogonal matrix there."""
    def init(key, shape, dtype=dtype):
        if len(shape) not in (3, 4, 5) or shape[-2] > shape[-1]:
            raise ValueError("delta_orthogonal: needs a 3-D to 5-D kernel with in <= out channels")
        center = orthogonal(scale, column_axis, dtype)(key, shape[-2:], dtype)
        k = _np.zeros(shape, dtype)
        idx = tuple(d // 2 for d in shape[:-2])
        return k.at[idx].set(center)
    return init
