#include "graft/ops/numpy_sets.h"

#include <algorithm>
#include <cmath>
#include <bit>
#include <numeric>

#include "graft/ops/internal.h"
#include "graft/ops/numpy_more.h"
#include "graft/ops/numpy_shape.h"
#include "graft/ops/numpy_stats.h"

namespace graft {

namespace {

using ops_detail::checked;

DType index_dtype() { return default_int_dtype(); }

Array ints(const std::vector<int64_t>& v, DType d) { return astype(array(v, Shape{static_cast<int64_t>(v.size())}), d); }

Array scalar_of(double v, DType d) { return Array::scalar(v, d); }

// The number of true elements of a bool array, which must be concrete: a data-dependent length needs
// `size` under tracing.
int64_t concrete_count(const Array& mask, const char* op) {
  if (!mask.is_concrete())
    fail<ConcretizationError>(op, ": the result's length depends on the values; under jit, vmap or grad give "
                              "size= (and fill_value=)");
  return sum(astype(mask, DType::i64)).item<int64_t>();
}

// The positions of the true elements of the 1-D bool `flat`, the first `size` of them, padded with n; and
// whether each of the `size` slots holds one. A stable partition by sorting keys (true: i, false: i + n).
std::pair<Array, Array> true_positions(const Array& flat, int64_t size) {
  int64_t n = flat.shape()[0];
  DType id = n + n < (int64_t(1) << 31) ? DType::i32 : DType::i64;
  Array pos = lax::iota(id, {n});
  Array key = where(flat, pos, pos + scalar_of(static_cast<double>(n), id));
  Array order = n == 0 ? key : sort(key);
  Array idx;
  if (size <= n) {
    idx = lax::slice_in_dim(order, 0, size, 1, 0);
  } else {
    idx = concatenate({order, full({size - n}, static_cast<double>(2 * n), id)});
  }
  Array valid = idx < scalar_of(static_cast<double>(n), id);
  return {where(valid, idx, zeros({}, id)), valid};
}

// The length of a data-dependent result: `size`, or the concrete count of `mask`'s true entries.
int64_t result_size(std::optional<int64_t> size, const Array& mask, const char* op) {
  if (!size) return concrete_count(mask, op);
  if (*size < 0) fail<ValueError>(op, ": size must be non-negative, got ", *size);
  return *size;
}

// Indices into n entries under NumPy's `mode`: "wrap" (modulo n), "clip" (into [0, n)), "raise" (concrete
// indices checked against [0, n), or [-n, n) with `allow_negative`) or, where `fill` is allowed, "fill" (as given:
// the update drops those out of range).
Array index_mode(const Array& idx, int64_t n, const std::string& mode, bool allow_negative, bool fill, const char* op) {
  Array nn = scalar_of(static_cast<double>(n), DType::i64), zero = scalar_of(0, DType::i64);
  if (mode == "wrap") return remainder(idx, nn);
  if (mode == "clip") return clip(idx, zero, nn - scalar_of(1, DType::i64));
  if (mode == "raise") {
    if (!idx.is_concrete())
      fail<ConcretizationError>(op, ": mode 'raise' checks concrete indices; under jit use ", fill ? "'fill', " : "",
                                "'wrap' or 'clip'");
    if (idx.size() && any((idx < (allow_negative ? negative(nn) : zero)) | (idx >= nn)).item<bool>())
      fail<ValueError>(op, ": an index is out of range for ", n, " entries");
    return idx;
  }
  if (fill && mode == "fill") return idx;
  fail<ValueError>(op, ": mode must be ", fill ? "'fill', " : "", "'raise', 'wrap' or 'clip', got '", mode, "'");
}

}  // namespace

// ---- where the values are ------------------------------------------------------------------------------

std::vector<Array> nonzero(const Array& a0, std::optional<int64_t> size, std::optional<double> fill_value) {
  const Array& a = checked(a0, "nonzero");
  if (a.ndim() == 0) fail<ValueError>("nonzero: not defined for rank-0 arrays (use atleast_1d first)");
  Array flat = ravel(a) != scalar_of(0, a.dtype());
  int64_t k = result_size(size, flat, "nonzero");
  auto [pos, valid] = true_positions(flat, k);
  pos = astype(pos, index_dtype());
  std::vector<Array> out(static_cast<size_t>(a.ndim()));
  Array rem = pos;
  for (int64_t d = a.ndim() - 1; d >= 0; --d) {
    Array n = scalar_of(static_cast<double>(a.shape()[d]), index_dtype());
    out[static_cast<size_t>(d)] = remainder(rem, n);
    rem = floor_divide(rem, n);
  }
  Array fill = scalar_of(fill_value.value_or(0), index_dtype());
  for (Array& o : out) o = where(valid, o, fill);
  return out;
}

Array flatnonzero(const Array& a, std::optional<int64_t> size, std::optional<double> fill_value) {
  return nonzero(ravel(checked(a, "flatnonzero")), size, fill_value)[0];
}

Array argwhere(const Array& a, std::optional<int64_t> size, std::optional<double> fill_value) {
  checked(a, "argwhere");
  if (a.ndim() == 0) {
    Array hit = a != scalar_of(0, a.dtype());
    int64_t k = result_size(size, hit, "argwhere");
    return zeros({k, 0}, index_dtype());
  }
  std::vector<Array> idx = nonzero(a, size, fill_value);
  return stack(idx, 1);
}

Array extract(const Array& condition, const Array& arr, std::optional<int64_t> size, double fill_value) {
  Array flat = ravel(checked(arr, "extract"));
  Array c = ravel(checked(condition, "extract")) != scalar_of(0, condition.dtype());
  if (c.shape()[0] != flat.shape()[0])
    fail<ShapeError>("extract: condition has ", c.shape()[0], " elements and arr ", flat.shape()[0]);
  int64_t k = result_size(size, c, "extract");
  if (flat.shape()[0] == 0) return full({k}, fill_value, flat.dtype());
  auto [pos, valid] = true_positions(c, k);
  return where(valid, take(flat, pos), scalar_of(fill_value, flat.dtype()));
}

Array compress(const Array& condition, const Array& a, std::optional<int64_t> axis, std::optional<int64_t> size,
               double fill_value) {
  checked(condition, "compress");
  if (condition.ndim() != 1) fail<ShapeError>("compress: condition must be 1-D, got ", condition.aval().str());
  Array x = axis ? checked(a, "compress") : ravel(checked(a, "compress"));
  int64_t ax = axis ? normalize_axis(*axis, x.ndim(), "compress") : 0;
  int64_t len = std::min(condition.shape()[0], x.shape()[ax]);
  if (condition.shape()[0] > len && condition.is_concrete() &&
      any(lax::slice_in_dim(condition, len, condition.shape()[0], 1, 0) != scalar_of(0, condition.dtype())).item<bool>())
    fail<ValueError>("compress: condition selects entry ", len, " or later of an axis of ", x.shape()[ax]);
  Array c = lax::slice_in_dim(condition, 0, len, 1, 0) != scalar_of(0, condition.dtype());
  int64_t k = result_size(size, c, "compress");
  if (len == 0) {
    Shape out = x.shape();
    out[ax] = k;
    return full(out, fill_value, x.dtype());
  }
  auto [pos, valid] = true_positions(c, k);
  Array picked = take(x, pos, ax);
  Shape vs(static_cast<size_t>(picked.ndim()), 1);
  vs[ax] = k;
  return where(reshape(valid, vs), picked, scalar_of(fill_value, x.dtype()));
}

Array choose(const Array& a0, const std::vector<Array>& choices, const std::string& mode) {
  const Array& a = checked(a0, "choose");
  if (choices.empty()) fail<ValueError>("choose: needs at least one choice");
  if (!is_integer(a.dtype()) && a.dtype() != DType::bool_)
    fail<TypeError>("choose: the index array must be integer, got ", a.aval().str());
  int64_t n = static_cast<int64_t>(choices.size());
  Array idx = index_mode(astype(a, DType::i64), n, mode, /*allow_negative=*/false, /*fill=*/false, "choose");
  std::vector<Array> all = choices;
  all.push_back(idx);
  Shape s = all[0].shape();
  for (const Array& c : all) s = graft::broadcast_shapes(s, checked(c, "choose").shape(), "choose");
  std::vector<Array> cs;
  for (size_t i = 0; i + 1 < all.size(); ++i) cs.push_back(broadcast_to(all[i], s));
  Array stacked = stack(cs, 0);
  return squeeze(take_along_axis(stacked, expand_dims(broadcast_to(idx, s), 0), 0), Axes{0});
}

Array lexsort(const std::vector<Array>& keys, int64_t axis) {
  if (keys.empty()) fail<TypeError>("lexsort: needs at least one key");
  const Shape& s = checked(keys[0], "lexsort").shape();
  for (const Array& k : keys)
    if (checked(k, "lexsort").shape() != s) fail<ShapeError>("lexsort: all keys must have one shape");
  if (s.empty()) fail<ValueError>("lexsort: keys must have at least one dimension");
  int64_t ax = normalize_axis(axis, static_cast<int64_t>(s.size()), "lexsort");
  std::vector<Array> ops(keys.rbegin(), keys.rend());  // the last key is the primary one
  ops.push_back(lax::iota(index_dtype(), s, ax));
  Arrays sorted = lax::sort(ops, ax, /*is_stable=*/true, static_cast<int64_t>(keys.size()));
  return sorted.back();
}

Array partition(const Array& a, int64_t kth, int64_t axis) {
  checked(a, "partition");
  int64_t ax = normalize_axis(axis, a.ndim(), "partition");
  if (kth < -a.shape()[ax] || kth >= a.shape()[ax])
    fail<ValueError>("partition: kth ", kth, " is out of range for an axis of ", a.shape()[ax]);
  return sort(a, ax);
}

Array argpartition(const Array& a, int64_t kth, int64_t axis) {
  checked(a, "argpartition");
  int64_t ax = normalize_axis(axis, a.ndim(), "argpartition");
  if (kth < -a.shape()[ax] || kth >= a.shape()[ax])
    fail<ValueError>("argpartition: kth ", kth, " is out of range for an axis of ", a.shape()[ax]);
  return argsort(a, ax);
}

std::pair<Array, Array> top_k(const Array& x, int64_t k) {
  checked(x, "top_k");
  if (x.ndim() == 0) fail<ValueError>("top_k: needs at least one dimension");
  int64_t n = x.shape().back(), last = x.ndim() - 1;
  if (k < 0 || k > n) fail<ValueError>("top_k: k = ", k, " for a last axis of ", n);
  // descending and stable: sort ascending by a key that reverses the order
  // (integers through bitwise_not, which reverses their order without overflow: -INT_MIN wraps)
  Array key = x.dtype() == DType::bool_ ? !x : is_integer(x.dtype()) ? bitwise_not(x) : negative(x);
  Arrays sorted = lax::sort(std::vector<Array>{key, lax::iota(DType::i32, x.shape(), last)}, last, true, 1);
  Array idx = lax::slice_in_dim(sorted[1], 0, k, 1, last);
  return {take_along_axis(x, idx, last), idx};
}

// ---- sets ---------------------------------------------------------------------------------------------------

UniqueResult unique_all(const Array& x0, std::optional<int64_t> size, std::optional<double> fill_value) {
  const Array& x = checked(x0, "unique");
  Array flat = ravel(x);
  int64_t n = flat.shape()[0];
  DType id = index_dtype();
  if (n == 0) {
    int64_t k = size.value_or(0);
    Array vals = full({k}, fill_value.value_or(0), flat.dtype());
    return {vals, zeros({k}, id), zeros(x.shape(), id), zeros({k}, id)};
  }
  Array perm = argsort(flat);
  Array s = take(flat, perm);
  // a run of equal values starts where the sorted value changes (NaNs, sorted last, make one run)
  Array head = full({1}, 1, DType::bool_);
  if (n > 1) {
    Array a = lax::slice_in_dim(s, 1, n, 1, 0), b = lax::slice_in_dim(s, 0, n - 1, 1, 0);
    Array change = a != b;
    if (is_inexact(flat.dtype())) change = change & !(isnan(a) & isnan(b));
    head = concatenate({head, change});
  }
  int64_t k = result_size(size, head, "unique");
  // one start more than kept: the end of the last kept run
  auto [bounds, valid_all] = true_positions(head, k + 1);
  Array nn = scalar_of(static_cast<double>(n), bounds.dtype());
  bounds = where(valid_all, bounds, broadcast_to(nn, bounds.shape()));
  Array starts = lax::slice_in_dim(bounds, 0, k, 1, 0), ends = lax::slice_in_dim(bounds, 1, k + 1, 1, 0);
  Array valid = lax::slice_in_dim(valid_all, 0, k, 1, 0);
  Array safe = minimum(starts, nn - scalar_of(1, bounds.dtype()));
  Array vals = take(s, safe);
  Array fill = fill_value ? scalar_of(*fill_value, flat.dtype()) : take(s, zeros({}, bounds.dtype()));
  UniqueResult r;
  r.values = where(valid, vals, fill);
  r.indices = astype(where(valid, take(perm, safe), zeros({}, perm.dtype())), id);
  r.counts = astype(where(valid, ends - starts, zeros({}, bounds.dtype())), id);
  Array group = cumsum(astype(head, id)) - scalar_of(1, id);
  r.inverse_indices = reshape(take(group, argsort(perm)), x.shape());
  return r;
}

Array unique(const Array& x, std::optional<int64_t> size, std::optional<double> fill_value) {
  return unique_all(x, size, fill_value).values;
}
Array unique_values(const Array& x, std::optional<int64_t> size, std::optional<double> fill_value) {
  return unique_all(x, size, fill_value).values;
}
std::pair<Array, Array> unique_counts(const Array& x, std::optional<int64_t> size, std::optional<double> fill_value) {
  UniqueResult r = unique_all(x, size, fill_value);
  return {r.values, r.counts};
}
std::pair<Array, Array> unique_inverse(const Array& x, std::optional<int64_t> size, std::optional<double> fill_value) {
  UniqueResult r = unique_all(x, size, fill_value);
  return {r.values, r.inverse_indices};
}

Array isin(const Array& element, const Array& test_elements, bool invert) {
  Array e = checked(element, "isin");
  Array t = ravel(checked(test_elements, "isin"));
  int64_t m = t.shape()[0];
  if (m == 0) return full(e.shape(), invert ? 1 : 0, DType::bool_);
  // each element's place in the sorted test elements, and whether the value there is it: O((n + m) log m),
  // where comparing every pair would take n x m memory
  bool weak = false;
  DType d = ops_detail::result_type({&e, &t}, &weak);
  Array ts = sort(astype(t, d)), ec = astype(e, d);
  Array pos = clip(astype(searchsorted(ts, ravel(ec)), DType::i32), zeros({}, DType::i32),
                   full({}, static_cast<double>(m - 1), DType::i32));
  Array hit = reshape(take(ts, pos) == ravel(ec), e.shape());
  return invert ? !hit : hit;
}

namespace {
// The values of the 1-D `u` where `keep`, compacted and cut or padded to size.
Array kept(const Array& u, const Array& keep, std::optional<int64_t> size, std::optional<double> fill_value,
           const char* op) {
  int64_t k = result_size(size, keep, op);
  if (u.shape()[0] == 0) return full({k}, fill_value.value_or(0), u.dtype());
  auto [pos, valid] = true_positions(keep, k);
  Array fill = fill_value ? scalar_of(*fill_value, u.dtype())
                          : (u.shape()[0] ? take(u, zeros({}, DType::i32)) : zeros({}, u.dtype()));
  return where(valid, take(u, pos), fill);
}
// unique(x) for the set operations: concrete (its length), or padded past the end with repeats of its
// largest value and a mask of the real entries when sizes are given.
std::pair<Array, Array> distinct(const Array& x, std::optional<int64_t> size, const char* op) {
  Array flat = ravel(checked(x, op));
  int64_t n = flat.shape()[0];
  if (!size) {
    Array u = unique(flat);
    return {u, full(u.shape(), 1, DType::bool_)};
  }
  if (n == 0) return {flat, full({0}, 1, DType::bool_)};
  UniqueResult r = unique_all(flat, n);
  Array real = r.counts > zeros({}, r.counts.dtype());
  Array top = max(where(real, r.values, take(r.values, zeros({}, DType::i32))));
  return {where(real, r.values, broadcast_to(top, r.values.shape())), real};
}
}  // namespace

Array intersect1d(const Array& a, const Array& b, std::optional<int64_t> size, std::optional<double> fill_value) {
  auto [u, real] = distinct(a, size, "intersect1d");
  return kept(u, real & isin(u, b), size, fill_value, "intersect1d");
}

Array setdiff1d(const Array& a, const Array& b, std::optional<int64_t> size, std::optional<double> fill_value) {
  auto [u, real] = distinct(a, size, "setdiff1d");
  return kept(u, real & isin(u, b, /*invert=*/true), size, fill_value, "setdiff1d");
}

Array union1d(const Array& a, const Array& b, std::optional<int64_t> size, std::optional<double> fill_value) {
  Array both = concatenate({ravel(checked(a, "union1d")), ravel(checked(b, "union1d"))});
  return unique(both, size, fill_value);
}

Array setxor1d(const Array& a, const Array& b, std::optional<int64_t> size, std::optional<double> fill_value) {
  auto [ua, ra] = distinct(a, size, "setxor1d");
  auto [ub, rb] = distinct(b, size, "setxor1d");
  // in a's distinct values but not b's, or the other way round: the sorted union of the two differences
  Array only_a = ra & isin(ua, ub, true), only_b = rb & isin(ub, ua, true);
  Array vals = concatenate({ua, ub}), keep = concatenate({only_a, only_b});
  if (!size) return sort(kept(vals, keep, std::nullopt, fill_value, "setxor1d"));
  // traced: the kept values sorted first (the others pushed past them by the sort key)
  Array order = lax::sort(std::vector<Array>{astype(!keep, DType::i32), vals}, 0, true, 2)[1];
  Array nk = sum(astype(keep, DType::i64));
  int64_t m = vals.shape()[0];
  Array sorted = m >= *size ? lax::slice_in_dim(order, 0, *size, 1, 0)
                            : concatenate({order, zeros({*size - m}, vals.dtype())});
  Array valid = lax::iota(DType::i64, {*size}) < nk;
  Array fill = fill_value ? scalar_of(*fill_value, vals.dtype()) : take(sorted, zeros({}, DType::i32));
  return where(valid, sorted, fill);
}

// ---- comparing and updating ------------------------------------------------------------------------------

Array array_equiv(const Array& a, const Array& b) {
  checked(a, "array_equiv");
  checked(b, "array_equiv");
  try {
    (void)graft::broadcast_shapes(a.shape(), b.shape(), "array_equiv");
  } catch (const Error&) {
    return full({}, 0, DType::bool_);
  }
  return all(equal(a, b));
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  Shape s;
  for (const Shape& t : shapes) s = graft::broadcast_shapes(s, t, "broadcast_shapes");
  return s;
}

Array copy(const Array& a) { return lax::copy(checked(a, "copy")); }

namespace {
// x with its entries along `axis` at idx (normalized: negative counts from the end) set to vals, indices
// out of range dropped: they write to a scratch slot appended to the axis, cut off afterwards (a gather's
// clamping would overwrite the last entry under jit, and eager indexing would raise).
Array set_dropping(const Array& x, Index idx, int64_t axis, const Array& vals) {
  int64_t n = x.shape()[axis];
  Array& along = std::get<Array>(idx[static_cast<size_t>(axis)].v);
  Array nn = scalar_of(static_cast<double>(n), DType::i64);
  Array valid = (along >= negative(nn)) & (along < nn);
  along = where(valid, where(along < scalar_of(0, DType::i64), along + nn, along), broadcast_to(nn, along.shape()));
  std::vector<IntList> cfg(static_cast<size_t>(x.ndim()), IntList{0, 0, 0});
  cfg[static_cast<size_t>(axis)][1] = 1;
  Array padded = lax::pad(x, zeros({}, x.dtype()), cfg);
  return lax::slice_in_dim(AtRef{padded, std::move(idx)}.set(vals), 0, n, 1, axis);
}
}  // namespace

Array put(const Array& a, const Array& ind, const Array& v, const std::string& mode) {
  Array flat = ravel(checked(a, "put"));
  if (!is_integer(checked(ind, "put").dtype())) fail<TypeError>("put: indices must be integers, got ", ind.aval().str());
  Array idx = ravel(astype(ind, DType::i64));
  int64_t n = flat.shape()[0], k = idx.shape()[0];
  idx = index_mode(idx, n, mode, /*allow_negative=*/true, /*fill=*/true, "put");
  Array vals = ravel(astype(checked(v, "put"), flat.dtype()));
  if (k == 0 || vals.shape()[0] == 0) return a;  // NumPy: nothing to put
  if (vals.shape()[0] != k) vals = resize(vals, Shape{k});
  return reshape(set_dropping(flat, Index{idx}, 0, vals), a.shape());
}

Array put_along_axis(const Array& arr, const Array& indices, const Array& values, int64_t axis) {
  checked(arr, "put_along_axis");
  checked(indices, "put_along_axis");
  if (indices.ndim() != arr.ndim())
    fail<ShapeError>("put_along_axis: indices must have arr's rank ", arr.ndim(), ", got ", indices.aval().str());
  if (!is_integer(indices.dtype()))
    fail<TypeError>("put_along_axis: indices must be integers, got ", indices.aval().str());
  int64_t ax = normalize_axis(axis, arr.ndim(), "put_along_axis");
  // indices broadcast over arr's other axes, which are indexed by iotas (NumPy's fancy index of take_along_axis)
  Shape s = arr.shape();
  s[ax] = indices.shape()[ax];
  for (int64_t d = 0; d < arr.ndim(); ++d)
    if (d != ax && indices.shape()[d] != 1 && indices.shape()[d] != arr.shape()[d])
      fail<ShapeError>("put_along_axis: indices ", indices.aval().str(), " do not match arr ", arr.aval().str());
  Index idx;
  for (int64_t d = 0; d < arr.ndim(); ++d)
    idx.emplace_back(d == ax ? broadcast_to(astype(indices, DType::i64), s) : lax::iota(DType::i64, s, d));
  Array vals = broadcast_to(astype(checked(values, "put_along_axis"), arr.dtype()), s);
  return set_dropping(arr, std::move(idx), ax, vals);
}

Array place(const Array& arr, const Array& mask, const Array& vals) {
  checked(arr, "place");
  if (checked(mask, "place").size() != arr.size()) fail<ShapeError>("place: mask must have arr's size");
  Array pos = flatnonzero(mask);
  if (pos.shape()[0] == 0) return arr;
  return put(arr, pos, vals);
}

Array fill_diagonal(const Array& a, const Array& val, bool wrap) {
  checked(a, "fill_diagonal");
  if (a.ndim() < 2) fail<ValueError>("fill_diagonal: a must have at least two dimensions");
  int64_t step = 1, m = a.shape()[0];
  if (a.ndim() == 2) {
    step = a.shape()[1] + 1;
  } else {
    for (int64_t d = 1; d < a.ndim(); ++d)
      if (a.shape()[d] != m) fail<ValueError>("fill_diagonal: all dimensions of a must be equal beyond 2-D");
    int64_t stride = 1;
    step = 0;
    for (int64_t d = a.ndim() - 1; d >= 0; --d) {
      step += stride;
      stride *= m;
    }
  }
  int64_t n = a.size();
  int64_t end = a.ndim() == 2 && !wrap ? std::min(n, a.shape()[1] * a.shape()[1]) : n;
  std::vector<int64_t> pos;
  for (int64_t p = 0; p < end; p += step) pos.push_back(p);
  if (pos.empty()) return a;
  return put(a, ints(pos, DType::i64), val);
}

// ---- counting -------------------------------------------------------------------------------------------------

Array histogram_bin_edges(const Array& a, int64_t bins, std::optional<std::pair<double, double>> range) {
  checked(a, "histogram_bin_edges");
  if (bins < 1) fail<ValueError>("histogram: bins must be positive, got ", bins);
  DType d = a.dtype() == DType::f64 ? DType::f64 : is_inexact(a.dtype()) ? DType::f32 : default_float_dtype();
  Array lo, hi;
  if (range) {
    if (!std::isfinite(range->first) || !std::isfinite(range->second))
      fail<ValueError>("histogram: range must be finite, got [", range->first, ", ", range->second, "]");
    if (range->first > range->second) fail<ValueError>("histogram: max must be larger than min in range");
    lo = scalar_of(range->first, d), hi = scalar_of(range->second, d);
  } else if (a.size() == 0) {
    lo = scalar_of(0, d), hi = scalar_of(1, d);
  } else {
    Array x = astype(ops_detail::real_only(a, "histogram"), d);
    lo = min(x), hi = max(x);
    if (lo.is_concrete() && hi.is_concrete() && !(std::isfinite(lo.item<double>()) && std::isfinite(hi.item<double>())))
      fail<ValueError>("histogram: the range taken from the data [", lo.item<double>(), ", ", hi.item<double>(),
                       "] is not finite (give range=)");
  }
  Array same = lo == hi;
  Array half = scalar_of(0.5, d);
  lo = where(same, lo - half, lo);
  hi = where(same, hi + half, hi);
  Array t = astype(lax::iota(DType::i32, {bins + 1}), d) / scalar_of(static_cast<double>(bins), d);
  // the last edge exactly hi (lo + (hi - lo) * 1 may round below it)
  Array edges = lo + (hi - lo) * t;
  return where(lax::iota(DType::i32, {bins + 1}) == scalar_of(static_cast<double>(bins), DType::i32),
               broadcast_to(hi, {bins + 1}), edges);
}

std::pair<Array, Array> histogram(const Array& a, const Array& edges, const std::optional<Array>& weights, bool density) {
  checked(a, "histogram");
  if (checked(edges, "histogram").ndim() != 1 || edges.shape()[0] < 2)
    fail<ShapeError>("histogram: bin edges must be 1-D with at least two entries, got ", edges.aval().str());
  Array x = ravel(ops_detail::real_only(a, "histogram"));
  int64_t nb = edges.shape()[0] - 1;
  Array i = astype(searchsorted(edges, x, "right"), DType::i32) - scalar_of(1, DType::i32);
  Array last = take(edges, full({}, static_cast<double>(nb), DType::i32));
  i = where(equal(x, last), full({}, static_cast<double>(nb - 1), DType::i32), i);  // promoted: no truncated edge
  Array inside = (i >= zeros({}, DType::i32)) & (i < full({}, static_cast<double>(nb), DType::i32));
  if (weights && checked(*weights, "histogram").shape() != a.shape())
    fail<ShapeError>("histogram: weights ", weights->aval().str(), " must have a's shape ", a.aval().str());
  Array w = weights ? ravel(*weights) : ones(x.shape(), is_inexact(x.dtype()) ? x.dtype() : default_float_dtype());
  Array wk = where(inside, w, zeros({}, w.dtype()));
  Array counts = zeros({nb}, w.dtype()).at(where(inside, i, zeros({}, DType::i32))).add(wk);
  if (density) {
    Array widths = lax::slice_in_dim(edges, 1, nb + 1, 1, 0) - lax::slice_in_dim(edges, 0, nb, 1, 0);
    Array fc = ops_detail::as_float(counts);
    counts = fc / (sum(fc) * astype(widths, fc.dtype()));
  }
  return {counts, edges};
}

std::pair<Array, Array> histogram(const Array& a, int64_t bins, std::optional<std::pair<double, double>> range,
                                  const std::optional<Array>& weights, bool density) {
  return histogram(a, histogram_bin_edges(a, bins, range), weights, density);
}

Array bitwise_count(const Array& x) {
  checked(x, "bitwise_count");
  if (!is_integer(x.dtype()) && x.dtype() != DType::bool_)
    fail<TypeError>("bitwise_count: takes integers or booleans, got ", x.aval().str());
  // |x|'s bits, 8 at a time through a 256-entry table of counts
  Array v = is_signed_int(x.dtype()) ? abs(x) : x;
  int bits = x.dtype() == DType::bool_ ? 8 : static_cast<int>(itemsize(x.dtype()) * 8);
  std::vector<int64_t> table(256);
  for (int i = 0; i < 256; ++i) table[i] = std::popcount(static_cast<unsigned>(i));
  Array lut = ints(table, DType::u8);
  Array u = astype(v, DType::u64);
  Array total = zeros(x.shape(), DType::u8);
  for (int shift = 0; shift < bits; shift += 8) {
    Array byte = bitwise_and(right_shift(u, scalar_of(shift, DType::u64)), scalar_of(255, DType::u64));
    total = total + take(lut, astype(byte, DType::i32));
  }
  return total;
}

}  // namespace graft
