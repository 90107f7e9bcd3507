// graft/ops/numpy_stats.h against values computed with NumPy (pasted as literals) and reference loops,
// with the derivatives of the differentiable ones against finite differences in f64, vmap against a loop
// and jit against eager.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/numpy_testing.h"

namespace graft::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// NumPy's linear quantile of one row, by a sort and the definition.
double ref_quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos)), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

TEST(NumpyStats, QuantilesAgainstNumpyAndALoop) {
  Array x = arr({3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, {2, 5});
  // NumPy's np.quantile(x, [0.3, 0.5], axis=1, method=m): q's dimension first
  std::vector<std::pair<QuantileMethod, std::vector<double>>> rows{
      {QuantileMethod::kLinear, {1.4, 3.4, 3.0, 5.0}},   {QuantileMethod::kLower, {1, 3, 3, 5}},
      {QuantileMethod::kHigher, {3, 5, 3, 5}},           {QuantileMethod::kNearest, {1, 3, 3, 5}},
      {QuantileMethod::kMidpoint, {2, 4, 3, 5}}};
  for (auto& [m, want] : rows) EXPECT_TRUE(is(quantile(x, {0.3, 0.5}, 1, m), f64, {2, 2}, want));
  EXPECT_EQ(quantile_method("midpoint"), QuantileMethod::kMidpoint);
  expect_throws<ValueError>([] { quantile_method("weibull"); }, "weibull");
  EXPECT_TRUE(is(median(x, 1), f64, {2}, {3, 5}));
  EXPECT_TRUE(is(median(x, 1, true), f64, {2, 1}, {3, 5}));
  EXPECT_TRUE(is(quantile(x, std::vector<double>{0.5}, 1, QuantileMethod::kLinear, true), f64, {1, 2, 1}, {3, 5}));
  EXPECT_TRUE(is(percentile(x, 30.0, 1), f64, {2}, {1.4, 3.4}));
  EXPECT_TRUE(is(median(arr({1, 2, 3, 4}, {4}, i32)), f32, {}, {2.5}));  // integers in floating point
  // random rows, several axes at once, against the loop
  Rng rng(3);
  Array r = rng.uniform({3, 4, 5}, DType::f64);
  std::vector<double> v = values(r);
  for (double q : {0.0, 0.1, 0.37, 0.5, 0.99, 1.0}) {
    Array got = quantile(r, q, Axes{0, 2});
    for (int64_t j = 0; j < 4; ++j) {
      std::vector<double> row;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t k = 0; k < 5; ++k) row.push_back(v[static_cast<size_t>((i * 4 + j) * 5 + k)]);
      EXPECT_NEAR(got[{j}].item<double>(), ref_quantile(row, q), 1e-12) << q;
    }
  }
  // NaN: a slice holding one is NaN; the nan* forms skip them (NumPy: 2.0, 1.5)
  Array y = arr({1, kNaN, 3, 2}, {4});
  EXPECT_TRUE(std::isnan(median(y).item<double>()));
  EXPECT_NEAR(nanmedian(y).item<double>(), 2.0, 1e-12);
  EXPECT_NEAR(nanpercentile(y, 25).item<double>(), 1.5, 1e-12);
  EXPECT_TRUE(std::isnan(nanmedian(arr({kNaN, kNaN}, {2})).item<double>()));
  EXPECT_TRUE(is(nanquantile(arr({1, kNaN, 3, 2, 4, 5}, {2, 3}), {0.5, 1.0}, 1), f64, {2, 2}, {2, 4, 3, 5}));
  expect_throws<ValueError>([&] { quantile(x, 1.5); }, "[0, 1]");
  // derivatives: through the picked order statistics
  auto f = [](const Array& a) { return sum(quantile(a, {0.3, 0.8}, 1)); };
  EXPECT_TRUE(close(grad(f)(r[{0}]), num_grad(f, r[{0}]), 1e-6, 1e-8));
  // vmap against a loop, jit against eager
  Array vm = vmap([](const Array& a) { return median(a); })(r[{0}]);
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(vm[{i}].item<double>(), median(r[{0, i}]).item<double>(), 1e-12);
  EXPECT_TRUE(close(jit([](const Array& a) { return nanquantile(a, {0.2, 0.7}, 1); })(r[{0}]),
                    nanquantile(r[{0}], {0.2, 0.7}, 1), 0, 0));
}

TEST(NumpyStats, SearchingAndCounting) {
  Array a = arr({1, 2, 2, 3}, {4});
  Array v = arr({0, 2, 2.5, 4}, {4});
  EXPECT_TRUE(is(searchsorted(a, v), i32, {4}, {0, 1, 3, 4}));
  EXPECT_TRUE(is(searchsorted(a, v, "right"), i32, {4}, {0, 3, 3, 4}));
  expect_throws<ValueError>([&] { searchsorted(a, v, "middle"); }, "side");
  Array x = arr({0.5, 1, 2.5, 4}, {4});
  Array up = arr({1, 2, 3}, {3}), down = arr({3, 2, 1}, {3});
  EXPECT_TRUE(is(digitize(x, up), i32, {4}, {0, 1, 2, 3}));
  EXPECT_TRUE(is(digitize(x, up, true), i32, {4}, {0, 0, 2, 3}));
  EXPECT_TRUE(is(digitize(x, down), i32, {4}, {3, 2, 1, 0}));
  EXPECT_TRUE(is(digitize(x, down, true), i32, {4}, {3, 3, 1, 0}));
  Array ids = arr({0, 1, 1, 3}, {4}, i32);
  EXPECT_TRUE(is(bincount(ids), i32, {4}, {1, 2, 0, 1}));
  EXPECT_TRUE(is(bincount(ids, arr({0.5, 1, 2, 3}, {4}), 6), f64, {6}, {0.5, 3, 0, 3, 0, 0}));
  EXPECT_TRUE(is(jit([](const Array& i) { return bincount(i, std::nullopt, 0, 5); })(ids), i32, {5}, {1, 2, 0, 1, 0}));
  expect_throws<TypeError>([&] { bincount(x); }, "integers");
  // interp: NumPy's values, clamped outside by default
  Array xp = arr({0, 1, 2}, {3}), fp = arr({10, 20, 0}, {3});
  EXPECT_TRUE(is(interp(arr({-1, 0, 0.5, 1, 2.5, 5}, {6}), xp, fp), f64, {6}, {10, 10, 15, 20, 0, 0}));
  EXPECT_TRUE(is(interp(arr({-1, 5}, {2}), xp, fp, -1.0, 7.0), f64, {2}, {-1, 7}));
  auto g = [&](const Array& t) { return sum(interp(t, xp, fp)); };
  Array t = arr({0.25, 1.5}, {2});
  EXPECT_TRUE(close(grad(g)(t), num_grad(g, t), 1e-6, 1e-8));
  // select: the first true condition wins
  Array s = select({x > 2.0, x > 0.75}, {x * 10.0, x * 100.0}, -1);
  EXPECT_TRUE(is(s, f64, {4}, {-1, 100, 25, 40}));
}

TEST(NumpyStats, Polynomials) {
  EXPECT_TRUE(is(polyval(arr({3, 0, 1}, {3}), arr({2, -1}, {2})), f64, {2}, {13, 4}));
  EXPECT_TRUE(is(polyadd(arr({1, 2}, {2}), arr({1, 2, 3}, {3})), f64, {3}, {1, 3, 5}));
  EXPECT_TRUE(is(polysub(arr({1, 2}, {2}), arr({1, 2, 3}, {3})), f64, {3}, {-1, -1, -1}));
  EXPECT_TRUE(is(polymul(arr({1, 2}, {2}), arr({1, 2, 3}, {3})), f64, {4}, {1, 4, 7, 6}));
  EXPECT_TRUE(is(polyder(arr({1, 2, 3, 4}, {4}), 2), f64, {2}, {6, 4}));
  EXPECT_TRUE(is(polyint(arr({3, 2, 1}, {3})), f64, {4}, {1, 1, 1, 0}));
  EXPECT_TRUE(is(polyint(arr({6, 2}, {2}), 2), f64, {4}, {1, 1, 0, 0}));
  EXPECT_TRUE(is(vander(arr({1, 2, 3}, {3}, i32), 4), i32, {3, 4}, {1, 1, 1, 1, 8, 4, 2, 1, 27, 9, 3, 1}));
  EXPECT_TRUE(is(vander(arr({1, 2}, {2}), std::nullopt, true), f64, {2, 2}, {1, 1, 1, 2}));
  // polyval's derivative in x and in the coefficients
  Array p = arr({0.5, -1, 2}, {3});
  auto f = [&](const Array& c) { return sum(polyval(c, arr({0.3, -1.2}, {2}))); };
  EXPECT_TRUE(close(grad(f)(p), num_grad(f, p), 1e-6, 1e-8));
  expect_throws<ValueError>([] { polyval(ones({2, 2}), ones({2})); }, "1-D");
}

TEST(NumpyStats, SignalsCovarianceAndWindows) {
  Array a = arr({1, 2, 3, 4}, {4}), v = arr({1, 0.5, -1}, {3}), s = arr({1, 0.5}, {2}), l = arr({1, 2, 3}, {3});
  EXPECT_TRUE(is(convolve(a, v), f64, {6}, {1, 2.5, 3, 3.5, -1, -4}));
  EXPECT_TRUE(is(convolve(a, v, "same"), f64, {4}, {2.5, 3, 3.5, -1}));
  EXPECT_TRUE(is(convolve(a, v, "valid"), f64, {2}, {3, 3.5}));
  EXPECT_TRUE(is(correlate(a, v, "full"), f64, {6}, {-1, -1.5, -1, -0.5, 5, 4}));
  EXPECT_TRUE(is(correlate(a, v, "same"), f64, {4}, {-1.5, -1, -0.5, 5}));
  EXPECT_TRUE(is(correlate(a, v), f64, {2}, {-1, -0.5}));
  EXPECT_TRUE(is(correlate(s, l, "full"), f64, {4}, {3, 3.5, 2, 0.5}));
  EXPECT_TRUE(is(correlate(s, l, "same"), f64, {3}, {3.5, 2, 0.5}));
  expect_throws<ValueError>([&] { convolve(a, v, "circular"); }, "mode");
  auto f = [&](const Array& x) { return sum(square(convolve(x, v, "same"))); };
  EXPECT_TRUE(close(grad(f)(a), num_grad(f, a), 1e-6, 1e-8));
  Array m = arr({1, 2, 4, 2, 1, 0.5}, {2, 3});
  EXPECT_TRUE(is(cov(m), f64, {2, 2}, {2.3333333333333335, -1.0833333333333333, -1.0833333333333333, 0.5833333333333334}));
  EXPECT_TRUE(is(cov(m, false, true), f64, {3, 3}, {0.25, -0.25, -0.875, -0.25, 0.25, 0.875, -0.875, 0.875, 3.0625}));
  EXPECT_TRUE(is(corrcoef(m), f64, {2, 2}, {1, -0.9285714285714284, -0.9285714285714284, 1}));
  EXPECT_TRUE(is(cov(arr({1, 2, 4}, {3})), f64, {}, {2.333333333333333}));
  // windows: NumPy's values
  EXPECT_TRUE(is(bartlett(5, f64), f64, {5}, {0, 0.5, 1, 0.5, 0}));
  EXPECT_TRUE(is(hanning(4, f64), f64, {4}, {0, 0.75, 0.75, 0}));
  EXPECT_TRUE(is(hamming(4, f64), f64, {4}, {0.08, 0.77, 0.77, 0.08}));
  EXPECT_TRUE(is(blackman(5, f64), f64, {5}, {0, 0.34, 1, 0.34, 0}, 1e-12, 1e-15));
  EXPECT_TRUE(is(kaiser(4, 5.0, f64), f64, {4}, {0.036710892271286676, 0.7753221044454067, 0.7753221044454067, 0.036710892271286676}, 1e-12));
  EXPECT_TRUE(is(hanning(1), f32, {1}, {1}));
  EXPECT_EQ(bartlett(0).shape(), (Shape{0}));
  EXPECT_TRUE(close(i0(arr({0, 1}, {2})), special::i0(arr({0, 1}, {2})), 0, 0));
}

}  // namespace
}  // namespace graft::testing
