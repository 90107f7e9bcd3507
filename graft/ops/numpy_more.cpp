// jax.numpy's remaining functions in C++ (graft/ops/numpy_more.h), composed from the NumPy layer.
#include "graft/ops/numpy_more.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "graft/ops/internal.h"
#include "graft/prims/lax.h"

namespace graft {

using ops_detail::as_float;
using ops_detail::checked;
using ops_detail::convert;
using ops_detail::float_dtype;
using ops_detail::promote_broadcast;
using ops_detail::scalar_like;

namespace {
// The largest finite value of a floating dtype (finfo.max).
double finite_max(DType d) {
  switch (d) {
    case DType::f16: return 65504.0;
    case DType::bf16: return 3.3895313892515355e38;
    case DType::f32: return static_cast<double>(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
  }
}
// Both operands as floating point of their promoted type, broadcast together.
std::pair<Array, Array> float_pair(const Array& a, const Array& b, const char* op) {
  auto [x, y] = promote_broadcast(a, b, op);
  ops_detail::real_only(x, op);  // NumPy defines these for real numbers only
  if (!is_floating(x.dtype())) {
    DType d = float_dtype(x);
    x = convert(x, d);
    y = convert(y, d);
  }
  return {x, y};
}
Array nan_mask(const Array& x) { return is_inexact(x.dtype()) ? isnan(x) : zeros_like(x, DType::bool_); }
}  // namespace

// ---- aliases -------------------------------------------------------------------------------------------
Array absolute(const Array& x) { return abs(x); }
Array positive(const Array& x) { return checked(x, "positive"); }
Array acos(const Array& x) { return arccos(x); }
Array asin(const Array& x) { return arcsin(x); }
Array atan(const Array& x) { return arctan(x); }
Array acosh(const Array& x) { return arccosh(x); }
Array asinh(const Array& x) { return arcsinh(x); }
Array atanh(const Array& x) { return arctanh(x); }
Array atan2(const Array& a, const Array& b) { return arctan2(a, b); }
Array pow(const Array& a, const Array& b) { return power(a, b); }
Array true_divide(const Array& a, const Array& b) { return divide(a, b); }
Array mod(const Array& a, const Array& b) { return remainder(a, b); }
Array invert(const Array& x) { return bitwise_not(x); }
Array bitwise_invert(const Array& x) { return bitwise_not(x); }
Array bitwise_left_shift(const Array& a, const Array& b) { return left_shift(a, b); }
Array bitwise_right_shift(const Array& a, const Array& b) { return right_shift(a, b); }
Array permute_dims(const Array& x, const Axes& axes) { return transpose(x, axes); }
Array concat(const std::vector<Array>& xs, int64_t axis) { return concatenate(xs, axis); }
Array amax(const Array& x, AxisArg axis, bool keepdims) { return max(x, std::move(axis), keepdims); }
Array amin(const Array& x, AxisArg axis, bool keepdims) { return min(x, std::move(axis), keepdims); }

// ---- elementwise ---------------------------------------------------------------------------------------
Array fabs(const Array& x) { return abs(as_float(checked(x, "fabs"))); }
Array rint(const Array& x) { return is_inexact(checked(x, "rint").dtype()) ? round(x) : as_float(x); }
Array trunc(const Array& x) {
  if (!is_floating(ops_detail::real_only(checked(x, "trunc"), "trunc").dtype())) return x;
  return where(less(x, scalar_like(0, x)), ceil(x), floor(x));
}
Array deg2rad(const Array& x) { return multiply(as_float(x), Array(std::numbers::pi / 180.0)); }
Array rad2deg(const Array& x) { return multiply(as_float(x), Array(180.0 / std::numbers::pi)); }
Array degrees(const Array& x) { return rad2deg(x); }
Array radians(const Array& x) { return deg2rad(x); }

Array signbit(const Array& x) {
  DType d = checked(x, "signbit").dtype();
  if (is_bool(d) || is_unsigned(d)) return zeros_like(x, DType::bool_);
  if (!is_floating(d)) return less(x, scalar_like(0, x));
  // the sign bit itself, so that -0.0 and -nan count as negative (as NumPy's)
  DType bits = itemsize(d) == 2 ? DType::i16 : itemsize(d) == 4 ? DType::i32 : DType::i64;
  Array b = lax::bitcast_convert_type(x, bits);
  return less(b, Array::scalar(0, bits));
}

Array isneginf(const Array& x) {
  if (!is_floating(checked(x, "isneginf").dtype())) return zeros_like(x, DType::bool_);
  return logical_and(isinf(x), less(x, scalar_like(0, x)));
}
Array isposinf(const Array& x) {
  if (!is_floating(checked(x, "isposinf").dtype())) return zeros_like(x, DType::bool_);
  return logical_and(isinf(x), greater(x, scalar_like(0, x)));
}

Array nan_to_num(const Array& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  if (!is_floating(checked(x, "nan_to_num").dtype())) return x;
  double big = finite_max(x.dtype());
  Array r = where(isnan(x), scalar_like(nan, x), x);
  r = where(isposinf(x), scalar_like(posinf.value_or(big), x), r);
  return where(isneginf(x), scalar_like(neginf.value_or(-big), x), r);
}

Array sinc(const Array& x0) {
  Array x = as_float(checked(x0, "sinc"));
  Array zero = equal(x, scalar_like(0, x)), inf = isinf(x);
  Array px = multiply(where(logical_or(zero, inf), scalar_like(1, x), x), Array(std::numbers::pi));
  return where(zero, scalar_like(1, x), where(inf, scalar_like(0, x), divide(sin(px), px)));
}

Array copysign(const Array& a, const Array& b) {
  auto [x, y] = float_pair(a, b, "copysign");
  Array m = abs(x);
  return where(signbit(y), negative(m), m);
}

Array fmax(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "fmax");
  return where(nan_mask(x), y, where(nan_mask(y), x, maximum(x, y)));
}
Array fmin(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "fmin");
  return where(nan_mask(x), y, where(nan_mask(y), x, minimum(x, y)));
}

Array fmod(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "fmod");
  if (is_bool(x.dtype())) fail<TypeError>("fmod: boolean operands (", x.aval().str(), ", ", y.aval().str(), ")");
  // an integer divisor of 0 is taken as 1, as JAX does (integer division by zero has no value)
  if (!is_floating(y.dtype())) y = where(equal(y, scalar_like(0, y)), scalar_like(1, y), y);
  Shape s = x.ndim() >= y.ndim() ? x.shape() : y.shape();
  return lax::rem(ops_detail::broadcast_to(x, s, "fmod"), ops_detail::broadcast_to(y, s, "fmod"));
}

Array hypot(const Array& a, const Array& b) {
  auto [x0, y0] = float_pair(a, b, "hypot");
  Array x = abs(x0), y = abs(y0);
  Array big = maximum(x, y), small = minimum(x, y);
  Array zero = equal(big, scalar_like(0, big));
  Array r = divide(small, where(zero, scalar_like(1, big), big));
  Array h = where(zero, big, multiply(big, sqrt(add(scalar_like(1, r), multiply(r, r)))));
  // IEEE's hypot: an infinite leg makes the hypotenuse infinite, even beside a NaN
  return where(logical_or(isinf(x), isinf(y)), scalar_like(INFINITY, h), h);
}

Array heaviside(const Array& a, const Array& b) {
  auto [x, y] = float_pair(a, b, "heaviside");
  Array zero = scalar_like(0, x);
  return where(less(x, zero), zero, where(greater(x, zero), scalar_like(1, x), where(isnan(x), x, y)));
}

Array logaddexp2(const Array& a, const Array& b) {
  auto [x, y] = float_pair(a, b, "logaddexp2");
  double ln2 = std::numbers::ln2;
  return divide(logaddexp(multiply(x, Array(ln2)), multiply(y, Array(ln2))), Array(ln2));
}

Array float_power(const Array& a, const Array& b) {
  // JAX's: the promoted type made inexact (float32 stays float32, complex stays complex), then pow
  auto [x, y] = promote_broadcast(a, b, "float_power");
  DType d = float_dtype(x);
  return lax::pow(convert(x, d, x.weak_type()), convert(y, d, y.weak_type()));
}

Array ldexp(const Array& x, const Array& n) {
  if (!is_integer(checked(n, "ldexp").dtype()))
    fail<TypeError>("ldexp: the exponent must be an integer array, got ", n.aval().str());
  Array f = as_float(checked(x, "ldexp"));
  // in two halves, so that 2^n alone neither overflows nor underflows where x 2^n is representable
  Array e = convert(n, f.dtype()), two = Array::scalar(2, f.dtype());
  Array h = floor(e * 0.5);
  return multiply(multiply(f, power(two, h)), power(two, e - h));
}

Array around(const Array& x, int64_t decimals) {
  ops_detail::real_only(checked(x, "around"), "around");
  if (x.dtype() == DType::bool_ || (!is_floating(x.dtype()) && decimals >= 0)) return x;
  Array f = as_float(x);
  Array scale = scalar_like(std::pow(10.0, static_cast<double>(std::abs(decimals))), f);
  Array r = decimals >= 0 ? round(f * scale) / scale : round(f / scale) * scale;
  return is_floating(x.dtype()) ? r : convert(r, x.dtype());
}

namespace {
// Euclid's algorithm: as many steps as consecutive Fibonacci numbers fit the integer type (its worst
// case), fewer when the concrete values finish sooner.
Array euclid(const Array& a0, const Array& b0, const char* op) {
  auto [a, b] = promote_broadcast(a0, b0, op);
  if (is_floating(a.dtype()) || a.dtype() == DType::bool_)
    fail<TypeError>(op, ": operands must be integers, got ", a0.aval().str(), " and ", b0.aval().str());
  Array x = abs(a), y = abs(b);
  int steps = 12 * static_cast<int>(itemsize(a.dtype())) + 2;
  Array zero = scalar_like(0, x), one = scalar_like(1, x);
  for (int i = 0; i < steps; ++i) {
    if (y.is_concrete() && !any(y != zero).item<bool>()) break;
    Array nz = y != zero;
    Array r = remainder(x, where(nz, y, one));
    x = where(nz, y, x);
    y = where(nz, r, y);
  }
  return x;
}
}  // namespace

Array gcd(const Array& a, const Array& b) { return euclid(a, b, "gcd"); }

Array lcm(const Array& a, const Array& b) {
  Array g = euclid(a, b, "lcm");
  auto [x, y] = promote_broadcast(a, b, "lcm");
  Array zero = scalar_like(0, g);
  return where(g == zero, zeros_like(g), floor_divide(abs(x), where(g == zero, scalar_like(1, g), g)) * abs(y));
}

std::pair<Array, Array> frexp(const Array& x0) {
  Array x = as_float(checked(x0, "frexp"));
  Array ax = abs(x);
  Array plain = (ax != scalar_like(0, x)) & isfinite(x);
  Array safe = where(plain, ax, ones_like(ax));
  Array e = floor(log2(safe)) + 1.0;
  // scaled in two halves so that neither power overflows or underflows (subnormals, the largest values)
  Array h = floor(e * 0.5);
  Array two = scalar_like(2, x);
  Array m = where(plain, x, ones_like(x)) * power(two, -h) * power(two, h - e);
  // log2's rounding next to powers of two
  Array hi = abs(m) >= 1.0, lo = abs(m) < 0.5;
  m = where(hi, m * 0.5, where(lo, m * 2.0, m));
  e = where(hi, e + 1.0, where(lo, e - 1.0, e));
  return {where(plain, m, x), where(plain, e, zeros_like(e)).astype(DType::i32)};
}

std::pair<Array, Array> modf(const Array& x0) {
  Array x = as_float(checked(x0, "modf"));
  Array whole = trunc(x);
  Array frac = where(isinf(x), copysign(zeros_like(x), x), x - whole);
  return {frac, whole};
}

std::pair<Array, Array> divmod(const Array& a, const Array& b) { return {floor_divide(a, b), remainder(a, b)}; }

Array nextafter(const Array& a, const Array& b) {
  auto [x, y] = float_pair(a, b, "nextafter");
  return lax::nextafter(x, y);
}

Array spacing(const Array& x0) {
  Array x = as_float(checked(x0, "spacing"));
  constexpr double inf = std::numeric_limits<double>::infinity();
  Array toward = where(signbit(x), full_like(x, -inf), full_like(x, inf));
  return lax::nextafter(x, toward) - x;
}

// the first argument conjugated, as NumPy's vecdot and vecmat
Array vecdot(const Array& a, const Array& b, int64_t axis) { return sum(conj(a) * b, {axis}); }

Array matvec(const Array& m, const Array& v) {
  if (checked(m, "matvec").ndim() < 2 || checked(v, "matvec").ndim() < 1)
    fail<ValueError>("matvec: needs a matrix and a vector, got ", m.aval().str(), " and ", v.aval().str());
  return sum(m * expand_dims(v, -2), {-1});
}

Array vecmat(const Array& v, const Array& m) {
  if (checked(m, "vecmat").ndim() < 2 || checked(v, "vecmat").ndim() < 1)
    fail<ValueError>("vecmat: needs a vector and a matrix, got ", v.aval().str(), " and ", m.aval().str());
  return sum(expand_dims(conj(v), -1) * m, {-2});
}

Array cross(const Array& a0, const Array& b0, int64_t axis) {
  Array a = moveaxis(checked(a0, "cross"), axis, -1), b = moveaxis(checked(b0, "cross"), axis, -1);
  if (a.shape().back() != 3 || b.shape().back() != 3)
    fail<ValueError>("cross: both operands need 3-vectors along axis ", axis, ", got ", a0.aval().str(), " and ",
                     b0.aval().str());
  auto c = [](const Array& x, int64_t i) { return squeeze(lax::slice_in_dim(x, i, i + 1, 1, x.ndim() - 1), {-1}); };
  Array a0c = c(a, 0), a1 = c(a, 1), a2 = c(a, 2), b0c = c(b, 0), b1 = c(b, 1), b2 = c(b, 2);
  Array r = stack({a1 * b2 - a2 * b1, a2 * b0c - a0c * b2, a0c * b1 - a1 * b0c}, -1);
  // the vectors along `axis` of the result, as NumPy places them
  int64_t at = axis < 0 ? axis + r.ndim() : axis;
  if (at < 0 || at >= r.ndim()) fail<ValueError>("cross: axis ", axis, " is out of range for the result ", r.aval().str());
  return moveaxis(r, -1, at);
}

Array unwrap(const Array& p0, std::optional<double> discont, int64_t axis, double period) {
  Array p = as_float(checked(p0, "unwrap"));
  int64_t ax = axis < 0 ? axis + p.ndim() : axis;
  if (ax < 0 || ax >= p.ndim()) fail<ValueError>("unwrap: axis ", axis, " is out of range for ", p.aval().str());
  Array d = diff(p, 1, ax);
  double half = period / 2;
  Array dd = remainder(d + half, scalar_like(period, d)) - half;
  dd = where((dd == -half) & (d > 0.0), full_like(dd, half), dd);
  Array corr = where(abs(d) < discont.value_or(half), zeros_like(d), dd - d);
  Shape first = p.shape();
  first[static_cast<size_t>(ax)] = 1;
  return p + concatenate({zeros(first, p.dtype()), cumsum(corr, ax)}, ax);
}

// ---- shapes --------------------------------------------------------------------------------------------
Array matrix_transpose(const Array& x) {
  if (checked(x, "matrix_transpose").ndim() < 2)
    fail<ValueError>("matrix_transpose: needs at least 2 dimensions, got ", x.aval().str());
  return swapaxes(x, -1, -2);
}
Array fliplr(const Array& x) {
  if (checked(x, "fliplr").ndim() < 2) fail<ValueError>("fliplr: needs at least 2 dimensions, got ", x.aval().str());
  return flip(x, 1);
}
Array flipud(const Array& x) {
  if (checked(x, "flipud").ndim() < 1) fail<ValueError>("flipud: needs at least 1 dimension, got ", x.aval().str());
  return flip(x, 0);
}

Array rot90(const Array& x, int64_t k, std::pair<int64_t, int64_t> axes) {
  int64_t n = checked(x, "rot90").ndim();
  auto norm = [&](int64_t a) {
    if (a < -n || a >= n) fail<ValueError>("rot90: axis ", a, " is out of bounds for ", x.aval().str());
    return a < 0 ? a + n : a;
  };
  int64_t a0 = norm(axes.first), a1 = norm(axes.second);
  if (a0 == a1) fail<ValueError>("rot90: the axes must differ, got (", axes.first, ", ", axes.second, ")");
  k = ((k % 4) + 4) % 4;
  if (k == 0) return x;
  if (k == 2) return flip(flip(x, a0), a1);
  Axes perm;
  for (int64_t i = 0; i < n; ++i) perm.push_back(i);
  std::swap(perm[static_cast<size_t>(a0)], perm[static_cast<size_t>(a1)]);
  return k == 1 ? transpose(flip(x, a1), perm) : flip(transpose(x, perm), a1);
}

Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis) {
  if (!axis) return reshape(roll(ravel(checked(x, "roll")), shift, 0), x.shape());
  int64_t n = checked(x, "roll").ndim();
  int64_t a = *axis < 0 ? *axis + n : *axis;
  if (a < 0 || a >= n) fail<ValueError>("roll: axis ", *axis, " is out of bounds for ", x.aval().str());
  int64_t len = x.shape()[static_cast<size_t>(a)];
  if (len == 0) return x;
  int64_t s = ((shift % len) + len) % len;
  if (s == 0) return x;
  Shape lo(x.ndim(), 0), mid = x.shape(), hi = x.shape();
  mid[static_cast<size_t>(a)] = len - s;
  Shape start = lo;
  start[static_cast<size_t>(a)] = len - s;
  Array tail = lax::slice(x, start, hi), head = lax::slice(x, lo, mid);
  return concatenate({tail, head}, a);
}

Array atleast_3d(const Array& x) {
  int64_t n = checked(x, "atleast_3d").ndim();
  if (n == 0) return reshape(x, {1, 1, 1});
  if (n == 1) return reshape(x, {1, x.shape()[0], 1});
  if (n == 2) return reshape(x, {x.shape()[0], x.shape()[1], 1});
  return x;
}

Array hstack(const std::vector<Array>& xs) {
  if (xs.empty()) fail<ValueError>("hstack: needs at least one array");
  std::vector<Array> v;
  for (auto& x : xs) v.push_back(atleast_1d(x));
  return concatenate(v, v[0].ndim() == 1 ? 0 : 1);
}
Array vstack(const std::vector<Array>& xs) {
  if (xs.empty()) fail<ValueError>("vstack: needs at least one array");
  std::vector<Array> v;
  for (auto& x : xs) v.push_back(atleast_2d(x));
  return concatenate(v, 0);
}
Array dstack(const std::vector<Array>& xs) {
  if (xs.empty()) fail<ValueError>("dstack: needs at least one array");
  std::vector<Array> v;
  for (auto& x : xs) v.push_back(atleast_3d(x));
  return concatenate(v, 2);
}
Array column_stack(const std::vector<Array>& xs) {
  if (xs.empty()) fail<ValueError>("column_stack: needs at least one array");
  std::vector<Array> v;
  for (auto& x : xs) v.push_back(checked(x, "column_stack").ndim() < 2 ? reshape(x, {x.size(), 1}) : x);
  return concatenate(v, 1);
}

Array diff(const Array& x, int64_t n, int64_t axis) {
  if (n < 0) fail<ValueError>("diff: the order must be non-negative, got ", n);
  int64_t nd = checked(x, "diff").ndim();
  if (nd == 0) fail<ValueError>("diff: needs at least 1 dimension, got ", x.aval().str());
  int64_t a = axis < 0 ? axis + nd : axis;
  if (a < 0 || a >= nd) fail<ValueError>("diff: axis ", axis, " is out of bounds for ", x.aval().str());
  Array r = x;
  for (int64_t i = 0; i < n; ++i) {
    int64_t len = r.shape()[static_cast<size_t>(a)];
    if (len == 0) break;
    Shape lo(r.ndim(), 0), hi = r.shape();
    Shape lo1 = lo, hi0 = hi;
    lo1[static_cast<size_t>(a)] = 1;
    hi0[static_cast<size_t>(a)] = len - 1;
    Array later = lax::slice(r, lo1, hi), earlier = lax::slice(r, lo, hi0);
    r = is_bool(r.dtype()) ? not_equal(later, earlier) : subtract(later, earlier);
  }
  return r;
}

Array ediff1d(const Array& x) { return diff(ravel(checked(x, "ediff1d"))); }

Array kron(const Array& a, const Array& b) {
  // a's and b's dimensions interleaved: (a0, b0, a1, b1, ...), then merged pairwise
  int64_t n = std::max(checked(a, "kron").ndim(), checked(b, "kron").ndim());
  auto pad = [&](const Array& x) {
    Shape s(static_cast<size_t>(n - x.ndim()), 1);
    s.insert(s.end(), x.shape().begin(), x.shape().end());
    return reshape(x, s);
  };
  Array x = pad(a), y = pad(b);
  Shape sx, sy, out;
  for (int64_t i = 0; i < n; ++i) {
    int64_t p = x.shape()[static_cast<size_t>(i)], q = y.shape()[static_cast<size_t>(i)];
    sx.push_back(p);
    sx.push_back(1);
    sy.push_back(1);
    sy.push_back(q);
    out.push_back(p * q);
  }
  return reshape(multiply(reshape(x, sx), reshape(y, sy)), out);
}

Array tri(int64_t n, std::optional<int64_t> m, int64_t k, DType d) {
  int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0) fail<ValueError>("tri: negative dimensions (", n, ", ", cols, ")");
  Array i = iota(DType::i64, {n, cols}, 0), j = iota(DType::i64, {n, cols}, 1);
  return astype(less_equal(j, add(i, Array::scalar(static_cast<double>(k), DType::i64))), d);
}

// ---- reductions ----------------------------------------------------------------------------------------
Array ptp(const Array& x, AxisArg axis, bool keepdims) {
  return subtract(max(x, axis, keepdims), min(x, axis, keepdims));
}

Array count_nonzero(const Array& x, AxisArg axis, bool keepdims) {
  return sum(astype(not_equal(checked(x, "count_nonzero"), zeros_like(x)), default_int_dtype()), std::move(axis),
             keepdims);
}

Array average(const Array& x, std::optional<int64_t> axis, const std::optional<Array>& weights) {
  AxisArg ax = axis ? AxisArg(*axis) : AxisArg();
  if (!weights) return mean(x, ax);
  Array w = *weights;
  if (axis && w.ndim() == 1 && x.ndim() > 1) {
    int64_t a = *axis < 0 ? *axis + x.ndim() : *axis;
    Shape s(static_cast<size_t>(x.ndim()), 1);
    s[static_cast<size_t>(a)] = w.shape()[0];
    w = reshape(w, s);
  }
  Array xf = as_float(x);
  Array wx = multiply(xf, w);
  return divide(sum(wx, ax), sum(multiply(ones_like(xf), w), ax));
}

namespace {
Array cumulative(const Array& x, std::optional<int64_t> axis, bool include_initial, bool is_sum, const char* op) {
  checked(x, op);
  if (!axis && x.ndim() > 1)
    fail<ValueError>(op, ": an axis is required for arrays of more than one dimension, got ", x.aval().str());
  Array v = x.ndim() == 0 ? reshape(x, {1}) : x;
  int64_t a = axis.value_or(0);
  if (a < 0) a += v.ndim();
  Array r = is_sum ? cumsum(v, a) : cumprod(v, a);
  if (!include_initial) return r;
  Shape s = r.shape();
  s[static_cast<size_t>(a)] = 1;
  return concatenate({full(s, is_sum ? 0.0 : 1.0, r.dtype()), r}, a);
}
}  // namespace

Array cumulative_sum(const Array& x, std::optional<int64_t> axis, bool include_initial) {
  return cumulative(x, axis, include_initial, true, "cumulative_sum");
}
Array cumulative_prod(const Array& x, std::optional<int64_t> axis, bool include_initial) {
  return cumulative(x, axis, include_initial, false, "cumulative_prod");
}

Array nansum(const Array& x, AxisArg axis, bool keepdims) {
  return sum(where(nan_mask(x), zeros_like(x), x), std::move(axis), keepdims);
}
Array nanprod(const Array& x, AxisArg axis, bool keepdims) {
  return prod(where(nan_mask(x), ones_like(x), x), std::move(axis), keepdims);
}
Array nanmax(const Array& x, AxisArg axis, bool keepdims) {
  if (!is_inexact(checked(x, "nanmax").dtype())) return max(x, axis, keepdims);
  Array m = max(where(isnan(x), full_like(x, -INFINITY), x), axis, keepdims);
  Array all_nan = all(isnan(x), axis, keepdims);
  return where(all_nan, full_like(m, NAN), m);
}
Array nanmin(const Array& x, AxisArg axis, bool keepdims) {
  if (!is_inexact(checked(x, "nanmin").dtype())) return min(x, axis, keepdims);
  Array m = min(where(isnan(x), full_like(x, INFINITY), x), axis, keepdims);
  Array all_nan = all(isnan(x), axis, keepdims);
  return where(all_nan, full_like(m, NAN), m);
}
Array nanmean(const Array& x0, AxisArg axis, bool keepdims) {
  Array x = as_float(checked(x0, "nanmean"));
  Array n = sum(astype(logical_not(isnan(x)), x.dtype()), axis, keepdims);
  return divide(nansum(x, axis, keepdims), n);  // 0 / 0 = NaN for an all-NaN slice
}
Array nanvar(const Array& x0, AxisArg axis, bool keepdims, int64_t ddof) {
  Array x = as_float(checked(x0, "nanvar"));
  Array ok = logical_not(isnan(x));
  Array n = sum(astype(ok, x.dtype()), axis, true);
  Array mu = divide(nansum(x, axis, true), n);
  Array d = where(ok, subtract(x, mu), zeros_like(x));
  Array ss = sum(multiply(d, d), axis, keepdims);
  Array dof = subtract(sum(astype(ok, x.dtype()), axis, keepdims), Array::scalar(static_cast<double>(ddof), x.dtype()));
  return divide(ss, maximum(dof, zeros_like(dof)));
}
Array nanstd(const Array& x, AxisArg axis, bool keepdims, int64_t ddof) {
  return sqrt(nanvar(x, std::move(axis), keepdims, ddof));
}
namespace {
// JAX's: -1 for a slice that is all NaN
Array nan_arg(const Array& x, std::optional<int64_t> axis, bool keepdims, bool is_max) {
  Array nan = isnan(x);
  Array r = is_max ? argmax(where(nan, full_like(x, -INFINITY), x), axis, keepdims)
                   : argmin(where(nan, full_like(x, INFINITY), x), axis, keepdims);
  AxisArg ax = axis ? AxisArg(*axis) : AxisArg();
  return where(all(nan, ax, keepdims), Array::scalar(-1, r.dtype()), r);
}
}  // namespace

Array nanargmax(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  if (!is_inexact(checked(x, "nanargmax").dtype())) return argmax(x, axis, keepdims);
  return nan_arg(x, axis, keepdims, true);
}
Array nanargmin(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  if (!is_inexact(checked(x, "nanargmin").dtype())) return argmin(x, axis, keepdims);
  return nan_arg(x, axis, keepdims, false);
}
Array nancumsum(const Array& x, std::optional<int64_t> axis) {
  return cumsum(where(nan_mask(x), zeros_like(x), x), axis);
}
Array nancumprod(const Array& x, std::optional<int64_t> axis) {
  return cumprod(where(nan_mask(x), ones_like(x), x), axis);
}

Array trapezoid(const Array& y, double dx, int64_t axis) {
  int64_t n = checked(y, "trapezoid").ndim();
  if (n == 0) fail<ValueError>("trapezoid: needs at least 1 dimension, got ", y.aval().str());
  int64_t a = axis < 0 ? axis + n : axis;
  if (a < 0 || a >= n) fail<ValueError>("trapezoid: axis ", axis, " is out of bounds for ", y.aval().str());
  Array f = as_float(y);
  int64_t len = f.shape()[static_cast<size_t>(a)];
  if (len < 2) return multiply(sum(f, a), Array::scalar(0, f.dtype()));
  Shape lo(f.ndim(), 0), hi = f.shape(), lo1 = lo, hi0 = hi;
  lo1[static_cast<size_t>(a)] = 1;
  hi0[static_cast<size_t>(a)] = len - 1;
  Array s = add(lax::slice(f, lo1, hi), lax::slice(f, lo, hi0));
  return multiply(sum(s, a), Array::scalar(dx / 2, f.dtype()));
}

}  // namespace graft
