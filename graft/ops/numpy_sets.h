// NumPy's searching, set and counting functions in C++ (jax.numpy's nonzero, argwhere, unique, isin,
// union1d, lexsort, choose, put, histogram, ...), as compositions of graft/ops/ops.h.
//
// Results whose length depends on the values (nonzero, unique, the set operations, extract) take JAX's
// `size` and `fill_value`: with a size they are traceable (under jit and vmap) and cut or padded to it;
// without one the input must be concrete (a ConcretizationError under tracing says to give size).
//
//   Arrays ij = nonzero(m);                          // one index array per dimension
//   Array u = unique(x, 8);                          // traceable: the 8 smallest distinct values, padded
//   auto [hist, edges] = histogram(x, 10);
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graft/ops/ops.h"

namespace graft {

/// Mathematical constants, as jax.numpy's.
inline constexpr double pi = 3.141592653589793;
inline constexpr double e = 2.718281828459045;
inline constexpr double euler_gamma = 0.5772156649015329;

// ---- where the values are ------------------------------------------------------------------------------
/// The indices of a's non-zero elements, one array per dimension (default int dtype), in row-major order.
/// size: cut or pad to it (padding with fill_value, default 0), traceable.
std::vector<Array> nonzero(const Array& a, std::optional<int64_t> size = std::nullopt, std::optional<double> fill_value = std::nullopt);
/// nonzero of ravel(a).
Array flatnonzero(const Array& a, std::optional<int64_t> size = std::nullopt,
                  std::optional<double> fill_value = std::nullopt);
/// nonzero's indices as rows: [count, ndim].
Array argwhere(const Array& a, std::optional<int64_t> size = std::nullopt, std::optional<double> fill_value = std::nullopt);
/// The elements of ravel(arr) where ravel(condition) is non-zero.
Array extract(const Array& condition, const Array& arr, std::optional<int64_t> size = std::nullopt,
              double fill_value = 0);
/// The slices of a along `axis` (of ravel(a) when unset) where the 1-D condition is non-zero.
Array compress(const Array& condition, const Array& a, std::optional<int64_t> axis = std::nullopt,
               std::optional<int64_t> size = std::nullopt, double fill_value = 0);
/// choices[a[i]][i] for integer a (all broadcast together); mode "raise" (concrete a only), "wrap" or "clip".
Array choose(const Array& a, const std::vector<Array>& choices, const std::string& mode = "raise");
/// The indices that sort by several keys, the last key first (a stable sort along axis); keys of one shape.
Array lexsort(const std::vector<Array>& keys, int64_t axis = -1);
/// a with its kth element (along axis) where a sort would put it, the smaller ones before it and the
/// larger after (graft sorts the whole axis, which satisfies NumPy's contract); argpartition: the indices.
Array partition(const Array& a, int64_t kth, int64_t axis = -1);
Array argpartition(const Array& a, int64_t kth, int64_t axis = -1);
/// The k largest entries of the last axis, in descending order, and their indices (ties: lower index first).
std::pair<Array, Array> top_k(const Array& x, int64_t k);

// ---- sets (on the flattened arrays) ------------------------------------------------------------------------
/// unique_all's result: the sorted distinct values, the index of each one's first occurrence, each
/// element's position in values (x's shape), and each value's count. NaNs count as one value, as JAX's.
struct UniqueResult {
  Array values, indices, inverse_indices, counts;
};
/// size: the first `size` distinct values, padded with fill_value (default: the smallest value).
UniqueResult unique_all(const Array& x, std::optional<int64_t> size = std::nullopt,
                        std::optional<double> fill_value = std::nullopt);
Array unique(const Array& x, std::optional<int64_t> size = std::nullopt, std::optional<double> fill_value = std::nullopt);
Array unique_values(const Array& x, std::optional<int64_t> size = std::nullopt,
                    std::optional<double> fill_value = std::nullopt);
/// {values, counts} and {values, inverse_indices}.
std::pair<Array, Array> unique_counts(const Array& x, std::optional<int64_t> size = std::nullopt,
                                      std::optional<double> fill_value = std::nullopt);
std::pair<Array, Array> unique_inverse(const Array& x, std::optional<int64_t> size = std::nullopt,
                                       std::optional<double> fill_value = std::nullopt);
/// Whether each element of `element` occurs in test_elements (element's shape); invert: whether it does not.
Array isin(const Array& element, const Array& test_elements, bool invert = false);
/// The sorted distinct values in both, in either, in a but not b, in exactly one.
Array intersect1d(const Array& a, const Array& b, std::optional<int64_t> size = std::nullopt,
                  std::optional<double> fill_value = std::nullopt);
Array union1d(const Array& a, const Array& b, std::optional<int64_t> size = std::nullopt,
              std::optional<double> fill_value = std::nullopt);
Array setdiff1d(const Array& a, const Array& b, std::optional<int64_t> size = std::nullopt,
                std::optional<double> fill_value = std::nullopt);
Array setxor1d(const Array& a, const Array& b, std::optional<int64_t> size = std::nullopt,
               std::optional<double> fill_value = std::nullopt);

// ---- comparing and updating ------------------------------------------------------------------------------
/// Whether a and b broadcast to one shape and are equal there (a bool scalar; false when they do not broadcast).
Array array_equiv(const Array& a, const Array& b);
/// The shape the shapes broadcast to (ValueError when they do not).
Shape broadcast_shapes(const std::vector<Shape>& shapes);
/// A copy of a (arrays are immutable: the same values, a new array under tracing).
Array copy(const Array& a);
/// ravel(a) with the elements at `ind` replaced by v's (repeated to len(ind)), reshaped back: jax.numpy's
/// put(..., inplace=False). mode: "fill" / "raise" (out-of-range indices dropped; "raise" checks concrete
/// ones), "wrap", "clip".
Array put(const Array& a, const Array& ind, const Array& v, const std::string& mode = "fill");
/// arr with values written at indices along axis (jax.numpy's put_along_axis(..., inplace=False)).
Array put_along_axis(const Array& arr, const Array& indices, const Array& values, int64_t axis);
/// arr with the elements where mask is true replaced, in order, by vals (repeated as needed).
Array place(const Array& arr, const Array& mask, const Array& vals);
/// a with its main diagonal (a[i, i, ...]) set to val (repeated; wrap: tall 2-D matrices restart below).
Array fill_diagonal(const Array& a, const Array& val, bool wrap = false);

// ---- counting -------------------------------------------------------------------------------------------------
/// bins + 1 evenly spaced edges over range (a's min and max by default; a degenerate range widens by 0.5).
Array histogram_bin_edges(const Array& a, int64_t bins = 10,
                          std::optional<std::pair<double, double>> range = std::nullopt);
/// {counts (or summed weights, or a density with `density`), edges}; the last bin includes its right edge,
/// values outside the range are not counted. `edges` (given) replaces bins and range.
std::pair<Array, Array> histogram(const Array& a, int64_t bins = 10,
                                  std::optional<std::pair<double, double>> range = std::nullopt,
                                  const std::optional<Array>& weights = std::nullopt, bool density = false);
std::pair<Array, Array> histogram(const Array& a, const Array& edges, const std::optional<Array>& weights = std::nullopt,
                                  bool density = false);
/// The number of 1 bits of each integer's absolute value (jax.numpy.bitwise_count), as u8.
Array bitwise_count(const Array& x);

}  // namespace graft
