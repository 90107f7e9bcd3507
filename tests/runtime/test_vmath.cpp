// graft::vmath against correctly rounded results (libm in double precision, rounded to float):
// every float of the tested ranges is checked (a stride through the bit patterns keeps it fast).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "graft/runtime/cpu/features.h"
#include "graft/runtime/cpu/vmath.h"
#include "graft/runtime/cpu/vmath_avx512.h"

namespace graft {
namespace {

// Distance in units in the last place between two finite floats of the same sign region.
int64_t ulp_distance(float a, float b) {
  auto key = [](float x) {
    int32_t i = std::bit_cast<int32_t>(x);
    return i < 0 ? static_cast<int64_t>(std::numeric_limits<int32_t>::min()) - i : static_cast<int64_t>(i);
  };
  return std::llabs(key(a) - key(b));
}

template <class F, class R>
int64_t max_ulp(F f, R ref, float lo, float hi, uint32_t stride, float* worst = nullptr) {
  int64_t worst_ulp = 0;
  auto check = [&](float x) {
    float got = f(x);
    float want = static_cast<float>(ref(static_cast<double>(x)));
    int64_t d = (std::isnan(got) && std::isnan(want)) || got == want ? 0 : ulp_distance(got, want);
    if (std::isinf(want) != std::isinf(got)) d = std::numeric_limits<int64_t>::max();
    if (d > worst_ulp) {
      worst_ulp = d;
      if (worst) *worst = x;
    }
  };
  // walk the bit patterns of [lo, hi] (both signs handled by splitting at zero)
  auto walk = [&](float a, float b) {
    uint32_t ia = std::bit_cast<uint32_t>(a), ib = std::bit_cast<uint32_t>(b);
    if (ia > ib) std::swap(ia, ib);
    for (uint64_t i = ia; i <= ib; i += stride) check(std::bit_cast<float>(static_cast<uint32_t>(i)));
    check(b);
  };
  if (lo < 0 && hi > 0) {
    walk(-0.0f, lo);
    walk(0.0f, hi);
  } else {
    walk(lo, hi);
  }
  std::printf("max error %lld ulp\n", static_cast<long long>(worst_ulp));
  return worst_ulp;
}

TEST(Vmath, exp_within_2ulp) {
  float worst = 0;
  EXPECT_LE(max_ulp([](float x) { return vmath::exp(x); }, [](double x) { return std::exp(x); }, -104.0f, 89.0f, 61,
                    &worst),
            2)
      << "at x = " << worst;
}

TEST(Vmath, exp_edges) {
  EXPECT_EQ(vmath::exp(0.0f), 1.0f);
  EXPECT_EQ(vmath::exp(-INFINITY), 0.0f);
  EXPECT_EQ(vmath::exp(INFINITY), INFINITY);
  EXPECT_EQ(vmath::exp(88.8f), INFINITY);
  EXPECT_EQ(vmath::exp(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(vmath::exp(NAN)));
  EXPECT_GT(vmath::exp(-100.0f), 0.0f);  // a subnormal result, not flushed
}

#if GRAFT_HAVE_TARGET_AVX512
// vmath::avx512::exp over 16 floats at a time (a wrapper taking arrays: no AVX-512 value crosses
// into code built without it)
GRAFT_TARGET_AVX512 void exp16(const float* x, float* y) {
  _mm512_storeu_ps(y, vmath::avx512::exp(_mm512_loadu_ps(x)));
}

// The AVX-512 exp (fused attention's softmax) is the scalar one bit for bit: a stride through every
// bit pattern (both signs, NaNs, infinities, subnormal inputs and results) plus the edges.
TEST(Vmath, avx512_exp_is_the_scalar_exp_bit_for_bit) {
  if (!cpu::has_avx512()) GTEST_SKIP() << "no AVX-512 here: the kernels that use it do not run";
  float x[16], y[16];
  int n = 0;
  uint64_t checked = 0;
  auto flush = [&] {
    exp16(x, y);
    for (int i = 0; i < n; ++i) {
      float want = vmath::exp(x[i]);
      ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want)) << "at x = " << x[i];
    }
    checked += uint64_t(n);
    n = 0;
  };
  for (uint64_t b = 0; b <= 0xffffffffull; b += 4099) {
    x[n++] = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (n == 16) flush();
  }
  for (float e : {0.0f, -0.0f, 88.72f, 88.73f, -87.3f, -103.9f, -104.0f, 89.0f, INFINITY, -INFINITY, NAN}) {
    x[n++] = e;
    if (n == 16) flush();
  }
  for (int i = n; i < 16; ++i) x[i] = 0;
  flush();
  EXPECT_GT(checked, 1000000u);
}
#endif

TEST(Vmath, log_within_2ulp) {
  float worst = 0;
  EXPECT_LE(max_ulp([](float x) { return vmath::log(x); }, [](double x) { return std::log(x); },
                    std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(), 97, &worst),
            2)
      << "at x = " << worst;
}

TEST(Vmath, log_edges) {
  EXPECT_EQ(vmath::log(1.0f), 0.0f);
  EXPECT_EQ(vmath::log(0.0f), -INFINITY);
  EXPECT_EQ(vmath::log(-0.0f), -INFINITY);
  EXPECT_EQ(vmath::log(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(vmath::log(-1.0f)));
  EXPECT_TRUE(std::isnan(vmath::log(-INFINITY)));
  EXPECT_TRUE(std::isnan(vmath::log(NAN)));
}

TEST(Vmath, scaled_reduction_is_the_reduction_of_the_scaled_argument_bit_for_bit) {
  // tanh reduces e^{2c} with its constants scaled instead of c (one instruction fewer): the scaled
  // reduction must be the unscaled one of 2c, halved, for every c it sees (a sampled [0, 9]), with ln2
  // split in two floats (exp) or as one (tanh)
  const float shift = vmath::detail::kShift;
  auto mismatches = [&]<bool Split>() {
    long bad = 0;
    for (uint32_t i = 0; i <= std::bit_cast<uint32_t>(9.0f); i += 7) {
      float c = std::bit_cast<float>(i);
      float t0, r0, t1, r1;
      float q0 = vmath::detail::exp_reduced<0, Split>(c + c, shift, t0, r0);
      float q1 = vmath::detail::exp_reduced<1, Split>(c, shift + 127.0f, t1, r1);
      bool same = q1 == 2.0f * q0 && r1 == 0.5f * r0 && t1 - (shift + 127.0f) == t0 - shift &&
                  std::bit_cast<uint32_t>(t1) << 23 == std::bit_cast<uint32_t>(std::ldexp(1.0f, static_cast<int>(t0 - shift)));
      if (!same && bad++ < 3) ADD_FAILURE() << "c = " << c << (Split ? " (ln2 split)" : " (ln2 one float)");
    }
    return bad;
  };
  EXPECT_EQ(mismatches.template operator()<true>(), 0);
  EXPECT_EQ(mismatches.template operator()<false>(), 0);
}

TEST(Vmath, tanh_within_2ulp) {
  float worst = 0;
  EXPECT_LE(max_ulp([](float x) { return vmath::tanh(x); }, [](double x) { return std::tanh(x); }, -20.0f, 20.0f, 31,
                    &worst),
            2)
      << "at x = " << worst;
}

TEST(Vmath, tanh_within_2ulp_where_the_quotient_loses_a_binade) {
  // below |x| = 0.3 the result is often a binade below 2|x| (whose rounding h carries): densely
  float worst = 0;
  EXPECT_LE(max_ulp([](float x) { return vmath::tanh(x); }, [](double x) { return std::tanh(x); }, 0.01f, 0.35f, 3,
                    &worst),
            2)
      << "at x = " << worst;
}

TEST(Vmath, tanh_edges) {
  EXPECT_EQ(vmath::tanh(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(vmath::tanh(-0.0f)));
  EXPECT_EQ(vmath::tanh(INFINITY), 1.0f);
  EXPECT_EQ(vmath::tanh(-INFINITY), -1.0f);
  EXPECT_EQ(vmath::tanh(1e30f), 1.0f);
  EXPECT_EQ(vmath::tanh(1e-30f), 1e-30f);
  EXPECT_TRUE(std::isnan(vmath::tanh(NAN)));
}

TEST(Vmath, logistic_within_2ulp) {
  float worst = 0;
  EXPECT_LE(max_ulp([](float x) { return vmath::logistic(x); }, [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
                    -100.0f, 100.0f, 31, &worst),
            2)
      << "at x = " << worst;
}

TEST(Vmath, logistic_edges) {
  EXPECT_EQ(vmath::logistic(0.0f), 0.5f);
  EXPECT_EQ(vmath::logistic(INFINITY), 1.0f);
  EXPECT_EQ(vmath::logistic(-INFINITY), 0.0f);
  EXPECT_TRUE(std::isnan(vmath::logistic(NAN)));
}

}  // namespace
}  // namespace graft
