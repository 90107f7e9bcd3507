// The gamma family of graft::random (gamma.cpp): gamma and loggamma against the exact CDF (KS over 20,000
// draws, a written here by its series and continued fraction), the implicit reparameterization gradient
// (the CDF value is unchanged along it; its mean is d E[x] / da = 1), beta, dirichlet, chisquare, t, f,
// generalized_normal and ball by their moments and supports; jit and vmap.
#include <algorithm>
#include <cmath>
#include <functional>

#include "random/ks.h"
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

constexpr int64_t kDraws = 20000;
const double kKsBound = 1.95 / std::sqrt(static_cast<double>(kDraws));

// The regularized lower incomplete gamma function P(a, x) (Numerical Recipes' split).
double gamma_p(double a, double x) {
  if (x <= 0) return 0;
  double lpre = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1) {
    double term = 1 / a, sum = term;
    for (int n = 1; n < 100000 && term > sum * 1e-17; ++n) sum += term *= x / (a + n);
    return sum * std::exp(lpre);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    c = b + an / c;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-16) break;
  }
  return 1 - std::exp(lpre) * h;
}

TEST(Gamma, SamplesFollowTheCdf) {
  for (double a : {0.3, 1.0, 2.5, 12.0}) {
    for (DType d : {DType::f32, DType::f64}) {
      SCOPED_TRACE("a = " + std::to_string(a) + " " + std::string(short_name(d)));
      Array x = random::gamma(random::key(5), array(a), Shape{kDraws}, d);
      EXPECT_EQ(x.dtype(), d);
      EXPECT_GT(min(x).item<double>(), 0);
      EXPECT_LT(ks_statistic(x, [a](double v) { return gamma_p(a, v); }), kKsBound);
      // loggamma's samples are the logs of gamma's (the same draws)
      Array lx = random::loggamma(random::key(5), array(a), Shape{kDraws}, d);
      EXPECT_TRUE(close(exp(lx), x, d == DType::f32 ? 1e-4 : 1e-10, 1e-30));
    }
  }
  // a shaped like the parameters; jit and vmap give the same values
  Array a = array({0.5f, 1.5f, 4.0f});
  Array s = random::gamma(random::key(6), a);
  EXPECT_EQ(s.shape(), (Shape{3}));
  EXPECT_TRUE(close(jit([&](const Array& k) { return random::gamma(k, a); })(random::key(6)), s, 1e-6, 1e-6));
  Array ks3 = random::split(random::key(7), 3);
  Array batched = vmap([&](const Array& k) { return random::gamma(k, a); })(ks3);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(close(batched[i], random::gamma(ks3[i], a), 1e-6, 1e-6));
  // tiny shape parameters: gamma underflows to the smallest normal, loggamma keeps the logs
  Array lt = random::loggamma(random::key(8), array(1e-3), Shape{100});
  EXPECT_TRUE(all(isfinite(lt)).item<bool>());
  EXPECT_LT(mean(lt).item<double>(), -100);
}

TEST(Gamma, ImplicitReparameterizationGradient) {
  // along dx/da the CDF value stays put: P(a + h, x + h dx/da) = P(a, x) to second order
  for (double a : {0.4, 1.0, 3.0, 30.0}) {
    Array x = random::gamma(random::key(9), array(a), Shape{50}, DType::f64);
    Array g = lax::random_gamma_grad(full({50}, a, DType::f64), x);
    std::vector<double> xs = values(x), gs = values(g);
    for (size_t i = 0; i < xs.size(); ++i) {
      double h = 1e-5 * std::max(1.0, a);
      double moved = (gamma_p(a + h, xs[i] + h * gs[i]) - gamma_p(a - h, xs[i] - h * gs[i])) / (2 * h);
      EXPECT_NEAR(moved, 0, 1e-7) << "a " << a << " x " << xs[i] << " dx/da " << gs[i];
    }
  }
  // grad of a sample is that gradient; averaged over draws it is d E[x] / da = 1
  auto total = [](const Array& a) { return sum(random::gamma(random::key(10), a, Shape{kDraws}, DType::f64)); };
  for (double a : {0.5, 2.0, 7.0}) {
    double g = grad(total)(array(a)).item<double>() / kDraws;
    EXPECT_NEAR(g, 1.0, 0.03) << "a " << a;
  }
  // d E[log x] / da = trigamma(a) through loggamma
  auto total_log = [](const Array& a) { return sum(random::loggamma(random::key(11), a, Shape{kDraws}, DType::f64)); };
  double g = grad(total_log)(array(2.0)).item<double>() / kDraws;
  EXPECT_NEAR(g, 0.6449340668, 0.02);
  // no second derivative (JAX's random_gamma_grad has none)
  expect_throws<NotImplementedError>(
      [] { (void)grad(grad([](const Array& a) { return sum(random::gamma(random::key(1), a, Shape{3})); }))(array(2.0f)); },
      "random_gamma_grad");
}

TEST(Gamma, FamilyMoments) {
  auto m = [](const Array& x) { return mean(x.astype(DType::f64)).item<double>(); };
  auto v = [](const Array& x) { return var(x.astype(DType::f64)).item<double>(); };
  Array b = random::beta(random::key(1), array(2.0f), array(5.0f), Shape{kDraws});
  EXPECT_NEAR(m(b), 2.0 / 7, 0.005);
  EXPECT_GT(min(b).item<float>(), 0.0f);
  EXPECT_LT(max(b).item<float>(), 1.0f);
  Array alpha = array({1.0f, 2.0f, 3.0f});
  Array dr = random::dirichlet(random::key(2), alpha, Shape{kDraws});
  EXPECT_EQ(dr.shape(), (Shape{kDraws, 3}));
  EXPECT_TRUE(close(sum(dr, -1), ones({kDraws}), 1e-5, 1e-5));
  EXPECT_TRUE(close(mean(dr, 0), alpha / 6.0f, 0, 0.006));
  Array c = random::chisquare(random::key(3), array(4.0f), Shape{kDraws});
  EXPECT_NEAR(m(c), 4, 0.08);
  EXPECT_NEAR(v(c), 8, 0.4);
  Array tt = random::t(random::key(4), array(6.0f), Shape{kDraws});
  EXPECT_NEAR(m(tt), 0, 0.03);
  EXPECT_NEAR(v(tt), 1.5, 0.1);
  Array ff = random::f(random::key(5), array(5.0f), array(10.0f), Shape{kDraws});
  EXPECT_NEAR(m(ff), 10.0 / 8, 0.04);
  // generalized normal with p = 2 is N(0, 1/2); with p = 1 Laplace(0, 1)
  EXPECT_NEAR(v(random::generalized_normal(random::key(6), 2.0, {kDraws})), 0.5, 0.02);
  EXPECT_NEAR(v(random::generalized_normal(random::key(7), 1.0, {kDraws})), 2.0, 0.08);
  // points of the unit L2 ball: norms below 1, with P(|x| <= r) = r^d
  Array pts = random::ball(random::key(8), 3, 2.0, {kDraws});
  EXPECT_EQ(pts.shape(), (Shape{kDraws, 3}));
  Array r = sqrt(sum(pts * pts, -1));
  EXPECT_LT(max(r).item<float>(), 1.0f);
  EXPECT_NEAR(mean(r < 0.5f).item<double>(), 0.125, 0.01);
  // gradients through beta's and dirichlet's gammas
  auto mean_beta = [](const Array& a) {
    return mean(random::beta(random::key(9), a, array(3.0), Shape{kDraws}, DType::f64));
  };
  // d/da a / (a + 3) at a = 2 is 3 / 25
  EXPECT_NEAR(grad(mean_beta)(array(2.0)).item<double>(), 3.0 / 25, 0.01);
}

TEST(Gamma, Errors) {
  expect_throws<ValueError>([] { (void)random::gamma(random::key(1), array(1.0f), Shape{3}, DType::i32); }, "float dtype");
  expect_throws<ValueError>([] { (void)random::gamma(random::key(1), array({1.0f, 2.0f}), Shape{3}); }, "must broadcast");
  expect_throws<ValueError>([] { (void)random::dirichlet(random::key(1), array(1.0f)); }, "alpha.ndim >= 1");
  expect_throws<ValueError>([] { (void)random::generalized_normal(random::key(1), -1.0); }, "p must be positive");
}

}  // namespace
}  // namespace graft
