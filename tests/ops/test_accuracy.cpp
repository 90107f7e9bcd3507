// Accuracy of long reductions: sums fold pairwise (error ~ log2(n) ulps, as NumPy's),
// eagerly, under jit (a lone reduction and one fused with its producers), along rows, columns and
// both ends of NCHW, in f32, bf16 and f64; f32 products accumulate in f64; running sums are compensated.
#include <cmath>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

// Relative error of a computed f32 total against the exact total of the same f32 values.
double rel_error(const Array& got, double exact) { return std::fabs(got.astype(DType::f64).item<double>() - exact) / std::fabs(exact); }

double exact_sum(const Array& x) {
  auto v = x.astype(DType::f64).to_vector<double>();
  long double s = 0;
  for (double d : v) s += d;
  return static_cast<double>(s);
}

// a few ulps per tree level: 2^-24 * 4 * 24 levels
constexpr double kF32Tolerance = 4 * 24 * 5.96e-8;

TEST(Accuracy, F32SumOfSixteenMillionElements) {
  // the case: 2^24 elements summed with eight accumulators came out 1.7-2.4% low
  Array x = random::uniform(random::key(0), {int64_t(1) << 24});
  double exact = exact_sum(x);
  EXPECT_LT(rel_error(sum(x), exact), kF32Tolerance);
  EXPECT_LT(rel_error(jit([](const Array& x) { return sum(x); })(x), exact), kF32Tolerance);
  // fused with its producer: a chunked row of the fused loop
  EXPECT_LT(rel_error(jit([](const Array& x) { return sum(x * 2.0) / 2.0; })(x), exact), kF32Tolerance);
  EXPECT_LT(rel_error(mean(x) * double(x.size()), exact), kF32Tolerance);
  // a constant: every accumulator sees the same value, the worst case for sequential adds
  Array c = full({int64_t(1) << 24}, 0.1f);
  double ec = double(0.1f) * double(int64_t(1) << 24);
  EXPECT_LT(rel_error(sum(c), ec), kF32Tolerance);
  EXPECT_LT(rel_error(jit([](const Array& x) { return sum(exp(x * 0.0) * x); })(c), ec), kF32Tolerance);
}

TEST(Accuracy, F32SumsAlongRowsColumnsAndBothEnds) {
  Array rows = full({4, int64_t(1) << 22}, 0.1f);
  double er = double(0.1f) * double(int64_t(1) << 22);
  Array s = sum(rows, {1});
  for (int i = 0; i < 4; ++i) EXPECT_LT(rel_error(s[i], er), kF32Tolerance);
  EXPECT_LT(rel_error(jit([](const Array& x) { return sum(x * 2.0, {1}) / 2.0; })(rows)[3], er), kF32Tolerance);
  // rows a fused loop holds whole (16384 elements), summed by generated code
  Array whole = full({64, 16384}, 0.1f);
  double ew = double(0.1f) * 16384;
  Array ws = jit([](const Array& x) { return sum(x * 2.0, {1}) / 2.0; })(whole);
  for (int i = 0; i < 64; i += 21) EXPECT_LT(rel_error(ws[i], ew), kF32Tolerance);
  Array cols = full({int64_t(1) << 22, 4}, 0.1f);
  Array cs = sum(cols, {0});
  for (int i = 0; i < 4; ++i) EXPECT_LT(rel_error(cs[i], er), kF32Tolerance);
  EXPECT_LT(rel_error(jit([](const Array& x) { return sum(x, {0}); })(cols)[1], er), kF32Tolerance);
  // per-channel sums of NCHW (axes 0, 2, 3): 2^20 values per channel
  Array nchw = full({256, 3, 64, 64}, 0.1f);
  double en = double(0.1f) * 256 * 64 * 64;
  Array pc = sum(nchw, {0, 2, 3});
  for (int i = 0; i < 3; ++i) EXPECT_LT(rel_error(pc[i], en), kF32Tolerance);
}

TEST(Accuracy, Bf16AndF64Sums) {
  Array b = full({int64_t(1) << 22}, 0.1f).astype(DType::bf16);
  double eb = double(float(bfloat16(0.1f))) * double(int64_t(1) << 22);
  // accumulated in f32, rounded once to bf16 (2^-8 relative)
  EXPECT_LT(rel_error(sum(b), eb), 1.0 / 256);
  Array d = full({int64_t(1) << 22}, 0.1, DType::f64);
  EXPECT_LT(rel_error(sum(d), 0.1 * double(int64_t(1) << 22)), 1e-14);
}

TEST(Accuracy, F32ProductsAccumulateInF64) {
  // 2^20 factors of (1 + 2^-20): every rounding adds to a product's error, whatever the order (f32 gave
  // 2.5e-4): f32 products accumulate in f64
  Array x = full({int64_t(1) << 20}, 1.0f + 1.0f / (1 << 20));
  double exact = std::pow(double(1.0f + 1.0f / (1 << 20)), double(1 << 20));
  EXPECT_LT(rel_error(prod(x), exact), 1.2e-7);
  EXPECT_LT(rel_error(jit([](const Array& x) { return prod(x); })(x), exact), 1.2e-7);
  EXPECT_LT(rel_error(jit([](const Array& x) { return prod(x * 1.0); })(x), exact), 1.2e-7);
  Array rows = full({8, 1 << 12}, 1.0f + 1.0f / (1 << 12));
  double er = std::pow(double(1.0f + 1.0f / (1 << 12)), double(1 << 12));
  EXPECT_LT(rel_error(jit([](const Array& x) { return prod(exp(x * 0.0) * x, {1}); })(rows)[7], er), 1.2e-7);
}

TEST(Accuracy, RunningSumsAreCompensated) {
  // plain f32 running sums of 2^24 values of 0.1 drift by 15%
  int64_t n = int64_t(1) << 24;
  Array c = cumsum(full({n}, 0.1f), 0);
  EXPECT_LT(rel_error(c[n - 1], double(0.1f) * double(n)), 1e-7);
  EXPECT_LT(rel_error(c[n / 2 - 1], double(0.1f) * double(n / 2)), 1e-7);
  Array d = cumsum(full({n}, 0.1, DType::f64), 0);
  EXPECT_LT(rel_error(d[n - 1], 0.1 * double(n)), 1e-15);
}

TEST(Accuracy, SumsDoNotDependOnThreadsOrCallOrder) {
  // the same pieces are folded in the same tree whichever thread folded them: calls agree bit for bit
  Array x = random::normal(random::key(1), {3, (int64_t(1) << 20) + 77});
  Array a = sum(x, {1}), b = sum(x, {1});
  EXPECT_TRUE(close(a, b, 0, 0));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(close(sum(x[i]), a[i], 0, 0));
}

}  // namespace
}  // namespace graft
