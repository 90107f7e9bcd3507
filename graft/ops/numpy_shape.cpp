// jax.numpy's construction, splitting, joining and index functions (graft/ops/numpy_shape.h).
#include "graft/ops/numpy_shape.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "graft/core/error.h"
#include "graft/ops/internal.h"
#include "graft/prims/lax.h"

namespace graft {

using ops_detail::checked;

namespace {

int64_t axis_of(int64_t axis, int64_t ndim, const char* op) {
  int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) fail<ValueError>(op, ": axis ", axis, " is out of range for an array of rank ", ndim);
  return a;
}

Array i32s(const std::vector<int32_t>& v) { return array(v, {static_cast<int64_t>(v.size())}); }

// The slices [lo, hi) of x along `axis` between consecutive bounds.
std::vector<Array> cut(const Array& x, const std::vector<int64_t>& bounds, int64_t axis) {
  std::vector<Array> out;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    Shape start(static_cast<size_t>(x.ndim()), 0), limit = x.shape();
    start[static_cast<size_t>(axis)] = bounds[i];
    limit[static_cast<size_t>(axis)] = std::max(bounds[i], bounds[i + 1]);
    out.push_back(lax::slice(x, start, limit));
  }
  return out;
}

std::pair<Array, Array> triangle(int64_t n, int64_t k, std::optional<int64_t> m, bool lower, const char* op) {
  int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0) fail<ValueError>(op, ": negative dimensions ", n, " x ", cols);
  std::vector<int32_t> r, c;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (lower ? j - i <= k : j - i >= k) {
        r.push_back(static_cast<int32_t>(i));
        c.push_back(static_cast<int32_t>(j));
      }
  return {i32s(r), i32s(c)};
}

}  // namespace

// ---- construction ----------------------------------------------------------------------------------------
Array identity(int64_t n, DType d) { return eye(n, std::nullopt, 0, d); }

Array empty_like(const Array& x, std::optional<DType> d) { return zeros(checked(x, "empty_like").shape(), d.value_or(x.dtype())); }

Array geomspace(double start, double stop, int64_t num, bool endpoint, DType d) {
  if (start == 0 || stop == 0 || (start < 0) != (stop < 0))
    fail<ValueError>("geomspace: start and stop must be nonzero and of one sign, got ", start, " and ", stop);
  double sign = start < 0 ? -1 : 1;
  Array r = power(Array::scalar(10.0, d), linspace(std::log10(sign * start), std::log10(sign * stop), num, d, endpoint));
  // the ends exactly (NumPy pins them)
  if (num > 0) r = r.at({0}).set(Array::scalar(sign * start, d));
  if (num > 1 && endpoint) r = r.at({num - 1}).set(Array::scalar(sign * stop, d));
  return sign < 0 ? -r : r;
}

Array logspace(double start, double stop, int64_t num, bool endpoint, double base, DType d) {
  return power(Array::scalar(base, d), linspace(start, stop, num, d, endpoint));
}

std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing, bool sparse) {
  if (indexing != "xy" && indexing != "ij")
    fail<ValueError>("meshgrid: indexing must be 'xy' or 'ij', got '", indexing, "'");
  size_t n = xs.size();
  bool swap = indexing == "xy" && n >= 2;
  Shape shape;
  for (auto& x : xs) shape.push_back(checked(x, "meshgrid").size());
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Array> out;
  for (size_t i = 0; i < n; ++i) {
    size_t pos = swap && i < 2 ? 1 - i : i;
    Shape s(n, 1);
    s[pos] = xs[i].size();
    Array r = reshape(ravel(xs[i]), s);
    out.push_back(sparse ? r : broadcast_to(r, shape));
  }
  return out;
}

Array indices(const Shape& dims, DType d) {
  std::vector<Array> grids;
  for (size_t k = 0; k < dims.size(); ++k) grids.push_back(iota(d, dims, static_cast<int64_t>(k)));
  if (grids.empty()) return zeros({0}, d);
  return stack(grids, 0);
}

Array diagflat(const Array& v, int64_t k) {
  Array f = ravel(checked(v, "diagflat"));
  int64_t m = f.size(), n = m + std::abs(k);
  // each entry i lands at row i + max(0, -k), column i + max(0, k) of the n x n zeros
  Array rows = arange(0.0, static_cast<double>(m), 1.0, DType::i32) + Array::scalar(static_cast<double>(std::max<int64_t>(0, -k)), DType::i32);
  Array flat = rows * Array::scalar(static_cast<double>(n + 1), DType::i32) + Array::scalar(static_cast<double>(k), DType::i32);
  return reshape(zeros({n * n}, f.dtype()).at({flat}).set(f), {n, n});
}

// ---- coordinates ----------------------------------------------------------------------------------------
std::pair<Array, Array> tril_indices(int64_t n, int64_t k, std::optional<int64_t> m) {
  return triangle(n, k, m, true, "tril_indices");
}
std::pair<Array, Array> triu_indices(int64_t n, int64_t k, std::optional<int64_t> m) {
  return triangle(n, k, m, false, "triu_indices");
}
std::pair<Array, Array> tril_indices_from(const Array& x, int64_t k) {
  if (checked(x, "tril_indices_from").ndim() < 2) fail<ValueError>("tril_indices_from: needs at least 2 dimensions, got ", x.aval().str());
  return tril_indices(x.shape()[x.ndim() - 2], k, x.shape()[x.ndim() - 1]);
}
std::pair<Array, Array> triu_indices_from(const Array& x, int64_t k) {
  if (checked(x, "triu_indices_from").ndim() < 2) fail<ValueError>("triu_indices_from: needs at least 2 dimensions, got ", x.aval().str());
  return triu_indices(x.shape()[x.ndim() - 2], k, x.shape()[x.ndim() - 1]);
}

std::vector<Array> diag_indices(int64_t n, int64_t ndim) {
  if (n < 0 || ndim < 0) fail<ValueError>("diag_indices: negative size ", n, " or rank ", ndim);
  return std::vector<Array>(static_cast<size_t>(ndim), arange(0.0, static_cast<double>(n), 1.0, DType::i32));
}

std::vector<Array> diag_indices_from(const Array& x) {
  checked(x, "diag_indices_from");
  if (x.ndim() < 2) fail<ValueError>("diag_indices_from: needs at least 2 dimensions, got ", x.aval().str());
  for (auto s : x.shape())
    if (s != x.shape()[0]) fail<ValueError>("diag_indices_from: every dimension must have one length, got ", x.aval().str());
  return diag_indices(x.shape()[0], x.ndim());
}

std::vector<Array> unravel_index(const Array& flat, const Shape& shape) {
  checked(flat, "unravel_index");
  if (is_floating(flat.dtype())) fail<TypeError>("unravel_index: indices must be integers, got ", flat.aval().str());
  std::vector<Array> out(shape.size());
  Array rem = flat;
  for (size_t k = shape.size(); k-- > 0;) {
    Array d = Array::scalar(static_cast<double>(shape[k]), flat.dtype());
    out[k] = rem % d;
    rem = floor_divide(rem, d);
  }
  return out;
}

Array ravel_multi_index(const std::vector<Array>& coords, const Shape& dims, const std::string& mode) {
  if (coords.size() != dims.size())
    fail<ValueError>("ravel_multi_index: ", coords.size(), " coordinate arrays for ", dims.size(), " dimensions");
  if (mode != "raise" && mode != "clip" && mode != "wrap")
    fail<ValueError>("ravel_multi_index: mode must be 'raise', 'clip' or 'wrap', got '", mode, "'");
  if (coords.empty()) return Array::scalar(0, DType::i32);
  Array flat;
  for (size_t k = 0; k < dims.size(); ++k) {
    Array i = checked(coords[k], "ravel_multi_index");
    if (is_floating(i.dtype())) fail<TypeError>("ravel_multi_index: coordinates must be integers, got ", i.aval().str());
    Array d = Array::scalar(static_cast<double>(dims[k]), i.dtype());
    if (mode == "clip") i = clip(i, Array::scalar(0, i.dtype()), d - Array::scalar(1, i.dtype()));
    if (mode == "wrap") i = i % d;
    if (mode == "raise" && !i.is_tracer() && i.size() &&
        ((min(i) < Array::scalar(0, i.dtype())).item<bool>() || (max(i) >= d).item<bool>()))
      fail<ValueError>("ravel_multi_index: a coordinate along dimension ", k, " is outside [0, ", dims[k], ")");
    flat = flat.valid() ? flat * d + i : i;
  }
  return flat;
}

// ---- splitting and joining ------------------------------------------------------------------------------
std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis) {
  int64_t a = axis_of(axis, checked(x, "array_split").ndim(), "array_split");
  if (sections <= 0) fail<ValueError>("array_split: the number of sections must be positive, got ", sections);
  int64_t n = x.shape()[a], base = n / sections, extra = n % sections;
  std::vector<int64_t> bounds{0};
  for (int64_t i = 0; i < sections; ++i) bounds.push_back(bounds.back() + base + (i < extra ? 1 : 0));
  return cut(x, bounds, a);
}

std::vector<Array> array_split(const Array& x, const std::vector<int64_t>& cuts, int64_t axis) {
  int64_t a = axis_of(axis, checked(x, "array_split").ndim(), "array_split");
  int64_t n = x.shape()[a];
  std::vector<int64_t> bounds{0};
  for (int64_t c : cuts) bounds.push_back(std::clamp<int64_t>(c < 0 ? c + n : c, 0, n));
  bounds.push_back(n);
  return cut(x, bounds, a);
}

std::vector<Array> hsplit(const Array& x, int64_t sections) {
  return split(x, sections, checked(x, "hsplit").ndim() > 1 ? 1 : 0);
}
std::vector<Array> vsplit(const Array& x, int64_t sections) {
  if (checked(x, "vsplit").ndim() < 2) fail<ValueError>("vsplit: needs at least 2 dimensions, got ", x.aval().str());
  return split(x, sections, 0);
}
std::vector<Array> dsplit(const Array& x, int64_t sections) {
  if (checked(x, "dsplit").ndim() < 3) fail<ValueError>("dsplit: needs at least 3 dimensions, got ", x.aval().str());
  return split(x, sections, 2);
}

std::vector<Array> unstack(const Array& x, int64_t axis) {
  int64_t a = axis_of(axis, checked(x, "unstack").ndim(), "unstack");
  std::vector<Array> out;
  for (int64_t i = 0; i < x.shape()[a]; ++i) out.push_back(squeeze(lax::slice_in_dim(x, i, i + 1, 1, a), {a}));
  return out;
}

Array append(const Array& x, const Array& values, std::optional<int64_t> axis) {
  if (!axis) return concatenate({ravel(x), ravel(values)}, 0);
  return concatenate({x, values}, *axis);
}

Array delete_entries(const Array& x, const std::vector<int64_t>& positions, std::optional<int64_t> axis) {
  Array a = axis ? checked(x, "delete") : ravel(checked(x, "delete"));
  int64_t ax = axis_of(axis.value_or(0), a.ndim(), "delete");
  int64_t n = a.shape()[ax];
  std::vector<bool> drop(static_cast<size_t>(n), false);
  for (int64_t p : positions) {
    int64_t q = p < 0 ? p + n : p;
    if (q < 0 || q >= n) fail<ValueError>("delete: position ", p, " is out of range for a dimension of ", n);
    drop[static_cast<size_t>(q)] = true;
  }
  std::vector<int32_t> keep;
  for (int64_t i = 0; i < n; ++i)
    if (!drop[static_cast<size_t>(i)]) keep.push_back(static_cast<int32_t>(i));
  return take(a, i32s(keep), ax);
}

Array insert(const Array& x, const std::vector<int64_t>& positions, const Array& values, std::optional<int64_t> axis) {
  Array a = axis ? checked(x, "insert") : ravel(checked(x, "insert"));
  int64_t ax = axis_of(axis.value_or(0), a.ndim(), "insert");
  int64_t n = a.shape()[ax], k = static_cast<int64_t>(positions.size());
  // the combined order: entry i keyed 2i + 1, a value inserted before position p keyed 2p (stable)
  std::vector<std::pair<int64_t, int32_t>> keys;
  for (int64_t i = 0; i < n; ++i) keys.push_back({2 * i + 1, static_cast<int32_t>(i)});
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = positions[static_cast<size_t>(j)] < 0 ? positions[static_cast<size_t>(j)] + n : positions[static_cast<size_t>(j)];
    if (p < 0 || p > n) fail<ValueError>("insert: position ", positions[static_cast<size_t>(j)], " is out of range for a dimension of ", n);
    keys.push_back({2 * p, static_cast<int32_t>(n + j)});
  }
  std::stable_sort(keys.begin(), keys.end(), [](auto& l, auto& r) { return l.first < r.first; });
  std::vector<int32_t> order;
  for (auto& kv : keys) order.push_back(kv.second);
  Shape vs = a.shape();
  vs[static_cast<size_t>(ax)] = k;
  Array v = values.ndim() == a.ndim() || values.size() != numel(vs) ? broadcast_to(values, vs) : reshape(values, vs);
  return take(concatenate({a, v.astype(a.dtype())}, ax), i32s(order), ax);
}

Array rollaxis(const Array& x, int64_t axis, int64_t start) {
  int64_t n = checked(x, "rollaxis").ndim();
  int64_t a = axis < 0 ? axis + n : axis, s = start < 0 ? start + n : start;
  if (a < 0 || a >= n || s < 0 || s > n)
    fail<ValueError>("rollaxis: axis ", axis, " or start ", start, " is out of range for ", n, " dimensions");
  if (a < s) --s;
  return moveaxis(x, a, s);
}

Array resize(const Array& x, const Shape& shape) {
  Array f = ravel(checked(x, "resize"));
  int64_t total = numel(shape);
  if (total == 0) return zeros(shape, f.dtype());
  if (f.size() == 0) fail<ValueError>("resize: an empty array cannot fill ", shape_str(shape));
  int64_t reps = (total + f.size() - 1) / f.size();
  return reshape(lax::slice(tile(f, {reps}), {0}, {total}), shape);
}

Array trim_zeros(const Array& x, const std::string& trim) {
  if (checked(x, "trim_zeros").ndim() != 1) fail<ValueError>("trim_zeros: x must be 1-D, got ", x.aval().str());
  if (trim != "f" && trim != "b" && trim != "fb" && trim != "bf")
    fail<ValueError>("trim_zeros: trim must be 'f', 'b' or 'fb', got '", trim, "'");
  std::vector<double> v = (x != zeros_like(x)).astype(DType::f64).to_vector<double>();
  int64_t lo = 0, hi = static_cast<int64_t>(v.size());
  if (trim.find('f') != std::string::npos)
    while (lo < hi && v[static_cast<size_t>(lo)] == 0) ++lo;
  if (trim.find('b') != std::string::npos)
    while (hi > lo && v[static_cast<size_t>(hi - 1)] == 0) --hi;
  return lax::slice(x, {lo}, {hi});
}

}  // namespace graft
