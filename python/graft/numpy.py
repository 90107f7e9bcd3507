"""NumPy's interface on graft arrays (JAX's jax.numpy): `import graft.numpy as gnp`."""
import builtins as _builtins

import numpy as _np

from . import _graft
from ._graft import (abs, all, any, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh,  # noqa: F401
                     argmax, argmin, argsort, broadcast_to, cbrt, ceil, clip, concatenate, cos, cosh, cumsum, divide,
                     dot, einsum, equal, exp, exp2, expand_dims, expm1, eye, flip, floor, floor_divide, full,
                     greater, greater_equal, inner, isfinite, isinf, isnan, less, less_equal, linspace, log, log1p,
                     log2, log10, logaddexp, logical_and, logical_not, logical_or, logical_xor, matmul, max, maximum,
                     mean, min, minimum, moveaxis, multiply, negative, not_equal, ones, ones_like, outer, power, prod,
                     ravel, reciprocal, remainder, repeat, reshape, round, sign, sin, sinh, sort, sqrt, square,
                     squeeze, stack, std, subtract, sum, swapaxes, take, tan, tanh, tile, transpose, var, vdot, where,
                     zeros, zeros_like)
from ._graft import Array as ndarray  # noqa: F401
from ._graft import tril, triu  # noqa: F401
from . import _numpy_linalg as linalg  # noqa: E402  (graft.numpy.linalg)
import sys as _sys  # noqa: E402
_sys.modules[__name__ + ".linalg"] = linalg
from . import _numpy_fft as fft  # noqa: E402  (graft.numpy.fft)
_sys.modules[__name__ + ".fft"] = fft

add = _graft.add
absolute = abs
bitwise_and, bitwise_or, bitwise_xor = _graft.bitwise_and, _graft.bitwise_or, _graft.bitwise_xor
bitwise_not = invert = _graft.bitwise_not
left_shift, right_shift = _graft.left_shift, _graft.right_shift
isclose = _graft.isclose
cumprod = cumproduct = _graft.cumprod
product = prod
take_along_axis = _graft.take_along_axis


def broadcast_arrays(*args):
    return list(_graft.broadcast_arrays(*args))


def broadcast_shapes(*shapes):
    return tuple(_np.broadcast_shapes(*shapes))

amax, amin = max, min
true_divide = divide
mod = remainder

# dtypes: NumPy's scalar types (usable as x.astype(gnp.float32)); NumPy has no bfloat16
float16, float32, float64 = _np.float16, _np.float32, _np.float64
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
bool_ = _np.bool_
complex64, complex128 = _np.complex64, _np.complex128
bfloat16 = "bfloat16"
pi, e, inf, nan = _np.pi, _np.e, _np.inf, _np.nan
newaxis = None


def arange(start, stop=None, step=1, dtype=None):
    """NumPy's arange; float bounds give the default float (float32, float64 with x64), integer bounds
    the default int."""
    if dtype is None:
        floats = _builtins.any(isinstance(v, float) for v in (start, stop, step))
        dtype = "float_" if floats else "int_"
    return _graft.arange(start, stop, step, dtype)


from_dlpack = _graft.from_dlpack


def asarray(a, dtype=None):
    return _graft.asarray(a, dtype)


def array(a, dtype=None):
    return _graft.asarray(a, dtype)


def full_like(x, fill_value, dtype=None):
    x = asarray(x)
    return full(x.shape, fill_value, dtype if dtype is not None else x.dtype)


def dtype(x, align=False, copy=False):
    """NumPy's dtype constructor, as jnp.dtype is: dtype('float32'), dtype(float32), dtype(a dtype);
    'bfloat16' gives graft's bfloat16. An array (not a dtype spec) gives its dtype."""
    if isinstance(x, str) and x in ("bfloat16", "bf16"):
        return "bfloat16"
    if isinstance(x, (str, type, _np.dtype)):
        return _np.dtype(x, align=align, copy=copy)
    return asarray(x).dtype


def shape(x):
    return asarray(x).shape


def ndim(x):
    return asarray(x).ndim


def size(x, axis=None):
    """The number of elements, or along one axis (NumPy's and JAX's `axis`)."""
    x = asarray(x)
    return x.size if axis is None else x.shape[axis]


def where(condition, x=None, y=None, *, size=None, fill_value=None):
    """where(c, x, y) picks x where c holds and y elsewhere; where(c) is nonzero(c), with JAX's `size` and
    `fill_value` for a static result shape under jit."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither")
    if size is not None or fill_value is not None:
        raise ValueError("where: size and fill_value apply to the one-argument form only")
    return _graft.where(condition, x, y)


def allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    """A bool array (traceable, as JAX's): whether every element of a is close to b's."""
    close = isclose(a, b, rtol=rtol, atol=atol)
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return all(close)


def split(x, indices_or_sections, axis=0):
    x = asarray(x)
    n = x.shape[axis]
    if isinstance(indices_or_sections, int):
        if n % indices_or_sections:
            raise ValueError(f"split: {n} entries along axis {axis} do not divide into {indices_or_sections} parts")
        step = n // indices_or_sections
        cuts = list(range(step, n, step))
    else:
        cuts = list(indices_or_sections)
    bounds = [0] + cuts + [n]
    index = [slice(None)] * x.ndim
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        index[axis] = slice(lo, hi)
        out.append(x[tuple(index)])
    return out


from ._numpy_extra import *  # noqa: E402,F401,F403  (more of NumPy's functions as composites)
from ._numpy_extra import divmod, round_  # noqa: E402,F401,A001
from ._numpy_more import *  # noqa: E402,F401,F403  (aliases, Array API helpers, index tricks, polynomials)
from ._numpy_more import bool, pow  # noqa: E402,F401,A001
