// Counting samplers of graft::random (discrete.cpp) by their probability mass functions (frequencies
// over 20,000 draws against the exact pmf, both branches of poisson's and binomial's algorithms),
// multinomial's totals and means, geometric, triangular and lognormal against their CDFs; jit and vmap;
// JAX's edge cases (lam = 0, p = 0 and 1, invalid parameters give NaN).
#include <algorithm>
#include <cmath>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

constexpr int64_t kDraws = 20000;

// The largest gap between observed frequencies and pmf(k) over k = 0..kmax.
double pmf_gap(const Array& x, int kmax, const std::function<double(int)>& pmf) {
  std::vector<double> v = values(x);
  std::vector<double> freq(static_cast<size_t>(kmax + 1), 0);
  for (double s : v)
    if (s >= 0 && s <= kmax) freq[static_cast<size_t>(s)] += 1.0 / static_cast<double>(v.size());
  double gap = 0;
  for (int k = 0; k <= kmax; ++k) gap = std::max(gap, std::fabs(freq[static_cast<size_t>(k)] - pmf(k)));
  return gap;
}

double poisson_pmf(double lam, int k) { return std::exp(k * std::log(lam) - lam - std::lgamma(k + 1.0)); }
double binom_pmf(double n, double p, int k) {
  if (k > n) return 0;
  return std::exp(std::lgamma(n + 1) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1) + k * std::log(p) +
                  (n - k) * std::log1p(-p));
}

TEST(Discrete, PoissonBothAlgorithms) {
  for (double lam : {0.7, 4.0, 25.0}) {  // Knuth below 10, rejection above
    SCOPED_TRACE(lam);
    Array x = random::poisson(random::key(1), array(lam), Shape{kDraws});
    EXPECT_EQ(x.dtype(), DType::i32);
    EXPECT_LT(pmf_gap(x, static_cast<int>(lam * 3 + 10), [&](int k) { return poisson_pmf(lam, k); }), 0.012);
    EXPECT_NEAR(mean(x.astype(DType::f64)).item<double>(), lam, 0.05 * std::sqrt(lam) + 0.02);
  }
  // lam = 0 gives zeros; per-element rates mix both algorithms
  EXPECT_TRUE(array_equal(random::poisson(random::key(2), array(0.0f), Shape{5}), zeros({5}, DType::i32)));
  Array mixed = random::poisson(random::key(3), array({2.0f, 50.0f}), Shape{kDraws, 2});
  Array m = mean(mixed.astype(DType::f64), 0);
  EXPECT_NEAR(m[{0}].item<double>(), 2, 0.05);
  EXPECT_NEAR(m[{1}].item<double>(), 50, 0.3);
}

TEST(Discrete, BinomialBothAlgorithms) {
  struct C {
    double n, p;
  };
  for (C c : {C{10, 0.3}, C{40, 0.8}, C{100, 0.4}, C{1000, 0.02}}) {  // inversion where n min(p, 1-p) <= 10
    SCOPED_TRACE(std::to_string(c.n) + " " + std::to_string(c.p));
    Array x = random::binomial(random::key(4), array(c.n), array(c.p), Shape{kDraws});
    EXPECT_EQ(x.dtype(), DType::f32);
    EXPECT_LT(pmf_gap(x, static_cast<int>(c.n), [&](int k) { return binom_pmf(c.n, c.p, k); }), 0.012);
  }
  // edge cases as JAX: p = 0 and 1, invalid p or n give NaN, infinite n inf
  EXPECT_TRUE(array_equal(random::binomial(random::key(5), array(7.0f), array(1.0f), Shape{4}), full({4}, 7.0)));
  EXPECT_TRUE(array_equal(random::binomial(random::key(5), array(7.0f), array(0.0f), Shape{4}), zeros({4})));
  EXPECT_TRUE(all(isnan(random::binomial(random::key(5), array(7.0f), array(-0.5f), Shape{2}))).item<bool>());
  EXPECT_TRUE(all(isnan(random::binomial(random::key(5), array(-1.0f), array(0.5f), Shape{2}))).item<bool>());
}

TEST(Discrete, MultinomialCountsAddUp) {
  Array p = array({0.2f, 0.5f, 0.3f});
  Array x = random::multinomial(random::key(6), array(20.0f), p, Shape{kDraws, 3});
  EXPECT_EQ(x.shape(), (Shape{kDraws, 3}));
  EXPECT_TRUE(array_equal(sum(x, -1), full({kDraws}, 20.0)));
  EXPECT_TRUE(close(mean(x, 0), p * 20.0f, 0, 0.06));
  // a batch of trial counts
  Array b = random::multinomial(random::key(7), array({5.0f, 9.0f}), p, Shape{2, 3});
  EXPECT_TRUE(array_equal(sum(b, -1), array({5.0f, 9.0f})));
}

TEST(Discrete, GeometricTriangularLognormal) {
  Array g = random::geometric(random::key(8), array(0.3f), Shape{kDraws});
  EXPECT_EQ(g.dtype(), DType::i32);
  EXPECT_GE(min(g).item<int>(), 1);
  EXPECT_LT(pmf_gap(g, 30, [](int k) { return k >= 1 ? std::pow(0.7, k - 1) * 0.3 : 0.0; }), 0.012);
  Array t = random::triangular(random::key(9), array(1.0f), array(2.0f), array(4.0f), Shape{kDraws});
  EXPECT_GE(min(t).item<float>(), 1.0f);
  EXPECT_LE(max(t).item<float>(), 4.0f);
  EXPECT_NEAR(mean(t.astype(DType::f64)).item<double>(), 7.0 / 3, 0.02);
  EXPECT_NEAR(mean(t < 2.0f).item<double>(), 1.0 / 3, 0.012);  // F(mode) = (mode - left) / (right - left)
  Array l = random::lognormal(random::key(10), array(0.5f), Shape{kDraws});
  EXPECT_NEAR(mean(log(l).astype(DType::f64)).item<double>(), 0, 0.016);  // 4.5 standard errors
  EXPECT_NEAR(std(log(l).astype(DType::f64)).item<double>(), 0.5, 0.01);
}

TEST(Discrete, JitAndVmapMatchEager) {
  auto f = [](const Array& k) {
    return random::poisson(k, array({3.0f, 30.0f})).astype(DType::f32) +
           random::binomial(k, array({5.0f, 200.0f}), array({0.3f, 0.6f})) +
           sum(random::multinomial(k, array(4.0f), array({0.5f, 0.5f})));
  };
  Array k = random::key(11);
  EXPECT_TRUE(close(jit(f)(k), f(k), 0, 0));
  Array ks = random::split(k, 3);
  Array batched = vmap(f)(ks);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(close(batched[i], f(ks[i]), 0, 0));
}

TEST(Discrete, Errors) {
  expect_throws<ValueError>([] { (void)random::poisson(random::key(1), array(1.0f), Shape{2}, DType::f32); }, "integer dtype");
  expect_throws<ValueError>([] { (void)random::binomial(random::key(1), array(1.0f), array(0.5f), Shape{2}, DType::i32); },
                            "float dtype");
  expect_throws<ValueError>([] { (void)random::geometric(random::key(1), array({0.5f, 0.2f}), Shape{3}); }, "must broadcast");
}

}  // namespace
}  // namespace graft
