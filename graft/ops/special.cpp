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
  const Array& c = checked(x, op);
  return is_floating(c.dtype()) ? c : convert(c, default_float_dtype(), c.weak_type());
}

// Promoted to a common floating type and broadcast to a common shape.
std::pair<Array, Array> float_pair(const Array& a, const Array& b, const char* op) {
  auto [x, y] = promote_broadcast(a, b, op);
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

}  // namespace graft::special
