// jax.numpy's construction, splitting, joining and index functions in C++, composed from the NumPy layer
// (graft/ops/ops.h). Each behaves as its jax.numpy namesake; index arrays are i32 (JAX without x64).
//
//   auto [xx, yy] = meshgrid2(x, y);                  // or meshgrid({x, y}, "ij")
//   auto parts = array_split(x, 3);                    // three nearly equal parts, the first ones longer
//   auto [r, c] = tril_indices(4);                     // the lower triangle's coordinates
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graft/ops/ops.h"

namespace graft {

// ---- construction ----------------------------------------------------------------------------------------
/// The n x n identity matrix.
Array identity(int64_t n, DType d = DType::f32);
/// An array of x's shape (and dtype unless given); graft has no uninitialized memory: zeros.
Array empty_like(const Array& x, std::optional<DType> d = std::nullopt);
/// `num` numbers spaced evenly on a log scale from start to stop (both nonzero, of one sign).
Array geomspace(double start, double stop, int64_t num = 50, bool endpoint = true, DType d = DType::f32);
/// base^linspace(start, stop, num).
Array logspace(double start, double stop, int64_t num = 50, bool endpoint = true, double base = 10.0,
               DType d = DType::f32);
/// Coordinate grids from 1-D arrays: indexing "xy" (the first two dimensions swapped, as for images) or
/// "ij" (matrix order); `sparse` keeps each grid broadcastable instead of full.
std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing = "xy", bool sparse = false);
/// The index grid of a shape: [ndim, *dims], entry k along dimension k.
Array indices(const Shape& dims, DType d = DType::i32);
/// A matrix with v (flattened) on its k-th diagonal.
Array diagflat(const Array& v, int64_t k = 0);

// ---- coordinates ----------------------------------------------------------------------------------------
/// (rows, columns) of the n x m lower triangle on and below diagonal k, row by row.
std::pair<Array, Array> tril_indices(int64_t n, int64_t k = 0, std::optional<int64_t> m = std::nullopt);
/// The same for the upper triangle on and above diagonal k.
std::pair<Array, Array> triu_indices(int64_t n, int64_t k = 0, std::optional<int64_t> m = std::nullopt);
/// Of a (batch of) matrices' last two dimensions.
std::pair<Array, Array> tril_indices_from(const Array& x, int64_t k = 0);
std::pair<Array, Array> triu_indices_from(const Array& x, int64_t k = 0);
/// `ndim` copies of 0 .. n-1: the main diagonal of an n x ... x n array.
std::vector<Array> diag_indices(int64_t n, int64_t ndim = 2);
/// Of a square array (every dimension of one length).
std::vector<Array> diag_indices_from(const Array& x);
/// The coordinates in `shape` of the flat indices (row-major).
std::vector<Array> unravel_index(const Array& flat, const Shape& shape);
/// The flat indices of coordinates in `dims`; mode "raise" (out-of-range coordinates are an error when
/// concrete), "clip" or "wrap".
Array ravel_multi_index(const std::vector<Array>& coords, const Shape& dims, const std::string& mode = "raise");

// ---- splitting and joining ------------------------------------------------------------------------------
/// `sections` parts along `axis`, the first (size % sections) one longer (NumPy's array_split: any count).
std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis = 0);
/// Parts at the given cut positions (clamped to the dimension).
std::vector<Array> array_split(const Array& x, const std::vector<int64_t>& cuts, int64_t axis = 0);
/// Equal parts along the columns (the only dimension of a 1-D array), rows, and depth.
std::vector<Array> hsplit(const Array& x, int64_t sections);
std::vector<Array> vsplit(const Array& x, int64_t sections);
std::vector<Array> dsplit(const Array& x, int64_t sections);
/// The slices along `axis`, that dimension dropped.
std::vector<Array> unstack(const Array& x, int64_t axis = 0);
/// x and values joined along `axis`; both flattened first when no axis is given.
Array append(const Array& x, const Array& values, std::optional<int64_t> axis = std::nullopt);
/// x without the entries at `positions` along `axis` (flattened when none; negative positions count
/// from the end). NumPy's `delete`, a C++ keyword.
Array delete_entries(const Array& x, const std::vector<int64_t>& positions, std::optional<int64_t> axis = std::nullopt);
/// x with `values` placed before `positions` along `axis` (flattened when none), values broadcast to
/// one slice per position.
Array insert(const Array& x, const std::vector<int64_t>& positions, const Array& values,
             std::optional<int64_t> axis = std::nullopt);
/// Axis `axis` moved to before `start` (NumPy's rollaxis).
Array rollaxis(const Array& x, int64_t axis, int64_t start = 0);
/// x flattened and repeated to fill `shape` (NumPy's resize).
Array resize(const Array& x, const Shape& shape);
/// A 1-D array without its leading ("f"), trailing ("b") or both ("fb") zeros (reads the values).
Array trim_zeros(const Array& x, const std::string& trim = "fb");

}  // namespace graft
