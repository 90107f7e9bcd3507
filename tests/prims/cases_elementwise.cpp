// Conformance rows: elementwise primitives (unary, binary, comparisons, select, clamp, conversions).
#include <bit>
#include <cmath>
#include <cstring>
#include <tuple>

#include "prims/conformance.h"

namespace graft::testing {

namespace {
using namespace graft::prims;
const Shape kShape{3, 4};

// A unary row: inputs uniform in [lo, hi).
Case unary(std::string name, const Primitive& p, double lo, double hi, std::function<double(double)> f,
           bool smooth = true, Params params = {}) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.params = std::move(params);
  c.inputs = [lo, hi](Rng& r, DType d) { return Inputs{r.uniform(kShape, d, lo, hi)}; };
  c.reference = ref_map([f](const std::vector<double>& a) { return f(a[0]); });
  c.diff = {true};
  c.smooth = smooth;
  return c;
}

// A unary row on integer inputs (values only, plus vmap/jit).
Case unary_int(std::string name, const Primitive& p, DType d, int64_t lo, int64_t hi, std::function<double(double)> f,
               Params params = {}) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.params = std::move(params);
  c.inputs = [d, lo, hi](Rng& r, DType) { return Inputs{r.ints(kShape, d, lo, hi)}; };
  c.reference = ref_map([f](const std::vector<double>& a) { return f(a[0]); });
  c.diff = {false};
  c.smooth = false;
  c.value_dtypes = {d};
  return c;
}

// A binary row: a uniform in [alo, ahi), b in [blo, bhi); b rank 0 when scalar_b.
Case binary(std::string name, const Primitive& p, double alo, double ahi, double blo, double bhi,
            std::function<double(double, double)> f, bool smooth = true, bool scalar_b = false) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.inputs = [=](Rng& r, DType d) {
    return Inputs{r.uniform(kShape, d, alo, ahi), r.uniform(scalar_b ? Shape{} : kShape, d, blo, bhi)};
  };
  c.reference = ref_map([f](const std::vector<double>& a) { return f(a[0], a[1]); });
  c.diff = {true, true};
  c.smooth = smooth;
  return c;
}

Case binary_int(std::string name, const Primitive& p, DType d, int64_t alo, int64_t ahi, int64_t blo, int64_t bhi,
                std::function<double(double, double)> f) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.inputs = [=](Rng& r, DType) { return Inputs{r.ints(kShape, d, alo, ahi), r.ints(kShape, d, blo, bhi)}; };
  c.reference = ref_map([f](const std::vector<double>& a) { return f(a[0], a[1]); });
  c.diff = {false, false};
  c.smooth = false;
  c.value_dtypes = {d};
  return c;
}

// A comparison row: operands drawn from few values so that ties occur.
Case compare(std::string name, const Primitive& p, std::function<bool(double, double)> f, DType d = DType::f32) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  bool fl = is_floating(d);
  c.inputs = [d, fl](Rng& r, DType fd) {
    DType t = fl ? fd : d;
    return Inputs{r.ints(kShape, t, -2, 2), r.ints(kShape, t, -2, 2)};
  };
  c.reference = ref_map([f](const std::vector<double>& a) { return f(a[0], a[1]) ? 1.0 : 0.0; }, DType::bool_);
  c.diff = {false, false};
  c.smooth = false;
  if (!fl) c.value_dtypes = {d};
  return c;
}

double sgn(double x) { return (x > 0) - (x < 0); }
double round_even(double x) { return std::nearbyint(x); }
double erfinv_ref(double y) {
  // bisection on erf (slow but independent of the kernel's method)
  double lo = -6, hi = 6;
  for (int i = 0; i < 200; ++i) {
    double m = 0.5 * (lo + hi);
    (std::erf(m) < y ? lo : hi) = m;
  }
  return 0.5 * (lo + hi);
}
// References for the special functions, independent of graft/prims/special_math.cpp's methods where
// they can be: sums taken far enough, integrals by the trapezoid rule (exact to rounding for periodic
// integrands), reflection formulas.
double digamma_ref(double x) {
  if (x < 0) return digamma_ref(1 - x) - M_PI / std::tan(M_PI * x);
  // ψ(x) = ψ(x + N) - Σ_{k<N} 1/(x + k), ψ(x + N) from three terms of its expansion (error ~ 1/N^4)
  const int n = 20000;
  double sum = 0;
  for (int k = n - 1; k >= 0; --k) sum += 1 / (x + k);
  double y = x + n;
  return std::log(y) - 0.5 / y - 1 / (12 * y * y) - sum;
}
// Σ_{k>=0} (k + q)^-s: N terms and the integral of the rest with its half-step correction
double zeta_ref(double s, double q) {
  const int n = 20000;
  double sum = 0;
  for (int k = n - 1; k >= 0; --k) sum += std::pow(k + q, -s);
  double y = n + q;
  return sum + std::pow(y, 1 - s) / (s - 1) + 0.5 * std::pow(y, -s) + s * std::pow(y, -s - 1) / 12;
}
double polygamma_ref(double m, double x) {
  if (m == 0) return digamma_ref(x);
  return (std::fmod(m, 2.0) == 0 ? -1 : 1) * std::tgamma(m + 1) * zeta_ref(m + 1, x);
}
// e^-|x| I_nu(x) = (1/π) ∫_0^π e^{|x|(cos t - 1)} cos(nu t) dt (times sign(x) for nu = 1)
double bessel_ie_ref(int nu, double x) {
  const int n = 400;
  double sum = 0, ax = std::fabs(x);
  for (int i = 0; i <= n; ++i) {
    double t = M_PI * i / n, f = std::exp(ax * (std::cos(t) - 1)) * std::cos(nu * t);
    sum += (i == 0 || i == n) ? 0.5 * f : f;
  }
  double r = sum / n;
  return nu == 1 && x < 0 ? -r : r;
}

// dx/da of Gamma(a) samples: -(dP(a, x)/da) / p(x; a) summed as its series in long double,
// Σ_n x^(n+1) Γ(a) / Γ(a+n+1) (ψ(a+n+1) - log x) (a different route from the kernel's continued fraction
// above x = a + 1; both agree with mpmath's derivative of its regularized incomplete gamma to 3e-15), ψ in
// long double by recurrence to 40 and six terms of its asymptotic series.
long double digamma_ld(long double x) {
  long double acc = 0;
  while (x < 40) acc -= 1 / x++;
  long double y2 = 1 / (x * x);
  return acc + std::log(x) - 0.5L / x -
         y2 * (1.0L / 12 - y2 * (1.0L / 120 - y2 * (1.0L / 252 - y2 * (1.0L / 240 - y2 * (1.0L / 132)))));
}
double random_gamma_grad_ref(double a, double x) {
  long double r = x / static_cast<long double>(a), psi = digamma_ld(a + 1.0L), lx = std::log(static_cast<long double>(x));
  long double sum = 0;
  for (int n = 0; n < 2000; ++n) {
    sum += r * (psi - lx);
    r *= x / (a + n + 1.0L);
    psi += 1.0L / (a + n + 1.0L);
  }
  return static_cast<double>(sum);
}

// The regularized incomplete gamma function P(a, x) = x^a e^-x Σ_n x^n / Γ(a+n+1), every term positive,
// summed in long double for every x (the kernel switches to Q's continued fraction above x = a + 1).
long double igamma_ld(double a, double x) {
  long double term = std::exp(a * std::log(static_cast<long double>(x)) - x - std::lgamma(a + 1.0L)), sum = 0;
  for (int n = 0; n < 3000; ++n) {
    sum += term;
    term *= x / (a + n + 1.0L);
  }
  return sum;
}
double igamma_ref(double a, double x) { return static_cast<double>(igamma_ld(a, x)); }
double igammac_ref(double a, double x) { return static_cast<double>(1.0L - igamma_ld(a, x)); }
// ∂P/∂a = -(the gamma sample's dx/da) times the density
double igamma_grad_a_ref(double a, double x) {
  long double density = std::exp((a - 1.0L) * std::log(static_cast<long double>(x)) - x - std::lgamma(static_cast<long double>(a)));
  return static_cast<double>(-random_gamma_grad_ref(a, x) * density);
}
// I_x(a, b) = x^a (1-x)^b / (a B(a, b)) Σ_n t_n, t_0 = 1, t_{n+1} = t_n x (a+b+n) / (a+n+1): positive terms,
// long double (the kernel uses the continued fraction and its symmetry instead)
double betainc_ref(double a, double b, double x) {
  long double la = a, lb = b, lx = x;
  long double front = std::exp(la * std::log(lx) + lb * std::log1p(-lx) - std::lgamma(la) - std::lgamma(lb) +
                               std::lgamma(la + lb)) / la;
  long double t = 1, sum = 0;
  for (int n = 0; n < 20000; ++n) {
    sum += t;
    t *= lx * (la + lb + n) / (la + n + 1);
  }
  return static_cast<double>(front * sum);
}

// A row of a special function of (an order or exponent held fixed at `a`, x in [lo, hi)).
Case special2(std::string name, const Primitive& p, double a, double lo, double hi,
              std::function<double(double, double)> f) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.inputs = [=](Rng& r, DType d) { return Inputs{lax::full(kShape, a, d), r.uniform(kShape, d, lo, hi)}; };
  c.reference = ref_map([f](const std::vector<double>& v) { return f(v[0], v[1]); });
  c.diff = {false, true};
  c.rtol32 = 1e-5;
  return c;
}
}  // namespace

std::vector<Case> elementwise_cases() {
  std::vector<Case> v;
  // ---- unary float ------------------------------------------------------------------------------------
  v.push_back(unary("neg", neg_p, -2, 2, [](double x) { return -x; }));
  v.push_back(unary("sign", sign_p, 0.1, 2, sgn, false));
  v.push_back(unary("sign_negative", sign_p, -2, -0.1, sgn, false));
  v.push_back(unary("floor", floor_p, -3, 3, [](double x) { return std::floor(x); }, false));
  v.push_back(unary("ceil", ceil_p, -3, 3, [](double x) { return std::ceil(x); }, false));
  v.push_back(unary("round_away", round_p, -3, 3, [](double x) { return std::round(x); }, false,
                    {{"rounding_method", int64_t(0)}}));
  v.push_back(unary("round_even", round_p, -3, 3, round_even, false, {{"rounding_method", int64_t(1)}}));
  {
    Case c = unary("is_finite", is_finite_p, -2, 2, [](double x) { return std::isfinite(x) ? 1.0 : 0.0; }, false);
    c.inputs = [](Rng& r, DType d) {
      Array x = r.uniform(kShape, d, -2, 2);
      return Inputs{x.at({0, 1}).set(INFINITY).at({1, 2}).set(NAN).at({2, 3}).set(-INFINITY)};
    };
    c.reference = ref_map([](const std::vector<double>& a) { return std::isfinite(a[0]) ? 1.0 : 0.0; }, DType::bool_);
    v.push_back(c);
  }
  v.push_back(unary("exp", exp_p, -2, 2, [](double x) { return std::exp(x); }));
  v.push_back(unary("exp2", exp2_p, -2, 2, [](double x) { return std::exp2(x); }));
  v.push_back(unary("log", log_p, 0.1, 3, [](double x) { return std::log(x); }));
  v.push_back(unary("log1p", log1p_p, -0.5, 2, [](double x) { return std::log1p(x); }));
  v.push_back(unary("expm1", expm1_p, -2, 2, [](double x) { return std::expm1(x); }));
  v.push_back(unary("tanh", tanh_p, -2, 2, [](double x) { return std::tanh(x); }));
  v.push_back(unary("logistic", logistic_p, -4, 4, [](double x) { return 1 / (1 + std::exp(-x)); }));
  v.push_back(unary("sin", sin_p, -3, 3, [](double x) { return std::sin(x); }));
  v.push_back(unary("cos", cos_p, -3, 3, [](double x) { return std::cos(x); }));
  v.push_back(unary("tan", tan_p, -1.2, 1.2, [](double x) { return std::tan(x); }));
  v.push_back(unary("asin", asin_p, -0.9, 0.9, [](double x) { return std::asin(x); }));
  v.push_back(unary("acos", acos_p, -0.9, 0.9, [](double x) { return std::acos(x); }));
  v.push_back(unary("atan", atan_p, -3, 3, [](double x) { return std::atan(x); }));
  v.push_back(unary("sinh", sinh_p, -2, 2, [](double x) { return std::sinh(x); }));
  v.push_back(unary("cosh", cosh_p, -2, 2, [](double x) { return std::cosh(x); }));
  v.push_back(unary("asinh", asinh_p, -3, 3, [](double x) { return std::asinh(x); }));
  v.push_back(unary("acosh", acosh_p, 1.1, 3, [](double x) { return std::acosh(x); }));
  v.push_back(unary("atanh", atanh_p, -0.9, 0.9, [](double x) { return std::atanh(x); }));
  v.push_back(unary("sqrt", sqrt_p, 0.1, 4, [](double x) { return std::sqrt(x); }));
  v.push_back(unary("rsqrt", rsqrt_p, 0.1, 4, [](double x) { return 1 / std::sqrt(x); }));
  v.push_back(unary("cbrt", cbrt_p, 0.1, 4, [](double x) { return std::cbrt(x); }));
  v.push_back(unary("cbrt_negative", cbrt_p, -4, -0.1, [](double x) { return std::cbrt(x); }));
  v.push_back(unary("abs", abs_p, 0.1, 2, [](double x) { return std::fabs(x); }));
  v.push_back(unary("abs_negative", abs_p, -2, -0.1, [](double x) { return std::fabs(x); }));
  v.push_back(unary("erf", erf_p, -2, 2, [](double x) { return std::erf(x); }));
  v.push_back(unary("erfc", erfc_p, -2, 2, [](double x) { return std::erfc(x); }));
  {
    Case c = unary("erf_inv", erf_inv_p, -0.95, 0.95, erfinv_ref);
    c.rtol32 = 4e-6;
    v.push_back(c);
  }
  // ---- special functions (graft/prims/special_math.h) -------------------------------------------------------
  for (auto [name, lo, hi] : {std::tuple{"lgamma", 0.2, 5.0}, {"lgamma_negative", -2.8, -2.2}}) {
    Case c = unary(name, lgamma_p, lo, hi, [](double x) { return std::lgamma(x); });
    c.rtol32 = 1e-5;
    v.push_back(c);
  }
  for (auto [name, lo, hi] : {std::tuple{"digamma", 0.2, 5.0}, {"digamma_negative", -2.8, -2.2}, {"digamma_large", 20.0, 60.0}}) {
    Case c = unary(name, digamma_p, lo, hi, digamma_ref);
    c.rtol32 = 1e-5;
    v.push_back(c);
  }
  for (auto [name, lo, hi] : {std::tuple{"bessel_i0e", -5.0, 5.0}, {"bessel_i0e_large", 25.0, 60.0}})
    v.push_back(unary(name, bessel_i0e_p, lo, hi, [](double x) { return bessel_ie_ref(0, x); }));
  for (auto [name, lo, hi] : {std::tuple{"bessel_i1e", -5.0, 5.0}, {"bessel_i1e_large", -60.0, -25.0}})
    v.push_back(unary(name, bessel_i1e_p, lo, hi, [](double x) { return bessel_ie_ref(1, x); }));
  v.push_back(special2("polygamma_0", polygamma_p, 0, 0.3, 4, polygamma_ref));
  v.push_back(special2("polygamma_1", polygamma_p, 1, 0.3, 4, polygamma_ref));
  v.push_back(special2("polygamma_3", polygamma_p, 3, 0.5, 4, polygamma_ref));
  v.push_back(special2("zeta_2", zeta_p, 2, 0.3, 4, zeta_ref));
  v.push_back(special2("zeta_3_5", zeta_p, 3.5, 0.5, 4, zeta_ref));
  for (double a : {0.6, 2.5}) {
    // both the series (x < a + 1) and the continued fraction (beyond); no derivative, as in JAX
    Case c = special2("random_gamma_grad_" + std::to_string(static_cast<int>(a * 10)), random_gamma_grad_p, a, 0.05, 8,
                      random_gamma_grad_ref);
    c.diff = {false, false};
    v.push_back(c);
  }
  for (double a : {0.7, 3.0}) {
    // x on both sides of a + 1 (the series and the continued fraction)
    std::string tag = std::to_string(static_cast<int>(a * 10));
    v.push_back(special2("igamma_x_" + tag, igamma_p, a, 0.05, 8, igamma_ref));
    v.push_back(special2("igammac_x_" + tag, igammac_p, a, 0.05, 8, igammac_ref));
    // also in a: through igamma_grad_a, which has no derivative (as in JAX), so no second order
    for (auto [name, prim, ref] : {std::tuple{"igamma_a_", &igamma_p, &igamma_ref}, {"igammac_a_", &igammac_p, &igammac_ref}}) {
      Case c = special2(name + tag, *prim, a, 0.05, 8, *ref);
      c.inputs = [a](Rng& r, DType d) { return Inputs{lax::add(lax::full(kShape, a, d), r.uniform(kShape, d, 0, 0.5)), r.uniform(kShape, d, 0.05, 8)}; };
      c.diff = {true, true};
      c.second_order = false;
      v.push_back(c);
    }
    Case g = special2("igamma_grad_a_" + tag, igamma_grad_a_p, a, 0.05, 8, igamma_grad_a_ref);
    g.diff = {false, false};
    v.push_back(g);
  }
  for (auto [a, b] : {std::pair{1.5, 3.0}, {4.0, 0.7}}) {
    // x on both sides of (a + 1) / (a + b + 2), where the kernel swaps to I_{1-x}(b, a)
    Case c = special2("regularized_incomplete_beta_" + std::to_string(static_cast<int>(a * 10)), regularized_incomplete_beta_p,
                      a, 0.05, 0.9, nullptr);
    c.inputs = [a, b](Rng& r, DType d) { return Inputs{lax::full(kShape, a, d), lax::full(kShape, b, d), r.uniform(kShape, d, 0.05, 0.9)}; };
    c.reference = ref_map([](const std::vector<double>& v) { return betainc_ref(v[0], v[1], v[2]); });
    c.diff = {false, false, true};
    v.push_back(c);
  }
  v.push_back(unary("square", square_p, -2, 2, [](double x) { return x * x; }));
  v.push_back(unary("integer_pow_3", integer_pow_p, -2, 2, [](double x) { return x * x * x; }, true,
                    {{"y", int64_t(3)}}));
  v.push_back(unary("integer_pow_m2", integer_pow_p, 0.5, 2, [](double x) { return 1 / (x * x); }, true,
                    {{"y", int64_t(-2)}}));
  v.push_back(unary("integer_pow_0", integer_pow_p, -2, 2, [](double) { return 1.0; }, true, {{"y", int64_t(0)}}));
  v.push_back(unary("copy", copy_p, -2, 2, [](double x) { return x; }));
  v.push_back(unary("stop_gradient", stop_gradient_p, -2, 2, [](double x) { return x; }, false));
  v.push_back(unary("device_put", device_put_p, -2, 2, [](double x) { return x; }, true, {{"device", std::string("cpu:0")}}));
  // ---- unary integer -----------------------------------------------------------------------------------
  v.push_back(unary_int("neg_i32", neg_p, DType::i32, -100, 100, [](double x) { return -x; }));
  v.push_back(unary_int("sign_i32", sign_p, DType::i32, -3, 3, sgn));
  v.push_back(unary_int("abs_i32", abs_p, DType::i32, -100, 100, [](double x) { return std::fabs(x); }));
  v.push_back(unary_int("square_i64", square_p, DType::i64, -1000, 1000, [](double x) { return x * x; }));
  v.push_back(unary_int("integer_pow_i32", integer_pow_p, DType::i32, -9, 9, [](double x) { return x * x * x * x; },
                        {{"y", int64_t(4)}}));
  v.push_back(unary_int("not_i32", not__p, DType::i32, -100, 100, [](double x) { return double(~int32_t(x)); }));
  v.push_back(unary_int("not_bool", not__p, DType::bool_, 0, 1, [](double x) { return x ? 0.0 : 1.0; }));
  v.push_back(unary_int("population_count_u32", population_count_p, DType::u32, 0, 1000000,
                        [](double x) { return double(std::popcount(uint32_t(x))); }));
  v.push_back(unary_int("copy_u8", copy_p, DType::u8, 0, 255, [](double x) { return x; }));

  // ---- binary float ----------------------------------------------------------------------------------
  v.push_back(binary("add", add_p, -2, 2, -2, 2, [](double a, double b) { return a + b; }));
  v.push_back(binary("add_scalar", add_p, -2, 2, -2, 2, [](double a, double b) { return a + b; }, true, true));
  v.push_back(binary("sub", sub_p, -2, 2, -2, 2, [](double a, double b) { return a - b; }));
  v.push_back(binary("sub_scalar", sub_p, -2, 2, -2, 2, [](double a, double b) { return a - b; }, true, true));
  v.push_back(binary("mul", mul_p, -2, 2, -2, 2, [](double a, double b) { return a * b; }));
  v.push_back(binary("mul_scalar", mul_p, -2, 2, -2, 2, [](double a, double b) { return a * b; }, true, true));
  v.push_back(binary("div", div_p, -2, 2, 0.5, 2, [](double a, double b) { return a / b; }));
  v.push_back(binary("div_scalar", div_p, -2, 2, 0.5, 2, [](double a, double b) { return a / b; }, true, true));
  v.push_back(binary("rem", rem_p, -3, 3, 0.7, 1.9, [](double a, double b) { return std::fmod(a, b); }));
  v.push_back(binary("pow", pow_p, 0.5, 2, -2, 2, [](double a, double b) { return std::pow(a, b); }));
  v.push_back(binary("max", max_p, -2, 2, -2, 2, [](double a, double b) { return std::max(a, b); }));
  v.push_back(binary("min", min_p, -2, 2, -2, 2, [](double a, double b) { return std::min(a, b); }));
  v.push_back(binary("atan2", atan2_p, -2, 2, 0.2, 2, [](double a, double b) { return std::atan2(a, b); }));
  v.push_back(binary("add_any", add_any_p, -2, 2, -2, 2, [](double a, double b) { return a + b; }));
  {
    Case c = binary("nextafter", nextafter_p, -2, 2, -2, 2, [](double a, double b) { return std::nextafter(a, b); },
                    false);
    c.reference = [](const Inputs& in) {
      auto a = values(in[0]), b = values(in[1]);
      std::vector<double> o(a.size());
      for (size_t i = 0; i < a.size(); ++i)
        o[i] = in[0].dtype() == DType::f32 ? double(std::nextafter(float(a[i]), float(b[i]))) : std::nextafter(a[i], b[i]);
      return Inputs{Rng::from_doubles(o, in[0].shape(), in[0].dtype())};
    };
    c.rtol32 = 0;
    c.atol32 = 0;
    v.push_back(c);
  }
  // ---- binary integer / bitwise ------------------------------------------------------------------------
  v.push_back(binary_int("add_i32", add_p, DType::i32, -1000, 1000, -1000, 1000, [](double a, double b) { return a + b; }));
  v.push_back(binary_int("mul_i64", mul_p, DType::i64, -1000, 1000, -1000, 1000, [](double a, double b) { return a * b; }));
  v.push_back(binary_int("div_i32", div_p, DType::i32, -100, 100, 1, 9,
                         [](double a, double b) { return double(int32_t(a) / int32_t(b)); }));
  v.push_back(binary_int("div_i32_negative", div_p, DType::i32, -100, 100, -9, -1,
                         [](double a, double b) { return double(int32_t(a) / int32_t(b)); }));
  v.push_back(binary_int("rem_i32", rem_p, DType::i32, -100, 100, 1, 9,
                         [](double a, double b) { return double(int32_t(a) % int32_t(b)); }));
  v.push_back(binary_int("max_i32", max_p, DType::i32, -10, 10, -10, 10, [](double a, double b) { return std::max(a, b); }));
  v.push_back(binary_int("min_u8", min_p, DType::u8, 0, 255, 0, 255, [](double a, double b) { return std::min(a, b); }));
  v.push_back(binary_int("and_i32", and__p, DType::i32, -1000, 1000, -1000, 1000,
                         [](double a, double b) { return double(int32_t(a) & int32_t(b)); }));
  v.push_back(binary_int("or_u16", or__p, DType::u16, 0, 65535, 0, 65535,
                         [](double a, double b) { return double(uint16_t(a) | uint16_t(b)); }));
  v.push_back(binary_int("xor_bool", xor__p, DType::bool_, 0, 1, 0, 1, [](double a, double b) { return a != b ? 1.0 : 0.0; }));
  v.push_back(binary_int("shift_left_i32", shift_left_p, DType::i32, -1000, 1000, 0, 40,
                         [](double a, double b) { return b >= 32 ? 0.0 : double(int32_t(uint32_t(int32_t(a)) << int(b))); }));
  v.push_back(binary_int("shift_right_logical_u32", shift_right_logical_p, DType::u32, 0, 4000000000, 0, 40,
                         [](double a, double b) { return b >= 32 ? 0.0 : double(uint32_t(a) >> int(b)); }));
  v.push_back(binary_int("shift_right_arithmetic_i32", shift_right_arithmetic_p, DType::i32, -1000, 1000, 0, 40,
                         [](double a, double b) {
                           return b >= 32 ? (a < 0 ? -1.0 : 0.0) : double(int32_t(a) >> int(b));
                         }));
  // ---- comparisons ------------------------------------------------------------------------------------
  v.push_back(compare("eq", eq_p, [](double a, double b) { return a == b; }));
  v.push_back(compare("ne", ne_p, [](double a, double b) { return a != b; }));
  v.push_back(compare("lt", lt_p, [](double a, double b) { return a < b; }));
  v.push_back(compare("le", le_p, [](double a, double b) { return a <= b; }));
  v.push_back(compare("gt", gt_p, [](double a, double b) { return a > b; }));
  v.push_back(compare("ge", ge_p, [](double a, double b) { return a >= b; }));
  v.push_back(compare("lt_i32", lt_p, [](double a, double b) { return a < b; }, DType::i32));
  v.push_back(compare("eq_u8", eq_p, [](double a, double b) { return a == b; }, DType::u8));
  // ---- select_n and clamp -------------------------------------------------------------------------------------
  {
    Case c;
    c.name = "select_n_bool";
    c.prim = &select_n_p;
    c.inputs = [](Rng& r, DType d) {
      return Inputs{r.bools(kShape), r.uniform(kShape, d), r.uniform(kShape, d)};
    };
    c.reference = [](const Inputs& in) {
      return ref_map([](const std::vector<double>& a) { return a[0] ? a[2] : a[1]; }, in[1].dtype())(in);
    };
    c.diff = {false, true, true};
    v.push_back(c);
  }
  {
    Case c;
    c.name = "select_n_i32_three";
    c.prim = &select_n_p;
    c.inputs = [](Rng& r, DType d) {
      return Inputs{r.ints(kShape, DType::i32, 0, 2), r.uniform(kShape, d), r.uniform(kShape, d), r.uniform(kShape, d)};
    };
    c.reference = [](const Inputs& in) {
      return ref_map([](const std::vector<double>& a) { return a[1 + size_t(a[0])]; }, in[1].dtype())(in);
    };
    c.diff = {false, true, true, true};
    v.push_back(c);
  }
  {
    Case c;
    c.name = "select_n_scalar_pred";
    c.prim = &select_n_p;
    c.inputs = [](Rng& r, DType d) { return Inputs{r.bools({}), r.uniform(kShape, d), r.uniform(kShape, d)}; };
    c.reference = [](const Inputs& in) {
      return ref_map([](const std::vector<double>& a) { return a[0] ? a[2] : a[1]; }, in[1].dtype())(in);
    };
    c.diff = {false, true, true};
    v.push_back(c);
  }
  {
    Case c;
    c.name = "clamp_scalar_bounds";
    c.prim = &clamp_p;
    c.inputs = [](Rng& r, DType d) {
      return Inputs{r.uniform({}, d, -1, -0.5), r.uniform(kShape, d, -2, 2), r.uniform({}, d, 0.5, 1)};
    };
    c.reference = [](const Inputs& in) {
      return ref_map([](const std::vector<double>& a) { return std::min(std::max(a[1], a[0]), a[2]); },
                     in[1].dtype())(in);
    };
    c.diff = {true, true, true};
    v.push_back(c);
  }
  {
    Case c;
    c.name = "clamp_array_bounds";
    c.prim = &clamp_p;
    c.inputs = [](Rng& r, DType d) {
      return Inputs{r.uniform(kShape, d, -1, -0.5), r.uniform(kShape, d, -2, 2), r.uniform(kShape, d, 0.5, 1)};
    };
    c.reference = ref_map([](const std::vector<double>& a) { return std::min(std::max(a[1], a[0]), a[2]); });
    c.diff = {true, true, true};
    v.push_back(c);
  }
  {
    Case c;  // crossed bounds (lo > hi): hi, as XLA's min(max(x, lo), hi) and NumPy's clip
    c.name = "clamp_crossed_bounds";
    c.prim = &clamp_p;
    c.inputs = [](Rng& r, DType d) {
      return Inputs{r.uniform(kShape, d, 0.5, 1), r.uniform(kShape, d, -2, 2), r.uniform(kShape, d, -1, -0.5)};
    };
    c.reference = ref_map([](const std::vector<double>& a) { return std::min(std::max(a[1], a[0]), a[2]); });
    c.diff = {true, true, true};
    v.push_back(c);
  }
  // ---- conversions ----------------------------------------------------------------------------------------
  {
    Case c;
    c.name = "convert_to_other_float";
    c.prim = &convert_element_type_p;
    c.inputs = [](Rng& r, DType d) { return Inputs{r.uniform(kShape, d)}; };
    c.params = {{"new_dtype", DType::f64}, {"weak_type", false}};
    c.reference = [](const Inputs& in) {
      return Inputs{Rng::from_doubles(values(in[0]), in[0].shape(), DType::f64)};
    };
    c.diff = {true};
    v.push_back(c);
  }
  {
    Case c;
    c.name = "convert_float_to_i32";
    c.prim = &convert_element_type_p;
    c.params = {{"new_dtype", DType::i32}, {"weak_type", false}};
    c.inputs = [](Rng& r, DType d) { return Inputs{r.uniform(kShape, d, -100, 100)}; };
    c.reference = [](const Inputs& in) {
      std::vector<double> v = values(in[0]);
      for (auto& x : v) x = std::trunc(x);
      return Inputs{Rng::from_doubles(v, in[0].shape(), DType::i32)};
    };
    c.diff = {true};
    c.smooth = false;
    v.push_back(c);
  }
  {
    Case c;
    c.name = "convert_i32_to_float";
    c.prim = &convert_element_type_p;
    c.params = {{"new_dtype", DType::f32}, {"weak_type", false}};
    c.inputs = [](Rng& r, DType) { return Inputs{r.ints(kShape, DType::i32, -1000, 1000)}; };
    c.reference = [](const Inputs& in) { return Inputs{Rng::from_doubles(values(in[0]), in[0].shape(), DType::f32)}; };
    c.diff = {false};
    c.smooth = false;
    c.value_dtypes = {DType::i32};
    v.push_back(c);
  }
  {
    Case c;
    c.name = "bitcast_f32_to_u32";
    c.prim = &bitcast_convert_type_p;
    c.params = {{"new_dtype", DType::u32}};
    c.inputs = [](Rng& r, DType) { return Inputs{r.uniform(kShape, DType::f32)}; };
    c.reference = [](const Inputs& in) {
      auto f = in[0].to_vector<float>();
      std::vector<double> o;
      for (float x : f) o.push_back(double(std::bit_cast<uint32_t>(x)));
      return Inputs{Rng::from_doubles(o, in[0].shape(), DType::u32)};
    };
    c.diff = {false};
    c.smooth = false;
    c.value_dtypes = {DType::f32};
    v.push_back(c);
  }
  return v;
}

}  // namespace graft::testing
