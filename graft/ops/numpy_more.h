// More of NumPy's (and jax.numpy's) functions in C++, as compositions of graft/ops/ops.h: aliases, the
// rest of the elementwise functions, NaN-ignoring reductions, stacking and flipping helpers. Each
// behaves as its jax.numpy namesake (dtypes by JAX's promotion; the Python front end has the same names).
//
//   Array r = nanmean(x, 1);            // the mean of each row over its non-NaN entries
//   Array h = hypot(a, b);              // sqrt(a^2 + b^2) without overflow, inf when a leg is inf
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "graft/ops/ops.h"

namespace graft {

// ---- aliases (JAX's and the Array API's spellings) ------------------------------------------------------
Array absolute(const Array& x);
Array positive(const Array& x);
Array acos(const Array& x);
Array asin(const Array& x);
Array atan(const Array& x);
Array acosh(const Array& x);
Array asinh(const Array& x);
Array atanh(const Array& x);
Array atan2(const Array& a, const Array& b);
Array pow(const Array& a, const Array& b);
Array true_divide(const Array& a, const Array& b);
Array mod(const Array& a, const Array& b);
Array invert(const Array& x);
Array bitwise_invert(const Array& x);
Array bitwise_left_shift(const Array& a, const Array& b);
Array bitwise_right_shift(const Array& a, const Array& b);
Array permute_dims(const Array& x, const Axes& axes);
Array concat(const std::vector<Array>& xs, int64_t axis = 0);
Array amax(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array amin(const Array& x, AxisArg axis = {}, bool keepdims = false);

// ---- elementwise ---------------------------------------------------------------------------------------
/// |x| as floating point.
Array fabs(const Array& x);
/// Rounds half to even (NumPy's rint) / toward zero.
Array rint(const Array& x);
Array trunc(const Array& x);
Array deg2rad(const Array& x);
Array rad2deg(const Array& x);
Array degrees(const Array& x);
Array radians(const Array& x);
/// Whether the sign bit is set (true for -0.0).
Array signbit(const Array& x);
Array isneginf(const Array& x);
Array isposinf(const Array& x);
/// NaN to `nan`, +-inf to `posinf` / `neginf` (the dtype's largest finite values by default).
Array nan_to_num(const Array& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                 std::optional<double> neginf = std::nullopt);
/// sin(pi x) / (pi x), 1 at 0 and 0 at +-inf (JAX 0.11's limits).
Array sinc(const Array& x);
/// |a| with the sign of b.
Array copysign(const Array& a, const Array& b);
/// maximum / minimum that ignore a NaN operand.
Array fmax(const Array& a, const Array& b);
Array fmin(const Array& a, const Array& b);
/// C's fmod: the remainder with the dividend's sign.
Array fmod(const Array& a, const Array& b);
Array hypot(const Array& a, const Array& b);
/// 0 for a < 0, b for a == 0, 1 for a > 0 (NaN for NaN).
Array heaviside(const Array& a, const Array& b);
Array logaddexp2(const Array& a, const Array& b);
/// a ** b in the widest floating type (f64 with x64, else f32).
Array float_power(const Array& a, const Array& b);
/// x * 2**n.
Array ldexp(const Array& x, const Array& n);

/// x rounded to `decimals` places, halves to even (negative decimals: to tens, hundreds, ...); integers
/// stay integers.
Array around(const Array& x, int64_t decimals = 0);
/// The greatest common divisor and least common multiple of integers (non-negative; gcd(0, 0) = 0).
Array gcd(const Array& a, const Array& b);
Array lcm(const Array& a, const Array& b);
/// (mantissa, exponent) with x = mantissa 2^exponent, |mantissa| in [0.5, 1), exponent i32; zeros,
/// infinities and NaN give (x, 0).
std::pair<Array, Array> frexp(const Array& x);
/// (fractional part, integral part), both with x's sign (an infinity: (+-0, x)).
std::pair<Array, Array> modf(const Array& x);
/// (floor_divide(a, b), remainder(a, b)).
std::pair<Array, Array> divmod(const Array& a, const Array& b);
/// The representable value next to a in the direction of b (a's float type).
Array nextafter(const Array& a, const Array& b);
/// The distance from x to the next representable value away from zero (negative for negative x).
Array spacing(const Array& x);

// ---- products -------------------------------------------------------------------------------------------
/// The sum over `axis` of a * b (broadcast): batched dot products.
Array vecdot(const Array& a, const Array& b, int64_t axis = -1);
/// Matrix [..., m, n] times vector [..., n] -> [..., m], batched by broadcasting.
Array matvec(const Array& m, const Array& v);
/// Vector [..., m] times matrix [..., m, n] -> [..., n].
Array vecmat(const Array& v, const Array& m);
/// The cross product of 3-vectors along `axis` of each (broadcast).
Array cross(const Array& a, const Array& b, int64_t axis = -1);
/// p with jumps larger than `discont` (default period / 2) along `axis` replaced by their complement
/// modulo `period` (phase unwrapping).
Array unwrap(const Array& p, std::optional<double> discont = std::nullopt, int64_t axis = -1,
             double period = 6.283185307179586);

// ---- shapes --------------------------------------------------------------------------------------------
/// Swaps the last two axes.
Array matrix_transpose(const Array& x);
Array fliplr(const Array& x);
Array flipud(const Array& x);
/// Rotates by 90 degrees k times in the plane of `axes`.
Array rot90(const Array& x, int64_t k = 1, std::pair<int64_t, int64_t> axes = {0, 1});
/// Shifts elements along `axis` (all of them, flattened, when unset), wrapping around.
Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis = std::nullopt);
Array hstack(const std::vector<Array>& xs);
Array vstack(const std::vector<Array>& xs);
Array dstack(const std::vector<Array>& xs);
Array column_stack(const std::vector<Array>& xs);
Array atleast_3d(const Array& x);
/// The n-th discrete difference along axis.
Array diff(const Array& x, int64_t n = 1, int64_t axis = -1);
/// The differences of the flattened array.
Array ediff1d(const Array& x);
Array kron(const Array& a, const Array& b);
/// Ones at and below the k-th diagonal of an n x m matrix.
Array tri(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType d = DType::f32);

// ---- reductions ----------------------------------------------------------------------------------------
Array ptp(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array count_nonzero(const Array& x, AxisArg axis = {}, bool keepdims = false);
/// The mean, weighted by `weights` (broadcast along `axis` when 1-D) when given.
Array average(const Array& x, std::optional<int64_t> axis = std::nullopt,
              const std::optional<Array>& weights = std::nullopt);
/// cumsum / cumprod along axis (the flattened array when unset), with the identity first when
/// include_initial (the Array API's cumulative_sum).
Array cumulative_sum(const Array& x, std::optional<int64_t> axis = std::nullopt, bool include_initial = false);
Array cumulative_prod(const Array& x, std::optional<int64_t> axis = std::nullopt, bool include_initial = false);
/// Reductions over the non-NaN entries (NaN where a slice has none, for max / min / mean / var / std).
Array nansum(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array nanprod(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array nanmax(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array nanmin(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array nanmean(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array nanvar(const Array& x, AxisArg axis = {}, bool keepdims = false, int64_t ddof = 0);
Array nanstd(const Array& x, AxisArg axis = {}, bool keepdims = false, int64_t ddof = 0);
/// -1 for a slice that is all NaN (JAX's).
Array nanargmax(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Array nanargmin(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Array nancumsum(const Array& x, std::optional<int64_t> axis = std::nullopt);
Array nancumprod(const Array& x, std::optional<int64_t> axis = std::nullopt);
/// The trapezoidal rule along axis with spacing dx.
Array trapezoid(const Array& y, double dx = 1.0, int64_t axis = -1);

}  // namespace graft
