// The rest of jax.lax's functions in C++: conveniences JAX defines on its primitives (the *_in_dim
// slices, broadcast, collapse, batch_matmul, sort_key_val, top_k, cumlogsumexp, associative_scan, ...) and
// the shape helpers of convolutions and windows. All are composites of the primitives in graft/prims/lax.h,
// so every transformation applies to them; the names, argument orders and defaults are JAX's.
//
//   Array row = lax::index_in_dim(x, 2, 0, /*keepdims=*/false);      // x[2]
//   auto [vals, idx] = lax::top_k(scores, 5);                         // along the last axis
//   Arrays prefix = lax::associative_scan([](const Arrays& a, const Arrays& b) {
//     return Arrays{lax::add(a[0], b[0])}; }, {x});                   // cumsum in O(log n) rounds
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graft/prims/lax.h"

namespace graft::lax {

/// x with `sizes` prepended as new leading dimensions (JAX's lax.broadcast).
Array broadcast(const Array& x, const Shape& sizes);
/// x with leading dimensions of size 1 added until it has `rank` dimensions.
Array broadcast_to_rank(const Array& x, int64_t rank);
/// iota along `dimension` of an array of `shape` (lax.broadcasted_iota; lax::iota with JAX's name).
Array broadcasted_iota(DType d, const Shape& shape, int64_t dimension);
/// The shape all of `shapes` broadcast to (NumPy's rules); ShapeError when they do not.
Shape broadcast_shapes(const std::vector<Shape>& shapes);
/// Dimensions [start, stop) merged into one (stop unset: through the last).
Array collapse(const Array& x, int64_t start, std::optional<int64_t> stop = std::nullopt);
/// [..., m, k] x [..., k, n] over equal leading (batch) dimensions.
Array batch_matmul(const Array& lhs, const Array& rhs);

/// x[..., start : start + size, ...] along `axis`, start a traced scalar (clamped into range, as
/// dynamic_slice).
Array dynamic_slice_in_dim(const Array& x, const Array& start_index, int64_t slice_size, int64_t axis = 0);
/// x's entry `index` along `axis` (a traced scalar), keeping the axis with size 1 when keepdims.
Array dynamic_index_in_dim(const Array& x, const Array& index, int64_t axis = 0, bool keepdims = true);
/// x with `update` written at start_index along `axis` (the other dimensions from 0).
Array dynamic_update_slice_in_dim(const Array& x, const Array& update, const Array& start_index, int64_t axis);
/// x with `update` (x's shape without `axis`, or with it of size 1) written at `index` along `axis`.
Array dynamic_update_index_in_dim(const Array& x, const Array& update, const Array& index, int64_t axis);
/// x's entry `index` (negative counts from the end) along `axis`.
Array index_in_dim(const Array& x, int64_t index, int64_t axis = 0, bool keepdims = true);
/// src indexed by the integer arrays idxs (equal shapes) along `axes`: the gather of src[idx_0, idx_1, ...]
/// over those axes, the other axes kept after the index dimensions (JAX's index_take).
Array index_take(const Array& src, const std::vector<Array>& idxs, const Axes& axes);

/// keys sorted along `dimension`, values permuted with them.
std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values, int64_t dimension = -1,
                                     bool is_stable = true);
/// The k largest entries along the last axis in descending order, and their int32 indices (ties: the
/// lower index first).
std::pair<Array, Array> top_k(const Array& x, int64_t k);
/// JAX's approximate top-k along reduction_dimension: computed exactly here (JAX's CPU result too), so
/// recall_target is met with recall 1.
std::pair<Array, Array> approx_max_k(const Array& x, int64_t k, int64_t reduction_dimension = -1,
                                     double recall_target = 0.95);
std::pair<Array, Array> approx_min_k(const Array& x, int64_t k, int64_t reduction_dimension = -1,
                                     double recall_target = 0.95);
/// log(cumsum(exp(x))) along axis without overflow (the sums relative to the axis's maximum).
Array cumlogsumexp(const Array& x, int64_t axis = 0, bool reverse = false);
/// The slices of x along axis.
std::vector<Array> unstack(const Array& x, int64_t axis = 0);
/// The number of leading zero bits of each integer.
Array clz(const Array& x);
/// scatter_add of the negated updates.
Array scatter_sub(const Array& operand, const Array& indices, const Array& updates, const ScatterDims& dims,
                  GatherMode mode = GatherMode::fill);
/// The identity on values: graft's compiler does not reorder work across it in a way JAX's barrier
/// would prevent (there is no rematerialization across jit boundaries to fence), so it is kept for ported
/// code and does nothing.
Array optimization_barrier(const Array& x);

/// The prefix combinations of elems (arrays of equal length along `axis`) under the associative fn, in
/// O(log n) rounds of fn on halves of the arrays (each round one vectorized call), as JAX's.
Arrays associative_scan(const std::function<Arrays(const Arrays&, const Arrays&)>& fn, const Arrays& elems,
                        bool reverse = false, int64_t axis = 0);

// ---- convolutions and windows ----------------------------------------------------------------------------
/// (lo, hi) per spatial dimension for padding "SAME", "SAME_LOWER" or "VALID".
std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const Shape& in_shape, const Shape& window_shape,
                                                         const Shape& window_strides, const std::string& padding);
/// NCHW / OIHW convolution with padding "SAME" / "VALID" (lax.conv).
Array conv(const Array& lhs, const Array& rhs, const Shape& window_strides, const std::string& padding);
/// NCHW / OIHW convolution with explicit padding and dilations (lax.conv_with_general_padding).
Array conv_with_general_padding(const Array& lhs, const Array& rhs, const Shape& window_strides,
                                const std::vector<std::pair<int64_t, int64_t>>& padding, const Shape& lhs_dilation,
                                const Shape& rhs_dilation);
/// The result shape of an NCHW / OIHW convolution.
Shape conv_shape_tuple(const Shape& lhs_shape, const Shape& rhs_shape, const Shape& strides,
                       const std::vector<std::pair<int64_t, int64_t>>& pads, int64_t batch_group_count = 1);
/// The result shape of a windowed reduction (lists have one entry per dimension; empty dilations are 1).
Shape reduce_window_shape_tuple(const Shape& operand_shape, const Shape& window_dimensions, const Shape& window_strides,
                                const std::vector<std::pair<int64_t, int64_t>>& padding,
                                const Shape& base_dilation = {}, const Shape& window_dilation = {});

}  // namespace graft::lax
