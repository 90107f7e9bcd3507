// Regressions: NumPy-layer bugs found while writing the ops tests, each pinned by its repro.
#include <cmath>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

TEST(Regression, BooleanAddIsOrAndMultiplyIsAnd) {
  Array a = array({true, false, true}), b = array({true, true, false});
  EXPECT_EQ((a + b).dtype(), bool_);
  EXPECT_EQ((a + b).to_vector<int>(), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ((a * b).to_vector<int>(), (std::vector<int>{1, 0, 0}));
}

TEST(Regression, IntegerBaseWithWholeFloatExponentPromotes) {
  Array r = power(array({2, 3}), 2.0);
  EXPECT_EQ(r.dtype(), f32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{4, 9}));
  EXPECT_EQ(power(array({2, 3}), 2).dtype(), i32);  // an integer exponent keeps integers
}

TEST(Regression, LogaddexpOfEqualInfinities) {
  EXPECT_EQ(logaddexp(array(-INFINITY), array(-INFINITY)).item<float>(), -INFINITY);
  EXPECT_EQ(logaddexp(array(INFINITY), array(INFINITY)).item<float>(), INFINITY);
  EXPECT_NEAR(logaddexp(array(0.0), array(0.0)).item<double>(), std::log(2.0), 1e-15);
}

TEST(Regression, IscloseDoesNotMatchFiniteWithInfinite) {
  EXPECT_FALSE(isclose(array(1.0f), array(INFINITY)).item<bool>());
  EXPECT_FALSE(isclose(array(-INFINITY), array(INFINITY)).item<bool>());
  EXPECT_TRUE(isclose(array(INFINITY), array(INFINITY)).item<bool>());
  EXPECT_FALSE(isclose(array(NAN), array(NAN)).item<bool>());
  EXPECT_FALSE(allclose(array({1.0f, 2.0f}), array({1.0f, INFINITY})));
}

TEST(Regression, FloatFloorDivideMatchesNumpyDivmod) {
  // numpy: 1.0 // 0.1 == 9.0 and 1.0 % 0.1 == 0.09999999999999995
  EXPECT_EQ(floor_divide(array(1.0f), array(0.1f)).item<float>(), 9.0f);
  EXPECT_EQ(floor_divide(array(1.0), array(0.1)).item<double>(), 9.0);
  EXPECT_EQ(floor_divide(array(-7.0), array(2.0)).item<double>(), -4.0);
  EXPECT_EQ(floor_divide(array(7.0), array(-2.0)).item<double>(), -4.0);
  Array x = array({1.0, -7.5, 7.5, 5.0}), y = array({0.1, 2.0, -2.0, 2.5});
  EXPECT_TRUE(close(floor_divide(x, y) * y + remainder(x, y), x, 1e-12, 1e-12));
}

TEST(Regression, SplitAtDecreasingIndices) {
  auto parts = split(arange(10.0), std::vector<int64_t>{5, 3});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(parts[1].size(), 0);
  EXPECT_EQ(parts[2].to_vector<int>(), (std::vector<int>{3, 4, 5, 6, 7, 8, 9}));
}

TEST(Regression, AtMulMinMaxApplyEveryDuplicate) {
  Array m = arange(12.0, f32).reshape({3, 4});
  Array rows = array({0, 0}), cols = array({1, 1});
  Array prod = m.at({rows, cols}).mul(array({2.0f, 5.0f}));
  EXPECT_EQ((prod[{0, 1}].item<float>()), 10.0f);
  Array r12 = array({1, 1}), c12 = array({2, 2});
  Array lo = m.at({r12, c12}).min(array({-1.0f, 3.0f})), hi = m.at({r12, c12}).max(array({28.0f, 24.0f}));
  EXPECT_EQ((lo[{1, 2}].item<float>()), -1.0f);
  EXPECT_EQ((hi[{1, 2}].item<float>()), 28.0f);
  // gradients with duplicates: d/dv of (x.at[i].mul(v))[i] = x * prod(other v)
  auto f = [&](const Array& v) { return m.at({rows, cols}).mul(v)[{0, 1}]; };
  EXPECT_TRUE(close(grad(f)(array({2.0f, 5.0f})), array({5.0f, 2.0f})));
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {
using namespace graft::testing;

// Size arithmetic: huge, negative and non-finite sizes raise errors before anything is allocated.
TEST(Regression, HugeShapesAreErrorsNotWrappedSizes) {
  // 2^61 * 2 elements * 4 bytes wrapped to 0 bytes, and the first write went out of bounds
  expect_throws<ValueError>([] { zeros({int64_t(1) << 61, 2}); }, "more than 2^48 elements");
  expect_throws<ValueError>([] { ones({int64_t(1) << 40, int64_t(1) << 40}); }, "more than 2^48");
  expect_throws<ValueError>([] { Array::empty(Aval({int64_t(1) << 62, 4}, DType::f32)); }, "more than 2^48");
  // a product that overflows int64 is caught too, and any negative dimension anywhere
  expect_throws<ValueError>([] { zeros({int64_t(1) << 32, int64_t(1) << 32, int64_t(1) << 32}); }, "2^48");
  expect_throws<ValueError>([] { Array::empty(Aval({int64_t(1) << 62, 0, -1}, DType::f32)); }, "negative dimension");
  // under jit the traced program's types are checked the same way
  expect_throws<ValueError>([] { jit([](const Array& x) { return x + zeros({int64_t(1) << 50}); })(array(1.0f)); }, "2^48");
  EXPECT_EQ(zeros({int64_t(1) << 61, 0}).size(), 0);  // empty arrays of any extent are fine
}

TEST(Regression, NegativeAndNonFiniteSizes) {
  // eye(-3) made an f32[-3,-3]; arange(inf) cast infinity to an integer (undefined behaviour)
  expect_throws<ValueError>([] { eye(-3); }, "non-negative");
  expect_throws<ValueError>([] { eye(3, -1); }, "non-negative");
  expect_throws<ValueError>([] { arange(INFINITY); }, "finite");
  expect_throws<ValueError>([] { arange(0, NAN, 1); }, "finite");
  expect_throws<ValueError>([] { arange(0, 1, INFINITY); }, "finite");
  expect_throws<ValueError>([] { arange(0, 1e300, 1); }, "more than 2^48");
  expect_throws<ValueError>([] { iota(DType::i32, {-2}); }, "negative dimension");
  expect_throws<ValueError>([] { ones({3}).reshape({-3, -1}); }, "");
  expect_throws<ValueError>([] { full({2, -1}, 1.0); }, "negative");
  EXPECT_EQ(arange(0, -5, 1).size(), 0);
  EXPECT_EQ(eye(0).shape(), (Shape{0, 0}));
}

TEST(Regression, RunningOutOfMemoryIsAnError) {
  // 2^45 bytes (32 TiB) is within graft's limits but beyond the machine: a MemoryError, not an abort
  try {
    zeros({int64_t(1) << 43});
    ADD_FAILURE() << "allocated 32 TiB";
  } catch (const MemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sum(ones({10})).item<float>(), 10.0f);  // and graft goes on working
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {
// neg flips the sign bit as XLA does: -(+0.0) is -0.0 eagerly and in compiled loops alike (eager computed
// 0 - x, which gave +0.0, so log1p(-p) at p = 0 was +0 and a binomial with p = 1 looped forever).
TEST(Regressions, NegOfZeroIsNegativeZero) {
  for (DType d : {DType::f32, DType::f64, DType::bf16}) {
    Array z = zeros({3}, d);
    auto f = [](const Array& x) { return negative(x); };
    for (Array r : {f(z), jit(f)(z)}) {
      for (double v : r.to_vector<double>()) EXPECT_TRUE(std::signbit(v)) << short_name(d);
    }
    EXPECT_TRUE(std::signbit(log1p(negative(z)).to_vector<double>()[0]));
  }
  EXPECT_EQ(negative(array(std::vector<int32_t>{INT32_MIN})).to_vector<int32_t>()[0], INT32_MIN);  // wraps
}
}  // namespace
}  // namespace graft

namespace graft {
namespace {
// Integer products wrap around as XLA's dot does (the CPU loop overflowed signed integers, undefined
// behaviour that UBSan reported from the verifier's fuzzer).
TEST(Regressions, IntegerDotWraps) {
  Array a = array(std::vector<int64_t>{INT64_MIN, 3}, {1, 2});
  Array b = array(std::vector<int64_t>{INT64_MIN, 2}, {2, 1});
  EXPECT_EQ(matmul(a, b).to_vector<int64_t>()[0], 6);  // 2^126 wraps to 0
  Array c = array(std::vector<int32_t>{INT32_MAX}, {1, 1});
  EXPECT_EQ(matmul(c, array(std::vector<int32_t>{2}, {1, 1})).to_vector<int32_t>()[0], -2);
}
}  // namespace
}  // namespace graft
