"""jax.lax's gather / scatter, collectives, general reduce, shape helpers, conv_transpose and bit
utilities (graft/_lax_more.py) against NumPy references."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft import lax

R = np.random.default_rng(1)


def close(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_gather_rows_and_scatter_family():
    x = R.normal(size=(5, 3))
    idx = np.array([[4], [0], [2]])
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    close(lax.gather(x, idx, dn, (1, 3)), x[[4, 0, 2]])
    # out of bounds: fill with NaN (JAX's default for gather's fill mode) or clip
    far = np.array([[7]])
    assert np.isnan(np.asarray(lax.gather(x, far, dn, (1, 3), mode="fill"))).all()
    close(lax.gather(x, far, dn, (1, 3), mode="clip"), x[[4]])
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    upd = R.normal(size=(3, 3))
    dup = np.array([[1], [1], [3]])
    want = x.copy()
    np.add.at(want, [1, 1, 3], upd)
    close(lax.scatter_add(x, dup, upd, sdn), want)
    want = x.copy()
    np.subtract.at(want, [1, 1, 3], upd)
    close(lax.scatter_sub(x, dup, upd, sdn), want)
    want = x.copy()
    np.multiply.at(want, [1, 1, 3], upd)
    close(lax.scatter_mul(x, dup, upd, sdn), want)
    want = x.copy()
    np.maximum.at(want, [1, 1, 3], upd)
    close(lax.scatter_max(x, dup, upd, sdn), want)
    want = x.copy()
    np.minimum.at(want, [1, 1, 3], upd)
    close(lax.scatter_min(x, dup, upd, sdn), want)
    want = x.copy()
    want[[4, 0]] = upd[:2]
    close(lax.scatter(x, np.array([[4], [0]]), upd[:2], sdn), want)
    want = x.copy()
    want[[1, 3]] = np.exp(x[[1, 3]])
    close(lax.scatter_apply(x, dup, gnp.exp, sdn, update_shape=(3, 3)), want)
    # gradients of gather and scatter_add
    g = gf.grad(lambda v: gnp.sum(lax.gather(v, idx, dn, (1, 3)) ** 2))(x)
    want = np.zeros_like(x)
    want[[4, 0, 2]] = 2 * x[[4, 0, 2]]
    close(g, want)
    close(lax.index_take(x, (np.array([0, 4]), np.array([2, 1])), (0, 1)), x[[0, 4], [2, 1]])


def test_collectives_under_named_vmap():
    x = R.normal(size=(4, 3))
    n = 4
    close(gf.vmap(lambda v: lax.all_gather(v, "i"), axis_name="i")(x), np.broadcast_to(x, (4, 4, 3)))
    close(gf.vmap(lambda v: lax.all_gather(v, "i", tiled=True), axis_name="i")(x),
          np.broadcast_to(x.reshape(-1), (4, 12)))
    perm = [(k, (k + 1) % n) for k in range(n)]
    close(gf.vmap(lambda v: lax.ppermute(v, "i", perm), axis_name="i")(x), np.roll(x, 1, axis=0))
    close(gf.vmap(lambda v: lax.pshuffle(v, "i", [1, 2, 3, 0]), axis_name="i")(x), np.roll(x, -1, axis=0))
    y = R.normal(size=(4, 8))
    close(gf.vmap(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="i")(y),
          y.sum(0).reshape(4, 2))
    z = R.normal(size=(4, 4, 2))
    close(gf.vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(z), z.transpose(1, 0, 2))
    close(gf.vmap(lambda v: v * 0 + lax.axis_size("i"), axis_name="i")(x), np.full((4, 3), 4.0))
    close(gf.vmap(lambda v: lax.pbroadcast(v, "i", 2), axis_name="i")(x), np.broadcast_to(x[2], (4, 3)))


def test_general_reduce():
    x = R.normal(size=(3, 4, 5))
    close(lax.reduce(x, 0.0, lax.add, (1,)), x.sum(1))
    close(lax.reduce(x, -np.inf, lax.max, (0, 2)), x.max((0, 2)))
    # a computation graft has no primitive for, applied as a tree: log-sum-exp pairs
    lse = lambda a, b: gnp.logaddexp(a, b)
    close(lax.reduce(x, -np.inf, lse, (2,)), np.log(np.exp(x).sum(2)), 1e-12)
    # several operands: (max, argmax) pairs
    vals, idx = lax.reduce((x, np.broadcast_to(np.arange(5), x.shape).astype(np.int64)), (-np.inf, 0),
                           lambda a, i, b, j: (gnp.maximum(a, b), gnp.where(a >= b, i, j)), (2,))
    close(vals, x.max(2))
    close(idx, x.argmax(2))
    b = R.integers(0, 256, (4, 6)).astype(np.int32)
    close(lax.reduce_xor(b, (1,)), np.bitwise_xor.reduce(b, axis=1))
    close(lax.reduce_xor(b > 100, (0,)), np.logical_xor.reduce(b > 100, axis=0))


def test_shape_helpers_match_convolutions():
    lhs, rhs = (2, 3, 9, 8), (4, 3, 3, 2)
    for strides in [(1, 1), (2, 3)]:
        for padding in ["VALID", "SAME"]:
            out = lax.conv_general_dilated(np.ones(lhs), np.ones(rhs), strides, padding)
            pads = lax.padtype_to_pads(lhs[2:], rhs[2:], strides, padding)
            assert lax.conv_shape_tuple(lhs, rhs, strides, pads) == out.shape
            assert lax.conv_general_shape_tuple(lhs, rhs, strides, pads, ("NCHW", "OIHW", "NCHW")) == out.shape
    dn = lax.conv_dimension_numbers((2, 9, 8, 3), (3, 2, 3, 4), ("NHWC", "HWIO", "NHWC"))
    assert dn.lhs_spec == (0, 3, 1, 2) and dn.rhs_spec == (3, 2, 0, 1)
    x = np.ones((1, 2, 7, 7))
    assert lax.reduce_window_shape_tuple(x.shape, (1, 1, 3, 3), (1, 1, 2, 2), [(0, 0)] * 4) == \
        lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 2, 2), "VALID").shape


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_conv_transpose_is_the_convolutions_gradient(padding, stride):
    # SAME: sizes the stride divides (the transposed convolution's output is the input's size times the
    # stride); VALID: any sizes
    x = R.normal(size=(2, 3, 12, 6) if padding == "SAME" else (2, 3, 8, 7))
    k = R.normal(size=(4, 3, 3, 3))  # OIHW
    f = lambda v: lax.conv_general_dilated(v, k, (stride, stride), padding)
    y, pull = gf.vjp(f, x)
    ct = R.normal(size=y.shape)
    want = pull(gnp.asarray(ct))[0]
    got = lax.conv_transpose(ct, k, (stride, stride), padding, dimension_numbers=("NCHW", "OIHW", "NCHW"),
                             transpose_kernel=True)
    got, want = np.asarray(got), np.asarray(want)
    # VALID with a stride that does not divide: the strided convolution never read the input's last rows,
    # whose gradient is zero and which the transposed convolution does not produce
    assert got.shape[:2] == want.shape[:2] and all(g <= w for g, w in zip(got.shape, want.shape))
    close(got, want[tuple(slice(0, s) for s in got.shape)], 1e-10)
    close(want[:, :, got.shape[2]:], 0.0)
    close(want[:, :, :, got.shape[3]:], 0.0)
    if padding == "SAME":
        assert got.shape == want.shape
    assert lax.conv_transpose_shape_tuple(ct.shape, k.shape, (stride, stride), padding,
                                          ("NCHW", "IOHW", "NCHW")) == got.shape


def test_bit_utilities_and_small_helpers():
    v = np.array([0, 1, 2, 255, 1 << 20, -1, 2 ** 31 - 1], np.int32)
    want = np.array([32 - int(t).bit_length() if t >= 0 else 0 for t in v.tolist()], np.int32)
    close(lax.clz(v), want)
    close(lax.clz(np.array([1, 128], np.uint8)), [7, 0])
    a = R.integers(-2 ** 31, 2 ** 31, 50, dtype=np.int64)
    b = R.integers(-2 ** 31, 2 ** 31, 50, dtype=np.int64)
    close(lax.mulhi(a.astype(np.int32), b.astype(np.int32)), ((a * b) >> 32).astype(np.int32))
    ua, ub = (a % 2 ** 32).astype(np.uint64), (b % 2 ** 32).astype(np.uint64)
    close(lax.mulhi(ua.astype(np.uint32), ub.astype(np.uint32)), ((ua * ub) >> np.uint64(32)).astype(np.uint32))
    close(lax.mulhi(np.array([100, -100], np.int16), np.array([1000, 1000], np.int16)),
          (np.array([100000, -100000]) >> 16).astype(np.int16))
    x = np.array([1.0 + 2 ** -10, 3.14159265], np.float32)
    close(lax.reduce_precision(x, 8, 7), np.asarray(gnp.asarray(x).astype("bfloat16").astype("float32")))
    close(lax.reduce_precision(x, 8, 23), x)
    with pytest.raises(NotImplementedError):
        lax.reduce_precision(x, 4, 3)
    m = np.arange(24.0).reshape(2, 3, 4)
    assert lax.collapse(m, 1).shape == (2, 12) and lax.collapse(m, 0, 2).shape == (6, 4)
    close(lax.tile(np.arange(3), (2, 2)), np.tile(np.arange(3), (2, 2)))
    parts = lax.split(np.arange(10), (3, 7))
    assert [p.shape for p in parts] == [(3,), (7,)]
    with pytest.raises(ValueError):
        lax.split(np.arange(10), (3, 6))
    close(lax.stack([np.ones(2), np.zeros(2)], axis=1), np.stack([np.ones(2), np.zeros(2)], axis=1))
    assert len(lax.unstack(m, axis=2)) == 4
    assert lax.broadcast_to_rank(np.ones(3), 3).shape == (1, 1, 3)
    assert lax.broadcast_shapes((2, 1), (1, 3)) == (2, 3)
    vals, idx = lax.approx_max_k(np.array([[1.0, 5.0, 3.0]]), 2)
    close(vals, [[5.0, 3.0]])
    vals, idx = lax.approx_min_k(np.array([[1.0, 5.0, 3.0]]), 2)
    close(vals, [[1.0, 3.0]])
    close(idx, [[0, 2]])
    assert lax.platform_dependent(2.0, cpu=lambda v: v * 3, default=lambda v: v) == 6.0
    sq = lax.composite(lambda v: v * v, "my.square")
    close(sq(gnp.asarray(3.0)), 9.0)
    assert lax.after_all(lax.create_token()).shape == (0,)
