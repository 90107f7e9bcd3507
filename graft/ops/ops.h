// The NumPy-like API, written once as composites of primitives (so all of it is differentiable,
// batchable and compilable). Binary operations follow JAX's type promotion (C++ scalars are weakly
// typed: `x * 2.0` keeps x's dtype) and NumPy broadcasting.
//
//   Array x = array({1.0f, 2.0f, 3.0f});
//   Array y = where(x > 1.5f, x * 2.0, zeros_like(x));
//   Array m = matmul(ones({2, 3}), ones({3, 4}));
//   Array s = sum(m, {0, 1});
//   Array z = x[{slice(1, none)}];            // x[1:]
//   Array w = x.at({0}).set(10.0);            // functional update
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/array.h"
#include "graft/prims/lax.h"

namespace graft {

// ---- axis arguments --------------------------------------------------------------------------------
/// An axis argument: nothing (all axes), one axis, or a list of axes (negative values count from the end).
struct AxisArg {
  std::optional<Axes> axes;
  AxisArg() = default;
  AxisArg(std::nullopt_t) {}                                          // NOLINT
  AxisArg(int a) : axes(Axes{a}) {}                                   // NOLINT
  AxisArg(int64_t a) : axes(Axes{a}) {}                               // NOLINT
  AxisArg(std::initializer_list<int64_t> a) : axes(Axes(a.begin(), a.end())) {}  // NOLINT
  AxisArg(const Axes& a) : axes(a) {}                                 // NOLINT
  /// Normalized, sorted axes for an array of rank `ndim` (all axes when unset).
  Axes resolve(int64_t ndim, const char* op) const;
};

// ---- creation -----------------------------------------------------------------------------------------
/// A 1-D array of the values, with the dtype of T (float -> f32, double -> f64, int -> i32, ...).
template <class T>
Array array(const std::vector<T>& values, const Shape& shape);
template <class T>
Array array(std::initializer_list<T> values) {
  return array(std::vector<T>(values), Shape{static_cast<int64_t>(values.size())});
}
/// A 2-D array from nested lists: array({{1.0f, 2.0f}, {3.0f, 4.0f}}).
template <class T>
Array array(std::initializer_list<std::initializer_list<T>> rows) {
  std::vector<T> v;
  int64_t cols = rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (auto& r : rows) {
    if (static_cast<int64_t>(r.size()) != cols) fail<ShapeError>("array: rows have different lengths");
    v.insert(v.end(), r.begin(), r.end());
  }
  return array(v, Shape{static_cast<int64_t>(rows.size()), cols});
}
/// An array of `shape` from row-major data (its size must match).
template <class T>
Array array(const std::vector<T>& values, const Shape& shape) {  // NOLINT: defined after its declaration
  if (numel(shape) != static_cast<int64_t>(values.size()))
    fail<ShapeError>("array: ", values.size(), " values do not fill shape (", shape_str(shape), ")");
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> b(values.begin(), values.end());
    return Array::from_data(b.data(), shape, DType::bool_);
  } else {
    return Array::from_data(values.data(), shape, dtype_v<T>);
  }
}
template <class T>
Array array(const std::vector<T>& values) {
  return array(values, Shape{static_cast<int64_t>(values.size())});
}
/// A rank-0 array (strongly typed, unlike the implicit scalar conversion).
template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
Array array(T value) {
  return Array::from_data(&value, {}, dtype_v<T>);
}
/// Converts x to dtype d (a copy of the data for concrete arrays: all arrays are immutable).
Array asarray(const Array& x, std::optional<DType> d = std::nullopt);

Array full(const Shape& shape, double value, DType d = DType::f32);
Array zeros(const Shape& shape, DType d = DType::f32);
Array ones(const Shape& shape, DType d = DType::f32);
Array full_like(const Array& x, double value, std::optional<DType> d = std::nullopt);
Array zeros_like(const Array& x, std::optional<DType> d = std::nullopt);
Array ones_like(const Array& x, std::optional<DType> d = std::nullopt);
/// [0, stop) and [start, stop) with step; integer arguments give i32, others f32 unless d is given.
Array arange(double stop, std::optional<DType> d = std::nullopt);
Array arange(double start, double stop, double step = 1, std::optional<DType> d = std::nullopt);
Array linspace(double start, double stop, int64_t num, DType d = DType::f32, bool endpoint = true);
Array eye(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType d = DType::f32);
/// JAX's iota as a NumPy-style op: values along `dimension` of `shape`.
Array iota(DType d, const Shape& shape, int64_t dimension = 0);

// ---- elementwise: unary --------------------------------------------------------------------------------
Array negative(const Array& x);
/// |x|; the modulus of complex x (a real array: c64 -> f32).
Array abs(const Array& x);
/// NumPy's real / imag / conj / angle: the parts of complex x (real x: x itself, zeros, x, 0 or pi);
/// angle in radians, or degrees with deg = true. complex(re, im) promotes re and im to one floating dtype
/// (integers to the default float) and builds c64 (c128 from f64).
Array real(const Array& x);
Array imag(const Array& x);
Array conj(const Array& x);
Array angle(const Array& x, bool deg = false);
Array complex(const Array& re, const Array& im);
Array sign(const Array& x);
Array floor(const Array& x);
Array ceil(const Array& x);
/// Rounds half to even, like NumPy.
Array round(const Array& x);
Array exp(const Array& x);
Array exp2(const Array& x);
Array log(const Array& x);
Array log1p(const Array& x);
Array log2(const Array& x);
Array log10(const Array& x);
Array expm1(const Array& x);
Array sqrt(const Array& x);
Array rsqrt(const Array& x);
Array cbrt(const Array& x);
Array square(const Array& x);
Array reciprocal(const Array& x);
Array sin(const Array& x);
Array cos(const Array& x);
Array tan(const Array& x);
Array arcsin(const Array& x);
Array arccos(const Array& x);
Array arctan(const Array& x);
Array sinh(const Array& x);
Array cosh(const Array& x);
Array tanh(const Array& x);
Array arcsinh(const Array& x);
Array arccosh(const Array& x);
Array arctanh(const Array& x);
Array erf(const Array& x);
Array erfc(const Array& x);
Array erfinv(const Array& x);
Array sigmoid(const Array& x);
Array isfinite(const Array& x);
Array isnan(const Array& x);
Array isinf(const Array& x);
Array logical_not(const Array& x);
Array bitwise_not(const Array& x);
/// Blocks differentiation: the value passes, the derivative is zero.
Array stop_gradient(const Array& x);
/// x copied to device `d` and committed there (JAX's jax.device_put): operations on it run on `d`;
/// operands committed to two different devices are an error naming both. Differentiable (the
/// gradient stays on `d`).
///   graft::Array g = graft::device_put(x, graft::Device::cuda());   // g.device() is cuda:0
Array device_put(const Array& x, Device d);

// activations
Array relu(const Array& x);
Array relu6(const Array& x);
Array leaky_relu(const Array& x, double negative_slope = 0.01);
/// GELU (tanh approximation unless approximate = false).
Array gelu(const Array& x, bool approximate = true);
Array silu(const Array& x);
Array softplus(const Array& x);
Array log_sigmoid(const Array& x);
Array elu(const Array& x, double alpha = 1.0);

// ---- elementwise: binary (promotion + broadcasting) ---------------------------------------------------------
Array add(const Array& a, const Array& b);
Array subtract(const Array& a, const Array& b);
Array multiply(const Array& a, const Array& b);
/// True division: integer operands give floats.
Array divide(const Array& a, const Array& b);
Array floor_divide(const Array& a, const Array& b);
/// Remainder with the sign of the divisor (NumPy's mod).
Array remainder(const Array& a, const Array& b);
Array power(const Array& a, const Array& b);
Array maximum(const Array& a, const Array& b);
Array minimum(const Array& a, const Array& b);
Array arctan2(const Array& a, const Array& b);
Array logaddexp(const Array& a, const Array& b);
Array logical_and(const Array& a, const Array& b);
Array logical_or(const Array& a, const Array& b);
Array logical_xor(const Array& a, const Array& b);
Array bitwise_and(const Array& a, const Array& b);
Array bitwise_or(const Array& a, const Array& b);
Array bitwise_xor(const Array& a, const Array& b);
Array left_shift(const Array& a, const Array& b);
Array right_shift(const Array& a, const Array& b);
Array equal(const Array& a, const Array& b);
Array not_equal(const Array& a, const Array& b);
Array less(const Array& a, const Array& b);
Array less_equal(const Array& a, const Array& b);
Array greater(const Array& a, const Array& b);
Array greater_equal(const Array& a, const Array& b);
Array isclose(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-8);
/// Whether all elements are close (concrete; raises ConcretizationError under jit/vmap).
bool allclose(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-8);
bool array_equal(const Array& a, const Array& b);

Array operator+(const Array& a, const Array& b);
Array operator-(const Array& a, const Array& b);
Array operator*(const Array& a, const Array& b);
Array operator/(const Array& a, const Array& b);
Array operator%(const Array& a, const Array& b);
Array operator-(const Array& a);
Array operator<(const Array& a, const Array& b);
Array operator<=(const Array& a, const Array& b);
Array operator>(const Array& a, const Array& b);
Array operator>=(const Array& a, const Array& b);
Array operator==(const Array& a, const Array& b);
Array operator!=(const Array& a, const Array& b);
Array operator&(const Array& a, const Array& b);
Array operator|(const Array& a, const Array& b);
Array operator^(const Array& a, const Array& b);
Array operator~(const Array& a);
Array operator!(const Array& a);
inline Array& operator+=(Array& a, const Array& b) { return a = a + b; }
inline Array& operator-=(Array& a, const Array& b) { return a = a - b; }
inline Array& operator*=(Array& a, const Array& b) { return a = a * b; }
inline Array& operator/=(Array& a, const Array& b) { return a = a / b; }

// ---- selection ------------------------------------------------------------------------------------------
/// cond ? x : y elementwise, with broadcasting and promotion of x and y.
Array where(const Array& cond, const Array& x, const Array& y);
/// Limits values to [lo, hi] (either may be omitted).
Array clip(const Array& x, std::optional<Array> lo, std::optional<Array> hi);

// ---- reductions -------------------------------------------------------------------------------------------
Array sum(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array prod(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array max(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array min(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array mean(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array var(const Array& x, AxisArg axis = {}, bool keepdims = false, int64_t ddof = 0);
Array std(const Array& x, AxisArg axis = {}, bool keepdims = false, int64_t ddof = 0);
Array all(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array any(const Array& x, AxisArg axis = {}, bool keepdims = false);
/// Index of the maximum along `axis` (of the flattened array when unset); i32.
Array argmax(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Array argmin(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
/// log(sum(exp(x))) computed stably.
Array logsumexp(const Array& x, AxisArg axis = {}, bool keepdims = false);
Array softmax(const Array& x, int64_t axis = -1);
Array log_softmax(const Array& x, int64_t axis = -1);
/// Cumulative sum along `axis` (of the flattened array when unset).
Array cumsum(const Array& x, std::optional<int64_t> axis = std::nullopt, bool reverse = false);
Array cumprod(const Array& x, std::optional<int64_t> axis = std::nullopt);
Array cummax(const Array& x, int64_t axis = 0);
Array cummin(const Array& x, int64_t axis = 0);
Array norm(const Array& x, AxisArg axis = {}, bool keepdims = false);

// ---- sorting ------------------------------------------------------------------------------------------------
Array sort(const Array& x, int64_t axis = -1);
Array argsort(const Array& x, int64_t axis = -1);

// ---- shape manipulation -------------------------------------------------------------------------------------
/// One entry of `shape` may be -1 (inferred).
Array reshape(const Array& x, const Shape& shape);
Array ravel(const Array& x);
Array flatten(const Array& x);
/// Reverses the axes when `axes` is empty.
Array transpose(const Array& x, const Axes& axes = {});
Array swapaxes(const Array& x, int64_t a, int64_t b);
Array moveaxis(const Array& x, int64_t source, int64_t destination);
Array expand_dims(const Array& x, AxisArg axis);
/// Removes the given size-1 axes (all size-1 axes when unset).
Array squeeze(const Array& x, AxisArg axis = {});
Array broadcast_to(const Array& x, const Shape& shape);
std::vector<Array> broadcast_arrays(const std::vector<Array>& xs);
Array concatenate(const std::vector<Array>& xs, int64_t axis = 0);
Array stack(const std::vector<Array>& xs, int64_t axis = 0);
/// Splits into `sections` equal parts along axis.
std::vector<Array> split(const Array& x, int64_t sections, int64_t axis = 0);
/// Splits at the given indices along axis.
std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis = 0);
Array flip(const Array& x, AxisArg axis = {});
Array tile(const Array& x, const Shape& reps);
Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis = std::nullopt);
/// pad_width: one (before, after) pair per axis; constant padding with `value`.
Array pad(const Array& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width, double value = 0);
Array atleast_1d(const Array& x);
Array atleast_2d(const Array& x);
/// Returns x with dtype d (conversion follows C++ casts; float -> int truncates).
Array astype(const Array& x, DType d);

// ---- linear algebra -----------------------------------------------------------------------------------------
/// NumPy matmul: 1-D operands are promoted, leading (batch) dimensions broadcast.
Array matmul(const Array& a, const Array& b);
Array dot(const Array& a, const Array& b);
Array vdot(const Array& a, const Array& b);
Array inner(const Array& a, const Array& b);
Array outer(const Array& a, const Array& b);
/// Contracts the last `axes` dims of a with the first of b.
Array tensordot(const Array& a, const Array& b, int64_t axes = 2);
Array tensordot(const Array& a, const Array& b, const Axes& a_axes, const Axes& b_axes);
/// Einstein summation over explicit subscripts, e.g. einsum("ij,jk->ik", {a, b}).
Array einsum(const std::string& subscripts, const std::vector<Array>& operands);
Array trace(const Array& x);
Array diagonal(const Array& x);

// ---- indexing ---------------------------------------------------------------------------------------------
/// x[idx] with NumPy semantics (ints, slices, newaxis, ellipsis, integer arrays, concrete boolean masks).
Array index(const Array& x, const Index& idx);

/// The result of `x.at(idx)`: functional index updates (JAX's `.at[...]`).
struct AtRef {
  Array x;
  Index idx;
  Array get() const;
  Array set(const Array& v) const;
  Array add(const Array& v) const;
  Array mul(const Array& v) const;
  Array min(const Array& v) const;
  Array max(const Array& v) const;
};
Array take(const Array& x, const Array& indices, std::optional<int64_t> axis = std::nullopt);
Array take_along_axis(const Array& x, const Array& indices, int64_t axis);
/// one_hot(labels, n): labels[..., None] == arange(n), as dtype d.
Array one_hot(const Array& labels, int64_t num_classes, DType d = DType::f32, int64_t axis = -1);

// ---- collectives over named axes --------------------------------------------------------------------------
// Inside vmap(f, {.axis_name = "i"}), shard_map and pmap: combine the values of every member (lane,
// device, process) of the named axes. Reverse mode is exact: grad of a loss ending in psum is the
// full-batch gradient (see graft/core/axis_names.h).
/// One axis name or several: psum(x, "i"), psum(x, {"data", "model"}).
struct AxisNameArg {
  std::vector<std::string> names;
  AxisNameArg(const char* n) : names{n} {}                                   // NOLINT
  AxisNameArg(std::string n) : names{std::move(n)} {}                        // NOLINT
  AxisNameArg(std::initializer_list<std::string> n) : names(n) {}            // NOLINT
  AxisNameArg(std::vector<std::string> n) : names(std::move(n)) {}           // NOLINT
};
/// The sum over the members (every member gets it; the result is invariant over the axes).
Array psum(const Array& x, const AxisNameArg& axes);
Array pmean(const Array& x, const AxisNameArg& axes);
Array pmax(const Array& x, const AxisNameArg& axes);
Array pmin(const Array& x, const AxisNameArg& axes);
/// Every member's x stacked along a new dimension `axis` (tiled: concatenated along `axis`).
Array all_gather(const Array& x, const std::string& axis_name, int64_t axis = 0, bool tiled = false);
/// all_gather whose result is typed invariant over the axis (every member holds the same whole).
Array all_gather_invariant(const Array& x, const std::string& axis_name, int64_t axis = 0, bool tiled = false);
/// psum, each member keeping its block of dimension `scatter_dimension`.
Array psum_scatter(const Array& x, const std::string& axis_name, int64_t scatter_dimension = 0, bool tiled = false);
/// For each (source, destination) pair, the destination receives the source's x (others: zeros).
Array ppermute(const Array& x, const std::string& axis_name, const std::vector<std::pair<int64_t, int64_t>>& perm);
/// Block k of x's split_axis goes to member k; the received blocks are concatenated along concat_axis.
Array all_to_all(const Array& x, const std::string& axis_name, int64_t split_axis, int64_t concat_axis,
                 bool tiled = false);
/// This member's position along the axis (i32 scalar).
Array axis_index(const std::string& axis_name);
/// The number of members of the axis (a ValueError outside any map that binds it).
int64_t axis_size(const std::string& axis_name);

// ---- Array's method sugar (graft/core/array.h): x.astype(d), x.reshape(s), x.T(), x[idx], x.at(idx) ------
template <>
struct ArrayOps<void> {
  static Array astype(const Array& x, DType d) { return graft::astype(x, d); }
  static Array reshape(const Array& x, const Shape& s) { return graft::reshape(x, s); }
  static Array transpose(const Array& x) { return graft::transpose(x); }
  static Array index(const Array& x, const Index& idx) { return graft::index(x, idx); }
  static AtRef at(const Array& x, Index idx) { return AtRef{x, std::move(idx)}; }
};

}  // namespace graft
