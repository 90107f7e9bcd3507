"""graft.lax against NumPy / SciPy references, one row per function (the lax half of the lax_numpy_test-style
suite; test_numpy_conformance.py is the graft.numpy half). Each row runs over its dtypes, eagerly and under
jit, and its float64 derivative is checked against central differences where the function is smooth.
lax's own semantics are the reference where they differ from NumPy's: `lax.div` and `lax.rem` truncate
toward zero, `lax.round` rounds half away from zero by default, shifts past the width give 0 (or the sign).
"""
import numpy as np
import pytest
import scipy.special as sps

import graft as gf
import graft.numpy as gnp
from graft import lax

F32, F64, I32 = "float32", "float64", "int32"
TOL = {F32: 2e-6, F64: 1e-13, I32: 0, "uint32": 0, "bool": 0}


def draw(shape, dtype, lo, hi, rng):
    if dtype in (I32, "uint32"):
        return rng.integers(int(lo), int(hi), shape).astype(dtype)
    return rng.uniform(lo, hi, shape).astype(dtype)


class L:
    """lax.`name`(*arrays, **params) against `ref`(*arrays) over `dtypes`, inputs drawn from [lo, hi)."""

    def __init__(self, name, ref, arity=1, dtypes=(F32, F64), lo=-3.0, hi=3.0, grad=True, tol=None, shapes=None,
                 id=None, **params):
        self.name, self.ref, self.arity, self.dtypes, self.lo, self.hi = name, ref, arity, dtypes, lo, hi
        self.grad, self.tol, self.params = grad, tol, params
        self.shapes = shapes or [(2, 3)] * arity
        self.fn = getattr(lax, name)
        self.id = id or name

    def __call__(self, *a):
        return self.fn(*a, **self.params)


def _trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(a.dtype)


def _clz(x):
    x = x.astype(np.uint32)
    return np.array([32 - int(v).bit_length() for v in x.ravel()], np.int32).reshape(x.shape)


def _popcount(x):
    x = x.astype(np.uint32)
    return np.array([bin(int(v)).count("1") for v in x.ravel()], np.int32).reshape(x.shape)


ROWS = [
    # unary, floating
    L("abs", np.abs), L("neg", np.negative), L("sign", np.sign, grad=False), L("floor", np.floor, grad=False),
    L("ceil", np.ceil, grad=False), L("round", lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), grad=False),
    L("round", np.round, grad=False, id="round(TO_NEAREST_EVEN)", rounding_method=1),
    L("is_finite", np.isfinite, grad=False), L("exp", np.exp), L("exp2", np.exp2), L("expm1", np.expm1),
    L("log", np.log, lo=0.1), L("log1p", np.log1p, lo=-0.9), L("logistic", sps.expit), L("tanh", np.tanh),
    L("sin", np.sin), L("cos", np.cos), L("tan", np.tan, lo=-1.4, hi=1.4), L("asin", np.arcsin, lo=-0.95, hi=0.95),
    L("acos", np.arccos, lo=-0.95, hi=0.95), L("atan", np.arctan), L("sinh", np.sinh), L("cosh", np.cosh),
    L("asinh", np.arcsinh), L("acosh", np.arccosh, lo=1.1), L("atanh", np.arctanh, lo=-0.95, hi=0.95),
    L("sqrt", np.sqrt, lo=0.1), L("rsqrt", lambda x: 1 / np.sqrt(x), lo=0.1), L("cbrt", np.cbrt, lo=0.1),
    L("square", np.square), L("reciprocal", np.reciprocal, lo=0.5),
    L("integer_pow", lambda x: x ** 3, id="integer_pow(3)", y=3), L("integer_pow", lambda x: x ** -2.0, lo=0.5,
                                                                       id="integer_pow(-2)", y=-2),
    L("erf", sps.erf), L("erfc", sps.erfc), L("erf_inv", sps.erfinv, lo=-0.9, hi=0.9, tol=1e-5),
    L("lgamma", sps.gammaln, lo=0.1, hi=6.0, tol=1e-5), L("digamma", sps.digamma, lo=0.2, hi=6.0, tol=1e-5),
    L("bessel_i0e", sps.i0e, tol=1e-5), L("bessel_i1e", sps.i1e, tol=1e-5),
    # unary, integer
    L("clz", _clz, dtypes=(I32,), lo=0, hi=2**20, grad=False),
    L("population_count", _popcount, dtypes=(I32,), lo=0, hi=2**20, grad=False),
    L("bitwise_not", np.invert, dtypes=(I32,), lo=-100, hi=100, grad=False),
    L("abs", np.abs, dtypes=(I32,), lo=-9, hi=9, id="abs(int)", grad=False),
    L("sign", np.sign, dtypes=(I32,), lo=-9, hi=9, id="sign(int)", grad=False),
    # binary
    L("add", np.add, 2, dtypes=(F32, F64, I32)), L("sub", np.subtract, 2, dtypes=(F32, F64, I32)),
    L("mul", np.multiply, 2, dtypes=(F32, F64, I32)), L("div", np.divide, 2, lo=0.5),
    L("div", _trunc_div, 2, dtypes=(I32,), lo=1, hi=20, id="div(int, truncating)", grad=False),
    L("rem", np.fmod, 2, lo=0.5, grad=False), L("rem", np.fmod, 2, dtypes=(I32,), lo=1, hi=20, id="rem(int)",
                                                 grad=False),
    L("max", np.maximum, 2, dtypes=(F32, F64, I32)), L("min", np.minimum, 2, dtypes=(F32, F64, I32)),
    L("pow", np.power, 2, lo=0.5), L("atan2", np.arctan2, 2), L("nextafter", np.nextafter, 2, grad=False),
    L("eq", np.equal, 2, dtypes=(F32, I32), lo=0, hi=3, grad=False), L("ne", np.not_equal, 2, dtypes=(I32,),
                                                                       lo=0, hi=3, grad=False),
    L("lt", np.less, 2, dtypes=(F32, I32), lo=0, hi=3, grad=False), L("le", np.less_equal, 2, dtypes=(I32,),
                                                                       lo=0, hi=3, grad=False),
    L("gt", np.greater, 2, dtypes=(F32,), grad=False), L("ge", np.greater_equal, 2, dtypes=(I32,), lo=0, hi=3,
                                                          grad=False),
    L("bitwise_and", np.bitwise_and, 2, dtypes=(I32,), lo=-50, hi=50, grad=False),
    L("bitwise_or", np.bitwise_or, 2, dtypes=(I32,), lo=-50, hi=50, grad=False),
    L("bitwise_xor", np.bitwise_xor, 2, dtypes=(I32,), lo=-50, hi=50, grad=False),
    L("shift_left", lambda a, b: np.left_shift(a, b), 2, dtypes=(I32,), lo=0, hi=20, grad=False),
    L("shift_right_arithmetic", np.right_shift, 2, dtypes=(I32,), lo=0, hi=20, grad=False),
    L("shift_right_logical", lambda a, b: (a.astype(np.uint32) >> b.astype(np.uint32)).astype(np.int32), 2,
      dtypes=(I32,), lo=0, hi=20, grad=False),
    L("igamma", sps.gammainc, 2, lo=0.5, hi=4.0, tol=1e-5, grad=False),
    L("igammac", sps.gammaincc, 2, lo=0.5, hi=4.0, tol=1e-5, grad=False),
    L("zeta", sps.zeta, 2, lo=1.5, hi=4.0, tol=1e-5, grad=False),
    # shapes and data movement
    L("transpose", lambda x: np.transpose(x, (2, 0, 1)), shapes=[(2, 3, 4)], permutation=(2, 0, 1)),
    L("rev", lambda x: x[::-1, :, ::-1], shapes=[(2, 3, 4)], dimensions=(0, 2)),
    L("reshape", lambda x: x.reshape(4, 6), shapes=[(2, 3, 4)], new_sizes=(4, 6)),
    L("reshape", lambda x: np.transpose(x, (1, 0, 2)).reshape(3, 8), shapes=[(2, 3, 4)], new_sizes=(3, 8),
      dimensions=(1, 0, 2), id="reshape(dimensions)"),
    L("squeeze", lambda x: x.reshape(3, 4), shapes=[(1, 3, 1, 4)], dimensions=(0, 2)),
    L("expand_dims", lambda x: x[None, :, None], shapes=[(3, 4)], dimensions=(0, 2)),
    L("broadcast_in_dim", lambda x: np.broadcast_to(x[:, None, :], (3, 2, 4)), shapes=[(3, 4)],
      shape=(3, 2, 4), broadcast_dimensions=(0, 2)),
    L("slice", lambda x: x[1:5:2, 0:3], shapes=[(6, 4)], start_indices=(1, 0), limit_indices=(5, 3),
      strides=(2, 1)),
    L("pad", lambda x: np.pad(x, ((1, 2), (0, 0)), constant_values=0), shapes=[(3, 4)],
      padding_value=0.0, padding_config=((1, 2, 0), (0, 0, 0))),
    L("pad", lambda x: np.insert(x, [1, 2], 0.0, axis=1)[:, 1:], shapes=[(3, 3)], padding_value=0.0,
      padding_config=((0, 0, 0), (-1, 0, 1)), id="pad(negative, interior)"),
    L("reduce_sum", lambda x: x.sum(axis=(0, 2)), shapes=[(2, 3, 4)], axes=(0, 2)),
    L("reduce_max", lambda x: x.max(axis=1), shapes=[(2, 3, 4)], axes=(1,)),
    L("reduce_min", lambda x: x.min(axis=(0, 1)), shapes=[(2, 3, 4)], axes=(0, 1)),
    L("reduce_prod", lambda x: x.prod(axis=0), shapes=[(3, 4)], axes=(0,), lo=0.5, hi=1.5),
    L("argmax", lambda x: x.argmax(axis=1).astype(np.int32), shapes=[(3, 5)], axis=1, index_dtype=np.int32,
      grad=False),
    L("argmin", lambda x: x.argmin(axis=0).astype(np.int32), shapes=[(3, 5)], axis=0, index_dtype=np.int32,
      grad=False),
    L("cumsum", lambda x: np.cumsum(x, axis=1), shapes=[(3, 5)], axis=1),
    L("cumsum", lambda x: np.cumsum(x[:, ::-1], axis=1)[:, ::-1], shapes=[(3, 5)], axis=1, reverse=True,
      id="cumsum(reverse)"),
    L("cumprod", lambda x: np.cumprod(x, axis=0), shapes=[(4, 3)], axis=0, lo=0.5, hi=1.5),
    L("cummax", lambda x: np.maximum.accumulate(x, axis=1), shapes=[(3, 5)], axis=1),
    L("cummin", lambda x: np.minimum.accumulate(x, axis=0), shapes=[(4, 3)], axis=0),
    L("cumlogsumexp", lambda x: np.logaddexp.accumulate(x, axis=1), shapes=[(3, 5)], axis=1),
    L("sort", lambda x: np.sort(x, axis=0), shapes=[(4, 3)], dimension=0, grad=False),
    L("dot_general", lambda a, b: np.einsum("bij,bjk->bik", a, b), 2, shapes=[(2, 3, 4), (2, 4, 5)],
      dimension_numbers=(((2,), (1,)), ((0,), (0,)))),
    L("dot_general", lambda a, b: np.einsum("ij,kj->ik", a, b), 2, shapes=[(3, 4), (5, 4)],
      dimension_numbers=(((1,), (1,)), ((), ())), id="dot_general(nt)"),
    L("clamp", lambda lo, x, hi: np.clip(x, lo, hi), 3, shapes=[(), (3, 4), ()], grad=False),
]


def params():
    return [pytest.param(r, d, id=f"{r.id}-{d}") for r in ROWS for d in r.dtypes]


@pytest.mark.parametrize("row,dtype", params())
def test_values_eager_and_jit(row, dtype):
    rng = np.random.default_rng(abs(hash(row.id)) % 2**32)
    args = [draw(s, dtype, row.lo, row.hi, rng) for s in row.shapes]
    if row.name == "clamp":  # lo <= hi
        args[0], args[2] = np.minimum(args[0], args[2]), np.maximum(args[0], args[2])
    with np.errstate(all="ignore"):
        want = np.asarray(row.ref(*args))
    tol = row.tol if (row.tol and dtype != I32) else TOL[dtype]
    for how, got in (("eager", row(*[gnp.asarray(a) for a in args])),
                     ("jit", gf.jit(row)(*[gnp.asarray(a) for a in args]))):
        got = np.asarray(got)
        assert got.shape == want.shape, f"{how} {row.id}: shape {got.shape}, reference {want.shape}"
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want, err_msg=f"{how} {row.id}")
        else:
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{how} {row.id} {dtype}")


def _fd(f, args, i, eps=1e-6):
    x = args[i]
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        hi = [a + e if j == i else a for j, a in enumerate(args)]
        lo = [a - e if j == i else a for j, a in enumerate(args)]
        g.reshape(-1)[k] = (np.sum(np.asarray(f(*hi))) - np.sum(np.asarray(f(*lo)))) / (2 * eps)
    return g


@pytest.mark.parametrize("row", [r for r in ROWS if r.grad and F64 in r.dtypes], ids=lambda r: r.id)
def test_grad_against_finite_differences(row):
    rng = np.random.default_rng(20)
    args = [draw(s, F64, row.lo, row.hi, rng) for s in row.shapes]
    w = rng.normal(size=np.shape(np.asarray(row(*args))))
    for i in range(row.arity):
        g = gf.grad(lambda *a: gnp.sum(row(*a) * w), argnums=i)(*[gnp.asarray(a) for a in args])
        want = _fd(lambda *a: np.asarray(row(*a)) * w, args, i)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6, atol=1e-6, err_msg=f"d{row.id}/darg{i}")


def test_reduce_window_and_convolution_against_loops():
    rng = np.random.default_rng(21)
    x = rng.normal(size=(2, 7, 6))
    got = lax.reduce_window(x, -np.inf, lax.max, (1, 3, 2), (1, 2, 2), "VALID")
    want = np.array([[[x[b, 2 * i:2 * i + 3, 2 * j:2 * j + 2].max() for j in range(3)] for i in range(3)]
                     for b in range(2)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)
    # NCHW / OIHW convolution with stride 2 and padding 1 against the definition
    img, ker = rng.normal(size=(1, 2, 5, 5)), rng.normal(size=(3, 2, 3, 3))
    got = lax.conv_general_dilated(img, ker, (2, 2), ((1, 1), (1, 1)))
    p = np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.array([[[[np.sum(p[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3] * ker[o]) for j in range(3)]
                       for i in range(3)] for o in range(3)]])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gf.jit(lambda a, k: lax.conv_general_dilated(a, k, (2, 2), ((1, 1), (1, 1))))(
        img, ker)), want, rtol=1e-12)


def test_dynamic_slices_top_k_and_select_n_against_numpy():
    rng = np.random.default_rng(22)
    x = rng.normal(size=(5, 6))
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice(x, (1, 2), (3, 2))), x[1:4, 2:4])
    # out-of-range starts are clamped, as in XLA
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice(x, (4, -3), (3, 2))), x[2:5, 0:2])
    u = rng.normal(size=(2, 3))
    want = x.copy()
    want[3:5, 1:4] = u
    np.testing.assert_array_equal(np.asarray(lax.dynamic_update_slice(x, u, (3, 1))), want)
    vals, idx = lax.top_k(x, 3)
    np.testing.assert_array_equal(np.asarray(idx), np.argsort(-x, axis=-1, kind="stable")[:, :3])
    np.testing.assert_array_equal(np.asarray(vals), -np.sort(-x, axis=-1)[:, :3])
    which = rng.integers(0, 3, (5, 6)).astype(np.int32)
    cases = [x, -x, 2 * x]
    np.testing.assert_array_equal(np.asarray(lax.select_n(which, *cases)), np.choose(which, cases))
    np.testing.assert_array_equal(np.asarray(lax.concatenate([x, -x], 1)), np.concatenate([x, -x], 1))
    np.testing.assert_array_equal(np.asarray(lax.broadcasted_iota(np.int32, (2, 3), 1)),
                                  np.broadcast_to(np.arange(3), (2, 3)))
    f = np.array([1.5, -2.25], np.float32)
    np.testing.assert_array_equal(np.asarray(lax.bitcast_convert_type(f, np.int32)), f.view(np.int32))
    np.testing.assert_array_equal(np.asarray(lax.convert_element_type(np.array([1.7, -1.7]), np.int32)), [1, -1])


def test_integer_div_and_rem_truncate_toward_zero():
    a = np.array([7, -7, 7, -7, 0, 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, -5], np.int32)
    for f in (lambda x, y: lax.div(x, y), gf.jit(lambda x, y: lax.div(x, y))):
        np.testing.assert_array_equal(np.asarray(f(a, b)), [3, -3, -3, 3, 0, -1])
    for f in (lambda x, y: lax.rem(x, y), gf.jit(lambda x, y: lax.rem(x, y))):
        np.testing.assert_array_equal(np.asarray(f(a, b)), np.fmod(a, b))


def test_remaining_lax_functions_against_numpy():
    """The lax functions without a row above, each against NumPy / SciPy or its definition."""
    rng = np.random.default_rng(23)
    a, b = rng.normal(size=(3, 2, 4)), rng.normal(size=(3, 4, 5))
    np.testing.assert_allclose(np.asarray(lax.batch_matmul(a, b)), a @ b, rtol=1e-13)
    m, n = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    np.testing.assert_allclose(np.asarray(lax.dot(m, n)), m @ n, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(gf.jit(lax.dot)(m, n)), m @ n, rtol=1e-13)
    # patches: channel-major (c, kh, kw) features of every window, as JAX's
    img = rng.normal(size=(1, 2, 4, 5))
    pt = np.asarray(lax.conv_general_dilated_patches(img, (2, 3), (1, 1), "VALID"))
    assert pt.shape == (1, 2 * 2 * 3, 3, 3)
    want = np.array([[[[img[0, c, y + i, x + j] for x in range(3)] for y in range(3)]
                      for c in range(2) for i in range(2) for j in range(3)]])
    np.testing.assert_allclose(pt, want, rtol=1e-13)
    assert lax.conv_general_permutations(("NHWC", "HWIO", "NHWC")) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    ker = rng.normal(size=(3, 2, 2, 2))
    np.testing.assert_allclose(np.asarray(lax.conv_with_general_padding(img, ker, (1, 1), ((1, 0), (0, 1)), (1, 1), (1, 1))),
                               np.asarray(lax.conv_general_dilated(img, ker, (1, 1), ((1, 0), (0, 1)))), rtol=1e-13)
    z = np.array([1 + 2j, -3.5j, 4.0])
    np.testing.assert_array_equal(np.asarray(lax.imag(z)), np.imag(z))
    x = rng.uniform(0.5, 3.0, size=(2, 3))
    for k in (0, 1, 3):
        np.testing.assert_allclose(np.asarray(lax.polygamma(np.full_like(x, k), x)), sps.polygamma(k, x), rtol=1e-10)
    bools = rng.uniform(size=(3, 4)) > 0.3
    np.testing.assert_array_equal(np.asarray(lax.reduce_and(bools, [1])), bools.all(1))
    np.testing.assert_array_equal(np.asarray(lax.reduce_or(bools, [0])), bools.any(0))
    np.testing.assert_array_equal(np.asarray(lax.zeros_like_array(m)), np.zeros_like(m))
    np.testing.assert_array_equal(np.asarray(lax.optimization_barrier(m)), m)
    assert np.asarray(lax.empty(np.float32)).dtype == np.float32
    leaves, tree = lax.tree_flatten({"a": m, "b": [n]})
    back = lax.tree_unflatten(tree, leaves)
    np.testing.assert_array_equal(np.asarray(back["b"][0]), n)
    # the collectives over a vmap axis: max / min over the members, an all-to-all swapping the mapped
    # axis with `axis`, and the identities that only retype (pvary, pcast)
    xs = rng.normal(size=(4, 4, 3))
    on = lambda f: gf.vmap(f, axis_name="i")(xs)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(on(lambda v: lax.pmax(v, "i"))), np.broadcast_to(xs.max(0), xs.shape))
    np.testing.assert_array_equal(np.asarray(on(lambda v: lax.pmin(v, "i"))), np.broadcast_to(xs.min(0), xs.shape))
    np.testing.assert_array_equal(np.asarray(on(lambda v: lax.pswapaxes(v, "i", 0))), np.swapaxes(xs, 0, 1))
    for f in (lambda v: lax.pvary(v, "i"), lambda v: lax.pcast(v, "i", to="varying"), lambda v: lax.pcast_to_varying(v, "i")):
        np.testing.assert_array_equal(np.asarray(on(f)), xs)
