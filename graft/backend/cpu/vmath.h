// Vectorizable single-precision transcendental functions (exp, log, tanh, logistic).
//
// libm's expf/logf/tanhf are scalar calls, so a loop over them runs one element at a time; these are
// branch-free inline functions (selects instead of branches, bit casts instead of frexp/ldexp) that
// GCC and Clang vectorize when they are called in a loop, e.g.
//
//   for (int64_t i = 0; i < n; ++i) y[i] = graft::vmath::tanh(x[i]);   // AVX-512: 16 lanes a step
//
// Accuracy (checked over every float in the tested ranges by tests/backend/test_vmath.cpp): at most
// 2 ulp from the correctly rounded result, with IEEE behaviour at the edges (NaN in, NaN out;
// overflow to inf, underflow through the subnormals to 0; exact tanh(±inf) = ±1, log(0) = -inf).
// The polynomials are least-squares fits on Chebyshev nodes, made for this file.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace graft::vmath {

namespace detail {
inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
/// 2^k for integers k in [-126, 127], built from the exponent bits.
inline float pow2i(int32_t k) { return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23); }
}  // namespace detail

namespace detail {
/// e^r - 1 for y = n ln2 + r, |r| <= ln2 / 2 (n rounded to nearest), for y in the range where n fits
/// an exponent; sets n.
inline float expm1_reduced(float y, int32_t& n) {
  // n = round(y / ln2) with the 1.5 * 2^23 trick: no float-to-int conversion of a possible NaN
  constexpr float kShift = 12582912.0f;
  float t = fma(y, 1.44269504088896341f, kShift);
  n = static_cast<int32_t>(std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kShift));
  float nf = t - kShift;
  float r = fma(nf, -0.693145751953125f, y);  // ln2 split in a short head and a tail: r is exact
  r = fma(nf, -1.4286068203094172e-06f, r);
  float q = fma(r, 0.0013751388271303708f, 0.008368921740878908f);
  q = fma(q, r, 0.04166953395939757f);
  q = fma(q, r, 0.16666518415101703f);
  q = fma(q, r, 0.4999998858999466f);
  return fma(q * r, r, r);
}
}  // namespace detail

/// e^x.
inline float exp(float x) {
  // Clamping keeps the exponent arithmetic in range; the clamped values still overflow to inf or
  // underflow to 0. A NaN fails both comparisons and flows through.
  x = x > 89.0f ? 89.0f : x;
  x = x < -104.0f ? -104.0f : x;
  int32_t n;
  float p = detail::expm1_reduced(x, n) + 1.0f;
  // 2^n as two factors, so that n down to -150 (subnormal results) needs no special case
  int32_t n1 = n >> 1;
  return p * detail::pow2i(n1) * detail::pow2i(n - n1);
}

/// Natural logarithm.
inline float log(float x) {
  using detail::fma;
  // subnormals are scaled into the normal range first
  bool sub = x < 1.17549435e-38f;
  float xs = sub ? x * 8388608.0f : x;
  int32_t bits = std::bit_cast<int32_t>(xs);
  // m in [sqrt(1/2), sqrt(2)): subtract the exponent of x / sqrt(1/2)
  // (unsigned subtraction: a negative x's bits would overflow a signed one; its result is replaced)
  int32_t e = static_cast<int32_t>(static_cast<uint32_t>(bits) - 0x3f3504f3u) >> 23;
  float m = std::bit_cast<float>(static_cast<uint32_t>(bits) - (static_cast<uint32_t>(e) << 23));
  float ef = static_cast<float>(e) - (sub ? 23.0f : 0.0f);
  float f = m - 1.0f;
  float p = fma(f, -0.07362867873115896f, 0.12620327490446476f);
  p = fma(p, f, -0.13202104209122942f);
  p = fma(p, f, 0.14227114035720187f);
  p = fma(p, f, -0.16621369910190242f);
  p = fma(p, f, 0.1999982657295576f);
  p = fma(p, f, -0.2500085194354479f);
  p = fma(p, f, 0.33333354047279407f);
  float f2 = f * f;
  float r = fma(p * f2, f, fma(-0.5f, f2, f));
  r = fma(ef, -2.12194440e-4f, r);  // ln2 = 0.693359375 - 2.12194440e-4, the head exact in ef * head
  r = fma(ef, 0.693359375f, r);
  // edges: log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, log(NaN) = NaN
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  r = x == INFINITY ? INFINITY : r;
  return x != x ? x : r;
}

/// Hyperbolic tangent.
inline float tanh(float x) {
  using detail::fma;
  // tanh|x| = h / (h + 1) with h = (e^{2|x|} - 1) / 2, computed as 2^(n-1) (e^r - 1) + (2^(n-1) - 1/2)
  // with a clamp-free exponential: beyond |x| = 9 the result rounds to 1, so clamping there keeps 2^n
  // in range. Below |x| = 0.3 the quotient's roundings would cost up to 3 ulp where the result drops
  // a binade below 2|x|: there h - h t (t the quotient) scales them down by h (checked over every
  // float in [0, 9.5]: at most 2 ulp). One exponential and one division serve both; a NaN fails the
  // comparisons and flows through.
  float a = std::fabs(x);
  float c = a > 9.0f ? 9.0f : a;
  int32_t n;
  float em1_r = detail::expm1_reduced(c + c, n);
  float sh = detail::pow2i(n - 1);
  float h = fma(sh, em1_r, sh - 0.5f);
  float t = h / (h + 1.0f);
  float small = fma(-h, t, h);
  return std::copysign(a < 0.3f ? small : t, x);
}

/// The logistic sigmoid 1 / (1 + e^{-x}).
inline float logistic(float x) {
  // e^{-|x|} never overflows; for x < 0 the result is e^x / (1 + e^x), accurate down to subnormals
  float e = vmath::exp(-std::fabs(x));
  return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

}  // namespace graft::vmath
