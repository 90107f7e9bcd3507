// Vectorizable single-precision transcendental functions (exp, log, tanh, logistic).
//
// libm's expf/logf/tanhf are scalar calls, so a loop over them runs one element at a time; these are
// branch-free inline functions (selects instead of branches, bit casts instead of frexp/ldexp) that
// GCC and Clang vectorize when they are called in a loop, e.g.
//
//   for (int64_t i = 0; i < n; ++i) y[i] = graft::vmath::tanh(x[i]);   // AVX-512: 16 lanes a step
//
// Accuracy (checked over every float in the tested ranges by tests/runtime/test_vmath.cpp): at most
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
/// The coefficients of e^r - 1 = r + r^2 q(r), q(r) = kExpm1[0] + kExpm1[1] r + ... on |r| <= ln2 / 2.
inline constexpr float kExpm1[5] = {0.4999998858999466f, 0.16666518415101703f, 0.04166953395939757f,
                                    0.008368921740878908f, 0.0013751388271303708f};
/// n = round(y / ln2) with the 1.5 * 2^23 trick: t = y / ln2 + kShift rounds to an integer, whose
/// low mantissa bits are n (no float-to-int conversion of a possible NaN)
inline constexpr float kShift = 12582912.0f;

/// The reduction of e^y, y = 2^K x: n = round(y / ln2) and r = y - n ln2 (|r| <= ln2 / 2), for x in
/// the range where n fits an exponent. Returns q(r) (e^r - 1 = r + r^2 q(r)) times 2^K and sets r / 2^K
/// and t = n + shift as a float (shift an integer in [kShift, kShift + 2^20)): callers take n from its
/// bits. For K > 0 every constant is scaled by a power of two instead of scaling x (y = 2^K x costs an
/// instruction): each rounding sees its K = 0 operand times a power of two, so the results are those
/// for y, scaled, bit for bit. With SplitLn2 false, ln2 is one float (an instruction fewer): r is off
/// by n (ln2 - fl(ln2)), |n| 1.9e-9 -- fine where n is small or the result damps errors of r (tanh).
template <int K, bool SplitLn2 = true>
inline float exp_reduced(float x, float shift, float& t, float& r) {
  constexpr float s = static_cast<float>(1 << K);
  t = fma(x, 1.44269504088896341f * s, shift);
  float nf = t - shift;
  if constexpr (SplitLn2) {
    r = fma(nf, -0.693145751953125f / s, x);  // ln2 split in a short head and a tail: r is exact
    r = fma(nf, -1.4286068203094172e-06f / s, r);
  } else {
    r = fma(nf, -0.693147180559945309f / s, x);
  }
  // Horner in r / 2^K with the coefficients of q scaled so that q ends as 2^K q(r)
  float q = fma(r, kExpm1[4] * (s * s * s * s * s), kExpm1[3] * (s * s * s * s));
  q = fma(q, r, kExpm1[2] * (s * s * s));
  q = fma(q, r, kExpm1[1] * (s * s));
  return fma(q, r, kExpm1[0] * s);
}
}  // namespace detail

/// e^x.
inline float exp(float x) {
  // Clamping keeps the exponent arithmetic in range; the clamped values still overflow to inf or
  // underflow to 0. A NaN fails both comparisons and flows through.
  x = x > 89.0f ? 89.0f : x;
  x = x < -104.0f ? -104.0f : x;
  using detail::fma;
  float t, r;
  float q = detail::exp_reduced<0>(x, detail::kShift, t, r);
  float p = fma(fma(q, r, 1.0f), r, 1.0f);  // e^r = 1 + r (1 + r q)
  int32_t n = static_cast<int32_t>(std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(detail::kShift));
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
  // with a clamp-free exponential: beyond |x| = 9.02 the result rounds to 1, so clamping at 10 keeps
  // 2^n in range. Below |x| = 0.3 the quotient's roundings would cost up to 3 ulp where the result drops
  // a binade below 2|x|: there h - h t (t the quotient) scales them down by h (checked over every
  // float in [0, 9.5]: at most 2 ulp). One exponential and one division serve both; a NaN fails the
  // comparisons and flows through.
  float a = std::fabs(x);
  float c = a > 10.0f ? 10.0f : a;
  // e^{2c} is reduced with the doubling folded into the constants, and with shift = kShift + 127 the
  // bits of t are (127 + n) + bits(kShift), where bits(kShift) << 23 vanishes: t's bits shifted by 23
  // are 2^n (n <= 29 here). Both save instructions (3 of 23) and change no result bit. ln2 is one
  // float (one more instruction fewer): r is then off by n (ln2 - fl(ln2)), n 1.9e-9, which moves
  // tanh by at most ~0.1 ulp (n = 1, |x| near 0.17; the quotient damps it for larger n). Checked over
  // every float: max error 1.855 ulp before and after.
  float t2n, r;
  float q = detail::exp_reduced<1, false>(c, detail::kShift + 127.0f, t2n, r);
  float half_em1_r = fma(q * r, r, r);  // (e^r - 1) / 2 for e^{2c} = 2^n e^r
  float s2 = std::bit_cast<float>(std::bit_cast<uint32_t>(t2n) << 23);
  float h = fma(s2, half_em1_r, fma(s2, 0.5f, -0.5f));
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
