// 16-bit floating types: IEEE half (f16) and bfloat16 (bf16). Storage types with exact conversions to
// and from float (round to nearest even); arithmetic happens in f32, as on CPUs without native support.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

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
  // Both conversions are branch-free (selects and masks) so that loops of them vectorize, integer-only
  // where they round (the FP environment's rounding mode does not matter), and equal the F16C
  // instructions (vcvtps2ph with round-to-nearest-even, vcvtph2ps) bit for bit on every input, NaN
  // payloads included: a NaN keeps the top of its payload and becomes quiet. The test compares them
  // with F16C where the CPU has it, and with fixed encodings everywhere.
  static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    // normal in f16: rebias the exponent (127 -> 15) and round the mantissa to 10 bits, to even
    uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
    // below 2^-14: the significand (implicit bit set) shifted down to f16's subnormal unit 2^-24 and
    // rounded to even, in integers (whatever the FP rounding mode); 0x400 when it rounds up to the
    // smallest normal, which is that number's encoding. The shift is kept in 1..31 in every lane.
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t s = 126u - (a >> 23);  // >= 14 below 2^-14
    s = s - 1u < 30u ? s : s == 0u ? 1u : 31u;
    uint32_t q = m >> s, rest = m << (32u - s);  // rest: the bits shifted out, at the top
    uint32_t sub = q + ((uint32_t(rest > 0x80000000u) | (uint32_t(rest == 0x80000000u) & q)) & 1u);
    uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
    uint32_t r = a > 0x7f800000u ? nan : a >= 0x477ff000u ? 0x7c00u : a < 0x38800000u ? sub : normal;
    return uint16_t(r | sign);
  }
  static float to_float(uint16_t h) {
    uint32_t em = h & 0x7fffu;
    uint32_t exp = em & 0x7c00u;
    uint32_t normal = (em << 13) + 0x38000000u;                                       // rebias 15 -> 127
    uint32_t special = ((em << 13) + 0x70000000u) | (uint32_t(em != 0x7c00u) << 22);  // inf; NaN made quiet
    uint32_t sub = detail::f32_bits(float(int32_t(em)) * 0x1p-24f);  // subnormal or zero: exact
    // masks, not selects: GCC keeps a select whose arm is a float operation as a branch (the
    // operation might trap), and a branch stops the loop from vectorizing
    uint32_t is_sub = 0u - uint32_t(exp == 0), is_special = 0u - uint32_t(exp == 0x7c00u);
    uint32_t u = (sub & is_sub) | (special & is_special) | (normal & ~(is_sub | is_special));
    return detail::bits_f32(u | (uint32_t(h & 0x8000u) << 16));
  }
};

/// Whether T is one of the 16-bit float types.
template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

/// n values widened to f32, or rounded from f32 to nearest even, in single loops that vectorize: use
/// them for the rows of a strided copy (GCC leaves the same conversion unvectorized inside a loop
/// nest, and f16's takes a dozen operations a value).
void widen(const float16* in, float* out, int64_t n);
void widen(const bfloat16* in, float* out, int64_t n);
void narrow(const float* in, float16* out, int64_t n);
void narrow(const float* in, bfloat16* out, int64_t n);

}  // namespace graft
