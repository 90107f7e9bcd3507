// Special functions: the primitives of graft/prims/special_math.h, and composites written as JAX writes
// its jax.scipy.special ones.
#include "graft/ops/special.h"

#include <cmath>
#include <numbers>

#include "graft/ops/internal.h"
#include "graft/transforms/api.h"

namespace graft::special {

using namespace ops_detail;

namespace {

Array to_float(const Array& x, const char* op) {
  const Array& c = real_only(checked(x, op), op);
  return is_floating(c.dtype()) ? c : convert(c, default_float_dtype(), c.weak_type());
}

// Promoted to a common floating type and broadcast to a common shape.
std::pair<Array, Array> float_pair(const Array& a, const Array& b, const char* op) {
  auto [x, y] = promote_broadcast(a, b, op);
  real_only(x, op);
  if (!is_floating(x.dtype())) {
    x = convert(x, default_float_dtype(), x.weak_type());
    y = convert(y, default_float_dtype(), y.weak_type());
  }
  if (x.shape() != y.shape()) {
    Shape s = x.ndim() ? x.shape() : y.shape();
    x = broadcast_to(x, s, op);
    y = broadcast_to(y, s, op);
  }
  return {x, y};
}

Array full_as(const Array& x, double v) { return lax::full(x.shape(), v, x.dtype()); }

// x log(y) (or x log1p(y)) with 0 where x = 0, and JAX's derivative: x' log(y) + y' x / y.
template <bool kLog1p>
Array xlog_impl(const Array& x, const Array& y) {
  Array safe_y = lax::select(lax::eq(x, full_as(x, 0)), full_as(y, kLog1p ? 0 : 1), y);
  Array l = kLog1p ? lax::log1p(safe_y) : lax::log(safe_y);
  return lax::mul(x, l);
}
template <bool kLog1p>
const auto& xlog_fn() {
  static const auto f = custom_jvp(
      [](const Array& x, const Array& y) { return xlog_impl<kLog1p>(x, y); },
      [](const std::vector<Array>& p, const std::vector<Array>& t) {
        const Array &x = p[0], &y = p[1];
        Array l = kLog1p ? lax::log1p(y) : lax::log(y);
        Array dy = kLog1p ? lax::div(x, lax::add(full_as(y, 1), y)) : lax::div(x, y);
        return std::make_pair(xlog_impl<kLog1p>(x, y), lax::add(lax::mul(t[0], l), lax::mul(t[1], dy)));
      },
      kLog1p ? "xlog1py" : "xlogy");
  return f;
}

// log Φ(x) for x <= lower: -x²/2 - log(-x) - log(2π)/2 + log(1 - 1/x² + 3/x⁴ - 15/x⁶) (series order 3)
Array log_ndtr_lower(const Array& x) {
  Array x2 = lax::square(x);
  Array log_scale = lax::sub(lax::sub(lax::mul(full_as(x, -0.5), x2), lax::log(lax::neg(x))),
                             full_as(x, 0.5 * std::log(2 * std::numbers::pi)));
  Array inv = lax::div(full_as(x, 1), x2);
  // 1 - inv + 3 inv² - 15 inv³
  Array series = lax::add(full_as(x, 1),
                          lax::mul(inv, lax::add(full_as(x, -1), lax::mul(inv, lax::add(full_as(x, 3), lax::mul(inv, full_as(x, -15)))))));
  return lax::add(log_scale, lax::log(series));
}

// The inverse of Φ: erf's inverse, then two Newton steps on Φ itself (accurate in the tails too, where
// 2p - 1 loses p's digits); its derivative is 1 / φ(ndtri(p)).
Array ndtri_value(const Array& p) {
  Array x = lax::mul(full_as(p, std::numbers::sqrt2), lax::erf_inv(lax::sub(lax::mul(full_as(p, 2), p), full_as(p, 1))));
  Array k = full_as(p, std::sqrt(2 * std::numbers::pi));
  for (int i = 0; i < 2; ++i) {
    Array err = lax::sub(ndtr(x), p);
    Array step = lax::mul(lax::mul(err, k), lax::exp(lax::mul(full_as(x, 0.5), lax::square(x))));
    Array next = lax::sub(x, step);
    x = lax::select(lax::is_finite(next), next, x);  // p = 0 or 1: the infinities stay
  }
  return x;
}
const auto& ndtri_fn() {
  static const auto f = custom_jvp([](const Array& p) { return ndtri_value(p); },
                                   [](const std::vector<Array>& p, const std::vector<Array>& t) {
                                     Array x = ndtri_value(p[0]);
                                     Array inv_pdf = lax::mul(full_as(x, std::sqrt(2 * std::numbers::pi)),
                                                              lax::exp(lax::mul(full_as(x, 0.5), lax::square(x))));
                                     return std::make_pair(x, lax::mul(t[0], inv_pdf));
                                   },
                                   "ndtri");
  return f;
}

}  // namespace

Array gammaln(const Array& x) { return lax::lgamma(to_float(x, "gammaln")); }
Array digamma(const Array& x) { return lax::digamma(to_float(x, "digamma")); }
Array polygamma(const Array& n, const Array& x) {
  auto [a, b] = float_pair(n, x, "polygamma");
  return lax::polygamma(a, b);
}
Array zeta(const Array& x, const Array& q) {
  auto [a, b] = float_pair(x, q, "zeta");
  return lax::zeta(a, b);
}
Array betaln(const Array& a, const Array& b) {
  auto [x, y] = float_pair(a, b, "betaln");
  return lax::sub(lax::add(lax::lgamma(x), lax::lgamma(y)), lax::lgamma(lax::add(x, y)));
}
Array gammainc(const Array& a, const Array& x) {
  auto [p, q] = float_pair(a, x, "gammainc");
  return lax::igamma(p, q);
}
Array gammaincc(const Array& a, const Array& x) {
  auto [p, q] = float_pair(a, x, "gammaincc");
  return lax::igammac(p, q);
}
Array betainc(const Array& a, const Array& b, const Array& x) {
  // three operands to one dtype and shape: each pair promoted in turn
  auto [a1, b1] = float_pair(a, b, "betainc");
  auto [a2, x2] = float_pair(a1, x, "betainc");
  auto [b2, x3] = float_pair(b1, x2, "betainc");
  return lax::regularized_incomplete_beta(a2, b2, x3);
}
Array xlogy(const Array& x, const Array& y) {
  auto [a, b] = float_pair(x, y, "xlogy");
  return xlog_fn<false>()(a, b);
}
Array xlog1py(const Array& x, const Array& y) {
  auto [a, b] = float_pair(x, y, "xlog1py");
  return xlog_fn<true>()(a, b);
}
Array entr(const Array& x0) {
  Array x = to_float(x0, "entr");
  Array pos = lax::gt(x, full_as(x, 0));
  Array safe = lax::select(pos, x, full_as(x, 1));
  Array r = lax::neg(lax::mul(safe, lax::log(safe)));
  Array other = lax::select(lax::eq(x, full_as(x, 0)), full_as(x, 0), full_as(x, -INFINITY));
  return lax::select(pos, r, other);
}
Array expit(const Array& x) { return lax::logistic(to_float(x, "expit")); }
Array logit(const Array& p0) {
  Array p = to_float(p0, "logit");
  return lax::sub(lax::log(p), lax::log1p(lax::neg(p)));
}
Array ndtr(const Array& x0) {
  Array x = to_float(x0, "ndtr");
  return lax::mul(full_as(x, 0.5), lax::erfc(lax::mul(full_as(x, -1 / std::numbers::sqrt2), x)));
}
Array log_ndtr(const Array& x0) {
  Array x = to_float(x0, "log_ndtr");
  double lower = x.dtype() == DType::f64 ? -20 : -10;
  // Above 0 log1p(-Φ(-x)), which keeps the digits log(Φ(x)) loses as Φ(x) nears 1 (JAX's -Φ(-x) above 8
  // and log(Φ(x)) below differ from the exact value by up to 4% in between); log(Φ(x)) down to `lower`;
  // JAX's asymptotic series of order 3 below. Each branch sees operands clamped to its range, so that
  // none makes a NaN or infinity that a gradient would multiply by zero.
  Array zero = full_as(x, 0);
  Array pos = lax::log1p(lax::neg(ndtr(lax::neg(lax::max(x, zero)))));
  Array mid = lax::log(ndtr(lax::clamp(full_as(x, lower), x, zero)));
  Array lo = log_ndtr_lower(lax::min(x, full_as(x, lower)));
  return lax::select(lax::gt(x, zero), pos, lax::select(lax::gt(x, full_as(x, lower)), mid, lo));
}
Array ndtri(const Array& p) { return ndtri_fn()(to_float(p, "ndtri")); }
Array erf(const Array& x) { return graft::erf(x); }
Array erfc(const Array& x) { return graft::erfc(x); }
Array erfinv(const Array& x) { return graft::erfinv(x); }
Array i0e(const Array& x) { return lax::bessel_i0e(to_float(x, "i0e")); }
Array i1e(const Array& x) { return lax::bessel_i1e(to_float(x, "i1e")); }
Array i0(const Array& x0) {
  Array x = to_float(x0, "i0");
  return lax::mul(lax::exp(lax::abs(x)), lax::bessel_i0e(x));
}
Array i1(const Array& x0) {
  Array x = to_float(x0, "i1");
  return lax::mul(lax::exp(lax::abs(x)), lax::bessel_i1e(x));
}
Array logsumexp(const Array& x, AxisArg axis, bool keepdims) { return graft::logsumexp(x, axis, keepdims); }
Array softmax(const Array& x, int64_t axis) { return graft::softmax(x, axis); }
Array log_softmax(const Array& x, int64_t axis) { return graft::log_softmax(x, axis); }

Array gammasgn(const Array& x0) {
  Array x = to_float(x0, "gammasgn");
  Array fl = lax::floor(x);
  Array neg = lax::lt(x, full_as(x, 0));
  // a pole (a negative integer, -inf) or NaN
  Array nan = lax::bitwise_or(lax::bitwise_and(neg, lax::eq(x, fl)), lax::ne(x, x));
  // Γ < 0 between -2k-1 and -2k, and at -0.0 (1 / -0.0 is -inf)
  Array odd = lax::ne(lax::rem(fl, full_as(x, 2)), full_as(x, 0));
  Array minus_zero = lax::bitwise_and(lax::eq(x, full_as(x, 0)), lax::lt(lax::div(full_as(x, 1), x), full_as(x, 0)));
  Array minus = lax::bitwise_or(lax::bitwise_and(neg, odd), minus_zero);
  return lax::select(nan, full_as(x, NAN), lax::select(minus, full_as(x, -1), full_as(x, 1)));
}
Array gamma(const Array& x0) {
  Array x = to_float(x0, "gamma");
  return lax::mul(gammasgn(x), lax::exp(lax::lgamma(x)));
}
Array loggamma(const Array& x0) {
  Array x = to_float(x0, "loggamma");
  return lax::select(lax::gt(x, full_as(x, 0)), lax::lgamma(x), full_as(x, NAN));
}
Array beta(const Array& a, const Array& b) {
  auto [x, y] = float_pair(a, b, "beta");
  Array sign = lax::mul(lax::mul(gammasgn(x), gammasgn(y)), gammasgn(lax::add(x, y)));
  return lax::mul(sign, lax::exp(betaln(x, y)));
}
Array factorial(const Array& n0) {
  Array n = to_float(n0, "factorial");
  return lax::select(lax::lt(n, full_as(n, 0)), full_as(n, 0), lax::exp(lax::lgamma(lax::add(n, full_as(n, 1)))));
}
Array comb(const Array& n0, const Array& k0, bool repetition) {
  auto [n, k] = float_pair(n0, k0, "comb");
  if (repetition) {
    Array r = comb(lax::sub(lax::add(n, k), full_as(n, 1)), k, false);
    return lax::select(lax::bitwise_and(lax::eq(k, full_as(k, 0)), lax::ge(n, full_as(n, 0))), full_as(n, 1), r);
  }
  Array zero = full_as(n, 0), one = full_as(n, 1);
  Array ok = lax::bitwise_and(lax::bitwise_and(lax::le(k, n), lax::ge(n, zero)), lax::ge(k, zero));
  // the excluded entries see 0 choose 0, so that no branch makes a NaN a gradient would multiply by zero
  Array sn = lax::select(ok, n, zero), sk = lax::select(ok, k, zero);
  Array l = lax::sub(lax::sub(lax::lgamma(lax::add(sn, one)), lax::lgamma(lax::add(sk, one))),
                     lax::lgamma(lax::add(lax::sub(sn, sk), one)));
  return lax::select(ok, lax::exp(l), zero);
}

namespace {

Array poch_value(const Array& z, const Array& m) {
  return lax::select(lax::eq(m, full_as(m, 0)), full_as(z, 1), lax::div(gamma(lax::add(z, m)), gamma(z)));
}
const auto& poch_fn() {
  static const auto f = custom_jvp([](const Array& z, const Array& m) { return poch_value(z, m); },
                                   [](const std::vector<Array>& p, const std::vector<Array>& t) {
                                     const Array &z = p[0], &m = p[1];
                                     Array v = poch_value(z, m);
                                     Array dzm = lax::digamma(lax::add(z, m));
                                     Array dz = lax::mul(lax::sub(dzm, lax::digamma(z)), v);
                                     Array dm = lax::mul(dzm, v);
                                     return std::make_pair(v, lax::add(lax::mul(t[0], dz), lax::mul(t[1], dm)));
                                   },
                                   "poch");
  return f;
}

}  // namespace

Array poch(const Array& z, const Array& m) {
  auto [x, y] = float_pair(z, m, "poch");
  return poch_fn()(x, y);
}
Array multigammaln(const Array& a0, int64_t d) {
  if (d < 1) fail<ValueError>("multigammaln: the dimension d must be a positive integer, got ", d);
  Array a = to_float(a0, "multigammaln");
  Array r = lax::full(a.shape(), 0.25 * static_cast<double>(d) * static_cast<double>(d - 1) * std::log(std::numbers::pi), a.dtype());
  for (int64_t j = 0; j < d; ++j) r = lax::add(r, lax::lgamma(lax::sub(a, full_as(a, 0.5 * static_cast<double>(j)))));
  return r;
}
Array bernoulli(int64_t n) {
  if (n < 0) fail<ValueError>("bernoulli: n must be a non-negative integer, got ", n);
  // B_m = (-1)^(m/2 + 1) 2 m! ζ(m) / (2π)^m for even m >= 4; B_1 = -1/2, B_2 = 1/6; 0 for odd m >= 3.
  // m! / (2π)^m is carried as a running product (no factorial overflows first); ζ(m) is its first 99
  // terms plus the Euler-Maclaurin tail (to K^(-m-3); the next term is below 1e-19 for m >= 4).
  std::vector<double> b(static_cast<size_t>(n + 1), 0.0);
  b[0] = 1;
  if (n >= 1) b[1] = -0.5;
  if (n >= 2) b[2] = 1.0 / 6;
  double ratio = 1;  // m! / (2π)^m
  for (int64_t m = 1; m <= n; ++m) {
    ratio *= static_cast<double>(m) / (2 * std::numbers::pi);
    if (m < 4 || m % 2) continue;
    const double K = 100, dm = static_cast<double>(m);
    double zeta = 0;
    for (int64_t k = 99; k >= 1; --k) zeta += std::pow(static_cast<double>(k), -dm);  // small terms first
    zeta += std::pow(K, 1 - dm) / (dm - 1) + std::pow(K, -dm) / 2 + dm * std::pow(K, -dm - 1) / 12 -
            dm * (dm + 1) * (dm + 2) * std::pow(K, -dm - 3) / 720;
    b[static_cast<size_t>(m)] = ((m / 2) % 2 ? 2.0 : -2.0) * ratio * zeta;
  }
  return convert(array(b, {n + 1}), default_float_dtype(), false);
}

namespace {

constexpr double kEulerGamma = 0.57721566490153286061;

// E1 for x > 0: its power series up to 1 (30 terms: the last is below 1e-34 of the sum), the continued
// fraction e^-x / (x + 1 - 1²/(x + 3 - 2²/(x + 5 - ...))) above (100 levels, evaluated from the deepest:
// within 1e-16 from x = 1). Each branch sees its operand clamped into its range.
Array exp1_positive(const Array& x) {
  Array one = full_as(x, 1);
  Array xs = lax::min(x, one), xc = lax::max(x, one);
  Array term = full_as(x, 1), series = full_as(x, 0);
  for (int k = 1; k <= 30; ++k) {
    term = lax::mul(term, lax::div(lax::neg(xs), full_as(x, k)));
    series = lax::sub(series, lax::div(term, full_as(x, k)));
  }
  Array small = lax::sub(lax::sub(series, full_as(x, kEulerGamma)), lax::log(xs));
  Array t = full_as(x, 0);
  for (int k = 100; k >= 1; --k)
    t = lax::div(full_as(x, static_cast<double>(k) * k), lax::sub(lax::add(xc, full_as(x, 2.0 * k + 1)), t));
  Array large = lax::div(lax::exp(lax::neg(xc)), lax::sub(lax::add(xc, full_as(x, 1)), t));
  return lax::select(lax::le(x, one), small, large);
}

Array exp1_value(const Array& x) {
  Array zero = full_as(x, 0);
  Array pos = exp1_positive(lax::select(lax::gt(x, zero), x, full_as(x, 1)));
  return lax::select(lax::gt(x, zero), pos, lax::select(lax::eq(x, zero), full_as(x, INFINITY), full_as(x, NAN)));
}

// Ei for x > 0: γ + log x + Σ x^k / (k k!) up to 50 (150 terms, all positive), e^x / x Σ k! / x^k (50
// terms: they shrink down to k = x) above. Near Ei's root (x ≈ 0.3725) the error is absolute (~1e-16).
Array expi_positive(const Array& x) {
  Array fifty = full_as(x, 50);
  Array xs = lax::min(x, fifty), xl = lax::max(x, fifty);
  Array term = full_as(x, 1), series = full_as(x, 0);
  for (int k = 1; k <= 150; ++k) {
    term = lax::mul(term, lax::div(xs, full_as(x, k)));
    series = lax::add(series, lax::div(term, full_as(x, k)));
  }
  Array small = lax::add(lax::add(series, full_as(x, kEulerGamma)), lax::log(xs));
  Array a = full_as(x, 1), sum = full_as(x, 1);
  for (int k = 1; k < 50; ++k) {
    a = lax::mul(a, lax::div(full_as(x, k), xl));
    sum = lax::add(sum, a);
  }
  Array large = lax::mul(lax::div(lax::exp(xl), xl), sum);
  return lax::select(lax::le(x, fifty), small, large);
}

Array expi_value(const Array& x) {
  Array zero = full_as(x, 0);
  Array finite = lax::is_finite(x);
  Array safe = lax::select(lax::bitwise_and(finite, lax::ne(x, zero)), lax::abs(x), full_as(x, 1));
  Array neg = lax::neg(exp1_positive(safe));
  Array pos = expi_positive(safe);
  // the infinities and NaN pass through: Ei(inf) = inf, Ei(-inf) = -0
  Array r = lax::select(lax::gt(x, zero), pos, lax::select(lax::lt(x, zero), neg, full_as(x, -INFINITY)));
  return lax::select(finite, r, lax::select(lax::gt(x, zero), x, lax::select(lax::lt(x, zero), full_as(x, -0.0), x)));
}

// erfcx: e^(x²) erfc(x) below 2 (overflowing to inf below -26.6, as the function does), Laplace's
// continued fraction 1/√π / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))) from 2 (60 levels: within 5e-16).
Array erfcx_value(const Array& x) {
  Array two = full_as(x, 2);
  Array xs = lax::min(x, two), xl = lax::max(x, two);
  Array small = lax::mul(lax::exp(lax::square(xs)), lax::erfc(xs));
  Array t = full_as(x, 0);
  for (int k = 60; k >= 1; --k) t = lax::div(full_as(x, 0.5 * k), lax::add(xl, t));
  Array large = lax::div(full_as(x, 1 / std::sqrt(std::numbers::pi)), lax::add(xl, t));
  return lax::select(lax::lt(x, two), small, large);
}

template <Array (*Value)(const Array&)>
const auto& unary_custom(const char* name, Array (*derivative)(const Array& x, const Array& y)) {
  static const auto f = custom_jvp([](const Array& x) { return Value(x); },
                                   [derivative](const std::vector<Array>& p, const std::vector<Array>& t) {
                                     Array y = Value(p[0]);
                                     return std::make_pair(y, lax::mul(t[0], derivative(p[0], y)));
                                   },
                                   name);
  return f;
}

}  // namespace

Array exp1(const Array& x) {
  static const auto& f = unary_custom<exp1_value>("exp1", [](const Array& x, const Array&) {
    return lax::neg(lax::div(lax::exp(lax::neg(x)), x));
  });
  return f(to_float(x, "exp1"));
}
Array expi(const Array& x) {
  static const auto& f = unary_custom<expi_value>("expi", [](const Array& x, const Array&) { return lax::div(lax::exp(x), x); });
  return f(to_float(x, "expi"));
}
Array erfcx(const Array& x) {
  static const auto& f = unary_custom<erfcx_value>("erfcx", [](const Array& x, const Array& y) {
    return lax::sub(lax::mul(lax::mul(full_as(x, 2), x), y), full_as(x, 2 / std::sqrt(std::numbers::pi)));
  });
  return f(to_float(x, "erfcx"));
}

Array rel_entr(const Array& p0, const Array& q0) {
  auto [p, q] = float_pair(p0, q0, "rel_entr");
  Array zero = full_as(p, 0), one = full_as(p, 1);
  Array both = lax::bitwise_and(lax::gt(p, zero), lax::gt(q, zero));
  Array p_zero = lax::bitwise_and(lax::eq(p, zero), lax::ge(q, zero));
  Array sp = lax::select(both, p, one), sq = lax::select(both, q, one);
  Array r = lax::mul(sp, lax::log(lax::div(sp, sq)));
  return lax::select(both, r, lax::select(p_zero, zero, full_as(p, INFINITY)));
}
Array kl_div(const Array& p0, const Array& q0) {
  auto [p, q] = float_pair(p0, q0, "kl_div");
  return lax::add(lax::sub(rel_entr(p, q), p), q);
}

namespace {

// (e^(λ l) - 1) / λ, or l itself at λ = 0: Box-Cox on l = log x or log1p x
Array boxcox_of(const Array& l, const Array& lmbda) {
  Array zero = lax::eq(lmbda, full_as(lmbda, 0));
  Array safe = lax::select(zero, full_as(lmbda, 1), lmbda);
  return lax::select(zero, l, lax::div(lax::expm1(lax::mul(safe, l)), safe));
}

}  // namespace

Array boxcox(const Array& x0, const Array& lmbda0) {
  auto [x, l] = float_pair(x0, lmbda0, "boxcox");
  return boxcox_of(lax::log(x), l);
}
Array boxcox1p(const Array& x0, const Array& lmbda0) {
  auto [x, l] = float_pair(x0, lmbda0, "boxcox1p");
  return boxcox_of(lax::log1p(x), l);
}

}  // namespace graft::special
