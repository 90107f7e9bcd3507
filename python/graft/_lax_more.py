"""More of jax.lax: gather / scatter with XLA's dimension numbers, the collectives beyond psum, a general
reduce, shape helpers (conv_shape_tuple, padtype_to_pads, ...), conv_transpose, and small utilities
(collapse, tile, split, clz, mulhi, reduce_precision, tokens)."""
import builtins as _b
import collections as _collections

import numpy as _onp

from . import _graft
from . import lax as _lax

# ---- gather and scatter --------------------------------------------------------------------------------
GatherDimensionNumbers = _collections.namedtuple(
    "GatherDimensionNumbers", "offset_dims collapsed_slice_dims start_index_map operand_batching_dims "
    "start_indices_batching_dims", defaults=((), ()))
ScatterDimensionNumbers = _collections.namedtuple(
    "ScatterDimensionNumbers", "update_window_dims inserted_window_dims scatter_dims_to_operand_dims "
    "operand_batching_dims scatter_indices_batching_dims", defaults=((), ()))


class GatherScatterMode:
    CLIP, FILL_OR_DROP, PROMISE_IN_BOUNDS, ONE_HOT = "clip", "fill", "promise_in_bounds", "one_hot"


def _mode(mode, default):
    if mode is None:
        return default
    m = str(getattr(mode, "name", mode)).lower()
    return {"fill_or_drop": "fill", "gatherscattermode.clip": "clip"}.get(m, m)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, indices_are_sorted=False,
           unique_indices=False, mode=None, fill_value=None):
    """XLA's gather (lax.gather): slices of slice_sizes at start_indices (their last dimension the index
    vector). mode: "clip" (the default for gather here, as jnp indexing) or "fill" (out-of-bounds slices
    read fill_value, NaN for floats by default as in JAX)."""
    operand = _graft.asarray(operand)
    dn = tuple(tuple(int(v) for v in f) for f in dimension_numbers)
    m = _mode(mode, "fill")
    if fill_value is None:
        fill_value = float("nan") if str(operand.dtype).startswith(("float", "bfloat")) else 0
    return _graft.lax_gather(operand, start_indices, dn, tuple(slice_sizes), m, float(fill_value))


def _scatter(fn, operand, scatter_indices, updates, dimension_numbers, mode):
    dn = tuple(tuple(int(v) for v in f) for f in dimension_numbers)
    return fn(operand, scatter_indices, updates, dn, _mode(mode, "fill"))


def _scatter_op(name, fn, doc, transform_updates=None):
    """lax.<name>(operand, scatter_indices, updates, dimension_numbers, *, mode=...) over fn."""
    def op(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False, unique_indices=False,
           mode=None):
        if transform_updates is not None:
            updates = transform_updates(_graft.asarray(updates))
        return _scatter(fn, operand, scatter_indices, updates, dimension_numbers, mode)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


scatter = _scatter_op("scatter", _graft.lax_scatter,
                      "XLA's scatter: updates written at the indices (out-of-bounds ones dropped by default).")
scatter_add = _scatter_op("scatter_add", _graft.lax_scatter_add, "Updates added in (duplicates included).")
scatter_sub = _scatter_op("scatter_sub", _graft.lax_scatter_add, "Updates subtracted (duplicates included).",
                          lambda u: _lax.neg(u))
scatter_mul = _scatter_op("scatter_mul", _graft.lax_scatter_mul, "Updates multiplied in (duplicates included).")
scatter_min = _scatter_op("scatter_min", _graft.lax_scatter_min, "The minimum of the operand and its updates.")
scatter_max = _scatter_op("scatter_max", _graft.lax_scatter_max, "The maximum of the operand and its updates.")


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(), indices_are_sorted=False,
                  unique_indices=False, mode=None):
    """func applied to the operand's entries at the indices (each once, however often it is named)."""
    from . import numpy as jnp
    operand = jnp.asarray(operand)
    hit = _scatter(_graft.lax_scatter, jnp.zeros(operand.shape, bool), scatter_indices,
                   jnp.ones(tuple(update_shape), bool), dimension_numbers, mode)
    return jnp.where(hit, func(operand), operand)


def index_take(src, idxs, axes):
    """src[idxs[0], idxs[1], ...] along `axes` (one index array per axis)."""
    from . import numpy as jnp
    src = jnp.asarray(src)
    index = [slice(None)] * src.ndim
    for i, ax in zip(idxs, axes):
        index[ax] = jnp.asarray(i)
    return src[tuple(index)]


# ---- collectives ---------------------------------------------------------------------------------------
def _one_axis(axis_name, what):
    if isinstance(axis_name, (tuple, list)):
        if len(axis_name) != 1:
            raise NotImplementedError(f"{what}: over one named axis at a time")
        axis_name = axis_name[0]
    return axis_name


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    if axis_index_groups is not None:
        raise NotImplementedError("all_gather: axis_index_groups")
    return _graft.lax_all_gather(x, _one_axis(axis_name, "all_gather"), axis, tiled)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    if axis_index_groups is not None:
        raise NotImplementedError("psum_scatter: axis_index_groups")
    return _graft.lax_psum_scatter(x, _one_axis(axis_name, "psum_scatter"), scatter_dimension, tiled)


def ppermute(x, axis_name, perm):
    return _graft.lax_ppermute(x, _one_axis(axis_name, "ppermute"), [tuple(p) for p in perm])


def pshuffle(x, axis_name, perm):
    """Member i receives member perm[i]'s value."""
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    if axis_index_groups is not None:
        raise NotImplementedError("all_to_all: axis_index_groups")
    return _graft.lax_all_to_all(x, _one_axis(axis_name, "all_to_all"), split_axis, concat_axis, tiled)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups, tiled=True)


def axis_size(axis_name):
    if isinstance(axis_name, (tuple, list)):
        n = 1
        for a in axis_name:
            n *= _graft.lax_axis_size(a)
        return n
    return _graft.lax_axis_size(axis_name)


def pvary(x, axis_name):
    names = [axis_name] if isinstance(axis_name, str) else list(axis_name)
    return _graft.lax_pvary(x, names)


pcast_to_varying = pvary


def pcast(x, axis_name, *, to):
    if to != "varying":
        raise NotImplementedError("pcast: only to='varying'")
    return pvary(x, axis_name)


def pbroadcast(x, axis_name, source):
    """Every member gets member `source`'s value."""
    from . import numpy as jnp
    names = axis_name if isinstance(axis_name, (tuple, list)) else (axis_name,)
    me = _lax.axis_index(names[0]) if len(names) == 1 else None
    if me is None:
        raise NotImplementedError("pbroadcast: over one named axis at a time")
    x = jnp.asarray(x)
    return _lax.psum(jnp.where(me == source, x, jnp.zeros_like(x)), names[0])


# ---- a general reduce ----------------------------------------------------------------------------------
def reduce(operands, init_values, computation, dimensions):
    """lax.reduce: operands folded with computation over `dimensions` from init_values. lax.add, mul,
    max, min, bitwise_and / or / xor use graft's reductions; any other (associative, commutative)
    computation is applied as a pairwise tree."""
    from . import numpy as jnp
    single = not isinstance(operands, (tuple, list))
    ops = [jnp.asarray(o) for o in ([operands] if single else operands)]
    inits = [jnp.asarray(v) for v in ([init_values] if single else init_values)]
    dims = tuple(int(d) for d in dimensions)
    known = {_lax.add: jnp.sum, _lax.mul: jnp.prod, _lax.max: jnp.max, _lax.min: jnp.min}
    if single and computation in known:
        return computation(known[computation](ops[0], axis=dims).astype(ops[0].dtype), inits[0])
    if single and computation in (_lax.bitwise_and, _lax.bitwise_or) and str(ops[0].dtype) == "bool":
        r = jnp.all(ops[0], axis=dims) if computation is _lax.bitwise_and else jnp.any(ops[0], axis=dims)
        return computation(r, inits[0])
    rest = [d for d in range(ops[0].ndim) if d not in dims]
    xs = [jnp.reshape(jnp.transpose(o, rest + list(dims)), tuple(o.shape[d] for d in rest) + (-1,)) for o in ops]
    n = xs[0].shape[-1]
    acc = [jnp.broadcast_to(v, tuple(x.shape[:-1]) + (1,)).astype(x.dtype) for v, x in zip(inits, xs)]
    xs = [jnp.concatenate([a, x], axis=-1) for a, x in zip(acc, xs)]
    n += 1
    while n > 1:
        half = n // 2
        lo = [x[..., :half] for x in xs]
        hi = [x[..., half:2 * half] for x in xs]
        r = computation(*lo, *hi) if not single else computation(lo[0], hi[0])
        r = [r] if single else list(r)
        if n % 2:
            r = [jnp.concatenate([a, x[..., 2 * half:]], axis=-1) for a, x in zip(r, xs)]
        xs, n = r, (n + 1) // 2
    out = [x[..., 0] for x in xs]
    return out[0] if single else tuple(out)


def reduce_xor(operand, axes):
    from . import numpy as jnp
    operand = jnp.asarray(operand)
    if str(operand.dtype) == "bool":
        return (jnp.sum(operand.astype("int32"), axis=tuple(axes)) % 2).astype(bool)
    return reduce(operand, jnp.zeros((), operand.dtype), _lax.bitwise_xor, axes)


# ---- shape helpers (pure functions of shapes) ------------------------------------------------------------
ConvDimensionNumbers = _collections.namedtuple("ConvDimensionNumbers", "lhs_spec rhs_spec out_spec")


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """ConvDimensionNumbers (each spec: (batch/out-feature, feature/in-feature, spatial...) positions)."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    ls, rs, os_ = _lax._conv_specs(dimension_numbers, len(lhs_shape))
    return ConvDimensionNumbers(ls, rs, os_)


def conv_general_permutations(dimension_numbers):
    lhs, rhs, out = dimension_numbers
    ls, rs, os_ = _lax._conv_specs((lhs, rhs, out), len(lhs))
    return ls, rs, os_


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """'SAME' / 'SAME_LOWER' / 'VALID' as (lo, hi) pairs per spatial dimension."""
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    return _lax._padding_pairs(padding, in_shape, window_shape, window_strides, None)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The result shape of an NCHW / OIHW convolution."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    sp = [(n + lo + hi - k) // s + 1 if n + lo + hi >= k else 0
          for n, k, s, (lo, hi) in zip(lhs_shape[2:], rhs_shape[2:], strides, pads)]
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + tuple(_b.max(v, 0) for v in sp)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    ls, rs, os_ = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t = tuple(lhs_shape[i] for i in ls)
    rhs_t = tuple(rhs_shape[i] for i in rs)
    out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding)
    out = [0] * len(out_t)
    for k, i in enumerate(os_):
        out[i] = out_t[k]
    return tuple(out)


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    ls, rs, os_ = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs_t = tuple(lhs_shape[i] for i in ls)
    rhs_t = tuple(rhs_shape[i] for i in rs)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rhs_t[2:], window_strides)]
    sp = [(n - 1) * s + 1 + lo + hi - k + 1 for n, k, s, (lo, hi) in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
    out_t = (lhs_t[0], rhs_t[0]) + tuple(sp)
    out = [0] * len(out_t)
    for k, i in enumerate(os_):
        out[i] = out_t[k]
    return tuple(out)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None):
    n = len(operand_shape)
    base_dilation = base_dilation or (1,) * n
    window_dilation = window_dilation or (1,) * n
    out = []
    for d in range(n):
        size = (operand_shape[d] - 1) * base_dilation[d] + 1 + padding[d][0] + padding[d][1]
        win = (window_dimensions[d] - 1) * window_dilation[d] + 1
        out.append(_b.max((size - win) // window_strides[d] + 1, 0) if size >= win else 0)
    return tuple(out)


def _conv_transpose_padding(k, s, padding):
    """(lo, hi) padding of the stride-dilated input for a transposed convolution of kernel extent k and
    stride s: 'SAME' gives an output of input * s, 'VALID' one of (input - 1) * s + max(k, s)."""
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + _b.max(k - s, 0)
        lo = k - 1
    else:
        raise ValueError(f"conv_transpose: padding must be 'SAME', 'VALID' or pairs, got {padding!r}")
    return lo, total - lo


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None, transpose_kernel=False,
                   precision=None, preferred_element_type=None):
    """The gradient of a strided convolution as a convolution of the input dilated by the strides
    (JAX's conv_transpose; the kernel flipped and its in/out features swapped with transpose_kernel)."""
    from . import numpy as jnp
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    nsp = lhs.ndim - 2
    if dimension_numbers is None:
        dimension_numbers = ("NC" + "DHW"[3 - nsp:], "IO" + "DHW"[3 - nsp:], "NC" + "DHW"[3 - nsp:]) if nsp <= 3 else None
    ls, rs, os_ = _lax._conv_specs(dimension_numbers, lhs.ndim)
    k_sp = [rhs.shape[rs[2 + i]] for i in range(nsp)]
    rhs_dilation = tuple(rhs_dilation) if rhs_dilation is not None else (1,) * nsp
    eff_k = [(k - 1) * d + 1 for k, d in zip(k_sp, rhs_dilation)]
    if isinstance(padding, str):
        pads = [_conv_transpose_padding(k, s, padding.upper()) for k, s in zip(eff_k, strides)]
    else:
        pads = [tuple(p) for p in padding]
    if transpose_kernel:
        rhs = jnp.flip(rhs, axis=tuple(rs[2:]))
        rs = (rs[1], rs[0]) + tuple(rs[2:])
    return _graft.lax_conv_general_dilated(lhs, rhs, (1,) * nsp, pads, tuple(strides), rhs_dilation,
                                           (list(ls), list(rs), list(os_)), 1, 1)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None,
                              preferred_element_type=None):
    return _lax.conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None, preferred_element_type=None):
    """Each output position's input patch as features (NCHW: C * prod(filter_shape) features, channel
    major), as a convolution with an identity kernel."""
    from . import numpy as jnp
    lhs = jnp.asarray(lhs)
    ls, rs, os_ = _lax._conv_specs(dimension_numbers, lhs.ndim)
    c = lhs.shape[ls[1]]
    n_patch = int(_onp.prod(filter_shape))
    eye = jnp.eye(c * n_patch, dtype=lhs.dtype)
    kernel = jnp.reshape(eye, (c * n_patch, c) + tuple(filter_shape))  # OIHW
    nsp = lhs.ndim - 2
    return _lax.conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation, rhs_dilation,
                                     (ls, tuple(range(nsp + 2)), os_) if dimension_numbers is not None else None)


# ---- small utilities -----------------------------------------------------------------------------------
def broadcast_to_rank(x, rank):
    from . import numpy as jnp
    x = jnp.asarray(x)
    return jnp.reshape(x, (1,) * (rank - x.ndim) + tuple(x.shape)) if x.ndim < rank else x


def broadcast_shapes(*shapes):
    from . import numpy as jnp
    return tuple(jnp.broadcast_shapes(*shapes))


def collapse(operand, start_dimension, stop_dimension=None):
    from . import numpy as jnp
    operand = jnp.asarray(operand)
    stop = operand.ndim if stop_dimension is None else stop_dimension
    s = tuple(operand.shape)
    return jnp.reshape(operand, s[:start_dimension] + (int(_onp.prod(s[start_dimension:stop])),) + s[stop:])


def tile(operand, reps):
    from . import numpy as jnp
    return jnp.tile(operand, tuple(reps))


def split(operand, sizes, axis=0):
    from . import numpy as jnp
    operand = jnp.asarray(operand)
    cuts = list(_onp.cumsum(sizes)[:-1])
    if _b.sum(sizes) != operand.shape[axis]:
        raise ValueError(f"split: sizes {tuple(sizes)} do not add up to {operand.shape[axis]} along axis {axis}")
    return jnp.split(operand, [int(c) for c in cuts], axis=axis)


def stack(operands, axis=0):
    from . import numpy as jnp
    return jnp.stack(operands, axis=axis)


def unstack(operand, axis=0):
    from . import numpy as jnp
    return jnp.unstack(operand, axis=axis)


def dtype(x, *, canonicalize=False):
    from . import numpy as jnp
    return jnp.asarray(x).dtype


def empty(dtype):
    from . import numpy as jnp
    return jnp.zeros((), dtype)


def clz(x):
    """The number of leading zero bits of each integer."""
    from . import numpy as jnp
    x = jnp.asarray(x)
    bits = int(_onp.dtype(str(x.dtype)).itemsize * 8)
    unsigned = _onp.dtype("uint%d" % bits)
    u = _lax.bitcast_convert_type(x, unsigned) if not str(x.dtype).startswith("uint") else x
    s = 1
    while s < bits:  # smear the highest set bit down
        u = _lax.bitwise_or(u, _lax.shift_right_logical(u, jnp.asarray(s, unsigned)))
        s *= 2
    return (bits - _lax.population_count(u).astype("int32")).astype(str(x.dtype))


def mulhi(x, y):
    """The high half of the double-width product of two integers of the same dtype (8, 16 or 32 bits)."""
    from . import numpy as jnp
    x, y = jnp.asarray(x), jnp.asarray(y)
    d = str(x.dtype)
    bits = int(_onp.dtype(d).itemsize * 8)
    if bits == 32:
        # 16-bit limbs, so that every partial product fits 32 bits
        u = "uint32"
        a = _lax.bitcast_convert_type(x, u) if d == "int32" else x
        b = _lax.bitcast_convert_type(y, u) if d == "int32" else y
        m, sh = jnp.asarray(0xFFFF, u), jnp.asarray(16, u)
        lo16 = lambda v: jnp.bitwise_and(v, m)
        hi16 = lambda v: jnp.right_shift(v, sh)
        a0, a1, b0, b1 = lo16(a), hi16(a), lo16(b), hi16(b)
        mid = hi16(a0 * b0) + lo16(a1 * b0) + lo16(a0 * b1)
        hi = a1 * b1 + hi16(a1 * b0) + hi16(a0 * b1) + hi16(mid)
        if d == "int32":  # signed: subtract the other operand where one is negative
            hi = hi - jnp.where(x < 0, b, 0).astype(u) - jnp.where(y < 0, a, 0).astype(u)
            return _lax.bitcast_convert_type(hi, "int32")
        return hi
    if bits in (8, 16):
        wide = "int32" if d.startswith("int") else "uint32"
        p = x.astype(wide) * y.astype(wide)
        return jnp.right_shift(p, jnp.asarray(bits, wide)).astype(d)
    raise NotImplementedError(f"mulhi: {d}")


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """operand rounded to a float format of these widths: bfloat16 (8, 7), float16 (5, 10), or its own."""
    from . import numpy as jnp
    operand = jnp.asarray(operand)
    fmt = (int(exponent_bits), int(mantissa_bits))
    own = {"float32": (8, 23), "float64": (11, 52), "float16": (5, 10), "bfloat16": (8, 7)}[str(operand.dtype)]
    if fmt == own or (fmt[0] >= own[0] and fmt[1] >= own[1]):
        return operand
    target = {(8, 7): "bfloat16", (5, 10): "float16"}.get(fmt)
    if target is None:
        raise NotImplementedError(f"reduce_precision: to {fmt} bits (bfloat16's (8, 7) and float16's (5, 10) are "
                                  "supported)")
    return operand.astype(target).astype(operand.dtype)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    """The exact top k (recall 1): (values, indices) along the last dimension."""
    from . import numpy as jnp
    operand = jnp.asarray(operand)
    if reduction_dimension not in (-1, operand.ndim - 1):
        operand = jnp.moveaxis(operand, reduction_dimension, -1)
        v, i = _lax.top_k(operand, k)
        return jnp.moveaxis(v, -1, reduction_dimension), jnp.moveaxis(i, -1, reduction_dimension)
    return _lax.top_k(operand, k)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True):
    from . import numpy as jnp
    v, i = approx_max_k(-jnp.asarray(operand), k, reduction_dimension)
    return -v, i


def create_token(*_):
    """An ordering token (graft orders effects itself: an empty value)."""
    from . import numpy as jnp
    return jnp.zeros((0,), bool)


def after_all(*tokens):
    return create_token()


def platform_dependent(*args, default=None, **per_platform):
    """The function for this process's default platform ('cpu' or 'cuda') applied to args."""
    platform = _graft.default_device_name().split(":")[0]
    fn = per_platform.get(platform, per_platform.get("gpu" if platform == "cuda" else platform, default))
    if fn is None:
        raise NotImplementedError(f"platform_dependent: no function for platform {platform!r} and no default")
    return fn(*args)


def composite(decomposition, name, version=0):
    """A named function (its calls appear under `name`); graft runs its decomposition."""
    import functools

    @functools.wraps(decomposition)
    def wrapped(*args, **kwargs):
        return decomposition(*args, **kwargs)

    wrapped.composite_name = name
    return wrapped


# ---- implicit differentiation: custom_linear_solve and custom_root -----------------------------------------
def _implicit_solves(solve_tangent, transpose_tangent, moved, moved_t):
    """r -> A^-1 r (and, transposed, A^-T r) as linear_calls over residuals `res` that A depends on, whose
    derivatives in the residuals are implicit (a second derivative moves A): d(A^-1) r = -A^-1 A' A^-1 r and
    d(A^-T) c = -A^-T A'^T A^-T c, with moved(res, dres, y) = A' y and moved_t(res, dres, z) = A'^T z; the
    solvers themselves are never differentiated. Returns the forward solve."""
    from . import _api
    from . import tree_util as _tu

    def neg(t):
        return _tu.tree_map(lambda v: -v, t)

    def solve_jvp(res, dres, rhs, y):
        return solve(res, neg(moved(res, dres, y)))

    def transpose_jvp(res, dres, ct, z):
        return transpose(res, neg(moved_t(res, dres, z)))

    def solve(res, rhs):
        return _api.linear_call(solve_tangent, transpose_tangent, res, rhs, _fun_res_jvp=solve_jvp,
                                _transpose_res_jvp=transpose_jvp)

    def transpose(res, ct):
        return _api.linear_call(transpose_tangent, solve_tangent, res, ct, _fun_res_jvp=transpose_jvp,
                                _transpose_res_jvp=solve_jvp)

    return solve


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """x = solve(matvec, b) with the derivatives of x = A^-1 b for the linear map A = matvec, whatever
    solve does (an iterative method, a factorization): JAX's lax.custom_linear_solve. Forward mode solves
    once more for the tangent, A x' = b' - A' x (A' from matvec's closed-over arrays); reverse mode
    transposes that solve with transpose_solve(vecmat, ct) (or solve itself when symmetric), through
    linear_call, so solve is never differentiated (nor are the arrays solve and transpose_solve close
    over). b may be a pytree. With has_aux, solve and transpose_solve return (x, aux) and aux is not
    differentiated."""
    from . import _api
    from . import numpy as _np
    from . import tree_util as _tu
    mv, consts = _api.closure_convert(matvec, b)
    n = len(consts)

    def x_of(out):
        return out[0] if has_aux else out

    # solve and transpose_solve with the arrays they close over made explicit (they may close over the
    # traced values being differentiated; linear_call's functions must not)
    sv, s_consts = _api.closure_convert(lambda rhs, *cs: solve(lambda v: mv(v, *cs), rhs), b, *consts)
    if symmetric or transpose_solve is None:
        tv, t_consts = None, []
    else:
        tv, t_consts = _api.closure_convert(
            lambda ct, *cs: transpose_solve(lambda u: _api.linear_transpose(lambda v: mv(v, *cs), ct)(u)[0], ct),
            b, *consts)
    ns, nt = len(s_consts), len(t_consts)

    def solve_tangent(res, rhs):
        cs, sc, _ = res
        return x_of(sv(rhs, *cs, *sc))

    def transpose_tangent(res, ct):
        cs, sc, tc = res
        if symmetric:
            return x_of(sv(ct, *cs, *sc))
        if tv is None:
            raise ValueError("custom_linear_solve: transpose_solve is needed to differentiate a solve that "
                             "is not symmetric in reverse mode")
        return x_of(tv(ct, *cs, *tc))

    # A^-1 r and A^-T r, implicit in A's arrays too (res[0]): never the solver's derivative
    solve_linear = _implicit_solves(
        solve_tangent, transpose_tangent,
        lambda res, dres, y: _api.jvp(lambda *c: mv(y, *c), res[0], dres[0])[1],
        lambda res, dres, z: _api.jvp(lambda *c: _api.linear_transpose(lambda v: mv(v, *c), z)(z)[0], res[0],
                                      dres[0])[1])

    def primal(*args):  # (matvec's consts, solve's, transpose_solve's, b)
        return sv(args[-1], *args[:n], *args[n:n + ns])

    f = _api.custom_jvp(primal)

    def rule(primals, tangents):
        cs, cs_dot = tuple(primals[:n]), tuple(tangents[:n])
        res = (cs, tuple(primals[n:n + ns]), tuple(primals[n + ns:n + ns + nt]))
        out = f(*primals)  # (f again, not primal: an outer derivative applies this rule too, not the solver's)
        x = x_of(out)
        rhs = tangents[-1]
        if n:  # A x = b, so A x' = b' - A' x
            mv_dot = _api.jvp(lambda *c: mv(x, *c), cs, cs_dot)[1]
            rhs = _tu.tree_map(lambda u, w: u - w, rhs, mv_dot)
        x_dot = solve_linear(res, rhs)
        if has_aux:
            return out, (x_dot, _tu.tree_map(_np.zeros_like, out[1]))
        return out, x_dot

    f.defjvp(rule)
    return f(*consts, *s_consts, *t_consts, b)


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """x* = solve(f, initial_guess), a root of f, differentiated implicitly (JAX's lax.custom_root): with
    f(x*, theta) = 0 for the arrays theta that f closes over, dx*/dtheta = -(df/dx)^-1 df/dtheta.
    tangent_solve(g, y) solves g(v) = y for a linear g: the Jacobian of f in x at x* in forward mode, its
    transpose in reverse mode (for a scalar root `lambda g, y: y / g(1.0)`); both through linear_call, so
    solve and tangent_solve are never differentiated. initial_guess gets no derivative. With has_aux,
    solve returns (x, aux)."""
    from . import _api
    from . import numpy as _np
    from . import tree_util as _tu
    fc, consts = _api.closure_convert(f, initial_guess)
    n = len(consts)

    def x_of(out):
        return out[0] if has_aux else out

    sv, s_consts = _api.closure_convert(lambda x0, *cs: solve(lambda v: fc(v, *cs), x0), initial_guess, *consts)
    ns = len(s_consts)
    x_example = initial_guess  # (the root has the initial guess's structure)
    ts_fwd, tf_consts = _api.closure_convert(
        lambda y, x, *cs: tangent_solve(lambda v: _api.jvp(lambda u: fc(u, *cs), (x,), (v,))[1], y),
        x_example, x_example, *consts)
    ts_bwd, tb_consts = _api.closure_convert(
        lambda y, x, *cs: tangent_solve(lambda u: _api.vjp(lambda w: fc(w, *cs), x)[1](u)[0], y),
        x_example, x_example, *consts)

    def solve_tangent(res, rhs):  # res: (x*, theta, tangent_solve's consts)
        x, cs, tf, _ = res
        return ts_fwd(rhs, x, *cs, *tf)

    def transpose_tangent(res, ct):
        x, cs, _, tb = res
        return ts_bwd(ct, x, *cs, *tb)

    # J^-1 r and J^-T r (J the Jacobian of f in x at x*), implicit in (x*, theta) = (res[0], res[1]) too
    def moved(res, dres, y):  # dJ y
        jy = lambda x, *c: _api.jvp(lambda u: fc(u, *c), (x,), (y,))[1]  # noqa: E731
        return _api.jvp(jy, (res[0],) + tuple(res[1]), (dres[0],) + tuple(dres[1]))[1]

    def moved_t(res, dres, z):  # dJ^T z
        jtz = lambda x, *c: _api.vjp(lambda u: fc(u, *c), x)[1](z)[0]  # noqa: E731
        return _api.jvp(jtz, (res[0],) + tuple(res[1]), (dres[0],) + tuple(dres[1]))[1]

    solve_linear = _implicit_solves(solve_tangent, transpose_tangent, moved, moved_t)

    def primal(*args):  # (f's consts, solve's, initial_guess)
        return sv(args[-1], *args[:n], *args[n:n + ns])

    g = _api.custom_jvp(primal)

    def rule(primals, tangents):
        cs, cs_dot = tuple(primals[:n]), tuple(tangents[:n])
        out = g(*primals)  # (g again, not primal: an outer derivative applies this rule too, not the solver's)
        x = x_of(out)
        if n:  # f(x*, theta) = 0, so J_x x' = -J_theta theta'
            f_dot = _api.jvp(lambda *c: fc(x, *c), cs, cs_dot)[1]
            rhs = _tu.tree_map(lambda v: -v, f_dot)
        else:
            rhs = _tu.tree_map(_np.zeros_like, x)
        x_dot = solve_linear((x, cs, tuple(tf_consts), tuple(tb_consts)), rhs)
        if has_aux:
            return out, (x_dot, _tu.tree_map(_np.zeros_like, out[1]))
        return out, x_dot

    g.defjvp(rule)
    return g(*consts, *s_consts, initial_guess)
