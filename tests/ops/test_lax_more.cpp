// graft/ops/lax_more.h: jax.lax's conveniences against NumPy-style loops and known values, under jit where
// an index is traced, and associative_scan against a sequential loop for an operator that does not commute.
#include <cmath>

#include "graft/ops/lax_more.h"
#include "ops/numpy_testing.h"

namespace graft {
namespace {
using namespace graft::testing;

Array seq(const Shape& s, DType d = f64) { return lax::iota(d, {numel(s)}).reshape(s); }

TEST(LaxMore, BroadcastCollapseIota) {
  Array x = arr({1, 2, 3}, {3});
  Array b = lax::broadcast(x, {2, 1});
  EXPECT_TRUE(is(b, f64, {2, 1, 3}, {1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(lax::broadcast_to_rank(x, 3).shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(lax::broadcast_to_rank(b, 2).shape(), (Shape{2, 1, 3}));
  EXPECT_TRUE(is(lax::broadcasted_iota(i32, {2, 3}, 1), i32, {2, 3}, {0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(is(lax::broadcasted_iota(i32, {2, 3}, -2), i32, {2, 3}, {0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(lax::broadcast_shapes({{2, 1, 3}, {4, 1}}), (Shape{2, 4, 3}));
  expect_throws<ShapeError>([] { (void)lax::broadcast_shapes({{2}, {3}}); }, "");
  Array y = seq({2, 3, 4, 5});
  EXPECT_EQ(lax::collapse(y, 1, 3).shape(), (Shape{2, 12, 5}));
  EXPECT_EQ(lax::collapse(y, 1).shape(), (Shape{2, 60}));
  EXPECT_TRUE(close(lax::collapse(y, 0, 4), ravel(y), 0, 0));
}

TEST(LaxMore, BatchMatmul) {
  Array a = seq({2, 3, 4}) / 7.0, b = seq({2, 4, 5}) / 11.0;
  EXPECT_TRUE(close(lax::batch_matmul(a, b), matmul(a, b), 1e-14, 1e-14));
  expect_throws<ShapeError>([&] { (void)lax::batch_matmul(a, seq({3, 4, 5})); }, "batch dimensions differ");
}

TEST(LaxMore, SlicesInDim) {
  Array x = seq({3, 4});
  Array s = lax::dynamic_slice_in_dim(x, array(1), 2, 1);
  EXPECT_TRUE(is(s, f64, {3, 2}, {1, 2, 5, 6, 9, 10}));
  // the start clamps into range (dynamic_slice's rule), and a traced start works under jit
  EXPECT_TRUE(close(lax::dynamic_slice_in_dim(x, array(7), 2, 1), lax::slice_in_dim(x, 2, 4, 1, 1), 0, 0));
  auto f = jit([](const Array& v, const Array& i) { return lax::dynamic_index_in_dim(v, i, 0, false); });
  EXPECT_TRUE(is(f(x, array(2)), f64, {4}, {8, 9, 10, 11}));
  EXPECT_EQ(lax::dynamic_index_in_dim(x, array(2), 0).shape(), (Shape{1, 4}));
  Array u = lax::dynamic_update_slice_in_dim(x, full({3, 1}, -1.0, f64), array(2), 1);
  EXPECT_TRUE(is(u, f64, {3, 4}, {0, 1, -1, 3, 4, 5, -1, 7, 8, 9, -1, 11}));
  Array w = lax::dynamic_update_index_in_dim(x, full({4}, -2.0, f64), array(1), 0);
  EXPECT_TRUE(is(w, f64, {3, 4}, {0, 1, 2, 3, -2, -2, -2, -2, 8, 9, 10, 11}));
  EXPECT_TRUE(is(lax::index_in_dim(x, -1, 0, false), f64, {4}, {8, 9, 10, 11}));
  EXPECT_EQ(lax::index_in_dim(x, 0, 1).shape(), (Shape{3, 1}));
  expect_throws<ValueError>([&] { (void)lax::index_in_dim(x, 3, 0); }, "out of bounds");
  expect_throws<TypeError>([&] { (void)lax::dynamic_slice_in_dim(x, array(1.0), 2, 1); }, "integer");
  // a scalar has no axis to slice: a clear error, never a crash
  expect_throws<ValueError>([] { (void)lax::dynamic_slice_in_dim(array(1.0), array(0), 1, 0); }, "out of range");
  expect_throws<ValueError>([] { (void)lax::index_in_dim(array(1.0), 0); }, "out of range");
  expect_throws<ValueError>([] { (void)lax::unstack(array(1.0)); }, "out of range");
  expect_throws<ShapeError>([] {
    (void)lax::associative_scan([](const Arrays& p, const Arrays&) { return p; }, {array(1.0)});
  }, "need an axis");
  std::vector<Array> parts = lax::unstack(x, 1);
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_TRUE(is(parts[3], f64, {3}, {3, 7, 11}));
}

TEST(LaxMore, IndexTake) {
  Array x = seq({3, 4, 2});
  Array r = lax::index_take(x, {arr({2, 0, -1}, {3}, i32), arr({1, 3, 0}, {3}, i32)}, {0, 1});
  // r[k, :] = x[i_k, j_k, :]
  EXPECT_TRUE(is(r, f64, {3, 2}, {18, 19, 6, 7, 16, 17}));
  Array c = lax::index_take(x, {arr({3, 1}, {2}, i32)}, {1});  // x[:, j, :] for each j, index first
  EXPECT_EQ(c.shape(), (Shape{2, 3, 2}));
  EXPECT_TRUE(close(c[{0}], transpose(x, {1, 0, 2})[{3}], 0, 0));
}

TEST(LaxMore, SortTopKApprox) {
  Array k = arr({3, 1, 2}, {3}), v = arr({30, 10, 20}, {3}, i32);
  auto [sk, sv] = lax::sort_key_val(k, v);
  EXPECT_TRUE(is(sk, f64, {3}, {1, 2, 3}));
  EXPECT_TRUE(is(sv, i32, {3}, {10, 20, 30}));
  Array x = arr({1, 5, 3, 5, 0, 2}, {2, 3});
  auto [tv, ti] = lax::top_k(x, 2);
  EXPECT_TRUE(is(tv, f64, {2, 2}, {5, 3, 5, 2}));
  EXPECT_TRUE(is(ti, i32, {2, 2}, {1, 2, 0, 2}));
  auto [mv, mi] = lax::approx_max_k(x, 1, 0);  // along the first axis
  EXPECT_TRUE(is(mv, f64, {1, 3}, {5, 5, 3}));
  EXPECT_TRUE(is(mi, i32, {1, 3}, {1, 0, 0}));
  auto [nv, ni] = lax::approx_min_k(x, 2);
  EXPECT_TRUE(is(nv, f64, {2, 2}, {1, 3, 0, 2}));
  EXPECT_TRUE(is(ni, i32, {2, 2}, {0, 2, 1, 2}));
  expect_throws<ValueError>([&] { (void)lax::approx_max_k(x, 1, -1, 1.5); }, "recall_target");
}

TEST(LaxMore, CumlogsumexpClzScatterSub) {
  Array x = arr({0.5, -1, 2, 0}, {4});
  EXPECT_TRUE(close(lax::cumlogsumexp(x), log(cumsum(exp(x))), 1e-14, 1e-14));
  EXPECT_TRUE(close(lax::cumlogsumexp(x, 0, true), flip(log(cumsum(exp(flip(x))))), 1e-14, 1e-14));
  // no overflow where exp would
  Array big = lax::cumlogsumexp(arr({1000, 1000}, {2}));
  EXPECT_TRUE(is(big, f64, {2}, {1000, 1000 + std::log(2.0)}));
  // a prefix far below the axis's maximum keeps its value (no underflow to -inf), and its gradient
  EXPECT_TRUE(is(lax::cumlogsumexp(arr({-120, 0}, {2}, f32)).astype(f64), f64, {2}, {-120, std::log1p(std::exp(-120.0))}));
  EXPECT_TRUE(is(lax::cumlogsumexp(arr({-1000, 0}, {2})), f64, {2}, {-1000, 0}));
  Array gx = arr({-900, 0.5, -2}, {3});
  Array gc = grad([](const Array& v) { return sum(lax::cumlogsumexp(v)); })(gx);
  for (double g : values(gc)) EXPECT_TRUE(std::isfinite(g));
  EXPECT_TRUE(close(gc, num_grad([](const Array& v) { return sum(lax::cumlogsumexp(v)); }, gx), 1e-6, 1e-8));
  EXPECT_TRUE(is(lax::clz(arr({0, 1, 2, 255, -1, 1 << 20}, {6}, i32)), i32, {6}, {32, 31, 30, 24, 0, 11}));
  EXPECT_TRUE(is(lax::clz(arr({0, 1, 16, 128}, {4}, u8)), u8, {4}, {8, 7, 3, 0}));
  EXPECT_TRUE(is(lax::clz(arr({1}, {1}, i64)), i64, {1}, {63}));
  Array base = zeros({4}, f64);
  Array idx = arr({1, 3, 1}, {3, 1}, i32);
  Array s = lax::scatter_sub(base, idx, arr({1, 2, 3}, {3}), lax::ScatterDims({}, {0}, {0}));
  EXPECT_TRUE(is(s, f64, {4}, {0, -4, 0, -2}));
  EXPECT_TRUE(close(lax::optimization_barrier(x), x, 0, 0));
}

// Affine maps x -> a x + b compose without commuting: (a1, b1) then (a2, b2) is (a2 a1, a2 b1 + b2).
TEST(LaxMore, AssociativeScanMatchesASequentialLoop) {
  auto compose = [](const Arrays& f, const Arrays& g) {
    return Arrays{lax::mul(g[0], f[0]), lax::add(lax::mul(g[0], f[1]), g[1])};
  };
  Rng r(3);
  for (int64_t n : {1, 2, 3, 5, 8, 9}) {
    SCOPED_TRACE(n);
    Array a = r.uniform({n, 2}, f64, 0.5, 1.5), b = r.uniform({n, 2}, f64);
    Arrays got = lax::associative_scan(compose, {a, b});
    std::vector<double> av = values(a), bv = values(b), wa(av.size()), wb(bv.size());
    for (int64_t c = 0; c < 2; ++c) {
      double pa = 1, pb = 0;
      for (int64_t i = 0; i < n; ++i) {
        size_t k = static_cast<size_t>(i * 2 + c);
        pa = av[k] * pa;
        pb = av[k] * pb + bv[k];
        wa[k] = pa;
        wb[k] = pb;
      }
    }
    EXPECT_TRUE(close(got[0], concrete(wa, {n, 2}, f64), 1e-13, 1e-13));
    EXPECT_TRUE(close(got[1], concrete(wb, {n, 2}, f64), 1e-13, 1e-13));
  }
  // cumsum along axis 1, reversed, under jit, and its gradient
  Array x = r.uniform({2, 7}, f64);
  auto add2 = [](const Arrays& p, const Arrays& q) { return Arrays{lax::add(p[0], q[0])}; };
  EXPECT_TRUE(close(lax::associative_scan(add2, {x}, false, 1)[0], cumsum(x, 1), 1e-14, 1e-14));
  EXPECT_TRUE(close(lax::associative_scan(add2, {x}, true, 1)[0], lax::cumsum(x, 1, true), 1e-14, 1e-14));
  auto jf = jit([&](const Array& v) { return lax::associative_scan(add2, {v}, false, 1)[0]; });
  EXPECT_TRUE(close(jf(x), cumsum(x, 1), 1e-14, 1e-14));
  Array g = grad([&](const Array& v) { return sum(lax::associative_scan(add2, {v}, false, 1)[0] * v); })(x);
  EXPECT_TRUE(close(g, num_grad([&](const Array& v) { return sum(cumsum(v, 1) * v); }, x), 1e-7, 1e-8));
}

TEST(LaxMore, PoolingGradientsGoToTheFirstChosenElement) {
  // the gradient of 2x2 max (min) pooling with stride 2, whose kernel decides every window of a row
  // without branches: against a loop over windows that gives each window's cotangent to its first
  // largest (smallest) element in row-major order, the others 0; with ties (values from {0, 1, 2}),
  // NaNs (never chosen unless first), rows and columns no window covers, and one or many windows a row
  for (DType d : {f32, bf16, f16, f64})
    for (const Shape& shape :
         {Shape{3, 2, 7, 9}, Shape{2, 3, 26, 26}, Shape{1, 1, 2, 2}, Shape{2, 5, 11, 40}})
      for (bool is_max : {true, false}) {
        Rng rng(static_cast<uint64_t>(shape[3]));
        std::vector<double> xv = rng.uniform(shape, f64, 0, 3).to_vector<double>();
        for (double& v : xv) v = std::floor(v);
        for (size_t i = 0; i < xv.size(); i += 7) xv[i] = NAN;
        Array x = arr(xv, shape).astype(d);
        Shape os{shape[0], shape[1], shape[2] / 2, shape[3] / 2};
        Array ct = (rng.uniform(os, f64, 1, 2) * 8).astype(i32).astype(d);
        std::vector<std::pair<int64_t, int64_t>> none(4, {0, 0});
        auto pool = [&](const Array& a) {
          return is_max ? lax::reduce_window_max(a, {1, 1, 2, 2}, {1, 1, 2, 2}, none)
                        : lax::reduce_window_min(a, {1, 1, 2, 2}, {1, 1, 2, 2}, none);
        };
        auto [y, back] = vjp(pool, x);
        Array got = std::get<0>(back(ct));
        std::vector<double> want(xv.size(), 0.0), c = ct.astype(f64).to_vector<double>();
        std::vector<double> xs = x.astype(f64).to_vector<double>();  // as the dtype holds them
        int64_t H = shape[2], W = shape[3];
        for (int64_t p = 0; p < shape[0] * shape[1]; ++p)
          for (int64_t oh = 0; oh < os[2]; ++oh)
            for (int64_t ow = 0; ow < os[3]; ++ow) {
              int64_t best = p * H * W + 2 * oh * W + 2 * ow;
              for (int64_t k = 1; k < 4; ++k) {
                int64_t at = p * H * W + (2 * oh + k / 2) * W + 2 * ow + k % 2;
                if (is_max ? xs[size_t(at)] > xs[size_t(best)] : xs[size_t(at)] < xs[size_t(best)]) best = at;
              }
              want[size_t(best)] = c[size_t((p * os[2] + oh) * os[3] + ow)];
            }
        EXPECT_TRUE(close(got.astype(f64), arr(want, shape), 0, 0))
            << short_name(d) << " " << shape[2] << "x" << shape[3] << (is_max ? " max" : " min");
      }
}

TEST(LaxMore, ConvolutionAndWindowShapes) {
  auto pads = lax::padtype_to_pads({5, 4}, {3, 2}, {2, 1}, "SAME");
  ASSERT_EQ(pads.size(), 2u);
  EXPECT_EQ(pads[0], (std::pair<int64_t, int64_t>{1, 1}));
  EXPECT_EQ(pads[1], (std::pair<int64_t, int64_t>{0, 1}));
  EXPECT_EQ(lax::padtype_to_pads({4}, {2}, {1}, "SAME_LOWER")[0], (std::pair<int64_t, int64_t>{1, 0}));
  EXPECT_EQ(lax::padtype_to_pads({4}, {2}, {1}, "VALID")[0], (std::pair<int64_t, int64_t>{0, 0}));
  expect_throws<ValueError>([] { (void)lax::padtype_to_pads({4}, {2}, {1}, "FULL"); }, "padding must be");
  EXPECT_EQ(lax::padtype_to_pads({4}, {2}, {1}, "same_lower")[0], (std::pair<int64_t, int64_t>{1, 0}));
  expect_throws<ValueError>([] { (void)lax::conv_shape_tuple({2, 3, 5}, {4, 3, 3}, {0}, {{0, 0}}); }, "strides");
  expect_throws<ValueError>([] { (void)lax::conv_shape_tuple({3, 3, 5}, {4, 3, 3}, {1}, {{0, 0}}, 2); }, "divide");
  EXPECT_EQ(lax::reduce_window_shape_tuple({0}, {1}, {1}, {{1, 1}}, {2}, {1}), (Shape{2}));
  EXPECT_EQ(lax::conv_shape_tuple({2, 3, 5, 5}, {4, 3, 3, 3}, {2, 2}, {{1, 1}, {1, 1}}), (Shape{2, 4, 3, 3}));
  EXPECT_EQ(lax::reduce_window_shape_tuple({4, 6}, {2, 3}, {2, 3}, {{0, 0}, {0, 0}}), (Shape{2, 2}));
  EXPECT_EQ(lax::reduce_window_shape_tuple({4}, {3}, {1}, {{1, 1}}, {2}, {1}), (Shape{7}));
  Rng r(4);
  Array x = r.uniform({2, 3, 6, 5}, f64), w = r.uniform({4, 3, 3, 2}, f64);
  Array same = lax::conv(x, w, {1, 2}, "SAME");
  EXPECT_EQ(same.shape(), (Shape{2, 4, 6, 3}));
  auto p = lax::padtype_to_pads({6, 5}, {3, 2}, {1, 2}, "SAME");
  EXPECT_TRUE(close(same, lax::conv_general_dilated(x, w, {1, 2}, p, {1, 1}, {1, 1}, lax::ConvDims::nchw(2)), 0, 0));
  EXPECT_EQ(lax::conv_shape_tuple(x.shape(), w.shape(), {1, 2}, p), same.shape());
  Array dil = lax::conv_with_general_padding(x, w, {1, 1}, {{0, 0}, {1, 0}}, {1, 1}, {2, 1});
  EXPECT_EQ(dil.shape(), (Shape{2, 4, 2, 5}));
}

}  // namespace
}  // namespace graft
