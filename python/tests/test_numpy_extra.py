"""More of graft.numpy against NumPy itself: each function on a few shapes, axes and dtypes (NaN and inf
where they matter), plus gradients of the differentiable composites against finite differences, and jit."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(3, 4))
V = RNG.normal(size=7)
NANS = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [4.0, 5.0, -1.0]])
INTS = np.array([[3, -1, 4], [1, -5, 9]], np.int32)

# (name, args): graft.numpy.name(*args) against numpy.name(*args)
CASES = [
    ("atleast_3d", (V,)), ("vstack", ([V, V],)), ("hstack", ([A, B],)), ("dstack", ([A, B],)),
    ("column_stack", ([V, V],)), ("append", (A, B)), ("append", (A, B, 0)),
    ("fliplr", (A,)), ("flipud", (A,)), ("rot90", (A,)), ("rot90", (A, 2)), ("rot90", (A, 3)),
    ("roll", (V, 3)), ("roll", (A, -1, 1)), ("roll", (A, 5)), ("roll", (A, (1, 2), (0, 1))),
    ("diff", (A,)), ("diff", (A, 2, 0)), ("diff", (V, 1, -1, 0.5)), ("ediff1d", (A,)),
    ("cross", (RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3)))), ("kron", (A[:2, :2], B[:2, :3])),
    ("tri", (3, 4, 1)), ("diag", (V,)), ("diag", (V, 2)), ("diag", (V, -1)), ("diag", (A,)), ("diag", (A, 1)),
    ("diagflat", (A[:2, :2],)), ("diagonal", (A, 1)), ("diagonal", (RNG.normal(size=(2, 3, 4)), 0, 1, 2)),
    ("trace", (A,)), ("trace", (A, -1)), ("identity", (3,)),
    ("trunc", (A * 3,)), ("fix", (A * 3,)), ("rint", (A * 3,)), ("around", (A * 3,)), ("deg2rad", (A,)),
    ("rad2deg", (A,)), ("hypot", (A, B)), ("hypot", (A * 1e200, B * 1e200)), ("copysign", (A, B)),
    ("signbit", (np.array([-0.0, 0.0, -1.0, 2.0, -np.inf]),)), ("fmax", (NANS, NANS.T)), ("fmin", (NANS, NANS.T)),
    ("fmod", (A * 5, B)), ("heaviside", (np.array([-1.0, 0.0, 2.0]), 0.5)), ("sinc", (np.array([0.0, 0.5, -1.5]),)),
    ("nan_to_num", (np.array([np.nan, np.inf, -np.inf, 1.0]),)), ("logaddexp2", (A, B)), ("float_power", (np.abs(A), B)),
    ("isneginf", (np.array([-np.inf, np.inf, 1.0]),)), ("isposinf", (np.array([-np.inf, np.inf, 1.0]),)),
    ("count_nonzero", (INTS,)), ("count_nonzero", (NANS, 0)),
    ("nansum", (NANS,)), ("nansum", (NANS, 1)), ("nanprod", (NANS, 0)), ("nanmean", (NANS, 0)), ("nanvar", (NANS, 0)),
    ("nanstd", (NANS[[0, 2]], 1)), ("nanargmax", (NANS[[0, 2]], 1)), ("nanargmin", (NANS[[0, 2]], 1)),
    ("nancumsum", (NANS, 1)), ("nancumprod", (NANS, 0)),
    ("average", (A,)), ("average", (A, 1, RNG.uniform(size=4))), ("ptp", (A, 0)),
    ("median", (A,)), ("median", (A, 1)), ("quantile", (A, 0.3)), ("quantile", (A, [0.1, 0.9], 1)),
    ("percentile", (V, [5, 50, 95])),
    ("searchsorted", (np.sort(V), A)), ("searchsorted", (np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 0.5, 4.0]), "right")),
    ("digitize", (V, np.array([-1.0, 0.0, 1.0]))), ("digitize", (V, np.array([1.0, 0.0, -1.0]), True)),
    ("bincount", (np.array([0, 2, 2, 5], np.int32),)), ("interp", (V, np.array([-1.0, 0.0, 2.0]), np.array([3.0, 1.0, 2.0]))),
    ("polyval", (np.array([2.0, -1.0, 3.0]), V)), ("vander", (V[:4],)), ("vander", (V[:4], 3, True)),
    ("trapezoid", (A,)), ("trapezoid", (A, None, 0.5, 0)), ("convolve", (V, V[:3])), ("convolve", (V, V[:3], "same")),
    ("convolve", (V, V[:3], "valid")), ("correlate", (V, V[:3])), ("correlate", (V, V[:3], "full")),
    ("cov", (A,)), ("cov", (A, None, False)), ("corrcoef", (A,)),
    ("pad", (A, 2)), ("pad", (A, ((1, 0), (2, 3)), "edge")), ("pad", (V, 3, "reflect")), ("pad", (V, 9, "wrap")),
    ("pad", (A, 1, "symmetric")), ("tensordot", (A, B.T, 1)), ("tensordot", (A, B, ((0, 1), (0, 1)))),
    ("bitwise_and", (INTS, 6)), ("bitwise_or", (INTS, 6)), ("bitwise_xor", (INTS, 6)), ("invert", (INTS,)),
    ("left_shift", (INTS, 2)), ("right_shift", (INTS, 1)), ("isclose", (A, A + 1e-9)), ("cumprod", (A, 1)),
    ("take_along_axis", (A, np.argsort(A, axis=1), 1)),
    ("flatnonzero", (INTS > 0,)), ("argwhere", (INTS > 0,)), ("extract", (A > 0, A)), ("compress", (np.array([1, 0, 1]), A, 0)),
    ("isin", (INTS, np.array([3, 9, 7]))), ("isin", (INTS, np.array([3, 9, 7]), False, True)),
    ("intersect1d", (INTS.ravel(), np.array([9, 4, 8]))), ("union1d", (INTS.ravel(), np.array([9, 4, 8]))),
    ("setdiff1d", (INTS.ravel(), np.array([9, 4, 8]))), ("setxor1d", (INTS.ravel(), np.array([9, 4, 8]))),
    ("trim_zeros", (np.array([0, 0, 1, 2, 0]),)), ("ravel_multi_index", ((np.array([1, 2]), np.array([3, 0])), (4, 5))),
    ("indices", ((2, 3),)), ("geomspace", (1.0, 1000.0, 4, True, "float64")), ("logspace", (0.0, 2.0, 5, True, 10.0, "float64")),
    ("insert", (A, 1, 5.0, 1)), ("insert", (V, [0, 3], np.array([7.0, 8.0]))), ("delete", (A, [0, 2], 1)),
    ("delete", (V, 3)), ("resize", (V, (3, 4))), ("lexsort", ((np.array([1, 0, 1, 0]), np.array([2, 2, 1, 1])),)),
    ("histogram_bin_edges", (V, 4)), ("unwrap", (np.cumsum(RNG.uniform(0, 2.5, 9)),)),
    ("gcd", (np.array([12, 18, 0, -9], np.int32), np.array([8, 12, 5, 6], np.int32))),
    ("lcm", (np.array([4, 6, 0], np.int32), np.array([6, 4, 3], np.int32))),
    ("ldexp", (V, np.array([1, -2, 3, 0, 1, 2, -1], np.int32))), ("spacing", (V,)),
    ("nextafter", (V, np.zeros(7))),
]


@pytest.mark.parametrize("name,args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_numpy(name, args):
    ref = getattr(np, "trapz" if name == "trapezoid" and not hasattr(np, "trapezoid") else name)
    want = ref(*args)
    conv = [gnp.asarray(a) if isinstance(a, np.ndarray) else ([gnp.asarray(x) for x in a] if isinstance(a, list)
                                                               and a and isinstance(a[0], np.ndarray) else a)
            for a in args]
    got = getattr(gnp, name)(*conv)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12, err_msg=name)
    assert np.asarray(got).shape == np.shape(want)


def test_splits_meshgrid_and_indices():
    for k in (3, [1, 3]):
        for got, want in zip(gnp.array_split(gnp.asarray(V), k), np.array_split(V, k)):
            np.testing.assert_array_equal(np.asarray(got), want)
    for got, want in zip(gnp.hsplit(gnp.asarray(A), 2), np.hsplit(A, 2)):
        np.testing.assert_array_equal(np.asarray(got), want)
    for indexing in ("xy", "ij"):
        for got, want in zip(gnp.meshgrid(gnp.asarray(V[:2]), gnp.asarray(V[:3]), indexing=indexing),
                             np.meshgrid(V[:2], V[:3], indexing=indexing)):
            np.testing.assert_array_equal(np.asarray(got), want)
    for got, want in zip(gnp.triu_indices(4, 1), np.triu_indices(4, 1)):
        np.testing.assert_array_equal(np.asarray(got), want)
    q, r = gnp.divmod(gnp.asarray(INTS), 4)
    np.testing.assert_array_equal(np.asarray(q), INTS // 4)
    np.testing.assert_array_equal(np.asarray(r), INTS % 4)
    assert bool(gnp.array_equal(gnp.asarray(A), gnp.asarray(A))) and not bool(gnp.array_equal(gnp.asarray(A), gnp.asarray(B)))
    assert bool(gnp.array_equiv(gnp.ones((2, 3)), gnp.ones(3)))
    np.testing.assert_array_equal(np.asarray(gnp.select([gnp.asarray(V) > 0.5, gnp.asarray(V) < -0.5], [1.0, -1.0], 0.0)),
                                  np.select([V > 0.5, V < -0.5], [1.0, -1.0], 0.0))


@pytest.mark.parametrize("q,axis,method,keepdims", [([0.2, 0.7], None, "linear", True), (0.4, 1, "lower", True),
                                                   (0.4, 0, "higher", False), (0.45, 0, "nearest", False),
                                                   (0.45, 1, "midpoint", False), ([[0.1], [0.9]], 1, "linear", True)])
def test_quantile_methods(q, axis, method, keepdims):
    got = gnp.quantile(gnp.asarray(A), q, axis=axis, method=method, keepdims=keepdims)
    want = np.quantile(A, q, axis=axis, method=method, keepdims=keepdims)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    assert np.asarray(got).shape == want.shape


def test_data_dependent_shapes():
    x = np.array([[0, 1, 0], [2, 0, 3]])
    for got, want in zip(gnp.nonzero(gnp.asarray(x)), np.nonzero(x)):
        np.testing.assert_array_equal(np.asarray(got), want)
    # with a static size they trace: under jit, cut or padded with fill_value
    f = gf.jit(lambda v: gnp.nonzero(v, size=4, fill_value=-1))
    r, c = f(gnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(r), [0, 1, 1, -1])
    np.testing.assert_array_equal(np.asarray(c), [1, 0, 2, -1])
    r2, _ = f(gnp.asarray(np.ones((2, 3), np.int64)))
    np.testing.assert_array_equal(np.asarray(r2), [0, 0, 0, 1])
    vals, idx, inv, cnt = gnp.unique(gnp.asarray(np.array([3, 1, 2, 3, 1])), return_index=True, return_inverse=True,
                                     return_counts=True)
    w = np.unique(np.array([3, 1, 2, 3, 1]), return_index=True, return_inverse=True, return_counts=True)
    for got, want in zip((vals, idx, inv, cnt), w):
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(gnp.unique(gnp.asarray(np.array([2, 2, 5])), size=4)), [2, 5, 2, 2])
    counts, edges = gnp.histogram(gnp.asarray(V), 4)
    wc, we = np.histogram(V, 4)
    np.testing.assert_allclose(np.asarray(counts), wc)
    np.testing.assert_allclose(np.asarray(edges), we, rtol=1e-12)
    d, _ = gnp.histogram(gnp.asarray(V), 3, (-2.0, 2.0), density=True)
    np.testing.assert_allclose(np.asarray(d), np.histogram(V, 3, (-2.0, 2.0), density=True)[0], rtol=1e-12)
    m, e = gnp.frexp(gnp.asarray(np.array([8.0, 0.3, -5.0, 0.0, 1e-300])))
    wm, we2 = np.frexp(np.array([8.0, 0.3, -5.0, 0.0, 1e-300]))
    np.testing.assert_allclose(np.asarray(m), wm, rtol=1e-15)
    np.testing.assert_array_equal(np.asarray(e), we2)
    for got, want in zip(gnp.unravel_index(gnp.asarray(np.array([7, 13])), (4, 5)), np.unravel_index([7, 13], (4, 5))):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_dtype_helpers():
    assert gnp.promote_types("int32", "float32") == np.float32
    assert gnp.promote_types("bfloat16", "float16") == np.float32
    assert gnp.promote_types("uint8", "int8") == np.int16
    assert gnp.result_type(gnp.ones(2, "float16"), 2.0) == np.float16  # Python numbers are weak
    assert gnp.result_type("int32", "int64") == np.int64
    assert gnp.can_cast("int8", "int32") and not gnp.can_cast("float32", "int32")
    assert gnp.finfo("float32").eps == np.finfo(np.float32).eps and gnp.finfo("bfloat16").eps == 2.0 ** -7
    assert gnp.iinfo("int16").max == 32767
    assert gnp.issubdtype("float32", np.floating) and gnp.issubdtype("bfloat16", np.floating)
    assert not gnp.issubdtype("int32", np.floating)
    assert gnp.broadcast_shapes((3, 1), (4,)) == (3, 4)


@pytest.mark.parametrize("name,f", [
    ("hypot", lambda x: gnp.sum(gnp.hypot(x, 2.0 * x + 1))),
    ("median", lambda x: gnp.sum(gnp.median(x, axis=1))),
    ("quantile", lambda x: gnp.sum(gnp.quantile(x, 0.3, axis=0))),
    ("nanmean", lambda x: gnp.sum(gnp.nanmean(x, axis=0))),
    ("roll_diff", lambda x: gnp.sum(gnp.diff(gnp.roll(x, 1, 1), axis=1) ** 2)),
    ("pad_reflect", lambda x: gnp.sum(gnp.pad(x, 1, "reflect") ** 3)),
    ("cov", lambda x: gnp.sum(gnp.cov(x) ** 2)),
    ("interp", lambda x: gnp.sum(gnp.interp(x, gnp.asarray(np.array([-2.0, 0.0, 2.0])), gnp.asarray(np.array([1.0, -1.0, 3.0]))))),
    ("kron", lambda x: gnp.sum(gnp.kron(x, x) ** 2)),
])
def test_gradients_match_finite_differences(name, f):
    x = RNG.normal(size=(3, 4))
    g = np.asarray(gf.grad(f)(gnp.asarray(x)))
    eps = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        fd[i] = (float(f(gnp.asarray(x + e))) - float(f(gnp.asarray(x - e)))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7, err_msg=name)
    np.testing.assert_allclose(float(gf.jit(f)(gnp.asarray(x))), float(f(gnp.asarray(x))), rtol=1e-12)
