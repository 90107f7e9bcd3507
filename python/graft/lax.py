"""JAX's lax: primitives by name, structured control flow and collectives."""
import builtins as _builtins
import enum as _enum

import numpy as _np

from . import _graft
from ._api import _flat_arrays
from ._graft import (abs, axis_index, cos, exp, log, pmax, pmean, pmin, psum, sin, sqrt, stop_gradient,  # noqa: F401
                     tanh)
from ._tree import tree_flatten, tree_unflatten
from . import _lax_linalg as linalg  # noqa: E402  (graft.lax.linalg)
import sys as _sys  # noqa: E402
_sys.modules[__name__ + ".linalg"] = linalg


class FftType(_enum.IntEnum):
    """Which transform lax.fft computes (JAX's values)."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def fft(x, fft_type, fft_lengths):
    """JAX's lax.fft: the DFT over x's trailing len(fft_lengths) dimensions (IFFT and IRFFT normalized by
    1/N). fft_type is an FftType or its name ("fft", "IRFFT", ...)."""
    if isinstance(fft_type, str):
        names = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT, "irfft": FftType.IRFFT}
        if fft_type.lower() not in names:
            raise ValueError(f"Unknown FFT type '{fft_type}'")
        fft_type = names[fft_type.lower()]
    elif not isinstance(fft_type, FftType):
        raise TypeError(f"Unknown FFT type value '{fft_type}'")
    x = _graft.asarray(x)
    real = _np.dtype(str(x.dtype))
    if fft_type == FftType.RFFT:
        if real.kind == "c":
            raise ValueError("only real valued inputs supported for rfft")
        if real.kind not in "f" or real.itemsize < 4:
            x = x.astype("float32" if real.kind == "f" else _default_float())
    elif real.kind != "c":
        wide = real.kind == "f" and real.itemsize == 8 or (real.kind != "f" and _default_float() == "float64")
        x = x.astype("complex128" if wide else "complex64")
    if len(fft_lengths) == 0:
        return x
    return _graft.lax_fft(x, int(fft_type), tuple(fft_lengths))


def _default_float():
    from . import config
    return "float64" if config.jax_enable_x64 else "float32"

logistic = _graft.sigmoid
# lax does not promote: a Python number takes the other operand's dtype, arrays must agree (lax.cpp)
neg, sign, floor, ceil, is_finite = _graft.lax_neg, _graft.lax_sign, _graft.lax_floor, _graft.lax_ceil, _graft.lax_is_finite
exp2, log1p, expm1, cbrt = _graft.lax_exp2, _graft.lax_log1p, _graft.lax_expm1, _graft.lax_cbrt
tan, asin, acos, atan = _graft.lax_tan, _graft.lax_asin, _graft.lax_acos, _graft.lax_atan
sinh, cosh, asinh, acosh, atanh = _graft.lax_sinh, _graft.lax_cosh, _graft.lax_asinh, _graft.lax_acosh, _graft.lax_atanh
erf, erfc = _graft.lax_erf, _graft.lax_erfc
bitwise_not, population_count = _graft.lax_bitwise_not, _graft.lax_population_count
integer_pow = _graft.lax_integer_pow
add, sub, mul, div, rem = _graft.lax_add, _graft.lax_sub, _graft.lax_mul, _graft.lax_div, _graft.lax_rem
max, min, pow = _graft.lax_max, _graft.lax_min, _graft.lax_pow  # noqa: A001
atan2, nextafter = _graft.lax_atan2, _graft.lax_nextafter
bitwise_and, bitwise_or, bitwise_xor = _graft.lax_bitwise_and, _graft.lax_bitwise_or, _graft.lax_bitwise_xor
shift_left, shift_right_logical = _graft.lax_shift_left, _graft.lax_shift_right_logical
shift_right_arithmetic = _graft.lax_shift_right_arithmetic
eq, ne, lt, le, gt, ge = _graft.lax_eq, _graft.lax_ne, _graft.lax_lt, _graft.lax_le, _graft.lax_gt, _graft.lax_ge
clamp, select_n = _graft.lax_clamp, _graft.lax_select_n
real, imag, complex = _graft.lax_real, _graft.lax_imag, _graft.lax_complex  # noqa: A001


def conj(x):
    """The complex conjugate; a real operand becomes complex (JAX's lax.conj)."""
    x = _graft.asarray(x)
    if str(x.dtype).startswith("complex"):
        return _graft.lax_conj(x)
    return _graft.lax_complex(x, _graft.zeros_like(x))
convert_element_type, bitcast_convert_type = _graft.lax_convert_element_type, _graft.lax_bitcast_convert_type
reduce_sum, reduce_max, reduce_min = _graft.lax_reduce_sum, _graft.lax_reduce_max, _graft.lax_reduce_min
reduce_prod, reduce_and, reduce_or = _graft.lax_reduce_prod, _graft.lax_reduce_and, _graft.lax_reduce_or
argmax, argmin = _graft.lax_argmax, _graft.lax_argmin
broadcast_in_dim, transpose, rev = _graft.lax_broadcast_in_dim, _graft.lax_transpose, _graft.lax_rev
squeeze, expand_dims = _graft.lax_squeeze, _graft.lax_expand_dims
iota, broadcasted_iota = _graft.lax_iota, _graft.lax_broadcasted_iota
slice, slice_in_dim = _graft.lax_slice, _graft.lax_slice_in_dim  # noqa: A001
pad, concatenate = _graft.lax_pad, _graft.lax_concatenate
dynamic_slice, dynamic_update_slice = _graft.lax_dynamic_slice, _graft.lax_dynamic_update_slice
cumsum, cummax, cummin = _graft.lax_cumsum, _graft.lax_cummax, _graft.lax_cummin
dot = _graft.matmul
batch_matmul = _graft.matmul
rsqrt = _graft.rsqrt
square = _graft.square
lgamma, digamma, polygamma, zeta = (_graft.special_gammaln, _graft.special_digamma, _graft.special_polygamma,
                                    _graft.special_zeta)
bessel_i0e, bessel_i1e, erf_inv = _graft.special_i0e, _graft.special_i1e, _graft.erf_inv
random_gamma_grad = _graft.lax_random_gamma_grad
igamma, igammac, igamma_grad_a = _graft.special_gammainc, _graft.special_gammaincc, _graft.lax_igamma_grad_a
betainc = _graft.special_betainc


def with_sharding_constraint(x, sharding):
    """x laid out as `sharding` inside sharded jit (the identity elsewhere); x may be a pytree."""
    from ._tree import tree_map
    return tree_map(lambda a: _graft.with_sharding_constraint(a, sharding), x)


def _check_same(what, trees):
    first = trees[0]
    for t in trees[1:]:
        if t != first:
            raise TypeError(f"{what}: the branches return different structures: {first} and {t}")


def switch(index, branches, *operands):
    """branches[clamp(index, 0, len - 1)](*operands), traced as one cond."""
    leaves, tree = _flat_arrays(operands, "switch")
    outs = []

    def make(b):
        def flat(xs):
            o, d = tree_flatten(b(*tree_unflatten(tree, xs)))
            outs.append(d)
            return o
        return flat

    res = _graft.cond(index, [make(b) for b in branches], leaves)
    _check_same("switch", outs)
    return tree_unflatten(outs[0], res)


def cond(pred, true_fun, false_fun, *operands):
    """true_fun(*operands) if pred else false_fun(*operands), as a cond primitive (both traced)."""
    return switch(pred, [false_fun, true_fun], *operands)


def while_loop(cond_fun, body_fun, init_val, max_steps=-1):
    leaves, tree = _flat_arrays(init_val, "while_loop")
    res = _graft.while_loop(lambda xs: [cond_fun(tree_unflatten(tree, xs))],
                            lambda xs: tree_flatten(body_fun(tree_unflatten(tree, xs)))[0], leaves, max_steps)
    return tree_unflatten(tree, res)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """(final carry, stacked ys) of carry, y = f(carry, x) over the leading axis of xs.

    unroll (a positive int, or a bool: True unrolls fully) is accepted and checked as JAX does; it never
    changes values, and graft's loop runs one iteration per step whatever it says (jaxprs print unroll=1)."""
    if isinstance(unroll, bool):
        pass
    elif not isinstance(unroll, int) or unroll < 0:
        raise ValueError(f"scan: unroll must be a non-negative int or a bool, got {unroll!r}")
    c_leaves, c_tree = _flat_arrays(init, "scan")
    x_leaves, x_tree = _flat_arrays(xs, "scan")
    nc = len(c_leaves)
    box = {}

    def flat(vals):
        carry, y = f(tree_unflatten(c_tree, vals[:nc]), tree_unflatten(x_tree, vals[nc:]))
        co, cd = tree_flatten(carry)
        if cd != c_tree:
            raise TypeError(f"scan: the body returns a carry of structure {cd}, the initial carry is {c_tree}")
        yo, box["y"] = tree_flatten(y)
        return co + yo

    res = _graft.scan(flat, c_leaves, x_leaves, length, reverse)
    return tree_unflatten(c_tree, res[:nc]), tree_unflatten(box["y"], res[nc:])


def fori_loop(lower, upper, body_fun, init_val):
    """body_fun(i, val) for i in [lower, upper), as a scan (so reverse mode differentiates it)."""
    if not isinstance(lower, int) or not isinstance(upper, int):
        def body(c):
            i, v = c
            return (i + 1, body_fun(i, v))
        return while_loop(lambda c: c[0] < upper, body, (_graft.asarray(lower), init_val))[1]

    def step(c, _):
        i, v = c
        return (i + 1, body_fun(i, v)), None

    (_, val), _ = scan(step, (_graft.asarray(lower, "int32"), init_val), None, length=upper - lower)
    return val


# ---- shapes, selection, constants -------------------------------------------------------------------------
def round(x, rounding_method=0):  # noqa: A001
    """rounding_method 0 (or "AWAY_FROM_ZERO") rounds halves away from zero, 1 ("TO_NEAREST_EVEN") to even."""
    if isinstance(rounding_method, str):
        rounding_method = {"AWAY_FROM_ZERO": 0, "TO_NEAREST_EVEN": 1}[rounding_method]
    return _graft.lax_round(x, int(rounding_method))


def reciprocal(x):
    return integer_pow(x, -1)


def select(pred, on_true, on_false):
    return select_n(pred, on_false, on_true)


def reshape(operand, new_sizes, dimensions=None):
    """operand's elements (in the order `dimensions` gives, row-major otherwise) as new_sizes."""
    if dimensions is not None:
        operand = transpose(operand, list(dimensions))
    return _graft.lax_reshape(operand, tuple(new_sizes))


def broadcast(operand, sizes):
    """operand with leading dimensions `sizes` added."""
    operand = _graft.asarray(operand)
    nd = operand.ndim
    return broadcast_in_dim(operand, tuple(sizes) + tuple(operand.shape), list(range(len(sizes), len(sizes) + nd)))


def full(shape, fill_value, dtype=None):
    v = _graft.asarray(fill_value)
    return _graft.full(tuple(shape), fill_value, dtype if dtype is not None else str(v.dtype))


def full_like(x, fill_value, dtype=None, shape=None):
    x = _graft.asarray(x)
    return full(x.shape if shape is None else shape, fill_value, str(x.dtype) if dtype is None else dtype)


def zeros_like_array(x):
    return full_like(x, 0)


def index_in_dim(operand, index, axis=0, keepdims=True):
    operand = _graft.asarray(operand)
    index = index + operand.shape[axis] if index < 0 else index
    r = slice_in_dim(operand, index, index + 1, 1, axis)
    return r if keepdims else squeeze(r, [axis if axis >= 0 else axis + operand.ndim])


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    operand = _graft.asarray(operand)
    axis = axis + operand.ndim if axis < 0 else axis
    starts = [_graft.asarray(0, "int32")] * operand.ndim
    starts[axis] = _graft.asarray(start_index).astype("int32")
    sizes = list(operand.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    r = dynamic_slice_in_dim(operand, index, 1, axis)
    return r if keepdims else squeeze(r, [axis if axis >= 0 else axis + _graft.asarray(operand).ndim])


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    operand = _graft.asarray(operand)
    axis = axis + operand.ndim if axis < 0 else axis
    starts = [_graft.asarray(0, "int32")] * operand.ndim
    starts[axis] = _graft.asarray(start_index).astype("int32")
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    update = _graft.asarray(update)
    operand = _graft.asarray(operand)
    if update.ndim == operand.ndim - 1:
        update = expand_dims(update, [axis if axis >= 0 else axis + operand.ndim])
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    return _graft.lax_dot_general(lhs, rhs, dimension_numbers, preferred_element_type)


def optimization_barrier(operand):
    """The identity on values (graft's compiler does not move computations across jit boundaries that
    would need a barrier); kept for JAX code that calls it."""
    return operand


# ---- sorting and scans ------------------------------------------------------------------------------------
def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """A sorted array, or sorted sequence of arrays (ordered by the first num_keys, lexicographically)."""
    if isinstance(operand, (list, tuple)):
        nd = _graft.asarray(operand[0]).ndim
        return tuple(_graft.lax_sort(list(operand), dimension % _builtins.max(nd, 1), is_stable, num_keys))
    nd = _graft.asarray(operand).ndim
    return _graft.lax_sort([operand], dimension % _builtins.max(nd, 1), is_stable, 1)[0]


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    nd = _graft.asarray(keys).ndim
    k, v = _graft.lax_sort([keys, values], dimension % _builtins.max(nd, 1), is_stable, 1)
    return k, v


def top_k(operand, k):
    """The k largest entries along the last axis, in descending order, and their (int32) indices; ties keep
    the lower index first."""
    operand = _graft.asarray(operand)
    n = operand.shape[-1]
    idx = broadcasted_iota("int32", operand.shape, operand.ndim - 1)
    key = neg(operand) if str(operand.dtype) not in ("bool", "uint8", "uint16", "uint32", "uint64") else \
        sub(full_like(operand, _np_max(operand.dtype)), operand)
    sk, si = _graft.lax_sort([key, idx], operand.ndim - 1, True, 1)
    vals = _graft.take_along_axis(operand, si, operand.ndim - 1)
    lim = tuple([_builtins.slice(None)] * (operand.ndim - 1) + [_builtins.slice(0, _builtins.min(k, n))])
    return vals[lim], si[lim]


def _np_max(dtype):
    import numpy as np
    return np.iinfo(str(dtype)).max if str(dtype) != "bool" else 1


def cumprod(operand, axis=0, reverse=False):
    operand = _graft.asarray(operand)
    if reverse:
        return rev(_graft.cumprod(rev(operand, [axis]), axis), [axis])
    return _graft.cumprod(operand, axis)


def cumlogsumexp(operand, axis=0, reverse=False):
    """log(cumsum(exp(x))) without overflow or underflow: a running logaddexp (each prefix relative to its own
    maximum), in O(log n) rounds as JAX's."""
    from . import numpy as _gnp
    operand = _graft.asarray(operand)
    return associative_scan(_gnp.logaddexp, operand, reverse=reverse, axis=axis % _builtins.max(operand.ndim, 1))


def associative_scan(fn, elems, reverse=False, axis=0):
    """All prefix combinations of elems (a pytree of arrays) along axis by the associative fn, in
    O(log n) rounds of fn on halves (the Blelloch-style recursion JAX uses), so every round is one
    vectorized call of fn."""
    leaves, tree = tree_flatten(elems)
    leaves = [_graft.asarray(x) for x in leaves]
    if reverse:
        leaves = [rev(x, [axis]) for x in leaves]
    n = leaves[0].shape[axis]

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        return tree_flatten(out)[0]

    def take(xs, start, stop, step=1):
        return [slice_in_dim(x, start, stop, step, axis) for x in xs]

    def interleave(evens, odds, n_total):
        out = []
        for e, o in zip(evens, odds):
            ne, no = e.shape[axis], o.shape[axis]
            if no < ne:  # pad odds with a copy of the last even to stack, then drop it
                o = concatenate([o, slice_in_dim(e, ne - 1, ne, 1, axis)], axis)
            st = _graft.stack([e, o], axis + 1)
            shape = list(e.shape)
            shape[axis] = 2 * ne
            r = reshape(st, shape)
            out.append(slice_in_dim(r, 0, n_total, 1, axis))
        return out

    def scan_(xs):
        m = xs[0].shape[axis]
        if m < 2:
            return xs
        reduced = combine(take(xs, 0, m - 1, 2), take(xs, 1, m, 2))
        odd = scan_(reduced)
        if m % 2 == 0:
            even = combine(take(odd, 0, len_(odd) - 1), take(xs, 2, m, 2))
        else:
            even = combine(odd, take(xs, 2, m, 2))
        even = [concatenate([slice_in_dim(x, 0, 1, 1, axis), e], axis) for x, e in zip(xs, even)]
        return interleave(even, odd, m)

    def len_(xs):
        return xs[0].shape[axis]

    out = scan_(leaves) if n else leaves
    if reverse:
        out = [rev(x, [axis]) for x in out]
    return tree_unflatten(tree, out)


def map(f, xs, *, batch_size=None):  # noqa: A001
    """f applied to each slice of xs along its leading axis (a scan: one trace of f); with batch_size,
    batch_size slices at a time under vmap, the remainder after."""
    if batch_size is None:
        return scan(lambda c, x: (c, f(x)), None, xs)[1]
    from ._api import vmap
    from ._tree import tree_map
    leaves = tree_flatten(xs)[0]
    n = _graft.asarray(leaves[0]).shape[0]
    nb, rem_ = n // batch_size, n % batch_size
    main = tree_map(lambda x: reshape(slice_in_dim(x, 0, nb * batch_size, 1, 0),
                                      (nb, batch_size) + tuple(_graft.asarray(x).shape[1:])), xs)
    ys = scan(lambda c, x: (c, vmap(f)(x)), None, main)[1]
    ys = tree_map(lambda y: reshape(y, (nb * batch_size,) + tuple(y.shape[2:])), ys)
    if rem_:
        tail = vmap(f)(tree_map(lambda x: slice_in_dim(x, nb * batch_size, n, 1, 0), xs))
        ys = tree_map(lambda a, b: concatenate([a, b], 0), ys, tail)
    return ys


# ---- windows and convolution -------------------------------------------------------------------------------
def _padding_pairs(padding, in_sizes, window, strides, dilation=None):
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    dilation = dilation or [1] * len(in_sizes)
    if padding.upper() == "VALID":
        return [(0, 0)] * len(in_sizes)
    if padding.upper() not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or pairs, got {padding!r}")
    out = []
    for n, k, s, d in zip(in_sizes, window, strides, dilation):
        o = -(-n // s)
        total = _builtins.max((o - 1) * s + (k - 1) * d + 1 - n, 0)
        lo = total // 2 if padding.upper() == "SAME" else total - total // 2
        out.append((lo, total - lo))
    return out


def reduce_window(operand, init_value, computation, window_dimensions, window_strides, padding,
                  base_dilation=None, window_dilation=None):
    """Windowed reductions whose computation is lax.add, lax.max or lax.min (from init_value 0, -inf or
    +inf: the ones graft has primitives for)."""
    operand = _graft.asarray(operand)
    pads = _padding_pairs(padding, operand.shape, window_dimensions, window_strides, window_dilation)
    fns = {add: _graft.lax_reduce_window_sum, max: _graft.lax_reduce_window_max, min: _graft.lax_reduce_window_min}
    if computation not in fns:
        raise NotImplementedError("reduce_window: the computation must be lax.add, lax.max or lax.min")
    return fns[computation](operand, tuple(window_dimensions), tuple(window_strides), pads,
                            None if base_dilation is None else tuple(base_dilation),
                            None if window_dilation is None else tuple(window_dilation))


def _conv_specs(dimension_numbers, nd):
    if dimension_numbers is None:
        return tuple(range(nd)), tuple(range(nd)), tuple(range(nd))
    lhs, rhs, out = dimension_numbers
    if not isinstance(lhs, str):
        return tuple(lhs), tuple(rhs), tuple(out)

    def perm(spec, first, second, spatial_order):
        sp = sorted((i for i, c in enumerate(spec) if c not in (first, second)), key=lambda i: spatial_order.index(spec[i]))
        return (spec.index(first), spec.index(second)) + tuple(sp)

    rhs_spatial = [c for c in rhs if c not in "OI"]
    return (perm(lhs, "N", "C", rhs_spatial), perm(rhs, "O", "I", rhs_spatial), perm(out, "N", "C", rhs_spatial))


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1, precision=None,
                         preferred_element_type=None):
    lhs, rhs = _graft.asarray(lhs), _graft.asarray(rhs)
    ls, rs, os_ = _conv_specs(dimension_numbers, lhs.ndim)
    nsp = lhs.ndim - 2
    lhs_dilation = tuple(lhs_dilation) if lhs_dilation is not None else (1,) * nsp
    rhs_dilation = tuple(rhs_dilation) if rhs_dilation is not None else (1,) * nsp
    if isinstance(padding, str):
        in_sp = [(lhs.shape[ls[2 + i]] - 1) * lhs_dilation[i] + 1 for i in range(nsp)]
        k_sp = [rhs.shape[rs[2 + i]] for i in range(nsp)]
        padding = _padding_pairs(padding, in_sp, k_sp, window_strides, rhs_dilation)
    return _graft.lax_conv_general_dilated(lhs, rhs, tuple(window_strides), [tuple(p) for p in padding], lhs_dilation,
                                           rhs_dilation, (list(ls), list(rs), list(os_)), feature_group_count,
                                           batch_group_count)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding)


from ._lax_more import *  # noqa: E402,F401,F403  (gather/scatter, collectives, reduce, shape helpers, ...)
