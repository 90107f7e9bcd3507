// jax.random's samplers in graft::random (distributions.cpp): each continuous one against its exact CDF by
// the Kolmogorov-Smirnov statistic over 20,000 draws (the keys are fixed, so a pass is not luck that can
// turn), the discrete ones by their frequencies, the multivariate ones by their moments and invariants;
// the same values under jit and vmap; the errors.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "random/ks.h"
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

constexpr int64_t kDraws = 20000;
// The KS statistic's critical value at 99.9% is 1.95 / sqrt(n).
const double kKsBound = 1.95 / std::sqrt(static_cast<double>(kDraws));

double phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double maxwell_cdf(double x) {
  return x <= 0 ? 0 : std::erf(x / std::sqrt(2.0)) - std::sqrt(2.0 / M_PI) * x * std::exp(-x * x / 2);
}

struct Continuous {
  const char* name;
  std::function<Array(const Array&, DType)> draw;
  std::function<double(double)> cdf;
};

TEST(Distributions, ContinuousSamplersFollowTheirCdfs) {
  std::vector<Continuous> cases = {
      {"exponential", [](const Array& k, DType d) { return random::exponential(k, {kDraws}, d); },
       [](double x) { return x <= 0 ? 0 : 1 - std::exp(-x); }},
      {"laplace", [](const Array& k, DType d) { return random::laplace(k, {kDraws}, d); },
       [](double x) { return x < 0 ? 0.5 * std::exp(x) : 1 - 0.5 * std::exp(-x); }},
      {"logistic", [](const Array& k, DType d) { return random::logistic(k, {kDraws}, d); },
       [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"cauchy", [](const Array& k, DType d) { return random::cauchy(k, {kDraws}, d); },
       [](double x) { return 0.5 + std::atan(x) / M_PI; }},
      {"pareto", [](const Array& k, DType d) { return random::pareto(k, array(2.5), Shape{kDraws}, d); },
       [](double x) { return x < 1 ? 0 : 1 - std::pow(x, -2.5); }},
      {"maxwell", [](const Array& k, DType d) { return random::maxwell(k, {kDraws}, d); }, maxwell_cdf},
      {"double_sided_maxwell",
       [](const Array& k, DType d) { return random::double_sided_maxwell(k, array(1.0), array(2.0), {kDraws}, d); },
       [](double x) {
         double z = (x - 1) / 2;
         return 0.5 + 0.5 * (z < 0 ? -1 : 1) * maxwell_cdf(std::fabs(z));
       }},
      {"weibull_min",
       [](const Array& k, DType d) { return random::weibull_min(k, array(2.0), array(1.5), {kDraws}, d); },
       [](double x) { return x <= 0 ? 0 : 1 - std::exp(-std::pow(x / 2, 1.5)); }},
      {"rayleigh", [](const Array& k, DType d) { return random::rayleigh(k, array(0.7), Shape{kDraws}, d); },
       [](double x) { return x <= 0 ? 0 : 1 - std::exp(-x * x / (2 * 0.49)); }},
      {"wald", [](const Array& k, DType d) { return random::wald(k, array(1.5), Shape{kDraws}, d); },
       [](double x) {  // inverse Gaussian with mean 1.5 and shape 1
         if (x <= 0) return 0.0;
         double m = 1.5, s = std::sqrt(1 / x);
         return phi(s * (x / m - 1)) + std::exp(2 / m) * phi(-s * (x / m + 1));
       }},
  };
  for (const auto& c : cases) {
    for (DType d : {DType::f32, DType::f64}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(short_name(d)));
      Array x = c.draw(random::key(42), d);
      EXPECT_EQ(x.dtype(), d);
      EXPECT_EQ(x.shape(), (Shape{kDraws}));
      EXPECT_LT(ks_statistic(x, c.cdf), kKsBound);
      // the same key gives the same values; jit gives them too
      EXPECT_TRUE(array_equal(c.draw(random::key(42), d), x));
      EXPECT_TRUE(close(jit([&](const Array& k) { return c.draw(k, d); })(random::key(42)), x, 1e-6, 1e-6));
    }
  }
}

TEST(Distributions, SamplersThatTakeParametersBroadcastThem) {
  Array b = array({1.0f, 3.0f});
  Array p = random::pareto(random::key(1), b);
  EXPECT_EQ(p.shape(), (Shape{2}));
  EXPECT_EQ(random::pareto(random::key(1), b, Shape{5, 2}).shape(), (Shape{5, 2}));
  expect_throws<ValueError>([&] { (void)random::pareto(random::key(1), b, Shape{3}); }, "must broadcast");
  // JAX's double_sided_maxwell shape: the shape argument followed by the parameters'
  EXPECT_EQ(random::double_sided_maxwell(random::key(2), array({0.0f, 1.0f}), array(1.0f), {4}).shape(), (Shape{4, 2}));
  EXPECT_EQ(random::weibull_min(random::key(3), array({1.0f, 2.0f}), array(1.0f)).shape(), (Shape{2}));
}

TEST(Distributions, RandintIsUniformOverItsRange) {
  Array x = random::randint(random::key(7), {kDraws}, array(-3), array(4));
  EXPECT_EQ(x.dtype(), DType::i32);
  std::vector<int> counts(7, 0);
  for (int v : x.to_vector<int>()) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    counts[static_cast<size_t>(v + 3)]++;
  }
  for (int c : counts) EXPECT_NEAR(c / double(kDraws), 1.0 / 7, 0.01);
  // the whole range of a dtype, as u8 0..256
  Array u = random::randint(random::key(8), {4096}, array(0), array(256), DType::u8);
  EXPECT_EQ(u.dtype(), DType::u8);
  auto uv = u.to_vector<uint8_t>();
  std::set<int> seen(uv.begin(), uv.end());
  EXPECT_GT(seen.size(), 250u);
  // maxval <= minval gives minval; per-element bounds broadcast
  EXPECT_TRUE(array_equal(random::randint(random::key(9), {5}, array(3), array(3)), full({5}, 3, DType::i32)));
  Array lo = array({0, 10, 100}), hi = array({1, 11, 101});
  EXPECT_TRUE(array_equal(random::randint(random::key(9), {2, 3}, lo, hi), broadcast_to(lo, {2, 3})));
  Array i64 = random::randint(random::key(10), {1000}, array(-5), array(5), DType::i64);
  EXPECT_EQ(i64.dtype(), DType::i64);
  EXPECT_GE(min(i64).item<int64_t>(), -5);
  EXPECT_LT(max(i64).item<int64_t>(), 5);
  expect_throws<TypeError>([] { (void)random::randint(random::key(1), {2}, array(0), array(3), DType::f32); },
                           "integer dtype");
}

TEST(Distributions, ChoiceWithAndWithoutReplacement) {
  Array p = array({0.1f, 0.6f, 0.3f});
  Array c = random::choice(random::key(1), array(3), {kDraws}, true, p);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(mean(c == k).item<double>(), values(p)[static_cast<size_t>(k)], 0.012);
  Array u = random::choice(random::key(2), array(5), {kDraws});
  for (int k = 0; k < 5; ++k) EXPECT_NEAR(mean(u == k).item<double>(), 0.2, 0.012);
  // without replacement: distinct draws, uniformly and with p
  for (bool with_p : {false, true}) {
    Array d = with_p ? random::choice(random::key(3), array(5), {4}, false, array({0.3f, 0.1f, 0.2f, 0.15f, 0.25f}))
                     : random::choice(random::key(3), array(5), {4}, false);
    auto v = d.to_vector<int>();
    EXPECT_EQ(std::set<int>(v.begin(), v.end()).size(), 4u);
  }
  // from an array along an axis: the sampled axis replaced by `shape`
  Array a = arange(12.0).reshape({3, 4});
  Array rows = random::choice(random::key(4), a, {2, 5}, true, std::nullopt, 0);
  EXPECT_EQ(rows.shape(), (Shape{2, 5, 4}));
  Array cols = random::choice(random::key(4), a, {2}, false, std::nullopt, 1);
  EXPECT_EQ(cols.shape(), (Shape{3, 2}));
  EXPECT_TRUE(close(cols[{slice(), 0}] - cols[{slice(), 0}][{0}], array({0.0f, 4.0f, 8.0f})));  // whole columns
  expect_throws<ValueError>([] { (void)random::choice(random::key(1), array(3), {4}, false); }, "larger sample");
  expect_throws<ValueError>([] { (void)random::choice(random::key(1), array(3), {2}, true, array({0.5f, 0.5f})); },
                            "p must be None or match");
}

TEST(Distributions, RademacherAndIndependentPermutations) {
  Array r = random::rademacher(random::key(5), {kDraws});
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_TRUE(all((r == 1) | (r == -1)).item<bool>());
  EXPECT_NEAR(mean(r).item<double>(), 0, 0.03);
  Array x = arange(40.0).reshape({4, 10});
  Array same = random::permutation(random::key(6), x, 1);  // every row permuted the same way
  Array diff = same[{1}] - same[{0}];
  EXPECT_TRUE(close(diff, full({10}, 10.0)));
  Array indep = random::permutation(random::key(6), x, 1, true);
  EXPECT_TRUE(close(sort(indep, 1), x));
  EXPECT_FALSE(close(indep[{1}] - indep[{0}], full({10}, 10.0)));
}

TEST(Distributions, MultivariateNormalHasItsMeanAndCovariance) {
  Array mean_ = array({1.0, -2.0, 0.5});
  Array cov = array({{2.0, 0.6, 0.2}, {0.6, 1.0, -0.3}, {0.2, -0.3, 0.5}});
  for (const char* method : {"cholesky", "eigh", "svd"}) {
    SCOPED_TRACE(method);
    Array x = random::multivariate_normal(random::key(11), mean_, cov, Shape{kDraws}, DType::f64, method);
    EXPECT_EQ(x.shape(), (Shape{kDraws, 3}));
    Array m = graft::mean(x, 0);
    EXPECT_TRUE(close(m, mean_, 0, 0.04));
    Array c = x - m;
    EXPECT_TRUE(close(matmul(transpose(c), c) / double(kDraws), cov, 0, 0.05));
  }
  // a batch of means against one covariance
  Array batch = random::multivariate_normal(random::key(12), zeros({4, 3}, DType::f64), cov);
  EXPECT_EQ(batch.shape(), (Shape{4, 3}));
  expect_throws<ValueError>([&] { (void)random::multivariate_normal(random::key(1), mean_, eye(2)); },
                            "needs cov of shape");
  expect_throws<ValueError>([&] { (void)random::multivariate_normal(random::key(1), mean_, cov, std::nullopt, std::nullopt, "lu"); },
                            "method must be");
}

TEST(Distributions, OrthogonalMatricesAreHaar) {
  Array q = random::orthogonal(random::key(13), 4, {500}, DType::f64);
  EXPECT_EQ(q.shape(), (Shape{500, 4, 4}));
  Array qtq = matmul(swapaxes(q, -1, -2), q);
  EXPECT_TRUE(close(qtq, broadcast_to(eye(4, std::nullopt, 0, DType::f64), qtq.shape()), 1e-12, 1e-12));
  // under the Haar measure every entry has mean 0 and variance 1/n, and det is +1 or -1 equally often
  EXPECT_NEAR(graft::mean(q).item<double>(), 0, 0.02);
  EXPECT_NEAR(graft::mean(q * q).item<double>(), 0.25, 0.01);
  Array dets = linalg::det(q);
  EXPECT_NEAR(graft::mean(dets).item<double>(), 0, 0.15);
}

TEST(Distributions, JaxParity) {
  Array k = random::key(21);
  // 8- and 16-bit integers are drawn in int32 and converted, as JAX's
  for (DType d : {DType::u8, DType::i8, DType::i16, DType::u16}) {
    Array got = random::randint(k, {500}, array(0), array(100), d);
    EXPECT_EQ(got.dtype(), d);
    EXPECT_EQ(got.astype(DType::i32).to_vector<int>(), random::randint(k, {500}, array(0), array(100), DType::i32).to_vector<int>());
  }
  // logistic: log(u) - log1p(-u) of a uniform from finfo.tiny
  Array u = random::uniform(k, {200}, DType::f32, std::numeric_limits<float>::min(), 1.0);
  EXPECT_TRUE(close(random::logistic(k, {200}), log(u) - log1p(negative(u)), 0, 0));
  // f16 Gumbel draws from f16's tiny (a float's underflows to 0 there: -inf)
  Array g = random::gumbel(k, {20000}, DType::f16).astype(DType::f32);
  EXPECT_TRUE(all(isfinite(g)).item<bool>());
  // rectangular orthogonal matrices: orthonormal columns (n > m) or rows (n < m)
  Array tall = random::orthogonal(k, 5, {2}, DType::f64, 3), wide = random::orthogonal(k, 3, {2}, DType::f64, 5);
  EXPECT_EQ(tall.shape(), (Shape{2, 5, 3}));
  EXPECT_EQ(wide.shape(), (Shape{2, 3, 5}));
  Array eye3 = broadcast_to(eye(3, std::nullopt, 0, DType::f64), {2, 3, 3});
  EXPECT_TRUE(close(matmul(swapaxes(tall, -1, -2), tall), eye3, 1e-12, 1e-12));
  EXPECT_TRUE(close(matmul(wide, swapaxes(wide, -1, -2)), eye3, 1e-12, 1e-12));
  // categorical without replacement: distinct classes per batch entry
  Array logits = log(array({0.1f, 0.2f, 0.3f, 0.25f, 0.15f}).reshape({1, 5}));
  Array c = random::categorical(k, broadcast_to(logits, {2, 5}), -1, Shape{4, 2}, false);
  EXPECT_EQ(c.shape(), (Shape{4, 2}));
  for (int64_t b = 0; b < 2; ++b) {
    auto col = c[{slice(0, 4), b}].astype(DType::i32).to_vector<int>();
    EXPECT_EQ(std::set<int>(col.begin(), col.end()).size(), 4u);
  }
  expect_throws<ValueError>([&] { (void)random::categorical(k, logits, -1, Shape{6, 1}, false); }, "cannot exceed");
  // a geometric draw from a zero uniform is 1 (bf16 draws zero 1 time in 128)
  Array geo = random::geometric(k, array(0.5f).astype(DType::bf16), Shape{5000});
  EXPECT_LT(max(geo).item<int64_t>(), 64);
  EXPECT_GE(min(geo).item<int64_t>(), 1);
}

TEST(Distributions, VmapOverKeysMatchesALoop) {
  Array ks = random::split(random::key(14), 3);
  auto f = [](const Array& k) {
    return random::exponential(k, {4}) + random::randint(k, {4}, array(0), array(9)).astype(DType::f32) +
           random::choice(k, array(6), {4}).astype(DType::f32) + random::wald(k, array(1.0f), Shape{4});
  };
  Array batched = vmap(f)(ks);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(close(batched[i], f(ks[i]), 1e-6, 1e-6));
}

TEST(Distributions, Errors) {
  expect_throws<ValueError>([] { (void)random::exponential(random::key(1), {2}, DType::i32); }, "float dtype");
  expect_throws<TypeError>([] { (void)random::laplace(array({1, 2, 3}), {2}); }, "random.laplace");
  expect_throws<ValueError>([] { (void)random::orthogonal(random::key(1), -1); }, "non-negative");
}

}  // namespace
}  // namespace graft
