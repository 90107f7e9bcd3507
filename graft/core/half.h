// 16-bit floating types: IEEE half (f16) and bfloat16 (bf16). Storage types with exact conversions to
// and from float (round to nearest even); arithmetic happens in f32, as on CPUs without native support.
#pragma once

#include <cstdint>
#include <cstring>

namespace graft {

namespace detail {
inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

/// bfloat16: the top 16 bits of an f32.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(from_float(f)) {}  // NOLINT: numeric conversion like the builtin types
  operator float() const { return detail::bits_f32(uint32_t(bits) << 16); }  // NOLINT
  static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round to nearest even
    uint32_t nan = (u >> 16) | 0x40;                              // quiet NaN
    // a select, not a branch: loops of conversions vectorize
    return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
  }
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 r;
    r.bits = b;
    return r;
  }
};

/// IEEE 754 binary16.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return to_float(bits); }  // NOLINT
  static float16 from_bits(uint16_t b) {
    float16 r;
    r.bits = b;
    return r;
  }
  static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
    if (absu >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow (incl. rounding up) -> inf
    if (absu < 0x38800000u) {                                   // subnormal or zero in f16
      if (absu < 0x33000000u) return uint16_t(sign);            // < half the smallest subnormal
      uint32_t exp = absu >> 23;
      uint32_t mant = (absu & 0x7fffffu) | 0x800000u;
      uint32_t shift = 126 - exp;  // f16 subnormal unit is 2^-24; f32 mantissa unit is 2^(exp-150)
      uint32_t res = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1u);
      uint32_t halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (res & 1u))) ++res;
      return uint16_t(sign | res);
    }
    // normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits
    uint32_t res = ((absu - 0x38000000u) >> 13);
    uint32_t rem = absu & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (res & 1u))) ++res;
    return uint16_t(sign | res);
  }
  static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
      if (mant == 0) {
        u = sign;
      } else {  // subnormal: normalize
        int e = -1;
        do {
          ++e;
          mant <<= 1;
        } while ((mant & 0x400u) == 0);
        u = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
      }
    } else if (exp == 31) {
      u = sign | 0x7f800000u | (mant << 13);
    } else {
      u = sign | (exp + 112) << 23 | (mant << 13);
    }
    return detail::bits_f32(u);
  }
};

}  // namespace graft
