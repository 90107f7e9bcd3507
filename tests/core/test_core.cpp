// graft/core: dtypes and promotion, 16-bit floats, number formatting, arrays.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "graft/core/buffer.h"
#include "graft/core/format.h"
#include "testing.h"

namespace graft {
namespace {

DType promo(DType a, DType b, bool wa = false, bool wb = false, bool* weak = nullptr) {
  return promote_types(a, wa, b, wb, weak);
}

TEST(DType, PromotionFollowsJaxLattice) {
  // values from jnp.promote_types / jax.dtypes.result_type
  EXPECT_EQ(promo(f32, f16), f32);
  EXPECT_EQ(promo(bf16, f16), f32);
  EXPECT_EQ(promo(i32, f32), f32);
  EXPECT_EQ(promo(i32, f16), f16);
  EXPECT_EQ(promo(i8, u8), i16);
  EXPECT_EQ(promo(u8, i16), i16);
  EXPECT_EQ(promo(u32, i32), i64);
  EXPECT_EQ(promo(u16, u32), u32);
  EXPECT_EQ(promo(bool_, i8), i8);
  EXPECT_EQ(promo(bool_, bool_), bool_);
  EXPECT_EQ(promo(f32, f64), f64);
  EXPECT_TRUE(is_floating(promo(u64, i64)));  // no integer type holds both
  // symmetric
  for (int a = 0; a < kNumDTypes; ++a)
    for (int b = 0; b < kNumDTypes; ++b)
      EXPECT_EQ(promo(DType(a), DType(b)), promo(DType(b), DType(a))) << a << " " << b;
}

TEST(DType, WeakScalarsAdoptTheArraysType) {
  bool weak = true;
  EXPECT_EQ(promo(f16, f64, false, true, &weak), f16);  // f16 array * 2.0
  EXPECT_FALSE(weak);
  EXPECT_EQ(promo(bf16, f64, false, true), bf16);
  EXPECT_EQ(promo(i8, i64, false, true), i8);  // i8 array + 1
  EXPECT_EQ(promo(u8, i64, false, true), u8);
  EXPECT_EQ(promo(i32, f64, false, true, &weak), f32);  // int array * 1.5 -> default float, weak
  EXPECT_TRUE(weak);
  EXPECT_EQ(promo(bool_, i64, false, true, &weak), i32);  // bool + 1 -> default int, weak
  EXPECT_TRUE(weak);
  EXPECT_EQ(promo(f64, f32, true, true, &weak), f64);  // both weak: join, stay weak
  EXPECT_TRUE(weak);
}

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    EXPECT_EQ(parse_dtype(short_name(d)), d);
    EXPECT_EQ(parse_dtype(long_name(d)), d);
  }
  EXPECT_EQ(short_name(f32), "f32");
  EXPECT_EQ(long_name(bf16), "bfloat16");
  EXPECT_THROW(parse_dtype("float128"), ValueError);
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Half, Float16Conversions) {
  EXPECT_EQ(float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(float16(65504.0f).bits, 0x7bff);  // largest finite
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);  // rounds to inf
  EXPECT_EQ(float16(1.0f / 3.0f).bits, 0x3555);
  EXPECT_EQ(float16(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(float16(std::ldexp(1.0f, -25)).bits, 0x0000);  // halfway rounds to even (0)
  EXPECT_EQ(float(float16::from_bits(0x0001)), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isnan(float(float16(NAN))));
  EXPECT_EQ(float(float16::from_bits(0x7c00)), INFINITY);
  // encodings that hold on every CPU (F16C's, tested against it where it exists): NaNs keep the top of
  // their payload and become quiet, both ways; the largest value below 65520 rounds down; -0 keeps its sign
  auto from_bits32 = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return float16::from_float(f);
  };
  EXPECT_EQ(from_bits32(0x7f800001u), 0x7e00);
  EXPECT_EQ(from_bits32(0xffa00000u), 0xff00);
  EXPECT_EQ(from_bits32(0x7fc02000u), 0x7e01);
  EXPECT_EQ(from_bits32(0x477fefffu), 0x7bff);
  EXPECT_EQ(from_bits32(0x477ff000u), 0x7c00);
  EXPECT_EQ(from_bits32(0x80000000u), 0x8000);
  EXPECT_EQ(from_bits32(0x33000001u), 0x0001);  // just above half the smallest subnormal
  EXPECT_EQ(from_bits32(0x33c00000u), 0x0002);  // 1.5 units: a tie, to even
  EXPECT_EQ(from_bits32(0x387fe000u), 0x0400);  // rounds up to the smallest normal
  EXPECT_EQ(bits_of(float16::to_float(0x7c01)), 0x7fc02000u);
  EXPECT_EQ(bits_of(float16::to_float(0xfe00)), 0xffc00000u);
  EXPECT_EQ(bits_of(float16::to_float(0x0001)), 0x33800000u);
  // every f16 value survives f16 -> f32 -> f16
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float16 h = float16::from_bits(uint16_t(b));
    float f = h;
    if (std::isnan(f)) continue;
    ASSERT_EQ(float16(f).bits, b) << std::hex << b;
  }
}

#if defined(__x86_64__)
// The F16C instructions, compiled for them whatever the build's -march, called only where the CPU has
// them (cpuid, which GCC and clang both read; clang 14's __builtin_cpu_supports does not know f16c).
__attribute__((target("f16c"))) float hw_to_float(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t hw_from_float(float f) {
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

TEST(Half, Float16EqualsF16cBitForBit) {
  if (!cpu_has_f16c()) GTEST_SKIP() << "this CPU has no F16C";
  int64_t bad = 0;
  auto report = [&](uint32_t in, uint32_t got, uint32_t want, const char* what) {
    if (got != want && bad++ < 5)
      ADD_FAILURE() << what << " of 0x" << std::hex << in << ": 0x" << got << ", F16C 0x" << want;
  };
  for (uint32_t b = 0; b < 0x10000; ++b)  // every f16, NaNs included
    report(b, bits_of(float16::to_float(uint16_t(b))), bits_of(hw_to_float(uint16_t(b))), "to_float");
  auto check = [&](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    report(u, float16::from_float(f), hw_from_float(f), "from_float");
  };
  // every f32 exponent and sign with the low mantissa bits at each rounding boundary (13 bits decide a
  // normal's rounding, up to 24 a subnormal's), then random patterns
  const uint32_t lows[] = {0,      1,      0x7ff,  0x800,  0x801,  0xfff,   0x1000,   0x1001,   0x1fff,
                           0x2000, 0x3000, 0x7fff, 0x8000, 0xffff, 0x10000, 0x7fffff, 0x400000, 0x3fffff};
  for (uint32_t hi = 0; hi < 0x200; ++hi)  // sign and exponent
    for (uint32_t mid = 0; mid < 0x400; mid += 3)
      for (uint32_t lo : lows) check((hi << 23) | (((mid << 13) ^ lo) & 0x7fffffu));
  std::mt19937 rng(7);
  for (int i = 0; i < 1 << 22; ++i) check(static_cast<uint32_t>(rng()));
  EXPECT_EQ(bad, 0) << "mismatches in all";
}
#endif

// The row conversions (vector instructions where the build has them) equal the scalar ones, with
// lengths that leave a remainder past every vector.
TEST(Half, RowConversionsEqualTheScalarOnes) {
  std::vector<uint16_t> all(0x10000 + 5);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  std::vector<float> wide(all.size());
  std::mt19937 rng(3);
  std::vector<float> values(all.size());
  for (auto& v : values) {
    uint32_t u = static_cast<uint32_t>(rng());
    std::memcpy(&v, &u, 4);
  }
  for (int64_t n :
       {int64_t(0), int64_t(1), int64_t(7), int64_t(8), int64_t(17), static_cast<int64_t>(all.size())}) {
    widen(reinterpret_cast<const float16*>(all.data()), wide.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(bits_of(wide[size_t(i)]), bits_of(float16::to_float(all[size_t(i)]))) << i;
    widen(reinterpret_cast<const bfloat16*>(all.data()), wide.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(bits_of(wide[size_t(i)]), bits_of(float(bfloat16::from_bits(all[size_t(i)])))) << i;
    std::vector<float16> h(size_t(n) + 1, float16::from_bits(0xabcd));
    std::vector<bfloat16> b(size_t(n) + 1, bfloat16::from_bits(0xabcd));
    narrow(values.data(), h.data(), n);
    narrow(values.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(h[size_t(i)].bits, float16::from_float(values[size_t(i)])) << i;
      ASSERT_EQ(b[size_t(i)].bits, bfloat16::from_float(values[size_t(i)])) << i;
    }
    EXPECT_EQ(h[size_t(n)].bits, 0xabcd);  // nothing written past n
    EXPECT_EQ(b[size_t(n)].bits, 0xabcd);
  }
}

TEST(Half, BFloat16Conversions) {
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bfloat16(-1.5f).bits, 0xbfc0);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to even (1)
  EXPECT_EQ(bfloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);
  EXPECT_EQ(bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);
  EXPECT_TRUE(std::isnan(float(bfloat16(NAN))));
}

TEST(Format, PythonFloatRepr) {
  EXPECT_EQ(format_float_repr(1.0, f32), "1.0");
  EXPECT_EQ(format_float_repr(0.1, f32), "0.1");
  EXPECT_EQ(format_float_repr(0.1, f64), "0.1");
  EXPECT_EQ(format_float_repr(1e-05, f32), "1e-05");
  EXPECT_EQ(format_float_repr(0.0001, f64), "0.0001");
  EXPECT_EQ(format_float_repr(1e16, f64), "1e+16");
  EXPECT_EQ(format_float_repr(123456.75, f64), "123456.75");
  EXPECT_EQ(format_float_repr(-0.0, f32), "-0.0");
  EXPECT_EQ(format_float_repr(INFINITY, f32), "inf");
  EXPECT_EQ(format_float_repr(-INFINITY, f32), "-inf");
  EXPECT_EQ(format_float_repr(NAN, f32), "nan");
  EXPECT_EQ(format_float_repr(1.0 / 3.0, f32), "0.33333334");
  EXPECT_EQ(format_float_repr(1.0 / 3.0, f64), "0.3333333333333333");
  EXPECT_EQ(format_float_repr(2.5e-7, f64), "2.5e-07");
}

TEST(Array, CreationAndReadBack) {
  Array x = array({1.0f, 2.0f, 3.0f});
  EXPECT_EQ(x.dtype(), f32);
  EXPECT_EQ(x.shape(), Shape{3});
  EXPECT_FALSE(x.weak_type());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(x.to_vector<int>(), (std::vector<int>{1, 2, 3}));
  Array m = array({{1, 2}, {3, 4}});
  EXPECT_EQ(m.dtype(), i32);
  EXPECT_EQ(m.shape(), (Shape{2, 2}));
  EXPECT_EQ(array(2.5).dtype(), f64);
  EXPECT_EQ(array(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).shape(), (Shape{2, 3}));
  EXPECT_THROW(array(std::vector<double>{1, 2, 3}, {2, 2}), ShapeError);
  EXPECT_EQ(sum(m).item<int>(), 10);
  EXPECT_THROW(m.item<int>(), ValueError);  // more than one element
}

TEST(Array, ImplicitScalarsAreWeak) {
  Array s = 2.0;
  EXPECT_TRUE(s.weak_type());
  Array x = ones({3}, f16);
  EXPECT_EQ((x * 2.0).dtype(), f16);
  EXPECT_EQ((x * s).dtype(), f16);
  EXPECT_EQ((ones({2}, i32) + 1).dtype(), i32);
  EXPECT_EQ((ones({2}, i32) * 1.5).dtype(), f32);
  EXPECT_FALSE(Array(true).weak_type());
  // precision: the scalar is converted once, to the array's dtype
  EXPECT_EQ((ones({1}, f64) * 0.1).item<double>(), 0.1);
}

TEST(Array, Printing) {
  EXPECT_EQ(to_string(array({1.0f, 2.5f})), "Array([1. , 2.5])");
  EXPECT_EQ(to_string(array({1, 2})), "Array([1, 2])");
  EXPECT_EQ(to_string(array({true, false})), "Array([ True, False])");
  EXPECT_EQ(to_string(array(2.0)), "Array(2., dtype=float64)");
  EXPECT_EQ(to_string(Array(2.0f)), "Array(2., dtype=float32, weak_type=True)");
  EXPECT_EQ(to_string(array({{1, 2}, {3, 4}})), "Array([[1, 2],\n       [3, 4]])");
  EXPECT_EQ(to_string(Array()), "Array(null)");
}

TEST(Array, ReshapeSharesTheBuffer) {
  Array x = arange(12.0, f32);
  Array y = reshape(x, {3, 4});
  EXPECT_EQ(x.raw_data(), y.raw_data());  // arrays are immutable, so sharing is safe
}

TEST(Array, NullArraysAreRejected) {
  Array null;
  EXPECT_FALSE(null.valid());
  EXPECT_THROW(sin(null), ValueError);
  EXPECT_THROW(null + 1.0, ValueError);
}

TEST(Array, SixteenBitArithmeticRoundsThroughF32) {
  Array a = array({1.0f, 2.0f, 3.0f}).astype(bf16);
  Array b = a * 3.0 + 0.5;
  EXPECT_EQ(b.dtype(), bf16);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{3.5f, 6.5f, 9.5f}));
  Array h = array({0.1f}).astype(f16);
  EXPECT_EQ(h.to_vector<float>()[0], float(float16(0.1f)));
}

// Blocks from 32 KiB up come back from the recycling cache rather than from malloc, whose heap trimming
// hands a freed block at the heap's top back to the OS (fresh page faults on the next training step).
TEST(Buffer, MidSizedBlocksAreRecycled) {
  for (size_t n : {size_t(40) << 10, size_t(128) << 10, size_t(196) << 10, size_t(1) << 20}) {
    void* first;
    {
      Ref<Buffer> b = Buffer::allocate_cpu(n);
      first = b->data();
      EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kBufferAlign, 0u);
    }
    Ref<Buffer> again = Buffer::allocate_cpu(n - 100);  // the same size class
    EXPECT_EQ(again->data(), first) << n << " bytes";
    EXPECT_EQ(again->nbytes(), n - 100);
  }
}

}  // namespace
}  // namespace graft
