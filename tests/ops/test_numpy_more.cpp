// graft/ops/numpy_more.h against values computed with NumPy (pasted as literals) or by hand, with
// derivatives of the differentiable ones against finite differences in f64.
#include <cmath>
#include <limits>
#include <vector>

#include "ops/numpy_testing.h"

namespace graft::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(NumpyMore, AliasesAreTheirNamesakes) {
  Array x = arr({-0.5, 0.25, 0.75}, {3});
  EXPECT_TRUE(close(acos(x), arccos(x), 0, 0));
  EXPECT_TRUE(close(asinh(x), arcsinh(x), 0, 0));
  EXPECT_TRUE(close(atan2(x, x + 1.0), arctan2(x, x + 1.0), 0, 0));
  EXPECT_TRUE(close(pow(x + 1.0, x), power(x + 1.0, x), 0, 0));
  EXPECT_TRUE(close(absolute(x), abs(x), 0, 0));
  EXPECT_TRUE(close(amax(x), max(x), 0, 0));
  EXPECT_TRUE(is(invert(arr({1, -3}, {2}, i32)), i32, {2}, {-2, 2}));
  EXPECT_TRUE(is(permute_dims(ones({2, 3}), {1, 0}), f32, {3, 2}, std::vector<double>(6, 1.0)));
  EXPECT_TRUE(is(mod(arr({-7, 7}, {2}, i32), arr({3, -3}, {2}, i32)), i32, {2}, {2, -2}));
}

TEST(NumpyMore, ElementwiseAgainstNumpy) {
  Array s = arr({kNaN, kInf, -kInf, 0.0, -0.0, 1.5, -2.5}, {7});
  EXPECT_TRUE(is(signbit(s), bool_, {7}, {0, 0, 1, 0, 1, 0, 1}));
  EXPECT_TRUE(is(isneginf(s), bool_, {7}, {0, 0, 1, 0, 0, 0, 0}));
  EXPECT_TRUE(is(isposinf(s), bool_, {7}, {0, 1, 0, 0, 0, 0, 0}));
  double big = std::numeric_limits<double>::max();
  EXPECT_TRUE(is(nan_to_num(s), f64, {7}, {0, big, -big, 0, 0, 1.5, -2.5}));
  EXPECT_TRUE(is(nan_to_num(s, 1.0, 9.0, -9.0), f64, {7}, {1, 9, -9, 0, 0, 1.5, -2.5}));
  EXPECT_TRUE(is(nan_to_num(arr({kInf}, {1}, f16)), f16, {1}, {65504.0}));
  // np.rint, np.trunc: half to even, toward zero
  EXPECT_TRUE(is(rint(arr({0.5, 1.5, 2.5, -0.5, -1.7}, {5})), f64, {5}, {0, 2, 2, -0.0, -2}));
  EXPECT_TRUE(is(trunc(arr({1.7, -1.7, 2.0}, {3})), f64, {3}, {1, -1, 2}));
  EXPECT_TRUE(is(fabs(arr({-2, 3}, {2}, i32)), f32, {2}, {2, 3}));
  EXPECT_TRUE(is(deg2rad(arr({180, 90}, {2})), f64, {2}, {M_PI, M_PI / 2}));
  EXPECT_TRUE(is(degrees(arr({M_PI}, {1})), f64, {1}, {180}));
  // np.sinc(0.5) = 0.6366197723675814; JAX 0.11: sinc(inf) = 0
  EXPECT_TRUE(is(sinc(arr({0.0, 0.5, -1.5, kInf}, {4})), f64, {4}, {1.0, 0.6366197723675814, -0.2122065907891938, 0}));
  EXPECT_TRUE(is(copysign(arr({1.5, -2, 3}, {3}), arr({-0.0, 1, -1}, {3})), f64, {3}, {-1.5, 2, -3}));
  EXPECT_TRUE(is(fmax(arr({kNaN, 1, kNaN}, {3}), arr({2, kNaN, kNaN}, {3})), f64, {3}, {2, 1, kNaN}));
  EXPECT_TRUE(is(fmin(arr({kNaN, 1, 3}, {3}), arr({2, kNaN, -1}, {3})), f64, {3}, {2, 1, -1}));
  // np.fmod keeps the dividend's sign
  EXPECT_TRUE(is(fmod(arr({-7.5, 7.5, 5}, {3}), arr({2, -2, 0}, {3})), f64, {3}, {-1.5, 1.5, kNaN}));
  EXPECT_TRUE(is(fmod(arr({-7, 7}, {2}, i32), arr({2, -2}, {2}, i32)), i32, {2}, {-1, 1}));
  EXPECT_TRUE(is(hypot(arr({3, 1e300, kInf, 0}, {4}), arr({4, 1e300, kNaN, 0}, {4})), f64, {4},
                 {5, 1.4142135623730951e300, kInf, 0}));
  EXPECT_TRUE(is(heaviside(arr({-1, 0, 2, kNaN, -kInf}, {5}), Array(0.5)), f64, {5}, {0, 0.5, 1, kNaN, 0}));
  // np.logaddexp2(1, 2) = 2.584962500721156
  EXPECT_TRUE(is(logaddexp2(arr({1}, {1}), arr({2}, {1})), f64, {1}, {2.584962500721156}));
  EXPECT_TRUE(is(ldexp(arr({1.5, -3}, {2}), arr({2, -1}, {2}, i32)), f64, {2}, {6, -1.5}));
  EXPECT_EQ(float_power(arr({2}, {1}, i32), arr({3}, {1}, i32)).dtype(), default_float_dtype());
}

TEST(NumpyMore, ShapesAgainstNumpy) {
  Array m = arr({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(is(matrix_transpose(m), f64, {3, 2}, {1, 4, 2, 5, 3, 6}));
  EXPECT_TRUE(is(fliplr(m), f64, {2, 3}, {3, 2, 1, 6, 5, 4}));
  EXPECT_TRUE(is(flipud(m), f64, {2, 3}, {4, 5, 6, 1, 2, 3}));
  // np.rot90(m) = [[3, 6], [2, 5], [1, 4]]; k=3 the other way; k=2 both flips
  EXPECT_TRUE(is(rot90(m), f64, {3, 2}, {3, 6, 2, 5, 1, 4}));
  EXPECT_TRUE(is(rot90(m, 3), f64, {3, 2}, {4, 1, 5, 2, 6, 3}));
  EXPECT_TRUE(is(rot90(m, -2), f64, {2, 3}, {6, 5, 4, 3, 2, 1}));
  EXPECT_TRUE(is(roll(m, 1, 1), f64, {2, 3}, {3, 1, 2, 6, 4, 5}));
  EXPECT_TRUE(is(roll(m, -2), f64, {2, 3}, {3, 4, 5, 6, 1, 2}));
  EXPECT_TRUE(is(roll(m, 7, 0), f64, {2, 3}, {4, 5, 6, 1, 2, 3}));
  Array a = arr({1, 2}, {2}), b = arr({3, 4}, {2});
  EXPECT_TRUE(is(hstack({a, b}), f64, {4}, {1, 2, 3, 4}));
  EXPECT_TRUE(is(vstack({a, b}), f64, {2, 2}, {1, 2, 3, 4}));
  EXPECT_TRUE(is(dstack({a, b}), f64, {1, 2, 2}, {1, 3, 2, 4}));
  EXPECT_TRUE(is(column_stack({a, b}), f64, {2, 2}, {1, 3, 2, 4}));
  EXPECT_EQ(atleast_3d(a).shape(), Shape({1, 2, 1}));
  EXPECT_TRUE(is(diff(arr({1, 4, 9, 16}, {4})), f64, {3}, {3, 5, 7}));
  EXPECT_TRUE(is(diff(arr({1, 4, 9, 16}, {4}), 2), f64, {2}, {2, 2}));
  EXPECT_TRUE(is(diff(m, 1, 0), f64, {1, 3}, {3, 3, 3}));
  EXPECT_TRUE(is(ediff1d(m), f64, {5}, {1, 1, 1, 1, 1}));
  // np.kron([[1, 2]], [[1], [10]]) = [[1, 2], [10, 20]]
  EXPECT_TRUE(is(kron(arr({1, 2}, {1, 2}), arr({1, 10}, {2, 1})), f64, {2, 2}, {1, 2, 10, 20}));
  EXPECT_TRUE(is(kron(a, b), f64, {4}, {3, 4, 6, 8}));
  EXPECT_TRUE(is(tri(2, 3, 1), f32, {2, 3}, {1, 1, 0, 1, 1, 1}));
}

TEST(NumpyMore, ReductionsAgainstNumpy) {
  Array x = arr({1, kNaN, 3, kNaN, kNaN, kNaN, 2, 5, 4}, {3, 3});
  EXPECT_TRUE(is(nansum(x, 1), f64, {3}, {4, 0, 11}));
  EXPECT_TRUE(is(nanprod(x, 1), f64, {3}, {3, 1, 40}));
  EXPECT_TRUE(is(nanmax(x, 1), f64, {3}, {3, kNaN, 5}));
  EXPECT_TRUE(is(nanmin(x, 0), f64, {3}, {1, 5, 3}));
  EXPECT_TRUE(is(nanmean(x, 1), f64, {3}, {2, kNaN, 11.0 / 3}));
  // np.nanvar([2, 5, 4]) = 1.5555555555555556; ddof=1: 2.3333333333333335
  EXPECT_TRUE(is(nanvar(x, 1), f64, {3}, {1, kNaN, 1.5555555555555556}));
  EXPECT_TRUE(is(nanstd(x, 1, false, 1), f64, {3}, {std::sqrt(2.0), kNaN, std::sqrt(2.3333333333333335)}));
  EXPECT_TRUE(is(nanargmax(x, 1), i32, {3}, {2, -1, 1}));  // JAX: -1 for an all-NaN row
  EXPECT_TRUE(is(nanargmin(x, 0), i32, {3}, {0, 2, 0}));
  EXPECT_TRUE(is(nancumsum(x, 1), f64, {3, 3}, {1, 1, 4, 0, 0, 0, 2, 7, 11}));
  EXPECT_TRUE(is(nancumprod(arr({2, kNaN, 3}, {3})), f64, {3}, {2, 2, 6}));
  Array m = arr({1, 2, 3, 4, 5, 9}, {2, 3});
  EXPECT_TRUE(is(ptp(m, 1), f64, {2}, {2, 5}));
  EXPECT_TRUE(is(count_nonzero(arr({0, 1, 0, 2}, {2, 2}), 0), i32, {2}, {0, 2}));
  EXPECT_TRUE(is(average(m, 1), f64, {2}, {2, 6}));
  // np.average(m, axis=1, weights=[1, 0, 3]) = [2.5, 7.75]
  EXPECT_TRUE(is(average(m, 1, arr({1, 0, 3}, {3})), f64, {2}, {2.5, 7.75}));
  EXPECT_TRUE(is(cumulative_sum(arr({1, 2, 3}, {3}), std::nullopt, true), f64, {4}, {0, 1, 3, 6}));
  EXPECT_TRUE(is(cumulative_prod(m, 1), f64, {2, 3}, {1, 2, 6, 4, 20, 180}));
  // np.trapz([1, 2, 4], dx=0.5) = 2.25
  EXPECT_TRUE(is(trapezoid(arr({1, 2, 4}, {3}), 0.5), f64, {}, {2.25}));
}

TEST(NumpyMore, DerivativesAgainstFiniteDifferences) {
  Array x = arr({0.3, -1.2, 2.5}, {3}), y = arr({1.1, 0.7, -0.4}, {3});
  std::vector<std::function<Array(const Array&)>> fs = {
      [&](const Array& v) { return sum(hypot(v, y)); },     [&](const Array& v) { return sum(sinc(v)); },
      [&](const Array& v) { return sum(logaddexp2(v, y)); }, [&](const Array& v) { return sum(fmax(v, y)); },
      [&](const Array& v) { return nanmean(v); },           [&](const Array& v) { return nanvar(v); },
      [&](const Array& v) { return sum(kron(v, y)); },       [&](const Array& v) { return trapezoid(v * v); },
      [&](const Array& v) { return sum(roll(v, 1) * y); },   [&](const Array& v) { return sum(rot90(reshape(v, {1, 3})) * 2.0); },
  };
  for (size_t i = 0; i < fs.size(); ++i) {
    Array g = grad(fs[i])(x);
    std::vector<double> fd;
    for (int k = 0; k < 3; ++k) {
      std::vector<double> hi = {0.3, -1.2, 2.5}, lo = hi;
      hi[static_cast<size_t>(k)] += 1e-6;
      lo[static_cast<size_t>(k)] -= 1e-6;
      fd.push_back((fs[i](arr(hi, {3})).item<double>() - fs[i](arr(lo, {3})).item<double>()) / 2e-6);
    }
    EXPECT_TRUE(close(g, concrete(fd, {3}, f64), 1e-6, 1e-7)) << "function " << i;
  }
}

TEST(NumpyMore, BadInputIsAClearError) {
  EXPECT_THROW(matrix_transpose(arr({1}, {1})), ValueError);
  EXPECT_THROW(rot90(ones({2, 2}), 1, {0, 0}), ValueError);
  EXPECT_THROW(roll(ones({2, 2}), 1, 5), ValueError);
  EXPECT_THROW(diff(ones({3}), -1), ValueError);
  EXPECT_THROW(ldexp(ones({2}), ones({2})), TypeError);
  EXPECT_THROW(cumulative_sum(ones({2, 2})), ValueError);
  EXPECT_THROW(hstack({}), ValueError);
}

TEST(NumpyMore, RoundingIntegerAndFloatDecomposition) {
  EXPECT_TRUE(is(around(arr({1.25, 2.5, -0.125, 1234.5}, {4}), 1), f64, {4}, {1.2, 2.5, -0.1, 1234.5}));
  EXPECT_TRUE(is(around(arr({1250, -350, 449}, {3}, i32), -2), i32, {3}, {1200, -400, 400}));
  EXPECT_TRUE(is(around(arr({1.5, 2.5, -0.5}, {3})), f64, {3}, {2, 2, -0.0}));
  Array a = arr({12, -18, 0, 7}, {4}, i32);
  EXPECT_TRUE(is(gcd(a, arr({8, 24, 0, 0}, {4}, i32)), i32, {4}, {4, 6, 0, 7}));
  EXPECT_TRUE(is(lcm(a, arr({8, 24, 5, 3}, {4}, i32)), i32, {4}, {24, 72, 0, 21}));
  // gcd's worst case (consecutive Fibonacci numbers) under jit, where the loop cannot stop early
  Array fib = arr({1836311903}, {1}, i32), fib1 = arr({1134903170}, {1}, i32);
  EXPECT_TRUE(is(jit([](const Array& x, const Array& y) { return gcd(x, y); })(fib, fib1), i32, {1}, {1}));
  EXPECT_TRUE(is(gcd(arr({1836311903 * 2.0}, {1}, i64), arr({1134903170 * 2.0}, {1}, i64)), i64, {1}, {2}));
  expect_throws<TypeError>([] { gcd(ones({2}), ones({2})); }, "integers");
  auto [m, e] = frexp(arr({8, -0.3, 0, 1e-310, kInf, 1.7976931348623157e308}, {6}));
  EXPECT_TRUE(is(m, f64, {6}, {0.5, -0.6, 0, 0.5752618031559393, kInf, 0.9999999999999999}));
  EXPECT_TRUE(is(e, i32, {6}, {4, -1, 0, -1029, 0, 1024}));
  EXPECT_TRUE(close(ldexp(m, e), arr({8, -0.3, 0, 1e-310, kInf, 1.7976931348623157e308}, {6}), 0, 0));
  auto [fr, wh] = modf(arr({2.5, -1.25, kInf, -kInf}, {4}));
  EXPECT_TRUE(is(fr, f64, {4}, {0.5, -0.25, 0, -0.0}));
  EXPECT_TRUE(is(wh, f64, {4}, {2, -1, kInf, -kInf}));
  EXPECT_TRUE(signbit(fr[{3}]).item<bool>());
  auto [q, r] = divmod(arr({7, -7}, {2}, i32), arr({2, 2}, {2}, i32));
  EXPECT_TRUE(is(q, i32, {2}, {3, -4}));
  EXPECT_TRUE(is(r, i32, {2}, {1, 1}));
  EXPECT_TRUE(is(spacing(arr({1, -1, 0}, {3})), f64, {3}, {2.220446049250313e-16, -2.220446049250313e-16, 5e-324}, 0, 0));
  EXPECT_TRUE(is(nextafter(arr({1}, {1}, f32), arr({2}, {1}, f32)), f32, {1}, {1.0000001192092896}, 0, 0));
}

TEST(NumpyMore, VectorProductsAndUnwrap) {
  Rng rng(9);
  Array m = rng.uniform({2, 3, 4}, DType::f64), v = rng.uniform({4}, DType::f64), w = rng.uniform({2, 3}, DType::f64);
  EXPECT_TRUE(close(matvec(m, v), matmul(m, v), 1e-12, 1e-12));
  EXPECT_TRUE(close(vecmat(w, m), squeeze(matmul(expand_dims(w, 1), m), {1}), 1e-12, 1e-12));
  EXPECT_TRUE(close(vecdot(m, v), matmul(m, v), 1e-12, 1e-12));
  EXPECT_TRUE(close(vecdot(w, w, 0), sum(w * w, {0}), 1e-12, 1e-12));
  EXPECT_TRUE(is(cross(arr({1, 2, 3}, {3}), arr({4, 5, 6}, {3})), f64, {3}, {-3, 6, -3}));
  // along another axis, broadcast: each column of a against b
  Array a3 = rng.uniform({3, 5}, DType::f64), b3 = rng.uniform({3}, DType::f64);
  Array c = cross(a3, expand_dims(b3, 1), 0);
  EXPECT_EQ(c.shape(), (Shape{3, 5}));
  EXPECT_TRUE(close(c[{slice(0, 3), 2}], cross(a3[{slice(0, 3), 2}], b3), 1e-12, 1e-12));
  EXPECT_TRUE(close(cross(a3, expand_dims(b3, 1), 0), moveaxis(cross(moveaxis(a3, 0, -1), b3), -1, 0), 1e-12, 1e-12));
  EXPECT_NEAR(sum(c * expand_dims(b3, 1)).item<double>(), 0.0, 1e-12);  // orthogonal to b
  expect_throws<ValueError>([] { cross(ones({2}), ones({2})); }, "3-vectors");
  EXPECT_TRUE(is(unwrap(arr({0, 3, 6.5, 1, -2.5}, {5})), f64, {5}, {0, 3, 0.21681469282041377, 1, 3.7831853071795862}));
  EXPECT_TRUE(is(unwrap(arr({0, 1, 2, 3, 0}, {5}), std::nullopt, -1, 4), f64, {5}, {0, 1, 2, 3, 4}));
  auto f = [](const Array& x) { return sum(square(cross(x, x * 2.0 + 1.0))); };
  Array x = arr({0.5, -1, 2}, {3});
  EXPECT_TRUE(close(grad(f)(x), num_grad(f, x), 1e-6, 1e-8));
}

}  // namespace
}  // namespace graft::testing
