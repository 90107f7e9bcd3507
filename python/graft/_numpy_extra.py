"""More of NumPy's (jax.numpy's) functions as composites of graft operations: stacking and splitting,
rearrangement, elementwise helpers, NaN-aware and order statistics, polynomials and signals, and the dtype
helpers (promote_types, result_type, finfo, iinfo). Everything here differentiates, batches and compiles
like its parts; shapes and axes are static (Python values), as in JAX."""
import builtins as _b
import math as _math

import numpy as _onp

from . import _graft
from . import numpy as _np


def _arr(x):
    return _np.asarray(x)


def _axis(axis, ndim):
    return axis + ndim if axis < 0 else axis


def _is_complex(x):
    return str(x.dtype) in ("complex64", "complex128")


def _is_float(x):
    return str(x.dtype) in ("float16", "bfloat16", "float32", "float64")


# ---- dtypes --------------------------------------------------------------------------------------------
_BF16_INFO = dict(bits=16, eps=2.0 ** -7, max=3.3895313892515355e38, min=-3.3895313892515355e38,
                  tiny=1.1754943508222875e-38, smallest_normal=1.1754943508222875e-38, resolution=0.01,
                  nmant=7, nexp=8, precision=2, dtype="bfloat16")


class _BF16Finfo:
    def __init__(self):
        for k, v in _BF16_INFO.items():
            setattr(self, k, v)

    def __repr__(self):
        return "finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, dtype=bfloat16)"


def _dtype_name(d):
    if isinstance(d, str) and d in ("bfloat16", "bf16"):
        return "bfloat16"
    if hasattr(d, "dtype") and not isinstance(d, (type, _onp.dtype)):
        return str(d.dtype)
    return _onp.dtype(d).name


def finfo(dtype):
    """Machine limits of a floating dtype (bfloat16 included)."""
    if _dtype_name(dtype) == "bfloat16":
        return _BF16Finfo()
    return _onp.finfo(_dtype_name(dtype))


def iinfo(dtype):
    return _onp.iinfo(_dtype_name(dtype))


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def promote_types(a, b):
    """JAX's promotion of two dtypes (graft's lattice: bf16 and f16 promote to f32, unsigned with signed to
    the next wider signed type, 64-bit unsigned with signed to f32)."""
    x = _graft.zeros((), _dtype_name(a))
    y = _graft.zeros((), _dtype_name(b))
    r = (x + y).dtype if _dtype_name(a) != "bool" or _dtype_name(b) != "bool" else _onp.dtype(bool)
    return r if str(r) == "bfloat16" else _onp.dtype(r)


def result_type(*args):
    """The dtype an operation on args gives (arrays and dtypes are strong, Python numbers weak)."""
    out = None
    for a in args:
        if isinstance(a, (bool, int, float)) and not isinstance(a, _onp.generic):
            v = _np.asarray(a)  # weak
        elif isinstance(a, (str, type, _onp.dtype)):
            v = _graft.zeros((), _dtype_name(a))
        else:
            v = _np.asarray(a)
            v = _graft.zeros((), str(v.dtype)) if not getattr(v, "weak_type", False) else v
        out = v if out is None else (out + v if not (str(out.dtype) == "bool" and str(v.dtype) == "bool") else out)
    if out is None:
        raise ValueError("result_type: at least one argument is needed")
    d = out.dtype
    return d if str(d) == "bfloat16" else _onp.dtype(d)


def can_cast(from_, to, casting="safe"):
    if casting != "safe":
        return _onp.can_cast(_dtype_name(from_), _dtype_name(to), casting=casting)
    return _dtype_name(promote_types(from_, to)) == _dtype_name(to)


def issubdtype(arg1, arg2):
    if _dtype_name(arg1) == "bfloat16":
        return arg2 in (_onp.floating, _onp.inexact, _onp.number, _onp.generic) or _dtype_name(arg2) == "bfloat16"
    return _onp.issubdtype(_dtype_name(arg1), arg2 if isinstance(arg2, type) and issubclass(arg2, _onp.generic)
                           and arg2 in (_onp.floating, _onp.integer, _onp.signedinteger, _onp.unsignedinteger,
                                        _onp.inexact, _onp.number, _onp.bool_, _onp.generic) else _dtype_name(arg2))


def isscalar(x):
    return isinstance(x, (bool, int, float, complex, _onp.generic)) or (hasattr(x, "ndim") and x.ndim == 0 and
                                                                        not isinstance(x, _onp.ndarray))


# ---- creation and stacking -----------------------------------------------------------------------------
def empty(shape, dtype=float):
    return _np.zeros(shape, dtype)


def empty_like(a, dtype=None):
    return _np.zeros_like(a) if dtype is None else _np.zeros(_arr(a).shape, dtype)


def identity(n, dtype=float):
    return _np.eye(n, dtype=dtype)


def copy(a):
    return _arr(a) + 0 if str(_arr(a).dtype) != "bool" else _np.logical_and(_arr(a), True)


def atleast_3d(*arys):
    out = []
    for a in arys:
        a = _arr(a)
        if a.ndim == 0:
            a = _np.reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = _np.reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = _np.reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    out = [_np.reshape(_arr(a), (1,)) if _arr(a).ndim == 0 else _arr(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in arys:
        a = _arr(a)
        out.append(_np.reshape(a, (1,) * (2 - a.ndim) + tuple(a.shape)) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else out


def vstack(tup):
    return _np.concatenate([atleast_2d(a) for a in tup], axis=0)


row_stack = vstack


def hstack(tup):
    arrs = [atleast_1d(a) for a in tup]
    return _np.concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1)


def dstack(tup):
    return _np.concatenate([atleast_3d(a) for a in tup], axis=2)


def column_stack(tup):
    return _np.concatenate([_np.reshape(_arr(a), (-1, 1)) if _arr(a).ndim < 2 else _arr(a) for a in tup], axis=1)


def array_split(ary, indices_or_sections, axis=0):
    a = _arr(ary)
    n = a.shape[axis]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        base, extra = _b.divmod(n, k)
        sizes = [base + 1] * extra + [base] * (k - extra)
        cuts, acc = [], 0
        for s in sizes[:-1]:
            acc += s
            cuts.append(acc)
    else:
        cuts = list(indices_or_sections)
    bounds = [0] + [min(max(c, 0), n) for c in cuts] + [n]
    ax = _axis(axis, a.ndim)
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        idx = [slice(None)] * a.ndim
        idx[ax] = slice(lo, max(lo, hi))
        out.append(a[tuple(idx)])
    return out


def hsplit(ary, indices_or_sections):
    a = _arr(ary)
    return _np.split(a, indices_or_sections, axis=1 if a.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    return _np.split(ary, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    return _np.split(ary, indices_or_sections, axis=2)


def append(arr, values, axis=None):
    if axis is None:
        return _np.concatenate([_np.ravel(arr), _np.ravel(values)])
    return _np.concatenate([_arr(arr), _arr(values)], axis=axis)


# ---- rearrangement ---------------------------------------------------------------------------------------
def fliplr(m):
    return _np.flip(m, 1)


def flipud(m):
    return _np.flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    a0, a1 = axes
    return _graft.np_rot90(m, int(k), int(a0), int(a1))


def roll(a, shift, axis=None):
    if isinstance(axis, (tuple, list)):
        shifts = shift if isinstance(shift, (tuple, list)) else [shift] * len(axis)
        a = _arr(a)
        for s, ax in zip(shifts, axis):
            a = _graft.np_roll(a, int(s), int(ax))
        return a
    return _graft.np_roll(a, int(shift), None if axis is None else int(axis))


def diff(a, n=1, axis=-1, prepend=None, append=None):
    a = _arr(a)
    ax = _axis(axis, a.ndim)
    parts = []
    if prepend is not None:
        p = _arr(prepend)
        parts.append(p if p.ndim else _np.broadcast_to(p, tuple(1 if i == ax else d for i, d in enumerate(a.shape))))
    parts.append(a)
    if append is not None:
        p = _arr(append)
        parts.append(p if p.ndim else _np.broadcast_to(p, tuple(1 if i == ax else d for i, d in enumerate(a.shape))))
    if len(parts) > 1:
        a = _np.concatenate(parts, axis=ax)
    for _ in range(n):
        m = a.shape[ax]
        lo = [slice(None)] * a.ndim
        hi = [slice(None)] * a.ndim
        lo[ax], hi[ax] = slice(1, m), slice(0, m - 1)
        a = (a[tuple(lo)] != a[tuple(hi)]) if str(a.dtype) == "bool" else a[tuple(lo)] - a[tuple(hi)]
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    d = diff(_np.ravel(ary))
    parts = ([_np.ravel(to_begin)] if to_begin is not None else []) + [d] + (
        [_np.ravel(to_end)] if to_end is not None else [])
    return _np.concatenate(parts) if len(parts) > 1 else d


def cross(a, b, axis=-1):
    a, b = _arr(a), _arr(b)
    a, b = _np.moveaxis(a, axis, -1), _np.moveaxis(b, axis, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ValueError("cross: only 3-vectors are supported, got "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return _np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def kron(a, b):
    a, b = _arr(a), _arr(b)
    nd = _b.max(a.ndim, b.ndim)
    a = _np.reshape(a, (1,) * (nd - a.ndim) + tuple(a.shape))
    b = _np.reshape(b, (1,) * (nd - b.ndim) + tuple(b.shape))
    ae = _np.reshape(a, tuple(x for d in a.shape for x in (d, 1)))
    be = _np.reshape(b, tuple(x for d in b.shape for x in (1, d)))
    return _np.reshape(ae * be, tuple(x * y for x, y in zip(a.shape, b.shape)))


def meshgrid(*xi, indexing="xy", sparse=False, copy=True):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [_np.ravel(x) for x in xi]
    n = len(xs)
    shape = [x.shape[0] for x in xs]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        pos = i
        if indexing == "xy" and n >= 2 and i < 2:
            pos = 1 - i
        s = [1] * n
        s[pos] = x.shape[0]
        r = _np.reshape(x, tuple(s))
        out.append(r if sparse else _np.broadcast_to(r, tuple(shape)))
    return out


# ---- triangles and diagonals -----------------------------------------------------------------------------
def tri(N, M=None, k=0, dtype=float):
    M = N if M is None else M
    return _graft.asarray(_onp.tri(N, M, k).astype(_dtype_name(dtype) if _dtype_name(dtype) != "bfloat16"
                                                   else "float32"), dtype)


def tril_indices(n, k=0, m=None):
    return tuple(_graft.asarray(i.astype(_onp.int32), None) for i in _onp.tril_indices(n, k, m))


def triu_indices(n, k=0, m=None):
    return tuple(_graft.asarray(i.astype(_onp.int32), None) for i in _onp.triu_indices(n, k, m))


def tril_indices_from(arr, k=0):
    a = _arr(arr)
    return tril_indices(a.shape[-2], k, a.shape[-1])


def triu_indices_from(arr, k=0):
    a = _arr(arr)
    return triu_indices(a.shape[-2], k, a.shape[-1])


def diag_indices(n, ndim=2):
    i = _np.arange(n)
    return (i,) * ndim


def diag_indices_from(arr):
    a = _arr(arr)
    return diag_indices(a.shape[0], a.ndim)


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = _arr(a)
    ax1, ax2 = _axis(axis1, a.ndim), _axis(axis2, a.ndim)
    a = _np.transpose(a, [i for i in range(a.ndim) if i not in (ax1, ax2)] + [ax1, ax2])
    n, m = a.shape[-2], a.shape[-1]
    rows = _onp.arange(_b.max(0, -offset), _b.min(n, m - offset))
    if rows.size == 0:
        return _np.zeros(tuple(a.shape[:-2]) + (0,), str(a.dtype))
    idx = rows * m + rows + offset
    flat = _np.reshape(a, tuple(a.shape[:-2]) + (n * m,))
    return _np.take(flat, _graft.asarray(idx.astype(_onp.int32), None), axis=-1)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None):
    return _np.sum(diagonal(a, offset, axis1, axis2), axis=-1)


def diag(v, k=0):
    v = _arr(v)
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        out = _np.zeros((n * n,), str(v.dtype))
        rows = _onp.arange(v.shape[0]) + _b.max(0, -k)
        idx = _graft.asarray((rows * n + rows + k).astype(_onp.int32), None)
        return _np.reshape(out.at[idx].set(v), (n, n))
    if v.ndim == 2:
        return diagonal(v, k, 0, 1)
    raise ValueError(f"diag: the input must be 1-D or 2-D, got shape {tuple(v.shape)}")


def diagflat(v, k=0):
    return diag(_np.ravel(v), k)


# ---- elementwise -----------------------------------------------------------------------------------------
def trunc(x):
    x = _arr(x)
    return _np.where(x < 0, _np.ceil(x), _np.floor(x)) if _is_float(x) else x


fix = trunc


def rint(x):
    return _np.round(x)


def around(a, decimals=0):
    return _np.round(a, decimals) if decimals else _np.round(a)


round_ = around


def deg2rad(x):
    return _arr(x) * (_math.pi / 180)


def rad2deg(x):
    return _arr(x) * (180 / _math.pi)


radians, degrees = deg2rad, rad2deg


def hypot(x1, x2):
    return _graft.np_hypot(x1, x2)


def signbit(x):
    x = _arr(x)
    if _is_complex(x):  # JAX's refusal (the comparisons below would order complex values)
        raise ValueError(f"signbit is not well defined for {x.dtype}")
    if not _is_float(x):
        return x < 0
    return (x < 0) | ((x == 0) & (1 / _np.where(x == 0, x, 1) < 0))


def copysign(x1, x2):
    if _is_complex(_arr(x1)) or _is_complex(_arr(x2)):
        raise TypeError("copysign does not support complex-valued inputs")
    return _np.where(signbit(x2), -_np.abs(x1), _np.abs(x1))


def fmax(x1, x2):
    x1, x2 = _arr(x1), _arr(x2)
    return _np.where(_np.isnan(x1), x2, _np.where(_np.isnan(x2), x1, _np.maximum(x1, x2)))


def fmin(x1, x2):
    x1, x2 = _arr(x1), _arr(x2)
    return _np.where(_np.isnan(x1), x2, _np.where(_np.isnan(x2), x1, _np.minimum(x1, x2)))


def fmod(x1, x2):
    """C's fmod: the remainder with the dividend's sign (lax.rem); an integer divisor of 0 is taken as 1,
    as JAX does (integer division by zero has no value)."""
    return _graft.np_fmod(x1, x2)


def heaviside(x1, x2):
    return _graft.np_heaviside(x1, x2)


def sinc(x):
    """sin(pi x) / (pi x): JAX 0.11's 1 at 0 and 0 at +-inf (NumPy says NaN there), by the limits."""
    return _graft.np_sinc(x)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    return _graft.np_nan_to_num(x, float(nan), None if posinf is None else float(posinf),
                                None if neginf is None else float(neginf))


def logaddexp2(x1, x2):
    ln2 = _math.log(2)
    return _np.logaddexp(_arr(x1) * ln2, _arr(x2) * ln2) / ln2


def positive(x):
    return _arr(x)


def float_power(x1, x2):
    # JAX's: the promoted type made inexact (float32 stays float32, complex stays complex), then pow
    return _graft.np_float_power(x1, x2)


def divmod(x1, x2):  # noqa: A001
    return _np.floor_divide(x1, x2), _np.remainder(x1, x2)


def modf(x):
    t = trunc(x)
    return _arr(x) - t, t


def isneginf(x):
    x = _arr(x)
    return _np.isinf(x) & (x < 0)


def isposinf(x):
    x = _arr(x)
    return _np.isinf(x) & (x > 0)


def real(x):
    return _graft.real(x)


def imag(x):
    return _graft.imag(x)


def conj(x):
    return _graft.conj(x)


conjugate = conj


def angle(z, deg=False):
    return _graft.angle(z, deg)


def _is_complex_dtype(x):
    return str(getattr(x, "dtype", _onp.asarray(x).dtype)).startswith("complex")


def isreal(x):
    x = _arr(x)
    return imag(x) == 0


def iscomplex(x):
    x = _arr(x)
    return imag(x) != 0


def isrealobj(x):
    return not _is_complex_dtype(x)


def iscomplexobj(x):
    return _is_complex_dtype(x)


# ---- comparisons of whole arrays -------------------------------------------------------------------------
def array_equal(a1, a2, equal_nan=False):
    a1, a2 = _arr(a1), _arr(a2)
    if tuple(a1.shape) != tuple(a2.shape):
        return _np.asarray(False)
    eq = a1 == a2
    if equal_nan:
        eq = eq | (_np.isnan(a1) & _np.isnan(a2))
    return _np.all(eq)


def array_equiv(a1, a2):
    a1, a2 = _arr(a1), _arr(a2)
    try:
        a1, a2 = _graft.broadcast_arrays(a1, a2)
    except Exception:  # shapes that do not broadcast are not equivalent
        return _np.asarray(False)
    return _np.all(a1 == a2)


def count_nonzero(a, axis=None, keepdims=False):
    return _np.sum(_arr(a) != 0, axis=axis, keepdims=keepdims).astype("int32")


# ---- NaN-aware and order statistics ------------------------------------------------------------------------
def nansum(a, axis=None, keepdims=False):
    return _graft.np_nansum(a, axis, keepdims)


def nanprod(a, axis=None, keepdims=False):
    return _graft.np_nanprod(a, axis, keepdims)


def nanmean(a, axis=None, keepdims=False):
    return _graft.np_nanmean(a, axis, keepdims)


def nanvar(a, axis=None, ddof=0, keepdims=False):
    return _graft.np_nanvar(a, axis, keepdims, int(ddof))


def nanstd(a, axis=None, ddof=0, keepdims=False):
    return _graft.np_nanstd(a, axis, keepdims, int(ddof))


def nanmax(a, axis=None, keepdims=False):
    return _graft.np_nanmax(a, axis, keepdims)


def nanmin(a, axis=None, keepdims=False):
    return _graft.np_nanmin(a, axis, keepdims)


def nanargmax(a, axis=None, keepdims=False):
    """argmax over the non-NaN entries; -1 for a slice that is all NaN (JAX's)."""
    return _graft.np_nanargmax(a, axis, keepdims)


def nanargmin(a, axis=None, keepdims=False):
    """argmin over the non-NaN entries; -1 for a slice that is all NaN (JAX's)."""
    return _graft.np_nanargmin(a, axis, keepdims)


def nancumsum(a, axis=None):
    return _graft.np_nancumsum(a, axis)


def nancumprod(a, axis=None):
    return _graft.np_nancumprod(a, axis)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    a = _arr(a)
    if weights is None:
        avg = _np.mean(a, axis=axis, keepdims=keepdims)
        wsum = _np.zeros_like(avg) + (a.size if axis is None else a.shape[axis])
    else:
        w = _arr(weights)
        if w.ndim == 1 and a.ndim > 1 and axis is not None:
            s = [1] * a.ndim
            s[_axis(axis, a.ndim)] = w.shape[0]
            w = _np.reshape(w, tuple(s))
        wsum = _np.sum(w + 0 * a, axis=axis, keepdims=keepdims)
        avg = _np.sum(a * w, axis=axis, keepdims=keepdims) / wsum
    return (avg, wsum) if returned else avg


def ptp(a, axis=None, keepdims=False):
    return _np.max(a, axis=axis, keepdims=keepdims) - _np.min(a, axis=axis, keepdims=keepdims)


def quantile(a, q, axis=None, method="linear", keepdims=False):
    """Quantiles by sorting, with NumPy's methods linear, lower, higher, nearest and midpoint."""
    a = _arr(a)
    ndim_in = a.ndim
    if not _is_float(a):
        a = a.astype(str(result_type(a, 0.0)))
    x, axes, kept = _collapse_axes(a, axis, "quantile")
    s = _np.sort(x, axis=-1)
    n = s.shape[-1]
    qa = _onp.asarray(q, dtype=_onp.float64)
    if n == 0:  # NumPy: NaN for each empty slice
        r = _np.full(qa.shape + tuple(s.shape[:-1]), _onp.nan, dtype=str(s.dtype))
        return _np.reshape(r, qa.shape + kept) if keepdims else r
    pos = qa * (n - 1)
    lo = _onp.floor(pos).astype(_onp.int32)
    hi = _onp.minimum(lo + 1, n - 1)
    frac = pos - lo
    if method == "lower":
        hi, frac = lo, _onp.zeros_like(frac)
    elif method == "higher":
        lo = _onp.ceil(pos).astype(_onp.int32)
        hi, frac = lo, _onp.zeros_like(frac)
    elif method == "nearest":
        lo = _onp.around(pos).astype(_onp.int32)
        hi, frac = lo, _onp.zeros_like(frac)
    elif method == "midpoint":
        frac = _onp.where(hi > lo, 0.5, 0.0)
    elif method != "linear":
        raise ValueError(f"quantile: method {method!r} is not supported")
    flat_lo = _graft.asarray(_onp.ravel(lo).astype(_onp.int32), None)
    flat_hi = _graft.asarray(_onp.ravel(hi).astype(_onp.int32), None)
    vlo, vhi = _np.take(s, flat_lo, axis=-1), _np.take(s, flat_hi, axis=-1)
    f = _graft.asarray(_onp.ravel(frac).astype(_onp.float64), None).astype(str(s.dtype))
    r = vlo + (vhi - vlo) * f
    r = _np.reshape(r, tuple(s.shape[:-1]) + qa.shape)
    if qa.ndim:  # NumPy puts q's dimensions first
        rest = s.ndim - 1
        r = _np.transpose(r, list(range(rest, rest + qa.ndim)) + list(range(rest)))
    return _np.reshape(r, qa.shape + kept) if keepdims else r


def _collapse_axes(a, axis, op):
    """a with the reduced axes (all of them for None, one, or a tuple) moved last and flattened into one,
    the normalized axes, and the keepdims shape (1 where an axis was reduced)."""
    nd = a.ndim
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(_axis(ax, nd) for ax in ((axis,) if isinstance(axis, int) else axis))
        if len(set(axes)) != len(axes):
            raise ValueError(f"{op}: repeated axis in {axis}")
    rest = [d for d in range(nd) if d not in axes]
    x = _np.transpose(a, rest + list(axes)) if nd else a
    x = _np.reshape(x, tuple(a.shape[d] for d in rest) + (_math.prod(a.shape[d] for d in axes),))
    kept = tuple(1 if d in axes else a.shape[d] for d in range(nd))
    return x, axes, kept


def percentile(a, q, axis=None, method="linear", keepdims=False):
    return quantile(a, _onp.asarray(q, dtype=_onp.float64) / 100, axis, method, keepdims)


def median(a, axis=None, keepdims=False):
    return quantile(a, 0.5, axis, "linear", keepdims)


# ---- searching and counting ---------------------------------------------------------------------------------
def searchsorted(a, v, side="left", sorter=None):
    """Insertion points of v in the sorted 1-D a (by comparison counts: O(len(a) len(v)))."""
    a = _arr(a)
    if sorter is not None:
        a = _np.take(a, sorter)
    v = _arr(v)
    ve = _np.expand_dims(v, -1)
    hits = (a < ve) if side == "left" else (a <= ve)
    return _np.sum(hits, axis=-1).astype("int32")


def digitize(x, bins, right=False):
    bins = _arr(bins)
    increasing = bins.shape[0] < 2 or bool(_onp.asarray(bins)[-1] >= _onp.asarray(bins)[0])
    if increasing:
        return searchsorted(bins, x, "left" if right else "right")
    return bins.shape[0] - searchsorted(_np.flip(bins, 0), x, "right" if right else "left")


def bincount(x, weights=None, minlength=0, length=None):
    """Counts (or summed weights) of each non-negative integer in x; `length` fixes the output size (needed
    under jit), else it is max(x) + 1 at least minlength."""
    x = _arr(x)
    if length is None:
        length = _b.max(int(_onp.asarray(_np.max(x))) + 1 if x.size else 0, minlength)
    oh = _graft.one_hot(x, length, "float32" if weights is None else str(_arr(weights).dtype))
    if weights is None:
        return _np.sum(oh, axis=0).astype("int32")
    return _np.sum(oh * _np.expand_dims(_arr(weights), -1), axis=0)


def select(condlist, choicelist, default=0):
    out = _arr(default)
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = _np.where(c, v, out)
    return out


def interp(x, xp, fp, left=None, right=None):
    x, xp, fp = _arr(x), _arr(xp), _arr(fp)
    n = xp.shape[0]
    i = _np.clip(searchsorted(xp, x, "right"), 1, n - 1)
    x0, x1 = _np.take(xp, i - 1), _np.take(xp, i)
    y0, y1 = _np.take(fp, i - 1), _np.take(fp, i)
    d = x1 - x0
    t = (x - x0) / _np.where(d == 0, 1, d)
    y = y0 + t * (y1 - y0)
    y = _np.where(x < xp[0], fp[0] if left is None else left, y)
    return _np.where(x > xp[n - 1], fp[n - 1] if right is None else right, y)


# ---- polynomials, integration, signals, statistics -----------------------------------------------------------
def polyval(p, x):
    p, x = _arr(p), _arr(x)
    y = _np.zeros_like(x) + 0 * p[0]
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def vander(x, N=None, increasing=False):
    x = _arr(x)
    N = x.shape[0] if N is None else N
    pw = _np.arange(N)
    if not increasing:
        pw = _np.flip(pw, 0)
    return _np.power(_np.expand_dims(x, -1), pw.astype(str(x.dtype)) if _is_float(x) else pw)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = _np.moveaxis(_arr(y), axis, -1)
    n = y.shape[-1]
    if x is None:
        return _np.sum(y[..., 1:] + y[..., :n - 1], axis=-1) * (dx / 2)
    d = diff(_np.moveaxis(_arr(x), axis, -1) if _arr(x).ndim > 1 else _arr(x))
    return _np.sum((y[..., 1:] + y[..., :n - 1]) * d, axis=-1) / 2


trapz = trapezoid


def convolve(a, v, mode="full"):
    """1-D discrete convolution (NumPy's modes full, same, valid)."""
    a, v = _arr(a), _arr(v)
    if a.shape[0] < v.shape[0]:
        a, v = v, a
    n, m = a.shape[0], v.shape[0]
    k = _onp.arange(n + m - 1)[:, None]
    j = _onp.arange(m)[None, :]
    src = k - j
    valid = (src >= 0) & (src < n)
    gathered = _np.take(a, _graft.asarray(_onp.clip(src, 0, n - 1).astype(_onp.int32), None))
    out = _np.sum(_np.where(_graft.asarray(valid, None), gathered * v, 0 * gathered), axis=1)
    if mode == "full":
        return out
    if mode == "same":
        start = (m - 1) // 2
        return out[start:start + n]
    if mode == "valid":
        return out[m - 1:n]
    raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")


def correlate(a, v, mode="valid"):
    return convolve(a, _np.flip(_arr(v), 0), mode) if _arr(a).shape[0] >= _arr(v).shape[0] else \
        _np.flip(convolve(_np.flip(_arr(a), 0), _arr(v), mode), 0)


def cov(m, y=None, rowvar=True, bias=False, ddof=None):
    x = atleast_2d(m)
    if not rowvar and x.shape[0] != 1:
        x = _np.transpose(x)
    if y is not None:
        yy = atleast_2d(y)
        if not rowvar and yy.shape[0] != 1:
            yy = _np.transpose(yy)
        x = _np.concatenate([x, yy], axis=0)
    if not _is_float(x):
        x = x.astype("float32")
    ddof = (0 if bias else 1) if ddof is None else ddof
    n = x.shape[1]
    xc = x - _np.mean(x, axis=1, keepdims=True)
    c = (xc @ _np.transpose(xc)) / (n - ddof)
    return _np.squeeze(c) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True):
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    d = _np.sqrt(diagonal(c))
    return _np.clip(c / _np.outer(d, d), -1, 1)


def pad(array, pad_width, mode="constant", constant_values=0):
    """NumPy's pad in its constant, edge, reflect, symmetric and wrap modes."""
    a = _arr(array)
    pw = _onp.broadcast_to(_onp.asarray(pad_width, dtype=_onp.int64), (a.ndim, 2)).tolist()
    if mode == "constant":
        return _graft.pad_constant(a, [tuple(p) for p in pw], float(constant_values))
    for ax, (before, after) in enumerate(pw):
        n = a.shape[ax]
        idx_b = _onp.arange(-before, 0)
        idx_a = _onp.arange(n, n + after)
        if mode == "edge":
            fix_ = lambda i: _onp.clip(i, 0, n - 1)  # noqa: E731
        elif mode == "wrap":
            fix_ = lambda i: _onp.mod(i, n)  # noqa: E731
        elif mode in ("reflect", "symmetric"):
            period = 2 * n - 2 if mode == "reflect" else 2 * n

            def fix_(i, period=period):
                i = _onp.mod(i, period) if period > 0 else _onp.zeros_like(i)
                return _onp.where(i < n, i, period - i - (0 if mode == "reflect" else 1))
        else:
            raise NotImplementedError(f"pad: mode {mode!r} is not supported")
        idx = _onp.concatenate([fix_(idx_b), _onp.arange(n), fix_(idx_a)]).astype(_onp.int32)
        a = _np.take(a, _graft.asarray(idx, None), axis=ax)
    return a


def tensordot(a, b, axes=2):
    a, b = _arr(a), _arr(b)
    if isinstance(axes, int):
        aa = list(range(a.ndim - axes, a.ndim))
        ba = list(range(axes))
    else:
        aa, ba = axes
        aa = [aa] if isinstance(aa, int) else list(aa)
        ba = [ba] if isinstance(ba, int) else list(ba)
    return _graft.tensordot_axes(a, b, [_axis(x, a.ndim) for x in aa], [_axis(x, b.ndim) for x in ba])


__all__ = [n for n in dir() if not n.startswith("_")]


# ---- data-dependent shapes (concrete values, or a static `size` as JAX's) --------------------------------------
def _concrete(a, what):
    """a's values as NumPy (raises graft's ConcretizationError under jit or vmap: pass size= there)."""
    return _onp.asarray(a)


def _fixed_size(idx, size, fill_value):
    """idx (a NumPy int array) cut or padded to `size` entries."""
    if size is None:
        return idx
    out = _onp.full((size,) + idx.shape[1:], 0 if fill_value is None else fill_value, dtype=idx.dtype)
    k = _b.min(size, idx.shape[0])
    out[:k] = idx[:k]
    return out


def nonzero(a, *, size=None, fill_value=None):
    """Indices of the non-zero elements, one int32 array per dimension. Under jit give `size`: the result
    is cut or padded (with fill_value, default 0) to it, and computed from the traced values."""
    a = _arr(a)
    if size is not None and not isinstance(a, _onp.ndarray):
        flat = _np.ravel(a != 0)
        n = flat.shape[0]
        pos = _np.arange(n)
        # stable partition: the positions of the non-zeros first, in order
        key = _np.where(flat, pos, pos + n)
        order = _np.sort(key)
        first = _np.where(order < n, order, 0 * order)  # the positions past the count are masked below
        idx = first[:size] if size <= n else _np.concatenate([first, _np.zeros((size - n,), str(first.dtype))])
        valid = _np.arange(size) < _np.sum(flat)
        outs = []
        rem = _np.where(valid, idx, 0 * idx)
        for d in reversed(a.shape):
            outs.append(rem % d)
            rem = rem // d
        fill = 0 if fill_value is None else fill_value
        return tuple(_np.where(valid, o, fill).astype("int32") for o in reversed(outs))
    idx = _onp.nonzero(_concrete(a, "nonzero"))
    return tuple(_graft.asarray(_fixed_size(i.astype(_onp.int32), size, fill_value), None) for i in idx)


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(_np.ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    idx = nonzero(a, size=size, fill_value=fill_value)
    if len(idx) == 0:
        return _np.zeros((int(bool(_onp.asarray(a))), 0), "int32")
    return _np.stack(list(idx), axis=1)


def extract(condition, arr):
    return _np.take(_np.ravel(arr), flatnonzero(condition))


def compress(condition, a, axis=None):
    c = _onp.asarray(condition).astype(bool)
    idx = _graft.asarray(_onp.nonzero(c)[0].astype(_onp.int32), None)
    return _np.take(_np.ravel(a) if axis is None else _arr(a), idx, axis=0 if axis is None else axis)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, size=None,
           fill_value=None):
    """NumPy's unique on concrete values (the flattened array; axis=None only); with size, padded with
    fill_value (default: the smallest unique value) as JAX's."""
    if axis is not None:
        raise NotImplementedError("unique: axis is not supported")
    if size is not None:
        return _unique_sized(_arr(ar), size, fill_value, return_index, return_inverse, return_counts)
    x = _concrete(_arr(ar), "unique")
    res = _onp.unique(x, return_index=True, return_inverse=True, return_counts=True)
    vals, index, inverse, counts = res
    if size is not None:
        fv = (vals[0] if vals.size else 0) if fill_value is None else fill_value
        vals = _fixed_size(vals, size, fv)
        index = _fixed_size(index, size, 0)
        counts = _fixed_size(counts, size, 0)
    out = [_graft.asarray(vals, None)]
    if return_index:
        out.append(_graft.asarray(index.astype(_onp.int32), None))
    if return_inverse:
        out.append(_graft.asarray(inverse.astype(_onp.int32).reshape(x.shape), None))
    if return_counts:
        out.append(_graft.asarray(counts.astype(_onp.int32), None))
    return out[0] if len(out) == 1 else tuple(out)


def _unique_sized(x, size, fill_value, return_index, return_inverse, return_counts):
    """unique with a static size, from traceable pieces (so that it runs under jit, as JAX's): a stable
    sort, the first element of each run of equal values, and the runs' lengths."""
    flat = _np.ravel(x)
    n = flat.shape[0]
    if n == 0:
        fv = 0 if fill_value is None else fill_value
        vals = _np.full((size,), fv, dtype=str(flat.dtype))
        out = [vals]
        zeros = _np.zeros((size,), dtype="int32")
        out += [zeros] * return_index + [_np.zeros(x.shape, dtype="int32")] * return_inverse + [zeros] * return_counts
        return out[0] if len(out) == 1 else tuple(out)
    perm = _np.argsort(flat)
    s = _np.take(flat, perm)
    first = _np.concatenate([_np.ones((1,), dtype=bool), s[1:] != s[:-1]])
    # one start more than asked for: the end of the last run kept (when size cuts the runs short)
    bounds = _np.nonzero(first, size=size + 1, fill_value=n)[0]
    starts = bounds[:size]
    valid = starts < n
    safe = _np.minimum(starts, n - 1)
    vals = _np.take(s, safe)
    fv = vals[0] if fill_value is None else fill_value  # JAX: the smallest unique value
    out = [_np.where(valid, vals, fv)]
    if return_index:
        out.append(_np.where(valid, _np.take(perm, safe), 0).astype("int32"))
    if return_inverse:
        group = _np.cumsum(first.astype("int32")) - 1
        out.append(_np.reshape(_np.take(group, _np.argsort(perm)), x.shape).astype("int32"))
    if return_counts:
        ends = bounds[1:]
        out.append(_np.where(valid, ends - starts, 0).astype("int32"))
    return out[0] if len(out) == 1 else tuple(out)


def isin(element, test_elements, assume_unique=False, invert=False):
    """Whether each element occurs in test_elements (by comparison with every test element: traceable)."""
    e = _arr(element)
    t = _np.ravel(test_elements)
    hit = _np.any(_np.expand_dims(e, -1) == t, axis=-1)
    return ~hit if invert else hit


def in1d(ar1, ar2, assume_unique=False, invert=False):
    return isin(_np.ravel(ar1), ar2, assume_unique, invert)


def intersect1d(ar1, ar2):
    return _graft.asarray(_onp.intersect1d(_concrete(ar1, "intersect1d"), _concrete(ar2, "intersect1d")), None)


def union1d(ar1, ar2):
    return _graft.asarray(_onp.union1d(_concrete(ar1, "union1d"), _concrete(ar2, "union1d")), None)


def setdiff1d(ar1, ar2):
    return _graft.asarray(_onp.setdiff1d(_concrete(ar1, "setdiff1d"), _concrete(ar2, "setdiff1d")), None)


def setxor1d(ar1, ar2):
    return _graft.asarray(_onp.setxor1d(_concrete(ar1, "setxor1d"), _concrete(ar2, "setxor1d")), None)


def trim_zeros(filt, trim="fb"):
    return _graft.asarray(_onp.trim_zeros(_concrete(filt, "trim_zeros"), trim), None)


# ---- index arithmetic ----------------------------------------------------------------------------------------
def unravel_index(indices, shape):
    rem = _arr(indices)
    out = []
    for d in reversed(tuple(shape)):
        out.append(rem % d)
        rem = rem // d
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    if order != "C":
        raise NotImplementedError("ravel_multi_index: only order='C'")
    flat = 0
    for idx, d in zip(multi_index, dims):
        i = _arr(idx)
        if mode == "clip":
            i = _np.clip(i, 0, d - 1)
        elif mode == "wrap":
            i = i % d
        flat = flat * d + i
    return flat


def indices(dimensions, dtype=int, sparse=False):
    dims = tuple(dimensions)
    out = []
    for k, d in enumerate(dims):
        s = [1] * len(dims)
        s[k] = d
        r = _np.reshape(_np.arange(d).astype(dtype), tuple(s))
        out.append(r if sparse else _np.broadcast_to(r, dims))
    return tuple(out) if sparse else _np.stack(out) if out else _np.zeros((0,), dtype)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    return function(*[i.astype(dtype) for i in indices(shape, "int32", sparse=False)], **kwargs)


def geomspace(start, stop, num=50, endpoint=True, dtype=None):
    # in the default float dtype (float64 with jax_enable_x64), as JAX
    ls = _np.linspace(_math.log10(start), _math.log10(stop), num, endpoint=endpoint, dtype=dtype)
    return _np.power(10.0, ls)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None):
    return _np.power(base, _np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))


def insert(arr, obj, values, axis=None):
    a = _arr(arr)
    if axis is None:
        a, axis = _np.ravel(a), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    pos = _onp.atleast_1d(_onp.asarray(obj)).astype(_onp.int64)
    pos = _onp.where(pos < 0, pos + n, pos)
    v = _arr(values)
    k = len(pos)
    vshape = list(a.shape)
    vshape[ax] = k
    v = _np.broadcast_to(v if v.ndim == a.ndim else _np.reshape(v, tuple(vshape) if v.size == _math.prod(vshape)
                                                                else v.shape), tuple(vshape))
    # the combined order: original index i before position i, inserted values at their positions
    keys = _onp.concatenate([_onp.arange(n) * 2 + 1, pos * 2])
    order = _onp.argsort(keys, kind="stable").astype(_onp.int32)
    both = _np.concatenate([a, v.astype(str(a.dtype))], axis=ax)
    return _np.take(both, _graft.asarray(order, None), axis=ax)


def delete(arr, obj, axis=None):
    a = _arr(arr)
    if axis is None:
        a, axis = _np.ravel(a), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    drop = _onp.zeros(n, bool)
    drop[_onp.asarray(obj) if not isinstance(obj, _b.slice) else _onp.arange(n)[obj]] = True
    keep = _onp.nonzero(~drop)[0].astype(_onp.int32)
    return _np.take(a, _graft.asarray(keep, None), axis=ax)


def resize(a, new_shape):
    a = _np.ravel(a)
    shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    total = _math.prod(shape)
    reps = -(-total // _b.max(a.shape[0], 1))
    return _np.reshape(_np.tile(a, (reps,))[:total], shape)


def lexsort(keys, axis=-1):
    """Indices that sort by the last key, then the one before, ... (a stable sort per key, first to last)."""
    ks = list(keys)
    n = _arr(ks[0]).shape[axis]
    order = _np.arange(n)
    for k in ks:
        kk = _np.take(_arr(k), order, axis=axis)
        order = _np.take(order, _np.argsort(kk, axis=axis))
    return order.astype("int32")


def partition(a, kth, axis=-1):
    """A full sort satisfies partition's contract (the kth element in place, smaller before, larger after)."""
    return _np.sort(a, axis=axis)


def argpartition(a, kth, axis=-1):
    return _np.argsort(a, axis=axis)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    if not isinstance(bins, int):
        return _arr(bins)
    dt = "float64" if str(_arr(a).dtype) == "float64" else "float32"
    if range is None:
        # the data's extent, traced (works under jit and vmap, as JAX's); NumPy's (0, 1) for empty data
        x = _np.ravel(_arr(a)).astype(dt)
        if x.shape[0] == 0:
            return _np.linspace(0.0, 1.0, bins + 1, dtype=dt)
        lo, hi = _np.min(x), _np.max(x)
        same = lo == hi
        lo, hi = _np.where(same, lo - 0.5, lo), _np.where(same, hi + 0.5, hi)
        steps = _np.arange(bins + 1, dtype=dt) / bins
        edges = lo + (hi - lo) * steps
        return _np.where(_np.arange(bins + 1) == bins, hi, edges)  # the last edge exactly hi, as linspace
    lo, hi = range
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _np.linspace(lo, hi, bins + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Counts (or summed weights) per bin, the last bin closed as NumPy's; traceable with given edges."""
    edges = histogram_bin_edges(a, bins, range)
    x = _np.ravel(a)
    nb = edges.shape[0] - 1
    i = searchsorted(edges, x, "right") - 1
    i = _np.where(x == edges[nb], nb - 1, i)
    inside = (i >= 0) & (i < nb)
    w = _np.ones_like(x) if weights is None else _np.ravel(weights)
    oh = _graft.one_hot(_np.where(inside, i, 0), nb, str(w.dtype)) * _np.expand_dims(_np.where(inside, w, 0 * w), -1)
    counts = _np.sum(oh, axis=0)
    if density:
        counts = counts / (_np.sum(counts) * diff(edges))
    return counts, edges


def unwrap(p, discont=None, axis=-1, period=2 * _math.pi):
    p = _arr(p)
    d = diff(p, axis=axis)
    half = period / 2
    discont = half if discont is None else discont
    dd = _np.remainder(d + half, period) - half
    dd = _np.where((dd == -half) & (d > 0), half + 0 * dd, dd)
    corr = _np.where(_np.abs(d) < discont, 0 * d, dd - d)
    ax = _axis(axis, p.ndim)
    zero = _np.zeros_like(_np.take(p, _graft.asarray(_onp.array([0], _onp.int32), None), axis=ax))
    return p + _np.concatenate([zero, _np.cumsum(corr, ax)], axis=ax)


def gcd(x1, x2):
    """Euclid's algorithm, a fixed number of steps (enough for 64-bit integers)."""
    a, b = _np.abs(_arr(x1)), _np.abs(_arr(x2))
    a, b = _graft.broadcast_arrays(a, b)
    for _ in range(92):
        nz = b != 0
        a, b = _np.where(nz, b, a), _np.where(nz, _np.remainder(a, _np.where(nz, b, 1 + 0 * b)), b)
    return a


def lcm(x1, x2):
    x1, x2 = _np.abs(_arr(x1)), _np.abs(_arr(x2))
    g = gcd(x1, x2)
    return _np.where(g == 0, 0 * g, (x1 // _np.where(g == 0, 1 + 0 * g, g)) * x2)


def ldexp(x1, x2):
    return _arr(x1) * _np.power(2.0, _arr(x2).astype(str(_arr(x1).dtype) if _is_float(_arr(x1)) else "float32"))


def frexp(x):
    """(mantissa in [0.5, 1), exponent) with x = mantissa 2^exponent; zeros give (0, 0)."""
    x = _arr(x)
    ax = _np.abs(x)
    e = _np.floor(_np.log2(_np.where(ax == 0, 1 + 0 * ax, ax))) + 1
    m = x / _np.power(2.0, e).astype(str(x.dtype))
    # log2 rounding at exact powers of two
    fix_hi = _np.abs(m) >= 1
    m = _np.where(fix_hi, m / 2, m)
    e = _np.where(fix_hi, e + 1, e)
    fix_lo = (_np.abs(m) < 0.5) & (ax != 0)
    m = _np.where(fix_lo, m * 2, m)
    e = _np.where(fix_lo, e - 1, e)
    return _np.where(ax == 0, x, m), _np.where(ax == 0, 0 * e, e).astype("int32")


def nextafter(x1, x2):
    from . import lax as _lax
    x1, x2 = _arr(x1), _arr(x2)
    x1, x2 = _graft.broadcast_arrays(x1, x2)
    return _lax.nextafter(x1, x2.astype(str(x1.dtype)))


def spacing(x):
    x = _arr(x)
    big = _np.where(signbit(x), -_np.inf, _np.inf).astype(str(x.dtype))
    return nextafter(x, big) - x


__all__ = [n for n in dir() if not n.startswith("_")]
