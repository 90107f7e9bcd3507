"""The rest of jax.numpy's everyday names: NumPy 2's aliases (acos, concat, permute_dims, pow, ...), the
abstract dtype hierarchy, Array-API helpers (cumulative_sum, unstack, vecdot, matvec, unique_*), index
tricks (s_, index_exp, r_, c_, mgrid, ogrid, ix_), window functions, NaN-aware order statistics, in-place
style updates that return new arrays (put, place, fill_diagonal, put_along_axis), polynomials, and
NumPy's file helpers. Composites of graft operations, so they differentiate, batch and compile like
their parts (the index tricks and file helpers work on concrete values, as in JAX)."""
import builtins as _b
import collections as _collections
import math as _math

import numpy as _onp

from . import numpy as _np
from ._numpy_extra import _collapse_axes

# ---- aliases (NumPy 2 / the Array API) -----------------------------------------------------------------
acos, acosh, asin, asinh = _np.arccos, _np.arccosh, _np.arcsin, _np.arcsinh
atan, atanh, atan2 = _np.arctan, _np.arctanh, _np.arctan2
bitwise_invert, bitwise_left_shift, bitwise_right_shift = _np.invert, _np.left_shift, _np.right_shift
concat = _np.concatenate
pow = _np.power  # noqa: A001
euler_gamma = _onp.euler_gamma

# dtypes: NumPy's abstract hierarchy (for issubdtype) and the default-width names
bool = _onp.bool_  # noqa: A001
generic, number, inexact, floating = _onp.generic, _onp.number, _onp.inexact, _onp.floating
integer, signedinteger, unsignedinteger = _onp.integer, _onp.signedinteger, _onp.unsignedinteger
character, flexible, object_ = _onp.character, _onp.flexible, _onp.object_
single, double = _onp.float32, _onp.float64
float_, int_, uint = _onp.float64, _onp.int64, _onp.uint64  # 32-bit unless jax_enable_x64, as in JAX
iterable = _onp.iterable


def permute_dims(a, axes):
    return _np.transpose(a, axes)


def matrix_transpose(x):
    """The last two axes swapped."""
    x = _np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dimensions, got shape {tuple(x.shape)}")
    return _np.swapaxes(x, -1, -2)


def astype(x, dtype, /, *, copy=False, device=None):
    return _np.asarray(x).astype(dtype)


def fabs(x):
    """|x| as a float (integers are converted, as NumPy's fabs)."""
    x = _np.asarray(x)
    if str(x.dtype) not in ("float16", "bfloat16", "float32", "float64"):
        x = x.astype(float)
    return _np.abs(x)


def i0(x):
    from .scipy import special
    return special.i0(x)


def isdtype(dtype, kind):
    """The Array API's isdtype: kind is a dtype, a kind name ('bool', 'signed integer', 'unsigned integer',
    'integral', 'real floating', 'complex floating', 'numeric') or a tuple of them."""
    if isinstance(kind, tuple):
        return _b.any(isdtype(dtype, k) for k in kind)
    name = "bfloat16" if str(dtype) in ("bfloat16", "bf16") else _onp.dtype(dtype).name
    if not isinstance(kind, str):
        return name == ("bfloat16" if str(kind) == "bfloat16" else _onp.dtype(kind).name)
    kinds = {"bool": name == "bool", "signed integer": name.startswith("int"),
             "unsigned integer": name.startswith("uint"), "real floating": name.startswith(("float", "bfloat")),
             "complex floating": name.startswith("complex")}
    kinds["integral"] = kinds["signed integer"] or kinds["unsigned integer"]
    kinds["numeric"] = kinds["integral"] or kinds["real floating"] or kinds["complex floating"]
    if kind not in kinds:
        raise ValueError(f"isdtype: unknown kind {kind!r}")
    return kinds[kind]


# ---- Array API helpers ---------------------------------------------------------------------------------
def _cumulative(op, x, axis, dtype, include_initial, initial):
    x = _np.asarray(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError("cumulative_sum / cumulative_prod: axis is required for arrays of more than 1 dimension")
        axis = 0
    out = op(x, axis=axis, dtype=dtype) if dtype is not None else op(x, axis=axis)
    if include_initial:
        shape = list(out.shape)
        shape[axis] = 1
        out = _np.concatenate([_np.full(tuple(shape), initial, out.dtype), out], axis=axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(_np.cumsum, x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(_np.cumprod, x, axis, dtype, include_initial, 1)


def unstack(x, /, *, axis=0):
    x = _np.asarray(x)
    return tuple(_np.take(x, i, axis=axis) for i in range(x.shape[axis]))


def vecdot(x1, x2, /, *, axis=-1):
    """Sum over `axis` of conj(x1) * x2 (broadcast), as NumPy's."""
    return _np.sum(_np.conj(_np.asarray(x1)) * _np.asarray(x2), axis=axis)


def matvec(x1, x2, /):
    """Matrix (..., m, n) times vector (..., n) -> (..., m), batched by broadcasting."""
    return _np.sum(_np.asarray(x1) * _np.expand_dims(_np.asarray(x2), -2), axis=-1)


def vecmat(x1, x2, /):
    """Conjugated vector (..., m) times matrix (..., m, n) -> (..., n), as NumPy's."""
    return _np.sum(_np.expand_dims(_np.conj(_np.asarray(x1)), -1) * _np.asarray(x2), axis=-2)


def top_k(operand, k):
    from . import lax
    return lax.top_k(operand, k)


UniqueAllResult = _collections.namedtuple("UniqueAllResult", "values indices inverse_indices counts")
UniqueCountsResult = _collections.namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = _collections.namedtuple("UniqueInverseResult", "values inverse_indices")


def unique_values(x, /, *, size=None, fill_value=None):
    return _np.unique(x, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    v, c = _np.unique(x, return_counts=True, size=size, fill_value=fill_value)
    return UniqueCountsResult(v, c)


def unique_inverse(x, /, *, size=None, fill_value=None):
    x = _np.asarray(x)
    v, inv = _np.unique(x, return_inverse=True, size=size, fill_value=fill_value)
    return UniqueInverseResult(v, _np.reshape(inv, x.shape))


def unique_all(x, /, *, size=None, fill_value=None):
    x = _np.asarray(x)
    v, i, inv, c = _np.unique(x, return_index=True, return_inverse=True, return_counts=True, size=size,
                              fill_value=fill_value)
    return UniqueAllResult(v, i, _np.reshape(inv, x.shape), c)


# ---- index tricks (static: Python slices and concrete values) ------------------------------------------
s_, index_exp = _onp.s_, _onp.index_exp


class _Grid:
    def __init__(self, np_grid):
        self._g = np_grid

    def __getitem__(self, key):
        out = self._g[key]
        return [_np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else _np.asarray(out)


mgrid, ogrid = _Grid(_onp.mgrid), _Grid(_onp.ogrid)


class _Concat:
    def __init__(self, np_concat):
        self._c = np_concat

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        conv = tuple(_onp.asarray(k) if hasattr(k, "__array__") and not isinstance(k, _onp.ndarray) else k
                     for k in key)
        return _np.asarray(self._c[conv])


r_, c_ = _Concat(_onp.r_), _Concat(_onp.c_)


def ix_(*args):
    """Open-mesh index arrays: the k-th of n 1-D inputs reshaped to be long along axis k only."""
    out = []
    for k, a in enumerate(args):
        a = _np.asarray(a)
        if a.ndim != 1:
            raise ValueError(f"ix_: every argument must be 1-D, argument {k} has shape {tuple(a.shape)}")
        shape = [1] * len(args)
        shape[k] = a.shape[0]
        out.append(_np.reshape(a, tuple(shape)))
    return tuple(out)


def mask_indices(n, mask_func, k=0, *, size=None):
    return _np.nonzero(mask_func(_np.ones((n, n), _onp.int32), k), size=size)


def rollaxis(a, axis, start=0):
    a = _np.asarray(a)
    n = a.ndim
    axis = axis + n if axis < 0 else axis
    start = start + n if start < 0 else start
    if not (0 <= axis < n and 0 <= start <= n):
        raise ValueError(f"rollaxis: axis {axis} or start {start} out of range for {n} dimensions")
    if axis < start:
        start -= 1
    return _np.moveaxis(a, axis, start)


# ---- window functions ----------------------------------------------------------------------------------
def _window(M, f):
    if M < 1:
        return _np.zeros((0,), float)
    if M == 1:
        return _np.ones((1,), float)
    n = _np.arange(M, dtype=float)
    return f(n, M)


def bartlett(M):
    return _window(M, lambda n, M: 1.0 - _np.abs(2.0 * n / (M - 1) - 1.0))


def hanning(M):
    return _window(M, lambda n, M: 0.5 - 0.5 * _np.cos(2.0 * _math.pi * n / (M - 1)))


def hamming(M):
    return _window(M, lambda n, M: 0.54 - 0.46 * _np.cos(2.0 * _math.pi * n / (M - 1)))


def blackman(M):
    return _window(M, lambda n, M: 0.42 - 0.5 * _np.cos(2.0 * _math.pi * n / (M - 1))
                   + 0.08 * _np.cos(4.0 * _math.pi * n / (M - 1)))


def kaiser(M, beta):
    def f(n, M):
        alpha = (M - 1) / 2.0
        return i0(beta * _np.sqrt(1.0 - ((n - alpha) / alpha) ** 2)) / i0(_np.asarray(float(beta)))
    return _window(M, f)


# ---- NaN-aware order statistics --------------------------------------------------------------------------
def nanquantile(a, q, axis=None, method="linear", keepdims=False):
    """quantile over the non-NaN entries of each slice (NaN where a slice has none)."""
    a = _np.asarray(a)
    qa = _np.asarray(q)
    if not _b.all(isinstance(v, (int, float)) for v in _onp.atleast_1d(_onp.asarray(qa)).tolist()):
        raise TypeError("nanquantile: q must hold numbers")
    if method not in ("linear", "lower", "higher", "nearest", "midpoint"):
        raise ValueError(f"nanquantile: unknown method {method!r}")
    x, axes, kept = _collapse_axes(a, axis, "nanquantile")
    if x.shape[-1] == 0:  # every slice is empty: NaN, as NumPy
        r = _np.full(_onp.shape(_onp.asarray(qa)) + tuple(x.shape[:-1]), _onp.nan, dtype=str(x.dtype))
        return _np.reshape(r, _onp.shape(_onp.asarray(qa)) + kept) if keepdims else r
    nan = _np.isnan(x)
    s = _np.sort(_np.where(nan, _np.inf, x), axis=-1)
    n = _np.sum(~nan, axis=-1, keepdims=True)
    last = _np.maximum(n - 1, 0).astype(s.dtype)
    outs = []
    for qv in _onp.atleast_1d(_onp.asarray(qa)).tolist():
        pos = last * qv
        lo, hi = _np.floor(pos), _np.ceil(pos)
        take = lambda i: _np.take_along_axis(s, i.astype(_onp.int32), axis=-1)
        vlo, vhi = take(lo), take(hi)
        if method == "linear":
            v = vlo + (vhi - vlo) * (pos - lo)
        elif method == "lower":
            v = vlo
        elif method == "higher":
            v = vhi
        elif method == "midpoint":
            v = (vlo + vhi) / 2
        else:  # nearest: half to even, as NumPy
            v = take(_np.round(pos))
        v = _np.where(n == 0, _np.nan, v)[..., 0]
        if keepdims:
            v = _np.reshape(v, kept)
        outs.append(v)
    return outs[0] if qa.ndim == 0 else _np.stack(outs)


def nanpercentile(a, q, axis=None, method="linear", keepdims=False):
    q = _onp.asarray(_np.asarray(q)) / 100.0
    return nanquantile(a, q.tolist() if q.ndim else float(q), axis=axis, method=method, keepdims=keepdims)


def nanmedian(a, axis=None, keepdims=False):
    return nanquantile(a, 0.5, axis=axis, keepdims=keepdims)


# ---- updates that return new arrays (JAX's arrays are immutable: inplace must be False) -------------------
def _no_inplace(name, inplace):
    if inplace:
        raise ValueError(f"{name}: JAX arrays are immutable; pass inplace=False and use the returned array")


def put(a, ind, v, mode=None, *, inplace=True):
    _no_inplace("put", inplace)
    a = _np.asarray(a)
    flat = _np.ravel(a)
    ind = _np.ravel(_np.asarray(ind))
    n = flat.shape[0]
    if mode == "wrap":
        ind = ind % n
    elif mode == "clip":
        ind = _np.clip(ind, 0, n - 1)
    v = _np.ravel(_np.asarray(v))
    v = _np.resize(v, ind.shape) if v.shape != ind.shape else v
    return _np.reshape(flat.at[ind].set(v.astype(a.dtype)), a.shape)


def place(arr, mask, vals, *, inplace=True):
    _no_inplace("place", inplace)
    arr = _np.asarray(arr)
    m = _np.ravel(_np.asarray(mask)).astype(_onp.bool_)
    vals = _np.ravel(_np.asarray(vals))
    order = _np.cumsum(m.astype(_onp.int32)) - 1  # the k-th masked entry takes vals[k % len(vals)]
    fill = _np.take(vals, order % vals.shape[0])
    return _np.reshape(_np.where(m, fill.astype(arr.dtype), _np.ravel(arr)), arr.shape)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    _no_inplace("put_along_axis", inplace)
    arr = _np.asarray(arr)
    idx = _np.asarray(indices)
    if axis is None:
        return _np.reshape(put_along_axis(_np.ravel(arr), _np.ravel(idx), _np.ravel(_np.asarray(values)), 0,
                                          inplace=False), arr.shape)
    axis = axis % arr.ndim
    full = []
    for d in range(arr.ndim):
        if d == axis:
            full.append(idx)
        else:
            shape = [1] * arr.ndim
            shape[d] = arr.shape[d]
            full.append(_np.reshape(_np.arange(arr.shape[d]), tuple(shape)))
    full = _np.broadcast_arrays(*full)
    vals = _np.broadcast_to(_np.asarray(values), full[0].shape).astype(arr.dtype)
    return arr.at[tuple(full)].set(vals)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    _no_inplace("fill_diagonal", inplace)
    a = _np.asarray(a)
    if a.ndim < 2 or (a.ndim > 2 and len(set(a.shape)) != 1):
        raise ValueError(f"fill_diagonal: needs a 2-D array or one with equal dimensions, got {tuple(a.shape)}")
    if a.ndim == 2:
        rows, cols = a.shape
        step = cols + 1
        end = rows * cols if wrap else _b.min(rows, cols) * cols
        flat_idx = _onp.arange(0, end, step)
    else:
        n = a.shape[0]
        step = sum(n ** k for k in range(a.ndim))
        flat_idx = _onp.arange(0, n ** a.ndim, step)
    v = _np.ravel(_np.asarray(val)).astype(a.dtype)
    v = _np.resize(v, (len(flat_idx),))
    return _np.reshape(_np.ravel(a).at[_np.asarray(flat_idx.astype(_onp.int32))].set(v), a.shape)


# ---- functions over axes -------------------------------------------------------------------------------
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d applied to the 1-D slices of arr along axis (vmapped over the others)."""
    from . import _api
    arr = _np.asarray(arr)
    axis = axis % arr.ndim
    f = lambda v: func1d(v, *args, **kwargs)
    for _ in range(arr.ndim - 1):
        f = _api.vmap(f)
    moved = _np.moveaxis(arr, axis, -1)
    out = _np.asarray(f(moved))
    # the function's result dimensions replace the axis
    extra = out.ndim - (arr.ndim - 1)
    nb = arr.ndim - 1
    perm = list(range(axis)) + list(range(nb, nb + extra)) + list(range(axis, nb))
    return _np.transpose(out, perm) if extra else out


def apply_over_axes(func, a, axes):
    a = _np.asarray(a)
    for ax in (axes if isinstance(axes, (list, tuple)) else [axes]):
        b = func(a, ax)
        a = b if b.ndim == a.ndim else _np.expand_dims(b, ax)
    return a


def gradient(f, *varargs, axis=None, edge_order=1):
    """Second-order central differences inside, first-order one-sided at the edges (NumPy's gradient
    with edge_order=1); spacings are scalars per axis."""
    if edge_order != 1:
        raise NotImplementedError("gradient: only edge_order=1")
    f = _np.asarray(f)
    axes = list(range(f.ndim)) if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    axes = [a % f.ndim for a in axes]
    h = list(varargs) if varargs else [1.0]
    if len(h) == 1:
        h = h * len(axes)
    if len(h) != len(axes):
        raise TypeError(f"gradient: {len(h)} spacings for {len(axes)} axes")
    outs = []
    for ax, dx in zip(axes, h):
        if _onp.ndim(dx) != 0:
            raise NotImplementedError("gradient: coordinate arrays as spacings")
        n = f.shape[ax]
        if n < 2:
            raise ValueError(f"gradient: needs at least 2 entries along axis {ax}, got {n}")
        sl = lambda lo, hi: _np.take(f, _np.arange(lo, hi), axis=ax)
        first = (sl(1, 2) - sl(0, 1)) / dx
        last = (sl(n - 1, n) - sl(n - 2, n - 1)) / dx
        mid = (sl(2, n) - sl(0, n - 2)) / (2.0 * dx)
        outs.append(_np.concatenate([first, mid, last], axis=ax) if n > 2 else _np.concatenate([first, last], axis=ax))
    return outs[0] if len(outs) == 1 else outs


def block(arrays):
    """NumPy's block: nested lists concatenated along the last axes, innermost list last."""
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else (0 if not isinstance(x, list) else 1)

    d = depth(arrays)

    def rec(x, level):
        if not isinstance(x, list):
            return _np.asarray(x)
        parts = [rec(e, level + 1) for e in x]
        nd = _b.max(d, _b.max(p.ndim for p in parts))
        parts = [_np.reshape(p, (1,) * (nd - p.ndim) + tuple(p.shape)) for p in parts]
        return _np.concatenate(parts, axis=-(d - level))

    return rec(arrays, 0)


def choose(a, choices, out=None, mode="raise"):
    if out is not None:
        raise NotImplementedError("choose: out= (arrays are immutable)")
    a = _np.asarray(a)
    cs = _np.stack(_np.broadcast_arrays(*[_np.asarray(c) for c in choices]))
    n = cs.shape[0]
    if mode == "wrap":
        a = a % n
    elif mode == "clip":
        a = _np.clip(a, 0, n - 1)
    shape = _np.broadcast_shapes(tuple(a.shape), tuple(cs.shape[1:]))
    cs = _np.broadcast_to(cs, (n,) + tuple(shape))
    idx = _np.broadcast_to(a, tuple(shape))
    return _np.take_along_axis(cs, _np.expand_dims(idx.astype(_onp.int32), 0), axis=0)[0]


def piecewise(x, condlist, funclist, *args, **kw):
    """funclist[k] (a function or a constant) where condlist[k] holds; a last extra entry is the default."""
    x = _np.asarray(x)
    conds = [_np.asarray(c) for c in (condlist if isinstance(condlist, (list, tuple)) else [condlist])]
    if len(funclist) not in (len(conds), len(conds) + 1):
        raise ValueError(f"piecewise: {len(funclist)} functions for {len(conds)} conditions")
    val = lambda f: _np.broadcast_to(_np.asarray(f(x, *args, **kw) if callable(f) else f).astype(x.dtype), x.shape)
    out = val(funclist[-1]) if len(funclist) == len(conds) + 1 else _np.zeros_like(x)
    for c, f in zip(conds, funclist):
        out = _np.where(c, val(f), out)
    return out


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """pyfunc written for scalars, mapped over its broadcast arguments with vmap (no signature= yet)."""
    if signature is not None:
        raise NotImplementedError("vectorize: signature= (map over core dimensions by hand with vmap)")
    from . import _api
    import functools

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        dyn = [i for i in range(len(args)) if i not in excluded]
        arrs = _np.broadcast_arrays(*[_np.asarray(args[i]) for i in dyn])
        shape = tuple(arrs[0].shape) if arrs else ()

        def scalar_fn(*xs):
            full = list(args)
            for i, v in zip(dyn, xs):
                full[i] = v
            return pyfunc(*full, **kwargs)

        f = scalar_fn
        for _ in shape:
            f = _api.vmap(f)
        return f(*arrs)

    return wrapped


# ---- polynomials (coefficients highest power first, as NumPy's) ------------------------------------------
def _trim(p):
    return _np.atleast_1d(_np.asarray(p))


def polyadd(a1, a2):
    a1, a2 = _trim(a1), _trim(a2)
    n = _b.max(a1.shape[0], a2.shape[0])
    pad = lambda p: _np.concatenate([_np.zeros((n - p.shape[0],), p.dtype), p]) if p.shape[0] < n else p
    return pad(a1) + pad(a2)


def polysub(a1, a2):
    return polyadd(a1, -_trim(a2))


def polymul(a1, a2, *, trim_leading_zeros=False):
    return _np.convolve(_trim(a1), _trim(a2))


def polyder(p, m=1):
    p = _trim(p)
    if m < 0:
        raise ValueError("polyder: the order of the derivative must be positive")
    for _ in range(m):
        n = p.shape[0] - 1
        if n <= 0:
            return _np.zeros((1,), p.dtype if str(p.dtype) != "bool" else float)
        p = p[:-1] * _np.arange(n, 0, -1).astype(p.dtype if _b.any(str(p.dtype) == t for t in
                                                                 ("float16", "bfloat16", "float32", "float64")) else float)
    return p


def polyint(p, m=1, k=None):
    p = _trim(p)
    if m < 0:
        raise ValueError("polyint: the order of the integral must be positive")
    ks = [0.0] * m if k is None else list(_onp.atleast_1d(k))
    if len(ks) == 1 and m > 1:
        ks = ks * m
    for j in range(m):
        n = p.shape[0]
        p = _np.concatenate([p / _np.arange(n, 0, -1).astype(float), _np.asarray([ks[j]], float)])
    return p


def poly(seq_of_zeros):
    """The monic polynomial with these (real) roots; a square matrix gives its characteristic polynomial
    through its eigenvalues (symmetric matrices: graft has no complex eig yet)."""
    z = _np.asarray(seq_of_zeros)
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] > 0:
        from .numpy import linalg
        z = linalg.eigvalsh(z)
    if z.ndim != 1:
        raise ValueError("poly: input must be 1-D or a square 2-D array")
    p = _np.ones((1,), z.dtype if str(z.dtype) != "int32" else float)
    for i in range(z.shape[0]):
        p = _np.convolve(p, _np.stack([_np.ones((), p.dtype), -z[i].astype(p.dtype)]))
    return p


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial coefficients (highest power first)."""
    if full or cov:
        raise NotImplementedError("polyfit: full= and cov=")
    from .numpy import linalg
    x, y = _np.asarray(x), _np.asarray(y)
    lhs = _np.vander(x, deg + 1)
    if w is not None:
        w = _np.asarray(w)
        lhs = lhs * w[:, None]
        y = y * (w[:, None] if y.ndim == 2 else w)
    scale = _np.sqrt(_np.sum(lhs * lhs, axis=0))
    c = linalg.lstsq(lhs / scale, y, rcond=rcond)[0]
    return (c.T / scale).T


def polydiv(u, v, *, trim_leading_zeros=False):
    """Quotient and remainder of u / v (long division; v's leading coefficient must be nonzero)."""
    u, v = _trim(u).astype(float), _trim(v).astype(float)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    if m < n:
        return _np.zeros((1,), u.dtype), u
    q = []
    r = u
    for k in range(m - n + 1):
        c = r[k] / v[0]
        q.append(c)
        r = r - _np.concatenate([_np.zeros((k,), u.dtype), c * v, _np.zeros((m - n - k,), u.dtype)])
    return _np.stack(q), r


# ---- files and buffers (concrete values, through NumPy) ----------------------------------------------------
def load(file, *args, **kwargs):
    out = _onp.load(file, *args, **kwargs)
    return _np.asarray(out) if isinstance(out, _onp.ndarray) else out


def save(file, arr, **kwargs):
    _onp.save(file, _onp.asarray(arr), **kwargs)


def savez(file, *args, **kwds):
    _onp.savez(file, *[_onp.asarray(a) for a in args], **{k: _onp.asarray(v) for k, v in kwds.items()})


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    return _np.asarray(_onp.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    return _np.asarray(_onp.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromfile(*args, **kwargs):
    return _np.asarray(_onp.fromfile(*args, **kwargs))


def fromiter(iterable, dtype, count=-1):
    return _np.asarray(_onp.fromiter(iterable, dtype=dtype, count=count))


def einsum_path(subscripts, *operands, optimize="greedy"):
    """NumPy's contraction order for these operands' shapes."""
    return _onp.einsum_path(subscripts, *[_onp.empty(tuple(_np.asarray(o).shape)) for o in operands],
                            optimize=optimize)


def bitwise_count(x, /):
    """The number of 1 bits of |x| (an unsigned count, as NumPy's)."""
    from . import lax
    x = _np.asarray(x)
    if str(x.dtype).startswith("int"):
        x = _np.abs(x)
    return lax.population_count(x).astype(_onp.uint8)


def packbits(a, axis=None, bitorder="big"):
    """Booleans (nonzero) packed 8 to a uint8 along axis (flattened without one), zero-padded."""
    if bitorder not in ("big", "little"):
        raise ValueError(f"packbits: bitorder must be 'big' or 'little', got {bitorder!r}")
    a = _np.asarray(a) != 0
    if axis is None:
        a, axis = _np.ravel(a), 0
    a = _np.moveaxis(a, axis, -1)
    n = a.shape[-1]
    pad = (-n) % 8
    if pad:
        a = _np.concatenate([a, _np.zeros(tuple(a.shape[:-1]) + (pad,), a.dtype)], axis=-1)
    a = _np.reshape(a.astype(_onp.uint8), tuple(a.shape[:-1]) + (-1, 8))
    w = _onp.array([128, 64, 32, 16, 8, 4, 2, 1] if bitorder == "big" else [1, 2, 4, 8, 16, 32, 64, 128], _onp.uint8)
    return _np.moveaxis(_np.sum(a * _np.asarray(w), axis=-1).astype(_onp.uint8), -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    if bitorder not in ("big", "little"):
        raise ValueError(f"unpackbits: bitorder must be 'big' or 'little', got {bitorder!r}")
    a = _np.asarray(a)
    if str(a.dtype) != "uint8":
        raise TypeError(f"unpackbits: needs uint8, got {a.dtype}")
    if axis is None:
        a, axis = _np.ravel(a), 0
    a = _np.moveaxis(a, axis, -1)
    shifts = _onp.array([7, 6, 5, 4, 3, 2, 1, 0] if bitorder == "big" else list(range(8)), _onp.uint8)
    bits = _np.bitwise_and(_np.right_shift(_np.expand_dims(a, -1), _np.asarray(shifts)), _np.asarray(_onp.uint8(1)))
    bits = _np.reshape(bits, tuple(a.shape[:-1]) + (-1,))
    if count is not None:
        bits = bits[..., :count]
    return _np.moveaxis(bits.astype(_onp.uint8), -1, axis)


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    h, edges = histogramdd(_np.stack([_np.asarray(x), _np.asarray(y)], axis=-1), bins, range, weights, density)
    return h, edges[0], edges[1]


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Counts of the rows of sample (N, D) in a grid of bins (a count per dimension, or edges)."""
    sample = _np.asarray(sample)
    if sample.ndim != 2:
        raise ValueError(f"histogramdd: sample must be (N, D), got {tuple(sample.shape)}")
    d = sample.shape[1]
    bins = [bins] * d if isinstance(bins, int) else list(bins)
    edges, idx = [], []
    for k in _b.range(d):
        col = sample[:, k]
        if isinstance(bins[k], int):
            # NumPy's edges (the data's extent, traced, so that jit and vmap work as JAX's)
            e = _np.histogram_bin_edges(col, bins[k], None if range is None else tuple(range[k]))
        else:
            e = _np.asarray(bins[k])
        edges.append(e)
        nb = e.shape[0] - 1
        i = _np.searchsorted(e, col, side="right") - 1
        i = _np.where(col == e[-1], nb - 1, i)  # the last edge belongs to the last bin
        valid = (i >= 0) & (i < nb)
        idx.append((i, valid, nb))
    flat = _np.zeros_like(idx[0][0])
    valid = _np.ones(idx[0][1].shape, _onp.bool_)
    size = 1
    for i, v, nb in idx:
        flat = flat * nb + _np.clip(i, 0, nb - 1)
        valid = valid & v
        size *= nb
    w = _np.ones(flat.shape, float) if weights is None else _np.asarray(weights).astype(float)
    h = _np.zeros((size,), w.dtype).at[flat].add(_np.where(valid, w, 0))
    h = _np.reshape(h, tuple(nb for _, _, nb in idx))
    if density:
        vol = 1.0
        for k, e in enumerate(edges):
            shape = [1] * d
            shape[k] = e.shape[0] - 1
            vol = vol * _np.reshape(_np.diff(e), tuple(shape))
        h = h / _np.sum(h) / vol
    return h, edges
