// graft::special (jax.scipy.special's functions): known values, domains and poles as JAX gives them,
// derivatives (the custom rules of xlogy and ndtri included) against known values and finite
// differences in f64, and jit / vmap against eager.
#include <cmath>
#include <limits>
#include <numbers>

#include "graft/ops/special.h"
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;
namespace sp = graft::special;

constexpr double kPi = std::numbers::pi;
constexpr double kEulerGamma = 0.57721566490153286061;

double at(const Array& x) { return x.astype(DType::f64).item<double>(); }
Array f64(double v) { return array(v).astype(DType::f64); }

// d/dx f at x by central differences in f64
template <class F>
double fd(F f, double x, double h = 1e-6) {
  return (at(f(f64(x + h))) - at(f(f64(x - h)))) / (2 * h);
}
template <class F>
double ad(F f, double x) {
  return at(grad([&](const Array& a) { return sum(f(a)); })(f64(x)));
}

TEST(Special, KnownValues) {
  EXPECT_NEAR(at(sp::gammaln(f64(0.5))), std::log(std::sqrt(kPi)), 1e-15);
  EXPECT_NEAR(at(sp::gammaln(f64(10))), std::log(362880.0), 1e-13);
  EXPECT_NEAR(at(sp::gammaln(f64(-2.5))), std::log(std::fabs(std::tgamma(-2.5))), 1e-14);
  EXPECT_NEAR(at(sp::digamma(f64(1))), -kEulerGamma, 1e-15);
  EXPECT_NEAR(at(sp::digamma(f64(0.5))), -kEulerGamma - 2 * std::numbers::ln2, 1e-15);
  EXPECT_NEAR(at(sp::digamma(f64(3))), 1.5 - kEulerGamma, 1e-15);
  EXPECT_NEAR(at(sp::digamma(f64(-0.5))), -kEulerGamma - 2 * std::numbers::ln2 + 2, 1e-14);  // ψ(x+1) = ψ(x) + 1/x
  EXPECT_NEAR(at(sp::polygamma(f64(1), f64(1))), kPi * kPi / 6, 1e-14);
  EXPECT_NEAR(at(sp::polygamma(f64(2), f64(1))), -2 * 1.2020569031595942854, 1e-13);
  EXPECT_NEAR(at(sp::zeta(f64(2), f64(1))), kPi * kPi / 6, 1e-15);
  EXPECT_NEAR(at(sp::zeta(f64(4), f64(1))), std::pow(kPi, 4) / 90, 1e-15);
  EXPECT_NEAR(at(sp::zeta(f64(2), f64(-1.5))), kPi * kPi / 2 + 4 + 4.0 / 9, 1e-12);  // ζ(2, 1/2) = π²/2, shifted
  EXPECT_NEAR(at(sp::betaln(f64(2), f64(3))), std::log(1.0 / 12), 1e-14);
  EXPECT_NEAR(at(sp::xlogy(f64(2), f64(3))), 2 * std::log(3.0), 1e-15);
  EXPECT_NEAR(at(sp::xlog1py(f64(2), f64(3))), 2 * std::log(4.0), 1e-15);
  EXPECT_NEAR(at(sp::entr(f64(0.5))), 0.5 * std::numbers::ln2, 1e-15);
  EXPECT_EQ(at(sp::expit(f64(0))), 0.5);
  EXPECT_NEAR(at(sp::logit(f64(0.75))), std::log(3.0), 1e-15);
  EXPECT_EQ(at(sp::ndtr(f64(0))), 0.5);
  EXPECT_NEAR(at(sp::ndtr(f64(1.96))), 0.97500210485177952, 1e-15);
  EXPECT_NEAR(at(sp::ndtri(f64(0.97500210485177952))), 1.96, 1e-13);
  EXPECT_NEAR(at(sp::ndtri(f64(1e-10))), -6.3613409024040557, 1e-12);
  EXPECT_EQ(at(sp::ndtri(f64(0.5))), 0);
  EXPECT_NEAR(at(sp::i0(f64(1))), 1.2660658777520082, 1e-15);
  EXPECT_NEAR(at(sp::i1(f64(1))), 0.56515910399248503, 1e-15);
  EXPECT_NEAR(at(sp::i1(f64(-1))), -0.56515910399248503, 1e-15);
  EXPECT_EQ(at(sp::i0e(f64(0))), 1);
  EXPECT_EQ(at(sp::i1e(f64(0))), 0);
  // integers promote to the default float, as jax.scipy.special's do
  Array g = sp::gammaln(array(int64_t(4)));
  EXPECT_EQ(g.dtype(), DType::f32);
  EXPECT_NEAR(g.item<float>(), std::log(6.0f), 1e-6);
}

TEST(Special, DomainsAndPolesAsJax) {
  for (double x : {0.0, -1.0, -7.0}) EXPECT_TRUE(std::isnan(at(sp::digamma(f64(x))))) << x;
  EXPECT_TRUE(std::isinf(at(sp::gammaln(f64(0)))));
  EXPECT_TRUE(std::isinf(at(sp::zeta(f64(1), f64(2)))));
  EXPECT_TRUE(std::isnan(at(sp::zeta(f64(0.5), f64(2)))));
  EXPECT_TRUE(std::isinf(at(sp::zeta(f64(2), f64(-3)))));
  EXPECT_TRUE(std::isnan(at(sp::zeta(f64(2.5), f64(-1.5)))));
  EXPECT_TRUE(std::isnan(at(sp::polygamma(f64(1.5), f64(2)))));
  EXPECT_TRUE(std::isnan(at(sp::polygamma(f64(-1), f64(2)))));
  EXPECT_EQ(at(sp::xlogy(f64(0), f64(0))), 0);
  EXPECT_EQ(at(sp::xlog1py(f64(0), f64(-1))), 0);
  EXPECT_EQ(at(sp::entr(f64(0))), 0);
  EXPECT_EQ(at(sp::entr(f64(-1))), -INFINITY);
  EXPECT_EQ(at(sp::ndtri(f64(0))), -INFINITY);
  EXPECT_EQ(at(sp::ndtri(f64(1))), INFINITY);
  EXPECT_EQ(at(sp::i0e(f64(INFINITY))), 0);
}

TEST(Special, LogNdtrIsAccurateInBothTails) {
  // the exact value: log(Φ(x)) below 0, log1p(-Φ(-x)) above (where Φ(x) rounds to 1)
  auto exact = [](double x) {
    return x > 0 ? std::log1p(-0.5 * std::erfc(x / std::numbers::sqrt2)) : std::log(0.5 * std::erfc(-x / std::numbers::sqrt2));
  };
  // f64: the asymptotic series below -20 (JAX's order 3), log(Φ) to 0, log1p(-Φ(-x)) above
  for (double x : {-40.0, -25.0, -20.5, -15.0, -3.0, 0.0, 2.0, 7.0, 9.0, 12.0}) {
    double want = exact(x);
    EXPECT_NEAR(at(sp::log_ndtr(f64(x))), want, 1e-9 * std::fabs(want) + 1e-300) << x;
  }
  // f32 leaves log(Φ) below -10, where Φ underflows in f32
  for (double x : {-30.0, -12.0, -5.0, 1.0, 6.0}) {
    double want = exact(x);
    double got = sp::log_ndtr(array(static_cast<float>(x))).item<float>();
    EXPECT_NEAR(got, want, 2e-5 * std::fabs(want) + 1e-12) << x;
  }
}

TEST(Special, DerivativesMatchFiniteDifferences) {
  EXPECT_NEAR(ad(sp::gammaln, 3.0), 1.5 - kEulerGamma, 1e-14);
  EXPECT_NEAR(ad(sp::digamma, 1.0), kPi * kPi / 6, 1e-13);
  struct F {
    const char* name;
    std::function<Array(const Array&)> f;
    double x;
  };
  std::vector<F> fs = {
      {"gammaln", sp::gammaln, 2.3},
      {"digamma", sp::digamma, 0.7},
      {"polygamma", [](const Array& x) { return sp::polygamma(f64(2), x); }, 1.3},
      {"zeta", [](const Array& q) { return sp::zeta(f64(3), q); }, 1.7},
      {"betaln", [](const Array& a) { return sp::betaln(a, f64(2.5)); }, 1.5},
      {"xlogy x", [](const Array& x) { return sp::xlogy(x, f64(2.5)); }, 1.5},
      {"xlogy y", [](const Array& y) { return sp::xlogy(f64(1.5), y); }, 2.5},
      {"xlog1py y", [](const Array& y) { return sp::xlog1py(f64(1.5), y); }, 0.5},
      {"entr", sp::entr, 0.3},
      {"logit", sp::logit, 0.3},
      {"ndtr", sp::ndtr, -0.7},
      {"log_ndtr mid", sp::log_ndtr, -3.0},
      {"log_ndtr lower", sp::log_ndtr, -25.0},
      {"log_ndtr upper", sp::log_ndtr, 8.5},
      {"ndtri", sp::ndtri, 0.1},
      {"i0", sp::i0, -1.2},
      {"i1", sp::i1, 0.8},
      {"i0e", sp::i0e, 40.0},
      {"i1e", sp::i1e, -2.0},
  };
  for (auto& [name, f, x] : fs) {
    double want = fd(f, x);
    EXPECT_NEAR(ad(f, x), want, 1e-7 * (1 + std::fabs(want))) << name;
  }
  // xlogy's derivative in x at x = 0 is log(y) (JAX's rule), not the 0 a select would give
  EXPECT_NEAR(ad([](const Array& x) { return sp::xlogy(x, f64(2)); }, 0.0), std::log(2.0), 1e-15);
  // i1e's at 0 is 1/2
  EXPECT_NEAR(ad(sp::i1e, 0.0), 0.5, 1e-15);
  expect_throws<NotImplementedError>([] { grad([](const Array& n) { return sum(sp::polygamma(n, f64(2))); })(f64(1)); },
                                     "with respect to m");
  expect_throws<NotImplementedError>([] { grad([](const Array& s) { return sum(sp::zeta(s, f64(2))); })(f64(3)); },
                                     "with respect to x");
}

// SciPy's values (scipy.special.gammainc / gammaincc / betainc), far into the tails and at large parameters
TEST(Special, IncompleteGammaAndBetaMatchSciPy) {
  struct G {
    double a, x, p, q;
  };
  for (auto [a, x, p, q] : std::vector<G>{{0.5, 0.001, 0.035670591729679894, 0.9643294082703201},
                                          {100, 90, 0.15822098918643007, 0.84177901081356998},
                                          {100, 110, 0.84172132993991289, 0.15827867006008706},
                                          {1000, 1000, 0.50420524418021551, 0.49579475581978449},
                                          {0.001, 0.5, 0.9994399333435291, 0.00056006665647075006},
                                          {30, 0.1, 3.422264318380487e-63, 1},
                                          {5, 60, 1, 5.0600460658425551e-21},
                                          {2.5, 2.5, 0.58411981300449201, 0.41588018699550788}}) {
    // relative to the value except where one of P, Q is computed as 1 minus the other
    EXPECT_NEAR(at(sp::gammainc(f64(a), f64(x))), p, 1e-13 * p + 1e-15) << a << " " << x;
    EXPECT_NEAR(at(sp::gammaincc(f64(a), f64(x))), q, 1e-13 * q + 1e-15) << a << " " << x;
  }
  struct B {
    double a, b, x, i;
  };
  for (auto [a, b, x, i] : std::vector<B>{{0.5, 0.5, 0.3, 0.36901011956554541},
                                          {50, 60, 0.45, 0.46423529143060638},
                                          {0.01, 3, 0.2, 0.99508711823131579},
                                          {200, 300, 0.4, 0.50242861631989699},
                                          {2, 3, 0.999, 0.99999999600300005},
                                          {3, 2, 0.0001, 3.9997000000000004e-12},
                                          {1, 1, 0.3, 0.3}})
    EXPECT_NEAR(at(sp::betainc(f64(a), f64(b), f64(x))), i, 1e-12 * i) << a << " " << b << " " << x;
  // domains as JAX: NaN outside, the ends exact
  EXPECT_TRUE(std::isnan(at(sp::gammainc(f64(0), f64(1)))));
  EXPECT_TRUE(std::isnan(at(sp::gammainc(f64(1), f64(-1)))));
  EXPECT_EQ(at(sp::gammainc(f64(2), f64(0))), 0);
  EXPECT_EQ(at(sp::gammaincc(f64(2), f64(INFINITY))), 0);
  EXPECT_TRUE(std::isnan(at(sp::betainc(f64(1), f64(2), f64(1.5)))));
  EXPECT_TRUE(std::isnan(at(sp::betainc(f64(-1), f64(2), f64(0.5)))));
  EXPECT_EQ(at(sp::betainc(f64(2), f64(2), f64(1))), 1);
  // integers promote to the default float; a scalar broadcasts against an array
  Array r = sp::betainc(array(2), array(3), array({0.25f, 0.5f}));
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_NEAR(values(r)[1], 0.6875, 1e-6);  // I_0.5(2, 3) = 11/16
}

TEST(Special, IncompleteGammaAndBetaDerivatives) {
  // in a, through igamma_grad_a, and in x, the densities
  for (double a : {0.4, 3.0, 40.0})
    for (double x : {0.2, 2.5, 45.0}) {
      auto in_a = [x](const Array& v) { return sp::gammainc(v, f64(x)); };
      auto in_x = [a](const Array& v) { return sp::gammaincc(f64(a), v); };
      EXPECT_NEAR(ad(in_a, a), fd(in_a, a), 1e-8) << a << " " << x;
      EXPECT_NEAR(ad(in_x, x), fd(in_x, x), 1e-8) << a << " " << x;
    }
  auto in_x = [](const Array& v) { return sp::betainc(f64(2.5), f64(0.7), v); };
  EXPECT_NEAR(ad(in_x, 0.6), fd(in_x, 0.6), 1e-8);
  expect_throws<NotImplementedError>([] { grad([](const Array& a) { return sum(sp::betainc(a, f64(2), f64(0.5))); })(f64(1)); },
                                     "with respect to a and b");
  expect_throws<NotImplementedError>(
      [] { grad(grad([](const Array& a) { return sum(sp::gammainc(a, f64(2))); }))(f64(1)); }, "igamma_grad_a");
}

// Γ and its relatives, the entropies and Box-Cox: exact values, JAX's conventions at the poles and
// signed zeros, derivatives against finite differences (poch's custom rule included).
TEST(Special, GammaFamilyEntropiesAndBoxCox) {
  const double sqrt_pi = std::sqrt(kPi), nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  EXPECT_NEAR(at(sp::gamma(f64(0.5))), sqrt_pi, 1e-15);
  EXPECT_NEAR(at(sp::gamma(f64(5))), 24, 1e-13);
  EXPECT_NEAR(at(sp::gamma(f64(-0.5))), -2 * sqrt_pi, 1e-14);
  EXPECT_NEAR(at(sp::gamma(f64(-1.5))), 4 * sqrt_pi / 3, 1e-14);
  EXPECT_EQ(at(sp::gamma(f64(0.0))), inf);
  EXPECT_EQ(at(sp::gamma(f64(-0.0))), -inf);
  EXPECT_TRUE(std::isnan(at(sp::gamma(f64(-2)))));
  EXPECT_TRUE(std::isnan(at(sp::gamma(f64(-inf)))));
  for (auto [x, sign] : std::vector<std::pair<double, double>>{{3.2, 1}, {-0.5, -1}, {-1.5, 1}, {-2.5, -1}, {0.0, 1},
                                                               {-0.0, -1}, {inf, 1}, {-3, nan}, {-inf, nan}, {nan, nan}}) {
    double g = at(sp::gammasgn(f64(x)));
    if (std::isnan(sign)) {
      EXPECT_TRUE(std::isnan(g)) << x;
    } else {
      EXPECT_EQ(g, sign) << x;
    }
  }
  EXPECT_NEAR(at(sp::loggamma(f64(4))), std::log(6.0), 1e-15);
  EXPECT_TRUE(std::isnan(at(sp::loggamma(f64(-0.5)))));
  EXPECT_NEAR(at(sp::beta(f64(2), f64(3))), 1.0 / 12, 1e-15);
  EXPECT_NEAR(at(sp::beta(f64(-0.5), f64(2))), -4.0, 1e-13);  // Γ(-1/2) Γ(2) / Γ(3/2) = -2√π / (√π / 2)
  EXPECT_EQ(at(sp::factorial(f64(-1))), 0);
  EXPECT_NEAR(at(sp::factorial(f64(10))), 3628800, 1e-7);
  EXPECT_NEAR(at(sp::comb(f64(5), f64(2))), 10, 1e-12);
  EXPECT_EQ(at(sp::comb(f64(5), f64(6))), 0);
  EXPECT_EQ(at(sp::comb(f64(-1), f64(0))), 0);
  EXPECT_NEAR(at(sp::comb(f64(5), f64(2), true)), 15, 1e-12);
  EXPECT_EQ(at(sp::comb(f64(4), f64(0), true)), 1);
  EXPECT_NEAR(at(sp::poch(f64(3), f64(2))), 12, 1e-12);
  EXPECT_EQ(at(sp::poch(f64(-2), f64(0))), 1);
  EXPECT_NEAR(at(sp::multigammaln(f64(2.5), 1)), at(sp::gammaln(f64(2.5))), 1e-15);
  EXPECT_NEAR(at(sp::multigammaln(f64(2.5), 2)), 0.5 * std::log(kPi) + std::lgamma(2.5) + std::lgamma(2.0), 1e-14);
  EXPECT_EQ(sp::bernoulli(3).dtype(), default_float_dtype());
  bool x64 = config::enable_x64();
  config::set_enable_x64(true);  // computed in f64 on the host; returned in the default float dtype
  Array b = sp::bernoulli(8);
  Array b20 = sp::bernoulli(20);
  config::set_enable_x64(x64);
  ASSERT_EQ(b.dtype(), DType::f64);
  std::vector<double> want{1, -0.5, 1.0 / 6, 0, -1.0 / 30, 0, 1.0 / 42, 0, -1.0 / 30};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(values(b)[i], want[i], 1e-16) << i;
  EXPECT_NEAR(at(b20[20]), -174611.0 / 330, 1e-12);
  expect_throws<ValueError>([] { sp::bernoulli(-1); }, "bernoulli");
  expect_throws<ValueError>([] { sp::multigammaln(f64(3), 0); }, "multigammaln");
  // entropies
  EXPECT_NEAR(at(sp::rel_entr(f64(2), f64(3))), 2 * std::log(2.0 / 3), 1e-15);
  EXPECT_EQ(at(sp::rel_entr(f64(0), f64(1))), 0);
  EXPECT_EQ(at(sp::rel_entr(f64(1), f64(0))), inf);
  EXPECT_EQ(at(sp::rel_entr(f64(-1), f64(1))), inf);
  EXPECT_NEAR(at(sp::kl_div(f64(2), f64(3))), 2 * std::log(2.0 / 3) + 1, 1e-15);
  // Box-Cox
  EXPECT_NEAR(at(sp::boxcox(f64(std::exp(1.0)), f64(0))), 1, 1e-15);
  EXPECT_NEAR(at(sp::boxcox(f64(4), f64(0.5))), 2, 1e-15);
  EXPECT_NEAR(at(sp::boxcox1p(f64(3), f64(0.5))), 2, 1e-15);
  EXPECT_NEAR(at(sp::boxcox1p(f64(1e-20), f64(2))), 1e-20, 1e-35);  // expm1 and log1p keep tiny x
  // derivatives
  auto poch_z = [](const Array& z) { return sp::poch(z, f64(1.7)); };
  auto poch_m = [](const Array& m) { return sp::poch(f64(2.3), m); };
  EXPECT_NEAR(ad(poch_z, 2.3), fd(poch_z, 2.3), 1e-7);
  EXPECT_NEAR(ad(poch_m, 1.7), fd(poch_m, 1.7), 1e-7);
  auto g = [](const Array& x) { return sp::gamma(x); };
  EXPECT_NEAR(ad(g, -1.3), fd(g, -1.3), 1e-6);
  EXPECT_NEAR(ad(g, 3.1), fd(g, 3.1), 1e-6);
  auto bt = [](const Array& a) { return sp::beta(a, f64(2.5)); };
  EXPECT_NEAR(ad(bt, 1.4), fd(bt, 1.4), 1e-7);
  auto c = [](const Array& k) { return sp::comb(f64(7.5), k); };
  EXPECT_NEAR(ad(c, 2.2), fd(c, 2.2), 1e-6);
  auto kl = [](const Array& q) { return sp::kl_div(f64(0.7), q); };
  EXPECT_NEAR(ad(kl, 0.4), fd(kl, 0.4), 1e-7);
  auto bc = [](const Array& l) { return sp::boxcox(f64(2.5), l); };
  EXPECT_NEAR(ad(bc, 0.3), fd(bc, 0.3), 1e-7);
  // integers promote to the default float
  EXPECT_TRUE(is_floating(sp::factorial(array(std::vector<int32_t>{3}, {1})).dtype()));
}

// The exponential integrals and the scaled complementary error function: known values, both sides of
// each branch's boundary, the limits, and derivatives (custom rules) against finite differences.
TEST(Special, ExponentialIntegralsAndErfcx) {
  const double inf = INFINITY;
  EXPECT_NEAR(at(sp::exp1(f64(1))), 0.21938393439552027368, 1e-15);
  EXPECT_NEAR(at(sp::exp1(f64(0.5))), 0.55977359477616081175, 1e-15);
  EXPECT_NEAR(at(sp::exp1(f64(10))), 4.1569689296853242774e-6, 1e-21);
  EXPECT_EQ(at(sp::exp1(f64(0))), inf);
  EXPECT_TRUE(std::isnan(at(sp::exp1(f64(-1)))));
  EXPECT_NEAR(at(sp::expi(f64(1))), 1.8951178163559367555, 1e-15);
  EXPECT_NEAR(at(sp::expi(f64(-1))), -0.21938393439552027368, 1e-15);
  EXPECT_NEAR(at(sp::expi(f64(60))) / 1.9361822139292765e24, 1, 1e-14);  // the asymptotic branch
  EXPECT_NEAR(at(sp::expi(f64(20))) / 25615652.664056595, 1, 1e-14);    // the series
  EXPECT_EQ(at(sp::expi(f64(0))), -inf);
  EXPECT_EQ(at(sp::expi(f64(inf))), inf);
  EXPECT_NEAR(at(sp::erfcx(f64(0))), 1, 1e-16);
  EXPECT_NEAR(at(sp::erfcx(f64(1))), 0.42758357615580700442, 1e-16);
  EXPECT_NEAR(at(sp::erfcx(f64(3))), 0.17900115118138998, 1e-16);    // the continued fraction
  EXPECT_NEAR(at(sp::erfcx(f64(1e8))) * 1e8 * std::sqrt(kPi), 1, 1e-15);  // e^(x²) erfc(x) would be 0 * inf
  EXPECT_EQ(at(sp::erfcx(f64(-30))), inf);
  for (double x : {0.3, 0.99, 1.01, 3.0}) {
    auto e1 = [](const Array& v) { return sp::exp1(v); };
    EXPECT_NEAR(ad(e1, x), -std::exp(-x) / x, 1e-14) << x;
    EXPECT_NEAR(ad(e1, x), fd(e1, x), 1e-7) << x;
  }
  for (double x : {-2.0, 0.7, 45.0}) {
    auto ei = [](const Array& v) { return sp::expi(v); };
    EXPECT_NEAR(ad(ei, x) / (std::exp(x) / x), 1, 1e-14) << x;
  }
  for (double x : {-1.5, 0.4, 1.99, 2.01, 7.0}) {
    auto ex = [](const Array& v) { return sp::erfcx(v); };
    EXPECT_NEAR(ad(ex, x), fd(ex, x), 1e-7) << x;
  }
}

TEST(Special, JitAndVmapMatchEager) {
  Rng rng(7);
  Array x = rng.uniform({4, 5}, DType::f32, 0.2, 3);
  auto f = [](const Array& a) {
    return sp::gammaln(a) + sp::digamma(a) + sp::xlogy(a, a + 1.0) + sp::log_ndtr(a - 2.0) + sp::i0e(a) +
           sp::polygamma(array(1.0f), a) + sp::zeta(array(2.0f), a) + sp::ndtri(sp::expit(a - 1.5)) +
           sp::gammainc(a, a * 0.8) + sp::betainc(array(2.0f), array(3.0f), sp::expit(a - 1.0));
  };
  Array want = f(x);
  EXPECT_TRUE(close(jit(f)(x), want, 1e-5, 1e-6));
  EXPECT_TRUE(close(vmap(f)(x), want, 1e-5, 1e-6));
  EXPECT_TRUE(close(jit(grad([&](const Array& a) { return sum(f(a)); }))(x),
                    grad([&](const Array& a) { return sum(f(a)); })(x), 1e-4, 1e-5));
}

}  // namespace
}  // namespace graft
