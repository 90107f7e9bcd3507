"""The rest of jax.numpy's names (graft/_numpy_more.py) against NumPy, with jit / grad where they apply."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp

R = np.random.default_rng(0)


def close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=kw.get("rtol", 1e-12), atol=kw.get("atol", 1e-12))


def test_aliases():
    x = R.uniform(-0.9, 0.9, (3, 4))
    for g, n in [("acos", np.arccos), ("asin", np.arcsin), ("atan", np.arctan), ("atanh", np.arctanh),
                 ("asinh", np.arcsinh)]:
        close(getattr(gnp, g)(x), n(x))
    close(gnp.acosh(x + 2), np.arccosh(x + 2))
    close(gnp.atan2(x, x.T @ x[:, :1].T if False else x + 1), np.arctan2(x, x + 1))
    close(gnp.pow(x + 1, 3), (x + 1) ** 3)
    close(gnp.concat([x, x], axis=1), np.concatenate([x, x], axis=1))
    close(gnp.permute_dims(x, (1, 0)), x.T)
    close(gnp.matrix_transpose(np.ones((2, 3, 4))), np.ones((2, 4, 3)))
    i = np.array([1, 6, -3], np.int32)
    close(gnp.bitwise_invert(i), ~i)
    close(gnp.bitwise_left_shift(i, 2), i << 2)
    close(gnp.bitwise_right_shift(i, 1), i >> 1)
    close(gnp.fabs(np.array([-2, 3], np.int32)), [2.0, 3.0])
    assert str(gnp.fabs(np.array([-2, 3], np.int32)).dtype).startswith("float")
    assert str(gnp.astype(gnp.ones(2), gnp.int32).dtype) == "int32"
    assert gnp.issubdtype(gnp.float32, gnp.floating) and gnp.issubdtype(gnp.int8, gnp.signedinteger)
    assert gnp.isdtype(gnp.float32, "real floating") and gnp.isdtype(gnp.uint8, ("integral", "bool"))
    assert not gnp.isdtype(gnp.float32, "integral") and gnp.isdtype("bfloat16", "real floating")
    close(gnp.i0(x), np.i0(x))
    assert gnp.euler_gamma == np.euler_gamma and gnp.iterable([1]) and not gnp.iterable(3)


def test_array_api_helpers():
    x = R.normal(size=(3, 4))
    close(gnp.cumulative_sum(x, axis=1), np.cumsum(x, axis=1))
    close(gnp.cumulative_sum(x, axis=0, include_initial=True), np.concatenate([np.zeros((1, 4)), np.cumsum(x, 0)]))
    close(gnp.cumulative_prod(x[0], include_initial=True), np.concatenate([[1.0], np.cumprod(x[0])]))
    with pytest.raises(ValueError):
        gnp.cumulative_sum(x)
    u = gnp.unstack(x, axis=1)
    assert len(u) == 4 and all(np.allclose(np.asarray(u[k]), x[:, k]) for k in range(4))
    m, v, w = R.normal(size=(2, 3, 4)), R.normal(size=(2, 4)), R.normal(size=(2, 3))
    close(gnp.vecdot(m, m), np.sum(m * m, -1))
    close(gnp.matvec(m, v), np.einsum("bij,bj->bi", m, v))
    close(gnp.vecmat(w, m), np.einsum("bi,bij->bj", w, m))
    a = np.array([3, 1, 3, 2, 1, 3])
    r = gnp.unique_all(a)
    vals, idx, inv, cnt = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    for got, want in zip(r, (vals, idx, inv, cnt)):
        close(got, want)
    close(gnp.unique_counts(a).counts, cnt)
    close(gnp.unique_inverse(a).inverse_indices, inv)
    close(gnp.unique_values(a, size=4, fill_value=0), [1, 2, 3, 0])
    close(gnp.top_k(gnp.asarray([3.0, 1.0, 4.0, 1.5]), 2)[0], [4.0, 3.0])


def test_index_tricks():
    close(gnp.mgrid[0:3, 0:2][1], np.mgrid[0:3, 0:2][1])
    close(gnp.ogrid[0:3, 0:2][0], np.ogrid[0:3, 0:2][0])
    close(gnp.r_[1:4, 0, gnp.asarray([7.0, 8.0])], np.r_[1:4, 0, [7.0, 8.0]])
    close(gnp.c_[np.arange(3), np.arange(3)], np.c_[np.arange(3), np.arange(3)])
    assert gnp.s_[1:3] == np.s_[1:3] and gnp.index_exp[1] == np.index_exp[1]
    a = np.arange(20).reshape(4, 5)
    rows, cols = gnp.ix_(gnp.asarray([0, 2]), gnp.asarray([1, 4]))
    close(gnp.asarray(a)[rows, cols], a[np.ix_([0, 2], [1, 4])])
    close(gnp.mask_indices(3, gnp.triu)[1], np.mask_indices(3, np.triu)[1])
    x = np.ones((2, 3, 4, 5))
    for axis, start in [(3, 1), (2, 0), (1, 4), (-1, 0)]:
        assert gnp.rollaxis(x, axis, start).shape == np.rollaxis(x, axis, start).shape


@pytest.mark.parametrize("M", [0, 1, 2, 7, 12])
def test_windows(M):
    for name in ("bartlett", "hanning", "hamming", "blackman"):
        close(getattr(gnp, name)(M), getattr(np, name)(M), atol=1e-12)
    close(gnp.kaiser(M, 5.0), np.kaiser(M, 5.0), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint"])
def test_nan_quantiles(method):
    x = R.normal(size=(4, 7))
    x[0, [1, 3]] = np.nan
    x[2, :] = np.nan
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanquantile(x, 0.3, axis=1, method=method)
    close(gnp.nanquantile(x, 0.3, axis=1, method=method), want)
    with pytest.warns(RuntimeWarning):
        close(gnp.nanpercentile(x, [10, 90], axis=1, method=method, keepdims=True),
              np.nanpercentile(x, [10, 90], axis=1, method=method, keepdims=True))
    ok = x[[0, 1, 3]]
    close(gnp.nanmedian(ok, axis=0), np.nanmedian(ok, axis=0))
    close(gnp.nanmedian(ok), np.nanmedian(ok))
    close(gf.jit(lambda v: gnp.nanmedian(v, axis=1))(ok), np.nanmedian(ok, axis=1))


def test_functional_updates():
    a = np.arange(12.0).reshape(3, 4)
    want = a.copy()
    np.put(want, [0, 5, 30], [-1, -2, -3], mode="clip")
    close(gnp.put(a, gnp.asarray([0, 5, 30]), gnp.asarray([-1.0, -2.0, -3.0]), mode="clip", inplace=False), want)
    with pytest.raises(ValueError, match="immutable"):
        gnp.put(a, 0, 1.0)
    want = a.copy()
    np.place(want, a > 6, [10, 20])
    close(gnp.place(a, a > 6, gnp.asarray([10.0, 20.0]), inplace=False), want)
    idx = np.array([[1], [0], [3]])
    want = a.copy()
    np.put_along_axis(want, idx, 99.0, axis=1)
    close(gnp.put_along_axis(a, idx, 99.0, axis=1, inplace=False), want)
    for shape, wrap in [((3, 4), False), ((5, 3), True), ((5, 3), False), ((3, 3, 3), False)]:
        want = np.zeros(shape)
        np.fill_diagonal(want, 7.0, wrap=wrap)
        close(gnp.fill_diagonal(gnp.zeros(shape), 7.0, wrap=wrap, inplace=False), want)


def test_axis_functions_and_vectorize():
    a = R.normal(size=(3, 4, 5))
    close(gnp.apply_along_axis(lambda v: gnp.sum(v ** 2), 1, a), np.apply_along_axis(lambda v: np.sum(v ** 2), 1, a))
    close(gnp.apply_along_axis(lambda v: v[::-1] * 2, 2, a), np.apply_along_axis(lambda v: v[::-1] * 2, 2, a))
    close(gnp.apply_over_axes(gnp.sum, a, [0, 2]), np.apply_over_axes(np.sum, a, [0, 2]))
    close(gnp.gradient(a[0, 0]), np.gradient(a[0, 0]))
    for g, n in zip(gnp.gradient(a, 0.5), np.gradient(a, 0.5)):
        close(g, n)
    close(gnp.gradient(a, axis=1), np.gradient(a, axis=1))
    close(gnp.block([[np.ones((2, 2)), np.zeros((2, 3))], [np.full((1, 2), 2.0), np.full((1, 3), 3.0)]]),
          np.block([[np.ones((2, 2)), np.zeros((2, 3))], [np.full((1, 2), 2.0), np.full((1, 3), 3.0)]]))
    close(gnp.block([np.ones(2), np.zeros(3)]), np.block([np.ones(2), np.zeros(3)]))
    c = [np.arange(4) * k for k in range(3)]
    close(gnp.choose(np.array([0, 2, 1, 5]), c, mode="clip"), np.choose([0, 2, 1, 5], c, mode="clip"))
    close(gnp.choose(np.array([0, 4, 1, 5]), c, mode="wrap"), np.choose([0, 4, 1, 5], c, mode="wrap"))
    x = np.linspace(-2, 2, 9)
    close(gnp.piecewise(x, [x < 0, x >= 1], [lambda v: -v, lambda v: v ** 2, 0.5]),
          np.piecewise(x, [x < 0, x >= 1], [lambda v: -v, lambda v: v ** 2, 0.5]))
    f = gnp.vectorize(lambda u, v: gnp.where(u > v, u - v, u + v))
    close(f(a[0], a[1, 0]), np.vectorize(lambda u, v: u - v if u > v else u + v)(a[0], a[1, 0]))
    g = gf.grad(lambda v: gnp.sum(gnp.apply_along_axis(lambda r: gnp.sum(r ** 3), 1, v)))(a[0])
    close(g, 3 * a[0] ** 2)


def test_polynomials():
    p, q = np.array([1.0, -3.0, 2.0]), np.array([2.0, 1.0])
    close(gnp.polyadd(p, q), np.polyadd(p, q))
    close(gnp.polysub(p, q), np.polysub(p, q))
    close(gnp.polymul(p, q), np.polymul(p, q))
    close(gnp.polyder(p), np.polyder(p))
    close(gnp.polyder(np.array([1.0, 2, 3, 4]), 2), np.polyder([1.0, 2, 3, 4], 2))
    close(gnp.polyint(p), np.polyint(p))
    close(gnp.polyint(p, 2, k=[1.0, 2.0]), np.polyint(p, 2, k=[1.0, 2.0]))
    close(gnp.poly(np.array([1.0, 2.0, -3.0])), np.poly([1.0, 2.0, -3.0]))
    s = np.array([[2.0, 1.0], [1.0, 3.0]])
    close(gnp.poly(s), np.poly(s), rtol=1e-10)
    qq, rr = gnp.polydiv(np.array([1.0, -3, 0, 5]), np.array([2.0, 1]))
    wq, wr = np.polydiv([1.0, -3, 0, 5], [2.0, 1])
    close(qq, wq)
    close(np.trim_zeros(np.asarray(rr), "f"), wr)
    x = np.linspace(0, 1, 20)
    y = 3 * x ** 2 - x + 0.5 + 0.01 * np.sin(40 * x)
    close(gnp.polyfit(x, y, 2), np.polyfit(x, y, 2), rtol=1e-8)


def test_bits_files_and_histograms(tmp_path):
    b = R.integers(0, 2, (3, 11)).astype(bool)
    for axis in (None, 0, 1):
        for order in ("big", "little"):
            close(gnp.packbits(b, axis=axis, bitorder=order), np.packbits(b, axis=axis, bitorder=order))
    u = np.packbits(b, axis=1)
    close(gnp.unpackbits(u, axis=1, count=11), np.unpackbits(u, axis=1, count=11))
    close(gnp.unpackbits(u, bitorder="little"), np.unpackbits(u, bitorder="little"))
    close(gnp.bitwise_count(np.array([0, 7, -8, 255], np.int32)), np.bitwise_count(np.array([0, 7, -8, 255], np.int32))
          if hasattr(np, "bitwise_count") else [0, 3, 1, 8])
    gnp.save(tmp_path / "a.npy", gnp.arange(4.0))
    close(gnp.load(tmp_path / "a.npy"), np.arange(4.0))
    gnp.savez(tmp_path / "b.npz", x=gnp.ones(2))
    with np.load(tmp_path / "b.npz") as z:
        close(z["x"], np.ones(2))
    close(gnp.frombuffer(np.arange(3.0).tobytes()), np.arange(3.0))
    close(gnp.fromiter(iter(range(4)), float), np.arange(4.0))
    close(gnp.fromstring("1 2 3", sep=" "), [1.0, 2.0, 3.0])
    assert gnp.einsum_path("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)))[0] == ["einsum_path", (0, 1)]
    x, y = R.normal(size=50), R.normal(size=50)
    h, ex, ey = gnp.histogram2d(x, y, bins=4)
    wh, wex, wey = np.histogram2d(x, y, bins=4)
    close(h, wh)
    close(ex, wex)
    s = R.normal(size=(40, 3))
    h, edges = gnp.histogramdd(s, bins=[2, 3, 4], density=True)
    wh, wedges = np.histogramdd(s, bins=[2, 3, 4], density=True)
    close(h, wh, rtol=1e-10)
