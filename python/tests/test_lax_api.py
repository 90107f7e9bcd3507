"""graft.lax's functions against NumPy references: lax's typing (no promotion, weak Python numbers), the
shape functions, dot_general, sorting and top_k, cumulative ops, associative_scan and map against loops,
reduce_window and conv_general_dilated against direct sums, with gradients where they are differentiable."""
import numpy as np
import pytest

import graft as gf
import graft.numpy as gnp
from graft import lax

RNG = np.random.default_rng(0)


def a(x):
    return gnp.asarray(np.asarray(x))


def close(got, want, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


def test_elementwise_and_typing():
    x = RNG.uniform(0.1, 0.9, (3, 4))
    for name, ref in [("tan", np.tan), ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan),
                      ("sinh", np.sinh), ("cosh", np.cosh), ("asinh", np.arcsinh), ("atanh", np.arctanh),
                      ("log1p", np.log1p), ("expm1", np.expm1), ("exp2", np.exp2), ("cbrt", np.cbrt),
                      ("floor", np.floor), ("ceil", np.ceil), ("sign", np.sign), ("neg", np.negative)]:
        close(getattr(lax, name)(a(x)), ref(x))
    close(lax.acosh(a(x + 1)), np.arccosh(x + 1))
    close(lax.atan2(a(x), a(x.T.copy().T[::-1])), np.arctan2(x, x[::-1]))
    close(lax.rem(a(x * 7), a(x)), np.fmod(x * 7, x))
    close(lax.integer_pow(a(x), 3), x ** 3)
    close(lax.reciprocal(a(x)), 1 / x)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5])
    close(lax.round(a(halves)), np.array([1.0, 2.0, 3.0, -1.0, -2.0]))
    close(lax.round(a(halves), lax_rounding := 1), np.round(halves))
    close(lax.round(a(halves), "TO_NEAREST_EVEN"), np.round(halves))
    ints = np.array([5, -3, 12], np.int32)
    close(lax.population_count(a(ints)), np.array([2, 31, 2]))
    close(lax.shift_left(a(ints), 2), ints << 2)
    close(lax.shift_right_arithmetic(a(ints), 1), ints >> 1)
    close(lax.bitwise_and(a(ints), 6), ints & 6)
    close(lax.lt(a(x), 0.5), x < 0.5)
    # a Python number takes the array's dtype; arrays of two dtypes are an error, as lax does not promote
    y = lax.add(gnp.ones(3, "float32"), 2.0)
    assert str(y.dtype) == "float32"
    with pytest.raises(TypeError, match="same dtype"):
        lax.add(gnp.ones(3, "float32"), gnp.ones(3, "float64"))
    close(lax.clamp(0.3, a(x), 0.6), np.clip(x, 0.3, 0.6))
    close(lax.select(a(x > 0.5), a(x), a(-x)), np.where(x > 0.5, x, -x))
    close(lax.select_n(a((x * 3).astype(np.int32)), a(x), a(2 * x), a(3 * x)),
          np.choose((x * 3).astype(np.int32), [x, 2 * x, 3 * x]))
    assert str(lax.convert_element_type(a(x), "float32").dtype) == "float32"
    close(lax.bitcast_convert_type(a(np.float32([1.0])), "int32"), np.float32([1.0]).view(np.int32))


def test_reductions_and_shapes():
    x = RNG.normal(size=(2, 3, 4))
    close(lax.reduce_sum(a(x), [0, 2]), x.sum((0, 2)))
    close(lax.reduce_max(a(x), [1]), x.max(1))
    close(lax.reduce_prod(a(x), [2]), x.prod(2))
    close(lax.argmax(a(x), 2, "int32"), x.argmax(2))
    close(lax.broadcast_in_dim(a(x[0, :, 0]), (2, 3, 5), [1]), np.broadcast_to(x[0, :, 0][None, :, None], (2, 3, 5)))
    close(lax.broadcast(a(x[0]), (2,)), np.broadcast_to(x[0], (2, 3, 4)))
    close(lax.reshape(a(x), (4, 6)), x.reshape(4, 6))
    close(lax.reshape(a(x), (24,), dimensions=(2, 1, 0)), x.transpose(2, 1, 0).reshape(24))
    close(lax.transpose(a(x), (1, 2, 0)), x.transpose(1, 2, 0))
    close(lax.squeeze(a(x[:, :1]), [1]), x[:, 0])
    close(lax.expand_dims(a(x), [0, 3]), x[None, :, :, None])
    close(lax.rev(a(x), [0, 2]), x[::-1, :, ::-1])
    close(lax.iota("int32", 5), np.arange(5))
    close(lax.broadcasted_iota("int32", (2, 3), 1), np.broadcast_to(np.arange(3), (2, 3)))
    close(lax.slice(a(x), (0, 1, 0), (2, 3, 4), (1, 1, 2)), x[:, 1:3, ::2])
    close(lax.slice_in_dim(a(x), 1, 4, 2, 2), x[:, :, 1:4:2])
    close(lax.index_in_dim(a(x), -1, 1, False), x[:, -1])
    # padding with low, high and interior amounts (negative low crops)
    v = RNG.normal(size=4)
    want = np.array([9.0] * 2 + [v[0], 9, v[1], 9, v[2], 9, v[3]] + [9.0])
    close(lax.pad(a(v), 9.0, [(2, 1, 1)]), want)
    close(lax.pad(a(v), 0.0, [(-1, 0, 0)]), v[1:])
    close(lax.concatenate([a(x), a(x)], 1), np.concatenate([x, x], 1))
    i = gnp.asarray(np.int32(1))
    close(lax.dynamic_slice(a(x), [i, i, i], (1, 2, 2)), x[1:2, 1:3, 1:3])
    close(lax.dynamic_slice_in_dim(a(x), i, 2, 2), x[:, :, 1:3])
    close(lax.dynamic_index_in_dim(a(x), i, 1, False), x[:, 1])
    upd = np.zeros((2, 1, 4))
    want = x.copy()
    want[:, 1:2] = 0
    close(lax.dynamic_update_slice_in_dim(a(x), a(upd), i, 1), want)
    close(lax.dynamic_update_index_in_dim(a(x), a(upd[:, 0]), i, 1), want)
    close(lax.full((2, 2), 3.0, "float32"), np.full((2, 2), 3.0))
    close(lax.full_like(a(x), 1), np.ones_like(x))


def test_dot_general_sort_and_top_k():
    lhs, rhs = RNG.normal(size=(5, 2, 3)), RNG.normal(size=(5, 3, 4))
    close(lax.dot_general(a(lhs), a(rhs), (((2,), (1,)), ((0,), (0,)))), np.einsum("bij,bjk->bik", lhs, rhs))
    close(lax.dot_general(a(lhs), a(rhs), (((2,), (1,)), ((), ()))), np.einsum("bij,cjk->bick", lhs, rhs))
    x = RNG.normal(size=(3, 6))
    close(lax.sort(a(x)), np.sort(x))
    close(lax.sort(a(x), 0), np.sort(x, 0))
    keys = np.array([3, 1, 2, 1], np.int32)
    vals = np.array([10.0, 20.0, 30.0, 40.0])
    k, v = lax.sort_key_val(a(keys), a(vals))
    close(k, [1, 1, 2, 3])
    close(v, [20.0, 40.0, 30.0, 10.0])  # stable
    k2, v2 = lax.sort((a(keys), a(vals)), num_keys=1)
    close(v2, [20.0, 40.0, 30.0, 10.0])
    tv, ti = lax.top_k(a(x), 3)
    order = np.argsort(-x, axis=1, kind="stable")[:, :3]
    close(ti, order)
    close(tv, np.take_along_axis(x, order, 1))
    tv8, ti8 = lax.top_k(a(np.array([1, 5, 5, 2], np.uint8)), 2)
    close(tv8, [5, 5])
    close(ti8, [1, 2])


def test_cumulative_and_associative_scan():
    x = RNG.normal(size=(5, 3))
    close(lax.cumsum(a(x), 0), np.cumsum(x, 0))
    close(lax.cumsum(a(x), 0, reverse=True), np.cumsum(x[::-1], 0)[::-1])
    close(lax.cummax(a(x), 1), np.maximum.accumulate(x, 1))
    close(lax.cummin(a(x), 0, True), np.minimum.accumulate(x[::-1], 0)[::-1])
    close(lax.cumprod(a(x), 1, True), np.cumprod(x[:, ::-1], 1)[:, ::-1])
    close(lax.cumlogsumexp(a(x * 300), 0), np.logaddexp.accumulate(x * 300, 0), rtol=1e-12)
    for n in (1, 2, 5, 8, 13):
        v = RNG.normal(size=(n, 2))
        close(lax.associative_scan(lax.add, a(v)), np.cumsum(v, 0))
        close(lax.associative_scan(lax.add, a(v), reverse=True), np.cumsum(v[::-1], 0)[::-1])
        close(lax.associative_scan(lax.max, a(v.T), axis=1), np.maximum.accumulate(v.T, 1))
    # a linear recurrence h_t = a_t h_{t-1} + b_t as a scan over (a, b) pairs
    av, bv = RNG.uniform(0.5, 1.0, 9), RNG.normal(size=9)

    def fn(l, r):
        return (l[0] * r[0], r[0] * l[1] + r[1])

    _, hs = lax.associative_scan(fn, (a(av), a(bv)))
    h, want = 0.0, []
    for t in range(9):
        h = av[t] * h + bv[t]
        want.append(h)
    close(hs, want)
    g = gf.grad(lambda b: gnp.sum(lax.associative_scan(fn, (a(av), b))[1] ** 2))(a(bv))
    eps, fd = 1e-6, []
    for i in range(9):
        e = np.zeros(9)
        e[i] = eps
        f = lambda b: float(gnp.sum(lax.associative_scan(fn, (a(av), a(b)))[1] ** 2))  # noqa: E731
        fd.append((f(bv + e) - f(bv - e)) / (2 * eps))
    close(g, fd, rtol=1e-6, atol=1e-8)


def test_map():
    xs = RNG.normal(size=(7, 3))
    f = lambda r: {"s": gnp.sum(r ** 2), "r": r * 2}  # noqa: E731
    for bs in (None, 2, 7, 3):
        out = lax.map(f, a(xs), batch_size=bs)
        close(out["s"], (xs ** 2).sum(1))
        close(out["r"], xs * 2)


def conv_ref(x, w, stride, pad):  # NHWC x HWIO, explicit (lo, hi) padding
    x = np.pad(x, [(0, 0), pad[0], pad[1], (0, 0)])
    kh, kw, _, o = w.shape
    oh = (x.shape[1] - kh) // stride[0] + 1
    ow = (x.shape[2] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def test_reduce_window_and_conv():
    x = RNG.normal(size=(2, 5, 6, 3))
    pooled = lax.reduce_window(a(x), -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    close(pooled, x[:, :4, :6].reshape(2, 2, 2, 3, 2, 3).max((2, 4)))
    summed = lax.reduce_window(a(x), 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
    xp = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    want = sum(xp[:, i:i + 5, j:j + 6] for i in range(3) for j in range(3))
    close(summed, want)
    w = RNG.normal(size=(3, 3, 3, 4))
    for stride, padding, pairs in [((1, 1), "SAME", ((1, 1), (1, 1))), ((2, 2), "VALID", ((0, 0), (0, 0))),
                                   ((2, 1), ((1, 0), (2, 1)), ((1, 0), (2, 1)))]:
        got = lax.conv_general_dilated(a(x), a(w), stride, padding, dimension_numbers=("NHWC", "HWIO", "NHWC"))
        close(got, conv_ref(x, w, stride, pairs), rtol=1e-10, atol=1e-12)
    # NCHW / OIHW (the default dimension numbers) agree with the transposed problem
    got = lax.conv(a(x.transpose(0, 3, 1, 2)), a(w.transpose(3, 2, 0, 1)), (1, 1), "SAME")
    close(got, conv_ref(x, w, (1, 1), ((1, 1), (1, 1))).transpose(0, 3, 1, 2), rtol=1e-10, atol=1e-12)
    g = gf.grad(lambda k: gnp.sum(lax.conv_general_dilated(a(x), k, (1, 1), "SAME",
                                                           dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2))(a(w))
    assert g.shape == w.shape
