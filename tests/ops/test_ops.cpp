// The NumPy-like API (graft/ops): type promotion, arithmetic, reductions, shape manipulation, linear
// algebra, creation, derivatives of composites and error reporting. Expected values were computed with
// NumPy (or by hand) and pasted in as literals.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "graft/core/config.h"
#include "testing.h"

namespace graft::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An array of `shape` and dtype d from row-major values.
Array arr(const std::vector<double>& v, const Shape& shape, DType d = f32) { return concrete(v, shape, d); }

// Asserts dtype d, shape `shape` and values v (within rtol/atol; NaNs and infinities must match).
::testing::AssertionResult is(const Array& a, DType d, const Shape& shape, const std::vector<double>& v,
                              double rtol = 1e-6, double atol = 1e-6) {
  if (!a.valid()) return ::testing::AssertionFailure() << "null array";
  if (a.dtype() != d) return ::testing::AssertionFailure() << "dtype " << a.dtype() << ", expected " << d;
  return close(a, concrete(v, shape, f64), rtol, atol);
}

// Asserts that f throws E and that the message mentions `op`.
template <class E, class F>
::testing::AssertionResult throws(F f, const std::string& op) {
  try {
    f();
  } catch (const E& e) {
    if (std::string(e.what()).find(op) == std::string::npos)
      return ::testing::AssertionFailure() << "message does not name '" << op << "': " << e.what();
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "wrong exception type: " << e.what();
  }
  return ::testing::AssertionFailure() << "nothing was thrown";
}

// ---- type promotion ---------------------------------------------------------------------------------------

TEST(OpsPromotion, WeakScalarsKeepTheArrayDtype) {
  EXPECT_TRUE(is(array({1.5f, -2.0f}) * 2.0, f32, {2}, {3, -4}));
  EXPECT_FALSE((array({1.5f, -2.0f}) * 2.0).weak_type());
  EXPECT_TRUE(is(arr({1.5, -3}, {2}, f16) * 2.0, f16, {2}, {3, -6}));
  EXPECT_TRUE(is(arr({1.5, -3}, {2}, bf16) + 1, bf16, {2}, {2.5, -2}));
  EXPECT_TRUE(is(array({1, 2, 3}) + 1, i32, {3}, {2, 3, 4}));
  EXPECT_TRUE(is(arr({250, 3}, {2}, u8) + 2, u8, {2}, {252, 5}));
  EXPECT_TRUE(is(arr({100, -100}, {2}, i8) * 1, i8, {2}, {100, -100}));
}

TEST(OpsPromotion, WeakFloatPromotesIntegersToDefaultFloat) {
  EXPECT_TRUE(is(array({1, 2, 3}) + 1.5, f32, {3}, {2.5, 3.5, 4.5}));
  EXPECT_TRUE(is(arr({-3, 4}, {2}, i8) * 0.5, f32, {2}, {-1.5, 2}));
  // the comparison happens in f32: 1 < 1.5 (it would be false if 1.5 were truncated to an int)
  EXPECT_TRUE(is(array({1, 2}) < 1.5, bool_, {2}, {1, 0}));
}

TEST(OpsPromotion, StrongOperandsFollowTheLattice) {
  EXPECT_TRUE(is(arr({1, 2}, {2}, bf16) + arr({0.5, 0.25}, {2}, f16), f32, {2}, {1.5, 2.25}));
  // i8 + u8 -> i16: neither input type can hold the results
  EXPECT_TRUE(is(arr({-100, 100}, {2}, i8) + arr({200, 100}, {2}, u8), i16, {2}, {100, 200}));
  EXPECT_TRUE(is(arr({1, 2}, {2}, i32) + arr({0.5, 0.5}, {2}, f16), f16, {2}, {1.5, 2.5}));
  EXPECT_TRUE(is(arr({200, 1}, {2}, u8) + arr({-1, -2}, {2}, i32), i32, {2}, {199, -1}));
  EXPECT_TRUE(is(array({1.0f, 2.0f}) * array(0.5), f64, {2}, {0.5, 1}));  // a rank-0 array is strong
  EXPECT_TRUE(is(array(std::vector<bool>{true, false}) + array({3, 4}), i32, {2}, {4, 4}));
}

// JAX's jax_enable_x64: the default dtypes become 64-bit; typed values keep their types.
TEST(OpsPromotion, X64ModeWidensTheDefaultDtypes) {
  struct Restore {
    bool was = config::enable_x64();
    ~Restore() { config::set_enable_x64(was); }
  } restore;
  config::set_enable_x64(true);
  EXPECT_TRUE(is(array({1, 2, 3}) + 1.5, f64, {3}, {2.5, 3.5, 4.5}));
  EXPECT_TRUE(is(sin(array({0, 0})), f64, {2}, {0, 0}));
  EXPECT_TRUE(is(divide(array({1, 3}), array({2, 2})), f64, {2}, {0.5, 1.5}));
  EXPECT_TRUE(is(sum(array({1, 2, 3})), i64, {}, {6}));  // i32 accumulates in the default int
  EXPECT_EQ(arange(4).dtype(), i64);
  EXPECT_EQ(argmax(array({1, 5, 2})).dtype(), i64);
  EXPECT_EQ((arr({1, 2}, {2}, f32) * 2.0).dtype(), f32);  // a typed array keeps its type
  EXPECT_EQ((arr({1, 2}, {2}, i32) + 1).dtype(), i32);
  config::set_enable_x64(false);
  EXPECT_TRUE(is(array({1, 2, 3}) + 1.5, f32, {3}, {2.5, 3.5, 4.5}));
  EXPECT_EQ(sum(array({1, 2, 3})).dtype(), i32);
  EXPECT_EQ(arange(4).dtype(), i32);
}

TEST(OpsPromotion, LogicalAndBitwiseOpsOnBools) {
  Array a = array(std::vector<bool>{true, false, true, false});
  Array b = array(std::vector<bool>{true, true, false, false});
  EXPECT_TRUE(is(a | b, bool_, {4}, {1, 1, 1, 0}));
  EXPECT_TRUE(is(a & b, bool_, {4}, {1, 0, 0, 0}));
  EXPECT_TRUE(is(a ^ b, bool_, {4}, {0, 1, 1, 0}));
  EXPECT_TRUE(is(~a, bool_, {4}, {0, 1, 0, 1}));
  EXPECT_TRUE(is(logical_or(array({0, 2, 0}), array({0.0f, 0.0f, 0.5f})), bool_, {3}, {0, 1, 1}));
  EXPECT_TRUE(is(logical_xor(a, array({1, 1, 0, 0})), bool_, {4}, {0, 1, 1, 0}));
}

TEST(OpsPromotion, DivisionOfIntegersIsTrueDivision) {
  EXPECT_TRUE(is(array({7, -7, 1}) / array({2, 2, 3}), f32, {3}, {3.5, -3.5, 1.0 / 3}));
  EXPECT_TRUE(is(array({7, -7}) / 2, f32, {2}, {3.5, -3.5}));
  EXPECT_TRUE(is(divide(arr({1, 3}, {2}, u8), arr({4, 4}, {2}, u8)), f32, {2}, {0.25, 0.75}));
}

// ---- arithmetic -------------------------------------------------------------------------------------------

TEST(OpsArithmetic, FloorDivideAndRemainderOfIntegersFollowTheDivisorSign) {
  Array a = array({7, -7, 7, -7, 0, -1}), b = array({2, 2, -2, -2, 3, 5});
  EXPECT_TRUE(is(floor_divide(a, b), i32, {6}, {3, -4, -4, 3, 0, -1}));
  EXPECT_TRUE(is(remainder(a, b), i32, {6}, {1, 1, -1, -1, 0, 4}));
  EXPECT_TRUE(is(a % b, i32, {6}, {1, 1, -1, -1, 0, 4}));
  EXPECT_TRUE(is(array({-7, 7}) % 3, i32, {2}, {2, 1}));
}

TEST(OpsArithmetic, FloorDivideAndRemainderOfFloats) {
  Array a = array({7.5f, -7.5f, 7.5f, -7.5f}), b = array({2.0f, 2.0f, -2.0f, -2.0f});
  EXPECT_TRUE(is(floor_divide(a, b), f32, {4}, {3, -4, -4, 3}));
  EXPECT_TRUE(is(remainder(a, b), f32, {4}, {1.5, 0.5, -0.5, -1.5}));
  EXPECT_TRUE(is(array({-0.5f, 0.5f}) % 0.25, f32, {2}, {0, 0}));
  EXPECT_TRUE(is(remainder(array(1.0f), array(0.1f)), f32, {}, {0.09999998658895493}));
}

TEST(OpsArithmetic, Power) {
  EXPECT_TRUE(is(power(array({2, 3, -2}), 3), i32, {3}, {8, 27, -8}));
  EXPECT_TRUE(is(power(array({2, 3, 5, -3}), array({0, 3, 2, 3})), i32, {4}, {1, 27, 25, -27}));
  EXPECT_TRUE(is(power(array({4.0f, 9.0f, 2.0f}), 0.5), f32, {3}, {2, 3, 1.4142135381698608}));
  EXPECT_TRUE(is(power(array({2.0f, -2.0f, 0.5f}), -2), f32, {3}, {0.25, 0.25, 4}));
  EXPECT_TRUE(is(power(array({2.0f, 3.0f}), array({3.0f, -1.0f})), f32, {2}, {8, 1.0 / 3}));
  EXPECT_TRUE(is(power(2.0, array({1.0f, 0.5f})), f32, {2}, {2, 1.4142135381698608}));
  EXPECT_TRUE(std::isnan(power(array({-8.0f}), 1.0 / 3).item<double>()));
  // a weak float exponent promotes an integer base to float
  EXPECT_TRUE(is(power(array({2, 3}), 0.5), f32, {2}, {1.4142135381698608, 1.7320508075688772}));
}

TEST(OpsArithmetic, MaximumAndMinimumPropagateNaN) {
  Array a = arr({1, kNaN, 3, kNaN}, {4}), b = arr({kNaN, 2, 1, kNaN}, {4});
  EXPECT_TRUE(is(maximum(a, b), f32, {4}, {kNaN, kNaN, 3, kNaN}));
  EXPECT_TRUE(is(minimum(a, b), f32, {4}, {kNaN, kNaN, 1, kNaN}));
  EXPECT_TRUE(is(maximum(array({1, -5}), 0), i32, {2}, {1, 0}));
}

TEST(OpsArithmetic, LogAddExp) {
  Array a = arr({0, 1, 1000, -kInf}, {4}), b = arr({0, 2, 1000, 3}, {4});
  EXPECT_TRUE(is(logaddexp(a, b), f32, {4}, {0.6931471824645996, 2.3132617473602295, 1000.6931762695312, 3}));
}

TEST(OpsArithmetic, ArcTan2CoversAllQuadrants) {
  Array y = arr({1, 1, -1, -1, 0, 0, 2}, {7}, f64), x = arr({1, -1, 1, -1, 1, -1, 0}, {7}, f64);
  EXPECT_TRUE(is(arctan2(y, x), f64, {7},
                 {0.7853981633974483, 2.356194490192345, -0.7853981633974483, -2.356194490192345, 0.0,
                  3.141592653589793, 1.5707963267948966},
                 1e-12, 1e-12));
}

TEST(OpsArithmetic, IsCloseAndAllClose) {
  Array x = arr({1, 1, 1, kNaN, kInf, 0}, {6}, f64);
  Array y = arr({1 + 1e-6, 1.1, 1, kNaN, kInf, 1e-9}, {6}, f64);
  EXPECT_TRUE(is(isclose(x, y), bool_, {6}, {1, 0, 1, 0, 1, 1}));
  EXPECT_TRUE(is(isclose(array({1.0f, 2.0f}), array({1.05f, 2.5f}), 0.1), bool_, {2}, {1, 0}));
  EXPECT_TRUE(allclose(array({1.0f, 2.0f}), array({1.0f, 2.00001f})));
  EXPECT_FALSE(allclose(array({1.0f, 2.0f}), array({1.0f, 2.1f})));
  EXPECT_TRUE(allclose(array({1.0f, 2.0f}), array({1.0f, 2.1f}), 0, 0.2));
}

TEST(OpsArithmetic, Clip) {
  Array x = array({-2.0f, 0.5f, 3.0f});
  EXPECT_TRUE(is(clip(x, 0.0, 1.0), f32, {3}, {0, 0.5, 1}));
  EXPECT_TRUE(is(clip(x, 0.0, std::nullopt), f32, {3}, {0, 0.5, 3}));
  EXPECT_TRUE(is(clip(x, std::nullopt, 1.0), f32, {3}, {-2, 0.5, 1}));
  EXPECT_TRUE(is(clip(array({-5, 5, 7}), -1, 6), i32, {3}, {-1, 5, 6}));
  EXPECT_TRUE(is(clip(x, array({-3.0f, 1.0f, 0.0f}), 2.0), f32, {3}, {-2, 1, 2}));
}

TEST(OpsArithmetic, WhereBroadcastsItsThreeOperands) {
  Array cond = array(std::vector<bool>{true, false, true}, {3, 1});
  Array x = array({1.0f, 2.0f, 3.0f, 4.0f}).reshape({1, 4});
  EXPECT_TRUE(is(where(cond, x, 0.0), f32, {3, 4}, {1, 2, 3, 4, 0, 0, 0, 0, 1, 2, 3, 4}));
  EXPECT_TRUE(is(where(array({1, 0, 2}), 1, array({7, 8, 9})), i32, {3}, {1, 8, 1}));
  EXPECT_TRUE(is(where(array({1.0f, -1.0f}) > 0.0, array({1, 2}), 0.5), f32, {2}, {1, 0.5}));
}

TEST(OpsArithmetic, SignRoundReciprocalLogs) {
  EXPECT_TRUE(is(sign(arr({-2.5, 0, 3, kNaN}, {4})), f32, {4}, {-1, 0, 1, kNaN}));
  EXPECT_TRUE(is(sign(array({-5, 0, 7})), i32, {3}, {-1, 0, 1}));
  EXPECT_TRUE(is(round(arr({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6}, {9})), f32, {9},
                 {0, 2, 2, -0.0, -2, -2, 2, 3, -3}));
  EXPECT_TRUE(is(reciprocal(array({2.0f, 4.0f, -0.5f, 3.0f})), f32, {4}, {0.5, 0.25, -2, 1.0 / 3}));
  EXPECT_TRUE(is(reciprocal(array({2, 4})), f32, {2}, {0.5, 0.25}));
  EXPECT_TRUE(is(log2(array({1.0f, 8.0f, 0.5f, 10.0f})), f32, {4}, {0, 3, -1, 3.321928024291992}));
  EXPECT_TRUE(is(log10(array({1.0f, 100.0f, 0.001f, 2.0f})), f32, {4}, {0, 2, -3, 0.3010300099849701}));
  EXPECT_TRUE(is(log2(array({4, 1})), f32, {2}, {2, 0}));
}

// ---- reductions -------------------------------------------------------------------------------------------

// A 2x3x4 array with varied values (NumPy: ((arange(24) * 7) % 11 - 5).reshape(2, 3, 4)).
Array cube() {
  return arr({-5, 2, -2, 5, 1, -3, 4, 0, -4, 3, -1, -5, 2, -2, 5, 1, -3, 4, 0, -4, 3, -1, -5, 2}, {2, 3, 4});
}

TEST(OpsReductions, SumOverAxes) {
  Array x = cube();
  EXPECT_TRUE(is(sum(x), f32, {}, {-3}));
  EXPECT_TRUE(is(sum(x, 1), f32, {2, 4}, {-8, 2, 1, 0, 2, 1, 0, -1}));
  EXPECT_TRUE(is(sum(x, {0, 2}), f32, {3}, {6, -1, -8}));
  EXPECT_TRUE(is(sum(x, {-3, -1}), f32, {3}, {6, -1, -8}));
  EXPECT_TRUE(is(sum(x, -1, true), f32, {2, 3, 1}, {0, 2, -7, 6, -3, -1}));
  EXPECT_TRUE(is(sum(x, {}, true), f32, {1, 1, 1}, {-3}));
}

TEST(OpsReductions, SumOfBoolsAndSmallIntsAccumulatesInInt32) {
  EXPECT_TRUE(is(sum(array(std::vector<bool>{true, true, false, true})), i32, {}, {3}));
  EXPECT_TRUE(is(sum(arr({100, 100, 100}, {3}, i8)), i32, {}, {300}));
}

TEST(OpsReductions, ProdMaxMin) {
  Array s = array({{1.0f, -2.0f, 3.0f}, {0.5f, 4.0f, -1.0f}});
  EXPECT_TRUE(is(prod(s), f32, {}, {12}));
  EXPECT_TRUE(is(prod(s, 0), f32, {3}, {0.5, -8, -3}));
  Array x = cube();
  EXPECT_TRUE(is(max(x), f32, {}, {5}));
  EXPECT_TRUE(is(max(x, 1), f32, {2, 4}, {1, 3, 4, 5, 3, 4, 5, 2}));
  EXPECT_TRUE(is(min(x, -1), f32, {2, 3}, {-5, -3, -5, -2, -4, -5}));
  EXPECT_TRUE(is(min(x, {0, 2}, true), f32, {1, 3, 1}, {-5, -4, -5}));
  EXPECT_TRUE(is(max(array({3, 9, -2})), i32, {}, {9}));
  EXPECT_TRUE(is(max(arr({1, kNaN, 3}, {3})), f32, {}, {kNaN}));
  EXPECT_TRUE(is(min(arr({1, kNaN, 3}, {3})), f32, {}, {kNaN}));
}

TEST(OpsReductions, MeanVarStd) {
  Array x = cube();
  EXPECT_TRUE(is(mean(x, 0), f32, {3, 4}, {-1.5, 0, 1.5, 3, -1, 0.5, 2, -2, -0.5, 1, -3, -1.5}));
  EXPECT_TRUE(is(mean(x, {1, 2}), f32, {2}, {-0.4166666567325592, 0.1666666716337204}));
  EXPECT_TRUE(is(var(x), f32, {}, {10.359375}));
  EXPECT_TRUE(is(var(x, 2), f32, {2, 3}, {14.5, 6.25, 9.6875, 6.25, 9.6875, 9.6875}));
  EXPECT_TRUE(is(graft::std(x, 1, false, 1), f32, {2, 4},
                 {3.214550256729126, 3.214550256729126, 3.214550256729126, 5, 3.214550256729126,
                  3.214550256729126, 5, 3.214550256729126}));
  EXPECT_TRUE(is(mean(array({1, 2})), f32, {}, {1.5}));
  EXPECT_TRUE(is(var(array({1, 2, 3, 4}), {}, true), f32, {1}, {1.25}));
}

TEST(OpsReductions, AllAny) {
  Array b = array(std::vector<bool>{true, false, true, true, true, true}, {2, 3});
  EXPECT_TRUE(is(all(b), bool_, {}, {0}));
  EXPECT_TRUE(is(all(b, 1), bool_, {2}, {0, 1}));
  EXPECT_TRUE(is(any(!b, 0), bool_, {3}, {0, 1, 0}));
  EXPECT_TRUE(is(any(!b), bool_, {}, {1}));
  EXPECT_TRUE(is(any(array({0.0f, 0.0f, -0.5f})), bool_, {}, {1}));
  EXPECT_TRUE(is(all(array({1, 2, 0}), 0, true), bool_, {1}, {0}));
}

TEST(OpsReductions, ArgmaxArgminTakeTheFirstOccurrence) {
  Array t = array({{3.0f, 7.0f, 7.0f, 1.0f}, {5.0f, 5.0f, 2.0f, 5.0f}, {0.0f, -1.0f, -1.0f, 9.0f}});
  EXPECT_TRUE(is(argmax(t, 1), i32, {3}, {1, 0, 3}));
  EXPECT_TRUE(is(argmin(t, 1), i32, {3}, {3, 2, 1}));
  EXPECT_TRUE(is(argmax(t, 0), i32, {4}, {1, 0, 0, 2}));
  EXPECT_TRUE(is(argmax(t, -1, true), i32, {3, 1}, {1, 0, 3}));
  EXPECT_TRUE(is(argmax(t), i32, {}, {11}));
  EXPECT_TRUE(is(argmin(t), i32, {}, {9}));
  // NaN counts as the extremum, like NumPy
  EXPECT_TRUE(is(argmax(arr({1, kNaN, 3, kNaN}, {4})), i32, {}, {1}));
  EXPECT_TRUE(is(argmin(arr({1, kNaN, 0}, {3})), i32, {}, {1}));
}

TEST(OpsReductions, LogSumExpIsStableAndHandlesAllMinusInfRows) {
  Array l = arr({0.5, -1, 2, -kInf, -kInf, -kInf, 1000, 1000, -kInf}, {3, 3}, f64);
  EXPECT_TRUE(is(logsumexp(l, 1), f64, {3}, {2.241311296657157, -kInf, 1000.6931471805599}, 1e-12));
  EXPECT_TRUE(is(logsumexp(l, -1, true), f64, {3, 1}, {2.241311296657157, -kInf, 1000.6931471805599}, 1e-12));
  Array u = arr({0.5, -1, 2, 0, 3, 3, 3, 3}, {2, 4}, f64);
  EXPECT_TRUE(is(logsumexp(u), f64, {}, {4.508084280053994}, 1e-12));
}

TEST(OpsReductions, SoftmaxAndLogSoftmax) {
  Array u = arr({0.5, -1, 2, 0, 3, 3, 3, 3}, {2, 4}, f64);
  Array s = softmax(u);
  EXPECT_TRUE(is(s, f64, {2, 4},
                 {0.15844470951497971, 0.03535379340874887, 0.7100999228861743, 0.09610157419009721, 0.25,
                  0.25, 0.25, 0.25},
                 1e-12));
  EXPECT_TRUE(is(sum(s, -1), f64, {2}, {1, 1}, 1e-12));
  EXPECT_TRUE(is(log_softmax(u), f64, {2, 4},
                 {-1.8423495823898222, -3.342349582389822, -0.342349582389822, -2.342349582389822,
                  -1.3862943611198906, -1.3862943611198906, -1.3862943611198906, -1.3862943611198906},
                 1e-12));
  EXPECT_TRUE(is(softmax(u, 0), f64, {2, 4},
                 {0.07585818002124356, 0.017986209962091555, 0.26894142136999516, 0.04742587317756678,
                  0.9241418199787566, 0.9820137900379085, 0.7310585786300049, 0.9525741268224334},
                 1e-12));
  EXPECT_TRUE(
      is(log_softmax(arr({-kInf, 0, 1}, {3}, f64)), f64, {3}, {-kInf, -1.31326169, -0.31326169}, 1e-8));
  EXPECT_TRUE(is(softmax(arr({-kInf, 0, 1}, {3}, f64)), f64, {3}, {0, 0.26894142, 0.73105858}, 1e-8));
  // large logits do not overflow
  EXPECT_TRUE(is(softmax(array({1000.0f, 1000.0f})), f32, {2}, {0.5, 0.5}));
}

TEST(OpsReductions, Cumsum) {
  Array c = array({{1, 2, 3}, {4, 5, 6}});
  EXPECT_TRUE(is(cumsum(c), i32, {6}, {1, 3, 6, 10, 15, 21}));
  EXPECT_TRUE(is(cumsum(c, 1), i32, {2, 3}, {1, 3, 6, 4, 9, 15}));
  EXPECT_TRUE(is(cumsum(c, 0, true), i32, {2, 3}, {5, 7, 9, 4, 5, 6}));
  EXPECT_TRUE(is(cumsum(c, -1, true), i32, {2, 3}, {6, 5, 3, 15, 11, 6}));
  EXPECT_TRUE(is(cumsum(array(std::vector<bool>{true, true, false, true})), i32, {4}, {1, 2, 2, 3}));
}

TEST(OpsReductions, CumprodWithZerosAndNegatives) {
  Array cp = array({{2.0f, -1.0f, 3.0f, 0.0f, 5.0f}, {-2.0f, -2.0f, 0.5f, 4.0f, 1.0f}});
  EXPECT_TRUE(is(cumprod(cp, 1), f32, {2, 5}, {2, -2, -6, 0, 0, -2, 4, 2, 8, 8}));
  EXPECT_TRUE(is(cumprod(cp), f32, {10}, {2, -2, -6, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(is(cumprod(array({1, -2, 3, -4, 5, 2, 1}), 0), i32, {7}, {1, -2, -6, 24, 120, 240, 240}));
}

TEST(OpsReductions, CummaxCummin) {
  Array cm = array({{1.0f, 5.0f, 2.0f}, {3.0f, 0.0f, 7.0f}, {2.0f, 6.0f, 1.0f}});
  EXPECT_TRUE(is(cummax(cm, 0), f32, {3, 3}, {1, 5, 2, 3, 5, 7, 3, 6, 7}));
  EXPECT_TRUE(is(cummin(cm, 1), f32, {3, 3}, {1, 1, 1, 3, 0, 0, 2, 2, 1}));
  EXPECT_TRUE(is(cummax(array({-3, 4, 2, 8}), -1), i32, {4}, {-3, 4, 4, 8}));
}

TEST(OpsReductions, Norm) {
  Array n = array({{3.0f, 4.0f}, {-6.0f, 8.0f}, {0.0f, 0.0f}});
  EXPECT_TRUE(is(norm(n), f32, {}, {11.180339813232422}));
  EXPECT_TRUE(is(norm(n, 1), f32, {3}, {5, 10, 0}));
  EXPECT_TRUE(is(norm(n, 0, true), f32, {1, 2}, {6.7082037925720215, 8.9442720413208}));
}

TEST(OpsReductions, SortAndStableArgsort) {
  Array so = array({{3.0f, 1.0f, 2.0f, 1.0f}, {-1.0f, 5.0f, -7.0f, 0.0f}});
  EXPECT_TRUE(is(sort(so), f32, {2, 4}, {1, 1, 2, 3, -7, -1, 0, 5}));
  EXPECT_TRUE(is(sort(so, 0), f32, {2, 4}, {-1, 1, -7, 0, 3, 5, 2, 1}));
  EXPECT_TRUE(is(argsort(so), i32, {2, 4}, {1, 3, 2, 0, 2, 0, 3, 1}));
  EXPECT_TRUE(is(argsort(so, 0), i32, {2, 4}, {1, 0, 1, 1, 0, 1, 0, 0}));
  EXPECT_TRUE(is(sort(array({5, -1, 3})), i32, {3}, {-1, 3, 5}));
  // NaN sorts last
  EXPECT_TRUE(is(sort(arr({3, kNaN, 1, -kInf}, {4})), f32, {4}, {-kInf, 1, 3, kNaN}));
  EXPECT_TRUE(is(argsort(arr({3, kNaN, 1, -kInf}, {4})), i32, {4}, {3, 2, 0, 1}));
}

// ---- shape manipulation -----------------------------------------------------------------------------------

// arange(24).reshape(2, 3, 4) as f32.
Array iota24() { return arange(24, f32).reshape({2, 3, 4}); }

TEST(OpsShape, ReshapeAndRavel) {
  Array x = iota24();
  EXPECT_EQ(reshape(x, {4, -1}).shape(), (Shape{4, 6}));
  EXPECT_EQ(reshape(x, {-1}).shape(), (Shape{24}));
  EXPECT_EQ(x.reshape({3, -1, 2}).shape(), (Shape{3, 4, 2}));
  EXPECT_TRUE(is(reshape(array({1, 2, 3, 4, 5, 6}), {3, 2})[{2}], i32, {2}, {5, 6}));
  Array r = ravel(transpose(arange(6, f32).reshape({2, 3})));
  EXPECT_TRUE(is(r, f32, {6}, {0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(is(flatten(array({{1, 2}, {3, 4}})), i32, {4}, {1, 2, 3, 4}));
}

TEST(OpsShape, TransposeSwapaxesMoveaxis) {
  Array x = iota24();
  const std::vector<double> reversed = {0, 12, 4, 16, 8,  20, 1, 13, 5, 17, 9,  21,
                                        2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23};
  EXPECT_TRUE(is(transpose(x), f32, {4, 3, 2}, reversed));
  EXPECT_TRUE(is(x.T(), f32, {4, 3, 2}, reversed));
  EXPECT_TRUE(is(swapaxes(x, 0, 2), f32, {4, 3, 2}, reversed));
  const std::vector<double> perm = {0, 12, 1, 13, 2, 14, 3, 15, 4,  16, 5,  17,
                                    6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23};
  EXPECT_TRUE(is(transpose(x, {1, 2, 0}), f32, {3, 4, 2}, perm));
  EXPECT_TRUE(is(transpose(x, {-2, -1, 0}), f32, {3, 4, 2}, perm));
  EXPECT_TRUE(is(moveaxis(x, 0, -1), f32, {3, 4, 2}, perm));
  EXPECT_TRUE(is(moveaxis(x, 2, 0), f32, {4, 2, 3},
                 {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}));
}

TEST(OpsShape, ExpandDimsAndSqueeze) {
  Array x = arange(6, f32).reshape({2, 3});
  EXPECT_EQ(expand_dims(x, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(expand_dims(x, -1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(expand_dims(x, {0, 3}).shape(), (Shape{1, 2, 3, 1}));
  Array y = zeros({1, 3, 1, 2});
  EXPECT_EQ(squeeze(y).shape(), (Shape{3, 2}));
  EXPECT_EQ(squeeze(y, 2).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(squeeze(y, {0, -2}).shape(), (Shape{3, 2}));
  EXPECT_TRUE(is(squeeze(expand_dims(x, 1)), f32, {2, 3}, {0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(throws<ValueError>([&] { squeeze(y, 1); }, "squeeze"));
}

TEST(OpsShape, BroadcastToAndBroadcastArrays) {
  EXPECT_TRUE(is(broadcast_to(array({1, 2, 3}), {2, 3}), i32, {2, 3}, {1, 2, 3, 1, 2, 3}));
  EXPECT_TRUE(is(broadcast_to(array({{1.0f}, {2.0f}}), {2, 2}), f32, {2, 2}, {1, 1, 2, 2}));
  auto bs = broadcast_arrays({array({1, 2, 3}), array({{10}, {20}}), array(5)});
  ASSERT_EQ(bs.size(), 3u);
  EXPECT_TRUE(is(bs[0], i32, {2, 3}, {1, 2, 3, 1, 2, 3}));
  EXPECT_TRUE(is(bs[1], i32, {2, 3}, {10, 10, 10, 20, 20, 20}));
  EXPECT_TRUE(is(bs[2], i32, {2, 3}, {5, 5, 5, 5, 5, 5}));
  EXPECT_TRUE(throws<ShapeError>([] { broadcast_to(array({1, 2, 3}), {2, 4}); }, "broadcast_to"));
}

TEST(OpsShape, ConcatenatePromotesMixedDtypes) {
  Array y = array({{0, 1, 2}, {3, 4, 5}});
  EXPECT_TRUE(
      is(concatenate({y, array({{6.5f, 7.5f, 8.5f}})}), f32, {3, 3}, {0, 1, 2, 3, 4, 5, 6.5, 7.5, 8.5}));
  EXPECT_TRUE(is(concatenate({y, array({{10}, {11}})}, 1), i32, {2, 4}, {0, 1, 2, 10, 3, 4, 5, 11}));
  EXPECT_TRUE(is(concatenate({y, array({{10}, {11}})}, -1), i32, {2, 4}, {0, 1, 2, 10, 3, 4, 5, 11}));
  EXPECT_TRUE(is(concatenate({arr({1}, {1}, i8), arr({2}, {1}, u8)}), i16, {2}, {1, 2}));
}

TEST(OpsShape, Stack) {
  Array a = array({1, 2, 3}), b = array({4, 5, 6});
  EXPECT_TRUE(is(stack({a, b}), i32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(is(stack({a, b}, -1), i32, {3, 2}, {1, 4, 2, 5, 3, 6}));
  EXPECT_TRUE(is(stack({a, array({0.5f, 0.5f, 0.5f})}, 1), f32, {3, 2}, {1, 0.5, 2, 0.5, 3, 0.5}));
}

TEST(OpsShape, SplitIntoSectionsAndAtIndices) {
  auto parts = split(arange(12).reshape({2, 6}), 3, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_TRUE(is(parts[0], i32, {2, 2}, {0, 1, 6, 7}));
  EXPECT_TRUE(is(parts[1], i32, {2, 2}, {2, 3, 8, 9}));
  EXPECT_TRUE(is(parts[2], i32, {2, 2}, {4, 5, 10, 11}));
  auto at = split(arange(10), std::vector<int64_t>{3, 7, 20});
  ASSERT_EQ(at.size(), 4u);
  EXPECT_TRUE(is(at[0], i32, {3}, {0, 1, 2}));
  EXPECT_TRUE(is(at[1], i32, {4}, {3, 4, 5, 6}));
  EXPECT_TRUE(is(at[2], i32, {3}, {7, 8, 9}));
  EXPECT_TRUE(is(at[3], i32, {0}, {}));
  auto down = split(arange(10), std::vector<int64_t>{5, 3});
  ASSERT_EQ(down.size(), 3u);
  EXPECT_TRUE(is(down[0], i32, {5}, {0, 1, 2, 3, 4}));
  EXPECT_TRUE(is(down[1], i32, {0}, {}));
  EXPECT_TRUE(throws<ValueError>([] { split(arange(10), 3); }, "split"));
}

TEST(OpsShape, Flip) {
  Array y = array({{0, 1, 2}, {3, 4, 5}});
  EXPECT_TRUE(is(flip(y), i32, {2, 3}, {5, 4, 3, 2, 1, 0}));
  EXPECT_TRUE(is(flip(y, 1), i32, {2, 3}, {2, 1, 0, 5, 4, 3}));
  EXPECT_TRUE(is(flip(iota24(), 0), f32, {2, 3, 4},
                 {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(OpsShape, TileAndRepeat) {
  Array y = array({{0, 1, 2}, {3, 4, 5}});
  EXPECT_TRUE(is(tile(array({1, 2, 3}), {2, 2}), i32, {2, 6}, {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}));
  EXPECT_TRUE(is(tile(y, {2}), i32, {2, 6}, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_TRUE(is(tile(array({1, 2}), {2, 1, 2}), i32, {2, 1, 4}, {1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_TRUE(is(repeat(y, 2, 1), i32, {2, 6}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  EXPECT_TRUE(is(repeat(y, 2, 0), i32, {4, 3}, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_TRUE(is(repeat(y, 2), i32, {12}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  EXPECT_TRUE(is(repeat(array({1, 2}), 0), i32, {0}, {}));
  EXPECT_TRUE(is(tile(array({1, 2}), {0}), i32, {0}, {}));
}

TEST(OpsShape, Pad) {
  Array y = array({{0, 1, 2}, {3, 4, 5}});
  EXPECT_TRUE(
      is(pad(y, {{1, 0}, {2, 1}}, 9), i32, {3, 6}, {9, 9, 9, 9, 9, 9, 9, 9, 0, 1, 2, 9, 9, 9, 3, 4, 5, 9}));
  EXPECT_TRUE(is(pad(array({1.0f, 2.0f, 3.0f}), {{2, 1}}), f32, {6}, {0, 0, 1, 2, 3, 0}));
  EXPECT_TRUE(is(pad(array({{1}}), {{1, 1}}), i32, {3, 3}, {0, 0, 0, 0, 1, 0, 0, 0, 0}));
}

TEST(OpsShape, AtleastAndAstype) {
  EXPECT_EQ(atleast_1d(array(2.0f)).shape(), (Shape{1}));
  EXPECT_EQ(atleast_1d(zeros({3})).shape(), (Shape{3}));
  EXPECT_EQ(atleast_2d(array(2.0f)).shape(), (Shape{1, 1}));
  EXPECT_EQ(atleast_2d(zeros({3})).shape(), (Shape{1, 3}));
  EXPECT_EQ(atleast_2d(zeros({2, 3, 4})).shape(), (Shape{2, 3, 4}));
  EXPECT_TRUE(is(astype(array({1.7f, -1.7f, 2.5f, -0.2f}), i32), i32, {4}, {1, -1, 2, 0}));
  EXPECT_TRUE(is(array({0, 3, -1}).astype(bool_), bool_, {3}, {0, 1, 1}));
  EXPECT_TRUE(is(asarray(array({1, 2}), f64), f64, {2}, {1, 2}));
}

// ---- linear algebra ---------------------------------------------------------------------------------------

TEST(OpsLinalg, MatmulOfVectorsAndMatrices) {
  Array v = array({1.0, 2.0, 3.0}), w = array({4.0, -5.0, 6.0});
  Array a = array({{-2.0, -1.0, 0.0}, {1.0, 2.0, 3.0}});
  Array b = array({{-1.0, -0.5, 0.0, 0.5}, {1.0, 1.5, 2.0, 2.5}, {3.0, 3.5, 4.0, 4.5}});
  EXPECT_TRUE(is(matmul(v, w), f64, {}, {12}));
  EXPECT_TRUE(is(matmul(v, b), f64, {4}, {10, 13, 16, 19}));
  EXPECT_TRUE(is(matmul(a, v), f64, {2}, {-4, 14}));
  EXPECT_TRUE(is(matmul(a, b), f64, {2, 4}, {1, -0.5, -2, -3.5, 10, 13, 16, 19}));
  EXPECT_TRUE(is(matmul(array({{1, 2}, {3, 4}}), array({{1.0f}, {1.0f}})), f32, {2, 1}, {3, 7}));
}

TEST(OpsLinalg, BatchedMatmul) {
  // NumPy: (arange(24).reshape(2, 3, 4) % 5) - 2 and (arange(16).reshape(2, 4, 2) % 3) - 1
  Array a =
      arr({-2, -1, 0, 1, 2, -2, -1, 0, 1, 2, -2, -1, 0, 1, 2, -2, -1, 0, 1, 2, -2, -1, 0, 1}, {2, 3, 4});
  Array b = arr({-1, 0, 1, -1, 0, 1, -1, 0, 1, -1, 0, 1, -1, 0, 1, -1}, {2, 4, 2});
  const std::vector<double> want = {0, 1, -4, 1, 2, -4, -4, 3, 0, -1, -1, 0};
  EXPECT_TRUE(is(matmul(a, b), f32, {2, 3, 2}, want));
  EXPECT_TRUE(is(einsum("bij,bjk->bik", {a, b}), f32, {2, 3, 2}, want));
  // a 3-D lhs with a 2-D or a 1-D rhs, and a 1-D lhs with a batched rhs
  Array c = arr({1, 0, 0, 1, 2, -1, -1, 3}, {4, 2});
  EXPECT_TRUE(is(matmul(a, c), f32, {2, 3, 2}, {-3, 2, 0, -1, -2, 1, 6, -7, -1, 5, -3, 2}));
  EXPECT_TRUE(is(matmul(array({1.0f, 1.0f, 1.0f, 1.0f}), b), f32, {2, 2}, {-1, 0, 1, -1}));
  EXPECT_TRUE(is(matmul(a, ones({4})), f32, {2, 3}, {-2, -1, 0, 1, 2, -2}));
}

TEST(OpsLinalg, MatmulBroadcastsBatchDimensions) {
  // NumPy: arange(24).reshape(2, 1, 3, 4) % 7 - 3 and (arange(40) * 3 % 7).reshape(5, 4, 2) - 3
  Array a =
      arr({-3, -2, -1, 0, 1, 2, 3, -3, -2, -1, 0, 1, 2, 3, -3, -2, -1, 0, 1, 2, 3, -3, -2, -1}, {2, 1, 3, 4});
  Array b = arr({-3, 0,  3, -1, 2,  -2, 1,  -3, 0,  3, -1, 2,  -2, 1,  -3, 0,  3, -1, 2,  -2,
                 1,  -3, 0, 3,  -1, 2,  -2, 1,  -3, 0, 3,  -1, 2,  -2, 1,  -3, 0, 3,  -1, 2},
                {5, 4, 2});
  EXPECT_TRUE(is(matmul(a, b), f32, {2, 5, 3, 2},
                 {1,   4, 6, 1,  4,  -2, 4, -14, 1,  10, -2, -8, -14, 10, 10,  -23, -8, 7, 10, -8,
                  -23, 7, 7, -6, -8, 9,  7, -5,  -6, 9,  -5, 9,  7,   -8, -23, 10,  9,  9, -8, -2,
                  10,  1, 9, -5, -2, 4,  1, 6,   -5, 9,  4,  -4, 6,   4,  9,   -26, -4, 9, 4,  -5}));
}

TEST(OpsLinalg, DotVdotInnerOuter) {
  Array a = array({{-2.0, -1.0, 0.0}, {1.0, 2.0, 3.0}});
  Array b = array({{-1.0, -0.5, 0.0, 0.5}, {1.0, 1.5, 2.0, 2.5}, {3.0, 3.5, 4.0, 4.5}});
  EXPECT_TRUE(is(dot(a, b), f64, {2, 4}, {1, -0.5, -2, -3.5, 10, 13, 16, 19}));
  EXPECT_TRUE(is(dot(array({1, 2, 3}), array({4, -5, 6})), i32, {}, {12}));
  EXPECT_TRUE(is(dot(a, 2.0), f64, {2, 3}, {-4, -2, 0, 2, 4, 6}));
  EXPECT_TRUE(is(vdot(array({{1.0, 2.0}, {3.0, 4.0}}), array({{5.0, 6.0}, {7.0, 8.0}})), f64, {}, {70}));
  EXPECT_TRUE(is(inner(a, array({{1.0, 0.0, 2.0}, {0.0, 1.0, -1.0}})), f64, {2, 2}, {-2, -1, 7, -1}));
  EXPECT_TRUE(is(outer(array({1.0, 2.0, 3.0}), array({1.0, -1.0})), f64, {3, 2}, {1, -1, 2, -2, 3, -3}));
  // a 3-D array dotted with a matrix contracts its last axis with the matrix's second-to-last
  Array c =
      arr({-2, -1, 0, 1, 2, -2, -1, 0, 1, 2, -2, -1, 0, 1, 2, -2, -1, 0, 1, 2, -2, -1, 0, 1}, {2, 3, 4});
  Array m = arr({1, 0, 0, 1, 2, -1, -1, 3}, {4, 2});
  EXPECT_TRUE(is(dot(c, m), f32, {2, 3, 2}, {-3, 2, 0, -1, -2, 1, 6, -7, -1, 5, -3, 2}));
}

TEST(OpsLinalg, Tensordot) {
  Array a =
      arr({-2, -1, 0, 1, 2, -2, -1, 0, 1, 2, -2, -1, 0, 1, 2, -2, -1, 0, 1, 2, -2, -1, 0, 1}, {2, 3, 4});
  Array b = arr({-1, 0, 1, -1, 0, 1, -1, 0, 1, -1, 0, 1, -1, 0, 1, -1}, {2, 4, 2});
  EXPECT_TRUE(is(tensordot(a, arange(12, f32).reshape({3, 4})), f32, {2}, {-11, 1}));
  EXPECT_TRUE(is(tensordot(a, b, {0, 2}, {0, 1}), f32, {3, 2}, {-4, 4, -4, 0, 1, -4}));
  EXPECT_TRUE(
      is(tensordot(array({1.0f, 2.0f, 3.0f}), array({1.0f, 2.0f}), 0), f32, {3, 2}, {1, 2, 2, 4, 3, 6}));
}

TEST(OpsLinalg, Einsum) {
  Array a = array({{-2.0, -1.0, 0.0}, {1.0, 2.0, 3.0}});
  Array b = array({{-1.0, -0.5, 0.0, 0.5}, {1.0, 1.5, 2.0, 2.5}, {3.0, 3.5, 4.0, 4.5}});
  const std::vector<double> ab = {1, -0.5, -2, -3.5, 10, 13, 16, 19};
  EXPECT_TRUE(is(einsum("ij,jk->ik", {a, b}), f64, {2, 4}, ab));
  EXPECT_TRUE(is(einsum("ij,jk", {a, b}), f64, {2, 4}, ab));
  EXPECT_TRUE(is(einsum("ij,jk->ki", {a, b}), f64, {4, 2}, {1, 10, -0.5, 13, -2, 16, -3.5, 19}));
  EXPECT_TRUE(is(einsum("i,i->", {array({1.0, 2.0, 3.0}), array({4.0, -5.0, 6.0})}), f64, {}, {12}));
  EXPECT_TRUE(is(einsum("ij->ji", {a}), f64, {3, 2}, {-2, 1, -1, 2, 0, 3}));
  EXPECT_TRUE(is(einsum("ij->j", {a}), f64, {3}, {-1, 1, 3}));
  EXPECT_TRUE(
      is(einsum("i,j->ij", {array({1.0, 2.0}), array({3.0, 4.0, 5.0})}), f64, {2, 3}, {3, 4, 5, 6, 8, 10}));
  // implicit output: the indices that appear once, in alphabetical order
  EXPECT_TRUE(is(einsum("ba", {a}), f64, {3, 2}, {-2, 1, -1, 2, 0, 3}));
  Array v = array({1.0, 2.0, 3.0}), u = array({4.0, -5.0, 6.0}), t = array({0.5, 2.0, -1.0});
  EXPECT_TRUE(is(einsum("i,i,i->", {v, u, t}), f64, {}, {-36}));
  EXPECT_TRUE(is(einsum("i,i,i->i", {v, u, t}), f64, {3}, {2, -20, -18}));
  Array p = arange(6, f64).reshape({2, 3}), q = arange(12, f64).reshape({3, 4}) - 5.0;
  Array r = array({{1.0, 0.0}, {2.0, 1.0}, {0.0, -1.0}, {1.0, 1.0}});
  EXPECT_TRUE(is(einsum("ij,jk,kl->il", {p, q, r}), f64, {2, 2}, {35, 11, 44, 20}));
  EXPECT_TRUE(is(einsum("ij,jk,kl->li", {p, q, r}), f64, {2, 2}, {35, 44, 11, 20}));
  // an index repeated within an operand reads the diagonal (NumPy's and JAX's): trace, diagonal, batched
  Array sq = arange(9, f64).reshape({3, 3});
  EXPECT_TRUE(is(einsum("ii->", {sq}), f64, {}, {12}));
  EXPECT_TRUE(is(einsum("ii->i", {sq}), f64, {3}, {0, 4, 8}));
  EXPECT_TRUE(is(einsum("ii", {sq}), f64, {}, {12}));
  EXPECT_TRUE(is(einsum("ij,jj->i", {p, sq}), f64, {2}, {0 * 0 + 1 * 4 + 2 * 8, 3 * 0 + 4 * 4 + 5 * 8}));
  Array cube = arange(8, f64).reshape({2, 2, 2});
  EXPECT_TRUE(is(einsum("bii->b", {cube}), f64, {2}, {0 + 3, 4 + 7}));
  EXPECT_TRUE(is(einsum("iii->i", {cube}), f64, {2}, {0, 7}));
  Array g = grad([](const Array& m) { return einsum("ii->", {m}); })(sq);
  EXPECT_TRUE(is(g, f64, {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}));
  expect_throws<ShapeError>([&] { (void)einsum("ii->", {p}); }, "sizes 2 and 3");
}

TEST(OpsLinalg, TraceAndDiagonal) {
  Array s = arange(9, f32).reshape({3, 3});
  EXPECT_TRUE(is(trace(s), f32, {}, {12}));
  EXPECT_TRUE(is(diagonal(s), f32, {3}, {0, 4, 8}));
  Array r = arange(8, f32).reshape({2, 4});
  EXPECT_TRUE(is(diagonal(r), f32, {2}, {0, 5}));
  EXPECT_TRUE(is(trace(r), f32, {}, {5}));
}

// ---- creation ---------------------------------------------------------------------------------------------

TEST(OpsCreation, Arange) {
  EXPECT_TRUE(is(arange(5), i32, {5}, {0, 1, 2, 3, 4}));
  EXPECT_TRUE(is(arange(2, 10, 3), i32, {3}, {2, 5, 8}));
  EXPECT_TRUE(is(arange(5, -4, -2), i32, {5}, {5, 3, 1, -1, -3}));
  EXPECT_TRUE(is(arange(0, 1, 0.25), f32, {4}, {0, 0.25, 0.5, 0.75}));
  EXPECT_TRUE(is(arange(1.5, 3.0, 0.5), f32, {3}, {1.5, 2, 2.5}));
  EXPECT_TRUE(is(arange(5, 2), i32, {0}, {}));
  EXPECT_TRUE(is(arange(3, f64), f64, {3}, {0, 1, 2}));
  EXPECT_TRUE(throws<ValueError>([] { arange(0, 5, 0); }, "arange"));
}

TEST(OpsCreation, Linspace) {
  EXPECT_TRUE(is(linspace(0, 1, 5), f32, {5}, {0, 0.25, 0.5, 0.75, 1}));
  EXPECT_TRUE(is(linspace(0, 1, 5, f32, false), f32, {5}, {0, 0.2, 0.4, 0.6, 0.8}));
  EXPECT_TRUE(is(linspace(2, -1, 4, f64), f64, {4}, {2, 1, 0, -1}, 1e-12, 1e-12));
  EXPECT_TRUE(is(linspace(0.1, 0.7, 3, f64), f64, {3}, {0.1, 0.4, 0.7}, 1e-14, 0));
  EXPECT_TRUE(is(linspace(3, 7, 1), f32, {1}, {3}));
  EXPECT_TRUE(is(linspace(0, 10, 5, i32), i32, {5}, {0, 2, 5, 7, 10}));
}

TEST(OpsCreation, Eye) {
  EXPECT_TRUE(is(eye(2), f32, {2, 2}, {1, 0, 0, 1}));
  EXPECT_TRUE(is(eye(3, 4, 1), f32, {3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  EXPECT_TRUE(is(eye(3, std::nullopt, -1, i32), i32, {3, 3}, {0, 0, 0, 1, 0, 0, 0, 1, 0}));
}

TEST(OpsCreation, FullZerosOnesAndLike) {
  EXPECT_TRUE(is(full({2, 2}, 1.5), f32, {2, 2}, {1.5, 1.5, 1.5, 1.5}));
  EXPECT_TRUE(is(full({3}, 7, i32), i32, {3}, {7, 7, 7}));
  EXPECT_TRUE(is(zeros({2}, f64), f64, {2}, {0, 0}));
  EXPECT_TRUE(is(ones({2, 1}, bool_), bool_, {2, 1}, {1, 1}));
  Array x = array({{1, 2, 3}, {4, 5, 6}});
  EXPECT_TRUE(is(zeros_like(x), i32, {2, 3}, {0, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(is(ones_like(x, f16), f16, {2, 3}, {1, 1, 1, 1, 1, 1}));
  EXPECT_TRUE(is(full_like(x, -2.5, f32), f32, {2, 3}, {-2.5, -2.5, -2.5, -2.5, -2.5, -2.5}));
  EXPECT_TRUE(is(full_like(x, 2.9), i32, {2, 3}, {2, 2, 2, 2, 2, 2}));
  EXPECT_TRUE(throws<ValueError>([] { zeros({2, -1}); }, "full"));
}

TEST(OpsCreation, OneHot) {
  EXPECT_TRUE(is(one_hot(array({0, 3, 1}), 4), f32, {3, 4}, {1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0}));
  EXPECT_TRUE(is(one_hot(array({0, 3, 1}), 4, i32, 0), i32, {4, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
  // out-of-range labels give all-zero rows (as in JAX)
  EXPECT_TRUE(is(one_hot(array({-1, 2}), 2), f32, {2, 2}, {0, 0, 0, 0}));
}

// ---- derivatives of composites (f64, against central finite differences) ----------------------------------

using Fn = std::function<Array(const Array&)>;

// The gradient of a scalar f at x by central differences.
Array numeric_grad(const Fn& f, const Array& x, double eps = 1e-6) {
  std::vector<double> v = values(x), g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    std::vector<double> hi = v, lo = v;
    hi[i] += eps;
    lo[i] -= eps;
    g[i] = (f(concrete(hi, x.shape(), f64)).item<double>() - f(concrete(lo, x.shape(), f64)).item<double>()) /
           (2 * eps);
  }
  return concrete(g, x.shape(), f64);
}

::testing::AssertionResult grad_matches(const Fn& f, const Array& x) {
  Array g = grad(f)(x);
  if (g.dtype() != f64) return ::testing::AssertionFailure() << "gradient dtype " << g.dtype();
  return close(g, numeric_grad(f, x), 1e-6, 1e-8);
}

TEST(OpsGrad, NormalizationsAndReductions) {
  Rng rng(7);
  Array x = rng.uniform({3, 4}, f64, -2, 2);
  Array w = rng.uniform({3, 4}, f64);
  Array w3 = rng.uniform({3}, f64);
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(log_softmax(a) * w); }, x));
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(softmax(a, 0) * w); }, x));
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(logsumexp(a, 1) * w3); }, x));
  EXPECT_TRUE(grad_matches([](const Array& a) { return logsumexp(a); }, x));
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(var(a, 1) * w3); }, x));
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(graft::std(a, 1, false, 1) * w3); }, x));
  EXPECT_TRUE(grad_matches([](const Array& a) { return norm(a); }, x));
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(norm(a, 1) * w3); }, x));
  EXPECT_TRUE(grad_matches(
      [&](const Array& a) {
        return sum(mean(a, 0) * array({1.0, -2.0, 3.0, 0.5}));
      },
      x));
}

TEST(OpsGrad, CumprodWithZeroAndNegatives) {
  Array x = array({{0.5, -1.5, 2.0, 0.0, 1.2}, {-0.7, 1.1, -2.0, 0.9, 1.3}});
  Array w = array({{1.0, -2.0, 0.5, 1.5, 3.0}, {2.0, 0.25, -1.0, 1.0, -0.5}});
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(cumprod(a, 1) * w); }, x));
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(cumsum(a, 0, true) * w); }, x));
}

TEST(OpsGrad, LinearAlgebra) {
  Rng rng(8);
  Array x = rng.uniform({2, 3}, f64), b = rng.uniform({3, 4}, f64), w = rng.uniform({2, 4}, f64);
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(matmul(a, b) * w); }, x));
  EXPECT_TRUE(grad_matches([&](const Array& m) { return sum(matmul(x, m) * w); }, b));
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(einsum("ij,jk->ik", {a, b}) * w); }, x));
  EXPECT_TRUE(grad_matches(
      [&](const Array& m) {
        return sum(einsum("ij,jk->ki", {x, m}) * transpose(w));
      },
      b));
  Array bx = rng.uniform({2, 2, 3}, f64), bw = rng.uniform({2, 2, 4}, f64);
  EXPECT_TRUE(grad_matches([&](const Array& m) { return sum(matmul(bx, m) * bw); }, b));
}

TEST(OpsGrad, GatherAndUpdate) {
  Rng rng(9);
  Array x = rng.uniform({4, 3}, f64);
  Array idx = array({2, 0, 2, -1});
  Array w = rng.uniform({4, 3}, f64);
  // duplicated rows accumulate their cotangents
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(a[{idx}] * w); }, x));
  EXPECT_TRUE(grad_matches(
      [&](const Array& a) {
        return sum(a[{slice(1, none), 2}] * w[{slice(none, 3), 0}]);
      },
      x));
  Array v = rng.uniform({3}, f64);
  // a static row, rows picked by an integer array, and a strided slice (scatter)
  for (const Index& rows : {Index{1}, Index{array({3, 0})}, Index{slice(none, none, 2)}}) {
    EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(AtRef{a, rows}.set(v) * w); }, x));
    EXPECT_TRUE(grad_matches([&](const Array& u) { return sum(AtRef{x, rows}.set(u) * w); }, v));
    EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(AtRef{a, rows}.add(v) * w); }, x));
  }
}

TEST(OpsGrad, WhereAndClip) {
  Array x = array({-1.3, -0.4, 0.2, 0.7, 1.6, -2.1});
  Array w = array({0.5, -1.0, 2.0, 1.5, -0.3, 0.8});
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(where(a > 0.0, a * a, sin(a)) * w); }, x));
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(clip(a, -0.5, 1.0) * w); }, x));
  EXPECT_TRUE(grad_matches([&](const Array& a) { return sum(maximum(a, 0.1 * a) * w); }, x));
}

// ---- vmap of composites against a loop over the batch -----------------------------------------------------

TEST(OpsVmap, IndexingMatchesALoop) {
  Rng rng(10);
  Array xs = rng.uniform({5, 6});
  Array cols = array({4, 0, -1});
  auto f = [&](const Array& row) { return row[{cols}] * 2.0 + row[{slice(1, none, 2)}]; };
  std::vector<Array> per;
  for (int b = 0; b < 5; ++b) per.push_back(f(xs[b]));
  EXPECT_TRUE(close(vmap(f)(xs), stack(per)));
  auto g = [](const Array& row) { return row.at({2}).set(0.0).at({array({0, 0, 5})}).add(1.0); };
  per.clear();
  for (int b = 0; b < 5; ++b) per.push_back(g(xs[b]));
  EXPECT_TRUE(close(vmap(g)(xs), stack(per)));
}

TEST(OpsVmap, BatchedIndicesMatchALoop) {
  Rng rng(11);
  Array xs = rng.uniform({5, 6});
  Array ids = array({0, 5, 2, -1, 3});
  auto f = [](const Array& row, const Array& i) { return row[{i}]; };
  std::vector<Array> per;
  for (int b = 0; b < 5; ++b) per.push_back(f(xs[b], ids[b]));
  EXPECT_TRUE(close(vmap(f)(xs, ids), stack(per)));
  auto g = [](const Array& row, const Array& i) { return row.at({i}).add(10.0); };
  per.clear();
  for (int b = 0; b < 5; ++b) per.push_back(g(xs[b], ids[b]));
  EXPECT_TRUE(close(vmap(g)(xs, ids), stack(per)));
  // a batched index into an unbatched array
  Array table = arange(12, f32).reshape({6, 2});
  EXPECT_TRUE(close(vmap([&](const Array& i) { return table[i]; })(ids), table[ids]));
}

TEST(OpsVmap, MatmulMatchesALoop) {
  Rng rng(12);
  Array xs = rng.uniform({4, 2, 3}), ws = rng.uniform({4, 3, 5}), w = ws[0];
  std::vector<Array> shared, both;
  for (int b = 0; b < 4; ++b) {
    shared.push_back(matmul(xs[b], w));
    both.push_back(matmul(xs[b], ws[b]));
  }
  auto mm = [](const Array& a, const Array& m) { return matmul(a, m); };
  VmapOptions unmapped_w;
  unmapped_w.in_axes = {0, std::nullopt};
  EXPECT_TRUE(close(vmap(mm, unmapped_w)(xs, w), stack(shared)));
  EXPECT_TRUE(close(vmap(mm)(xs, ws), stack(both)));
  // vector @ matrix per example
  std::vector<Array> vec;
  for (int b = 0; b < 4; ++b) vec.push_back(matmul(xs[b][0], w));
  EXPECT_TRUE(close(vmap([&](const Array& a) { return matmul(a[0], w); })(xs), stack(vec)));
}

// ---- errors -----------------------------------------------------------------------------------------------

TEST(OpsErrors, ShapeMismatchesNameTheOp) {
  EXPECT_TRUE(throws<ShapeError>([] { add(ones({2, 3}), ones({4})); }, "add"));
  EXPECT_TRUE(throws<ShapeError>([] { ones({2, 3}) * ones({2}); }, "multiply"));
  EXPECT_TRUE(throws<ShapeError>([] { matmul(ones({2, 3}), ones({4, 5})); }, "matmul"));
  EXPECT_TRUE(throws<ShapeError>([] { matmul(ones({2, 3, 4}), ones({3, 4, 2})); }, "matmul"));
  EXPECT_TRUE(throws<ShapeError>([] { concatenate({ones({2, 3}), ones({2, 4})}); }, "concatenate"));
  EXPECT_TRUE(throws<ShapeError>([] { concatenate({ones({2, 3}), ones({3})}); }, "concatenate"));
  EXPECT_TRUE(throws<ShapeError>([] { stack({ones({2}), ones({3})}); }, "stack"));
  EXPECT_TRUE(throws<ShapeError>([] { dot(ones({2, 3}), ones({2})); }, "dot"));
  EXPECT_TRUE(throws<ShapeError>([] { einsum("ij,jk->ik", {ones({2, 3}), ones({4, 2})}); }, "einsum"));
}

TEST(OpsErrors, ReshapeToAnIncompatibleSize) {
  EXPECT_TRUE(throws<ShapeError>([] { reshape(ones({2, 3}), {4}); }, "reshape"));
  EXPECT_TRUE(throws<ShapeError>([] { reshape(ones({2, 3}), {-1, 4}); }, "reshape"));
  EXPECT_TRUE(throws<ValueError>([] { reshape(ones({2, 3}), {-1, -1}); }, "reshape"));
}

TEST(OpsErrors, BadAxes) {
  EXPECT_TRUE(throws<ValueError>([] { sum(ones({2, 3}), 2); }, "sum"));
  EXPECT_TRUE(throws<ValueError>([] { sum(ones({2, 3}), {0, -2}); }, "sum"));
  EXPECT_TRUE(throws<ValueError>([] { transpose(ones({2, 3}), {0}); }, "transpose"));
  EXPECT_TRUE(throws<ValueError>([] { max(zeros({2, 0}), 1); }, "max"));
  EXPECT_TRUE(throws<ValueError>([] { argmin(zeros({0})); }, "argmin"));
}

}  // namespace
}  // namespace graft::testing
