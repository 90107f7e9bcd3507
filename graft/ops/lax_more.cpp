// jax.lax's conveniences and shape helpers on the primitives (graft/ops/lax_more.h).
#include "graft/ops/lax_more.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "graft/ops/numpy_sets.h"
#include "graft/ops/ops.h"

namespace graft::lax {

namespace {

int64_t norm_axis(int64_t axis, int64_t ndim, const char* op) {
  if (axis < -ndim || axis >= ndim)
    fail<ValueError>(op, ": axis ", axis, " is out of range for an array of rank ", ndim);
  return axis < 0 ? axis + ndim : axis;
}

// Start indices for the dynamic slices: zeros of start's dtype, start at `axis`.
std::vector<Array> starts_at(const Array& start, int64_t ndim, int64_t axis, const char* op) {
  if (start.ndim() != 0) fail<ShapeError>(op, ": the start index must be a scalar, got ", start.aval().str());
  if (!is_integer(start.dtype())) fail<TypeError>(op, ": the start index must be an integer, got ", start.aval().str());
  std::vector<Array> s(static_cast<size_t>(ndim), lax::full({}, 0, start.dtype()));
  s[static_cast<size_t>(axis)] = start;
  return s;
}

}  // namespace

Array broadcast(const Array& x, const Shape& sizes) {
  Shape s = sizes;
  s.insert(s.end(), x.shape().begin(), x.shape().end());
  Axes dims(static_cast<size_t>(x.ndim()));
  std::iota(dims.begin(), dims.end(), static_cast<int64_t>(sizes.size()));
  return lax::broadcast_in_dim(x, s, dims);
}

Array broadcast_to_rank(const Array& x, int64_t rank) {
  if (x.ndim() >= rank) return x;
  return lax::broadcast(x, Shape(static_cast<size_t>(rank - x.ndim()), 1));
}

Array broadcasted_iota(DType d, const Shape& shape, int64_t dimension) {
  return lax::iota(d, shape, norm_axis(dimension, static_cast<int64_t>(shape.size()), "broadcasted_iota"));
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) { return graft::broadcast_shapes(shapes); }

Array collapse(const Array& x, int64_t start, std::optional<int64_t> stop) {
  int64_t nd = x.ndim(), lo = start < 0 ? start + nd : start, hi = stop ? *stop : nd;
  if (lo < 0 || lo > nd) fail<ValueError>("collapse: start ", start, " is out of range for ", x.aval().str());
  if (hi < 0) hi += nd;
  if (hi < lo || hi > nd) fail<ValueError>("collapse: dimensions [", start, ", ", hi, ") are not a range of ", x.aval().str());
  Shape s(x.shape().begin(), x.shape().begin() + lo);
  int64_t merged = 1;
  for (int64_t i = lo; i < hi; ++i) merged *= x.shape()[i];
  s.push_back(merged);
  s.insert(s.end(), x.shape().begin() + hi, x.shape().end());
  return lax::reshape(x, s);
}

Array batch_matmul(const Array& lhs, const Array& rhs) {
  int64_t nd = lhs.ndim();
  if (nd < 2 || rhs.ndim() != nd)
    fail<ShapeError>("batch_matmul: operands need the same rank of at least 2, got ", lhs.aval().str(), " and ",
                     rhs.aval().str());
  for (int64_t i = 0; i + 2 < nd; ++i)
    if (lhs.shape()[i] != rhs.shape()[i])
      fail<ShapeError>("batch_matmul: batch dimensions differ: ", lhs.aval().str(), " and ", rhs.aval().str());
  IntList batch(static_cast<size_t>(nd - 2));
  std::iota(batch.begin(), batch.end(), int64_t(0));
  return lax::dot_general(lhs, rhs, DotDims({nd - 1}, {nd - 2}, batch, batch));
}

Array dynamic_slice_in_dim(const Array& x, const Array& start_index, int64_t slice_size, int64_t axis) {
  int64_t a = norm_axis(axis, x.ndim(), "dynamic_slice_in_dim");
  Shape sizes = x.shape();
  sizes[static_cast<size_t>(a)] = slice_size;
  return lax::dynamic_slice(x, starts_at(start_index, x.ndim(), a, "dynamic_slice_in_dim"), sizes);
}

Array dynamic_index_in_dim(const Array& x, const Array& index, int64_t axis, bool keepdims) {
  int64_t a = norm_axis(axis, x.ndim(), "dynamic_index_in_dim");
  Array r = lax::dynamic_slice_in_dim(x, index, 1, a);
  return keepdims ? r : lax::squeeze(r, {a});
}

Array dynamic_update_slice_in_dim(const Array& x, const Array& update, const Array& start_index, int64_t axis) {
  int64_t a = norm_axis(axis, x.ndim(), "dynamic_update_slice_in_dim");
  return lax::dynamic_update_slice(x, update, starts_at(start_index, x.ndim(), a, "dynamic_update_slice_in_dim"));
}

Array dynamic_update_index_in_dim(const Array& x, const Array& update, const Array& index, int64_t axis) {
  int64_t a = norm_axis(axis, x.ndim(), "dynamic_update_index_in_dim");
  Array u = update.ndim() == x.ndim() - 1 ? lax::expand_dims(update, {a}) : update;
  return lax::dynamic_update_slice_in_dim(x, u, index, a);
}

Array index_in_dim(const Array& x, int64_t index, int64_t axis, bool keepdims) {
  int64_t a = norm_axis(axis, x.ndim(), "index_in_dim"), n = x.shape()[a];
  int64_t i = index < 0 ? index + n : index;
  if (i < 0 || i >= n)
    fail<ValueError>("index_in_dim: index ", index, " is out of bounds for axis ", axis, " of size ", n);
  Array r = lax::slice_in_dim(x, i, i + 1, 1, a);
  return keepdims ? r : lax::squeeze(r, {a});
}

Array index_take(const Array& src, const std::vector<Array>& idxs, const Axes& axes) {
  if (idxs.size() != axes.size() || idxs.empty())
    fail<ValueError>("index_take: needs one index array per axis, got ", idxs.size(), " for ", axes.size(), " axes");
  IntList ax;
  for (int64_t a : axes) ax.push_back(norm_axis(a, src.ndim(), "index_take"));
  // indices [n, len(axes)], each wrapped into its axis (negative ones count from the end)
  std::vector<Array> cols;
  for (size_t k = 0; k < idxs.size(); ++k) {
    if (idxs[k].ndim() != 1 || idxs[k].shape() != idxs[0].shape() || !is_integer(idxs[k].dtype()))
      fail<ShapeError>("index_take: index arrays must be 1-D integers of one length, got ", idxs[k].aval().str());
    Array i = lax::convert_element_type(idxs[k], DType::i32);
    Array n = lax::full({}, static_cast<double>(src.shape()[ax[k]]), DType::i32);
    i = lax::select(lax::lt(i, lax::full({}, 0, DType::i32)), lax::add(i, n), i);
    cols.push_back(lax::expand_dims(i, {1}));
  }
  Array indices = lax::concatenate(cols, 1);
  Shape slice_sizes = src.shape();
  for (int64_t a : ax) slice_sizes[static_cast<size_t>(a)] = 1;
  IntList offset(static_cast<size_t>(src.ndim()) - ax.size());
  std::iota(offset.begin(), offset.end(), int64_t(1));
  IntList sorted = ax;
  std::sort(sorted.begin(), sorted.end());
  return lax::gather(src, indices, GatherDims(offset, sorted, ax), slice_sizes);
}

std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values, int64_t dimension, bool is_stable) {
  int64_t d = norm_axis(dimension, keys.ndim(), "sort_key_val");
  Arrays r = lax::sort(std::vector<Array>{keys, values}, d, is_stable, 1);
  return {r[0], r[1]};
}

std::pair<Array, Array> top_k(const Array& x, int64_t k) { return graft::top_k(x, k); }

std::pair<Array, Array> approx_max_k(const Array& x, int64_t k, int64_t reduction_dimension, double recall_target) {
  if (!(recall_target > 0 && recall_target <= 1))
    fail<ValueError>("approx_max_k: recall_target must be in (0, 1], got ", recall_target);
  int64_t d = norm_axis(reduction_dimension, x.ndim(), "approx_max_k");
  auto [v, i] = graft::top_k(graft::moveaxis(x, d, -1), k);
  return {graft::moveaxis(v, -1, d), graft::moveaxis(i, -1, d)};
}

std::pair<Array, Array> approx_min_k(const Array& x, int64_t k, int64_t reduction_dimension, double recall_target) {
  if (!(recall_target > 0 && recall_target <= 1))
    fail<ValueError>("approx_min_k: recall_target must be in (0, 1], got ", recall_target);
  int64_t d = norm_axis(reduction_dimension, x.ndim(), "approx_min_k");
  int64_t n = x.shape()[d];
  if (k < 0 || k > n) fail<ValueError>("approx_min_k: k = ", k, " is out of range for an axis of size ", n);
  // ascending, stable: ties keep the lower index first
  Arrays r = lax::sort(std::vector<Array>{x, lax::iota(DType::i32, x.shape(), d)}, d, true, 1);
  return {lax::slice_in_dim(r[0], 0, k, 1, d), lax::slice_in_dim(r[1], 0, k, 1, d)};
}

// A running log-sum-exp: each prefix relative to its own maximum (logaddexp's), so that a prefix far below
// the axis's maximum does not underflow; O(log n) rounds of logaddexp, as JAX's.
Array cumlogsumexp(const Array& x, int64_t axis, bool reverse) {
  int64_t a = norm_axis(axis, x.ndim(), "cumlogsumexp");
  if (!is_floating(x.dtype())) fail<TypeError>("cumlogsumexp: takes floating operands, got ", x.aval().str());
  auto combine = [](const Arrays& p, const Arrays& q) { return Arrays{graft::logaddexp(p[0], q[0])}; };
  return associative_scan(combine, {x}, reverse, a)[0];
}

std::vector<Array> unstack(const Array& x, int64_t axis) {
  int64_t a = norm_axis(axis, x.ndim(), "unstack");
  std::vector<Array> out;
  for (int64_t i = 0; i < x.shape()[a]; ++i) out.push_back(lax::index_in_dim(x, i, a, false));
  return out;
}

Array clz(const Array& x) {
  if (!is_integer(x.dtype())) fail<TypeError>("clz: takes integer operands, got ", x.aval().str());
  int64_t bits = static_cast<int64_t>(itemsize(x.dtype())) * 8;
  DType u = bits == 8 ? DType::u8 : bits == 16 ? DType::u16 : bits == 32 ? DType::u32 : DType::u64;
  Array v = x.dtype() == u ? x : lax::bitcast_convert_type(x, u);
  for (int64_t s = 1; s < bits; s *= 2)  // smear the highest set bit down
    v = lax::bitwise_or(v, lax::shift_right_logical(v, lax::full({}, static_cast<double>(s), u)));
  Array ones = lax::convert_element_type(lax::population_count(v), DType::i32);
  return lax::convert_element_type(lax::sub(lax::full({}, static_cast<double>(bits), DType::i32), ones), x.dtype());
}

Array scatter_sub(const Array& operand, const Array& indices, const Array& updates, const ScatterDims& dims,
                  GatherMode mode) {
  return lax::scatter_add(operand, indices, lax::neg(updates), dims, mode);
}

Array optimization_barrier(const Array& x) { return x; }

Arrays associative_scan(const std::function<Arrays(const Arrays&, const Arrays&)>& fn, const Arrays& elems,
                        bool reverse, int64_t axis) {
  if (elems.empty()) return {};
  for (auto& e : elems)
    if (e.ndim() == 0) fail<ShapeError>("associative_scan: elements need an axis to scan, got ", e.aval().str());
  int64_t a = norm_axis(axis, elems[0].ndim(), "associative_scan");
  int64_t n = elems[0].shape()[a];
  for (auto& e : elems)
    if (e.ndim() <= a || e.shape()[a] != n)
      fail<ShapeError>("associative_scan: every element needs length ", n, " along axis ", axis, ", got ",
                       e.aval().str());
  auto take = [a](const Arrays& xs, int64_t start, int64_t stop, int64_t step) {
    Arrays out;
    for (auto& x : xs) out.push_back(lax::slice_in_dim(x, start, stop, step, a));
    return out;
  };
  auto combine = [&](const Arrays& x, const Arrays& y) {
    Arrays r = fn(x, y);
    if (r.size() != x.size())
      fail<ValueError>("associative_scan: fn returned ", r.size(), " arrays for ", x.size(), " elements");
    return r;
  };
  // evens e_0, e_1, ... and odds o_0, ... as e_0 o_0 e_1 o_1 ..., cut to n_total along the axis
  auto interleave = [a](const Arrays& evens, const Arrays& odds, int64_t n_total) {
    Arrays out;
    for (size_t k = 0; k < evens.size(); ++k) {
      Array e = evens[k], o = odds[k];
      int64_t ne = e.shape()[a];
      if (o.shape()[a] < ne) o = lax::concatenate(std::vector<Array>{o, lax::slice_in_dim(e, ne - 1, ne, 1, a)}, a);
      Array st = graft::stack({e, o}, a + 1);
      Shape s = e.shape();
      s[static_cast<size_t>(a)] = 2 * ne;
      out.push_back(lax::slice_in_dim(lax::reshape(st, s), 0, n_total, 1, a));
    }
    return out;
  };
  std::function<Arrays(const Arrays&)> scan_ = [&](const Arrays& xs) -> Arrays {
    int64_t m = xs[0].shape()[a];
    if (m < 2) return xs;
    Arrays odd = scan_(combine(take(xs, 0, m - 1, 2), take(xs, 1, m, 2)));
    int64_t no = odd[0].shape()[a];
    Arrays even = m % 2 == 0 ? combine(take(odd, 0, no - 1, 1), take(xs, 2, m, 2)) : combine(odd, take(xs, 2, m, 2));
    for (size_t k = 0; k < even.size(); ++k)
      even[k] = lax::concatenate(std::vector<Array>{lax::slice_in_dim(xs[k], 0, 1, 1, a), even[k]}, a);
    return interleave(even, odd, m);
  };
  Arrays xs = elems;
  if (reverse)
    for (auto& x : xs) x = lax::rev(x, {a});
  Arrays out = n ? scan_(xs) : xs;
  if (reverse)
    for (auto& x : out) x = lax::rev(x, {a});
  return out;
}

std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const Shape& in_shape, const Shape& window_shape,
                                                         const Shape& window_strides, const std::string& padding) {
  if (window_shape.size() != in_shape.size() || window_strides.size() != in_shape.size())
    fail<ValueError>("padtype_to_pads: need one window size and stride per dimension, got ", window_shape.size(),
                     " and ", window_strides.size(), " for ", in_shape.size());
  std::string mode = padding;  // JAX upper-cases it
  for (auto& c : mode) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::vector<std::pair<int64_t, int64_t>> p;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    if (mode == "VALID") {
      p.emplace_back(0, 0);
      continue;
    }
    if (mode != "SAME" && mode != "SAME_LOWER")
      fail<ValueError>("padtype_to_pads: padding must be 'SAME', 'SAME_LOWER' or 'VALID', got '", padding, "'");
    int64_t s = window_strides[i];
    if (s <= 0) fail<ValueError>("padtype_to_pads: strides must be positive, got ", s);
    int64_t out = (in_shape[i] + s - 1) / s;
    int64_t total = std::max<int64_t>((out - 1) * s + window_shape[i] - in_shape[i], 0);
    int64_t small = total / 2, large = total - small;
    p.emplace_back(mode == "SAME" ? small : large, mode == "SAME" ? large : small);
  }
  return p;
}

Array conv(const Array& lhs, const Array& rhs, const Shape& window_strides, const std::string& padding) {
  if (lhs.ndim() < 3 || rhs.ndim() != lhs.ndim())
    fail<ShapeError>("conv: needs NCHW / OIHW operands of one rank >= 3, got ", lhs.aval().str(), " and ",
                     rhs.aval().str());
  size_t sp = static_cast<size_t>(lhs.ndim() - 2);
  Shape in(lhs.shape().begin() + 2, lhs.shape().end()), win(rhs.shape().begin() + 2, rhs.shape().end());
  return lax::conv_general_dilated(lhs, rhs, window_strides, lax::padtype_to_pads(in, win, window_strides, padding),
                              Shape(sp, 1), Shape(sp, 1), ConvDims::nchw(sp));
}

Array conv_with_general_padding(const Array& lhs, const Array& rhs, const Shape& window_strides,
                                const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& lhs_dilation,
                                const Shape& rhs_dilation) {
  if (lhs.ndim() < 3) fail<ShapeError>("conv_with_general_padding: needs NCHW operands, got ", lhs.aval().str());
  size_t sp = static_cast<size_t>(lhs.ndim() - 2);
  return lax::conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation.empty() ? Shape(sp, 1) : lhs_dilation,
                              rhs_dilation.empty() ? Shape(sp, 1) : rhs_dilation, ConvDims::nchw(sp));
}

Shape conv_shape_tuple(const Shape& lhs_shape, const Shape& rhs_shape, const Shape& strides,
                       const std::vector<std::pair<int64_t, int64_t>>& pads, int64_t batch_group_count) {
  size_t sp = lhs_shape.size() < 2 ? 0 : lhs_shape.size() - 2;
  if (lhs_shape.size() < 2 || rhs_shape.size() != lhs_shape.size() || strides.size() != sp || pads.size() != sp)
    fail<ValueError>("conv_shape_tuple: needs NCHW / OIHW shapes of one rank and one stride and padding pair per "
                     "spatial dimension");
  if (batch_group_count <= 0 || lhs_shape[0] % batch_group_count != 0)
    fail<ValueError>("conv_shape_tuple: batch_group_count ", batch_group_count, " must divide the batch size ",
                     lhs_shape[0]);
  Shape out{lhs_shape[0] / batch_group_count, rhs_shape[0]};
  for (size_t i = 0; i < sp; ++i) {
    if (strides[i] <= 0) fail<ValueError>("conv_shape_tuple: strides must be positive, got ", strides[i]);
    int64_t size = lhs_shape[i + 2] + pads[i].first + pads[i].second, k = rhs_shape[i + 2];
    out.push_back(size >= k ? (size - k) / strides[i] + 1 : 0);
  }
  return out;
}

Shape reduce_window_shape_tuple(const Shape& operand_shape, const Shape& window_dimensions, const Shape& window_strides,
                                const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& base_dilation,
                                const Shape& window_dilation) {
  size_t n = operand_shape.size();
  if (window_dimensions.size() != n || window_strides.size() != n || padding.size() != n ||
      (!base_dilation.empty() && base_dilation.size() != n) || (!window_dilation.empty() && window_dilation.size() != n))
    fail<ValueError>("reduce_window_shape_tuple: needs one window size, stride and padding pair per dimension");
  Shape out;
  for (size_t d = 0; d < n; ++d) {
    int64_t bd = base_dilation.empty() ? 1 : base_dilation[d], wd = window_dilation.empty() ? 1 : window_dilation[d];
    if (window_strides[d] <= 0 || bd <= 0 || wd <= 0)
      fail<ValueError>("reduce_window_shape_tuple: strides and dilations must be positive");
    // an empty dimension stays empty under dilation (JAX's _dilate_shape)
    int64_t dilated = operand_shape[d] == 0 ? 0 : (operand_shape[d] - 1) * bd + 1;
    int64_t size = dilated + padding[d].first + padding[d].second;
    int64_t win = (window_dimensions[d] - 1) * wd + 1;
    out.push_back(size >= win ? (size - win) / window_strides[d] + 1 : 0);
  }
  return out;
}

}  // namespace graft::lax
