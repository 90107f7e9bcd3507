// Shapes, strides and abstract values (Aval = shape + dtype + weak type), the static type of an array.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/core/small_vector.h"

namespace graft {

/// Dimensions of an array, row-major. Rank 0 is a scalar.
using Shape = SmallVector<int64_t, 6>;
/// A list of axes or other small integer lists (e.g. a permutation).
using Axes = SmallVector<int64_t, 6>;

int64_t numel(const Shape& s);
/// The most elements an array may have (2^48): its byte size then fits in any size arithmetic.
inline constexpr int64_t kMaxElements = int64_t(1) << 48;
/// numel after checking that every dimension is non-negative and the product neither overflows nor
/// exceeds kMaxElements; throws ValueError naming `op` and the shape otherwise.
int64_t checked_numel(const Shape& s, const char* op);
/// Row-major strides in elements.
Shape strides_of(const Shape& s);
/// "3,4" (no brackets).
std::string shape_str(const Shape& s);
/// Normalizes a possibly negative axis for an array of rank `ndim`; throws ValueError naming `op`.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op);
/// NumPy broadcasting of two shapes; throws ShapeError naming `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

/// The abstract value of an array: what a tracer knows (no data).
struct Aval {
  Shape shape;
  DType dtype = DType::f32;
  /// Weakly typed: a value that came from a C++ scalar; it adopts the dtype of the other operand.
  bool weak_type = false;
  /// The named axes (vmap, shard_map, pmap) the value varies over: a bit per name (core/axis_names.h).
  /// Empty outside named axes. Not part of the type's equality: the compiler and the checks of
  /// shapes ignore it; reverse mode and shard_map's out_specs read it.
  uint64_t vma = 0;

  Aval() = default;
  Aval(Shape s, DType d, bool weak = false) : shape(std::move(s)), dtype(d), weak_type(weak) {}
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  int64_t size() const { return numel(shape); }
  size_t nbytes() const { return static_cast<size_t>(size()) * itemsize(dtype); }
  /// Equality ignoring weak type (what type checking of the IR uses).
  bool same_type(const Aval& o) const { return dtype == o.dtype && shape == o.shape; }
  friend bool operator==(const Aval& a, const Aval& b) {
    return a.dtype == b.dtype && a.weak_type == b.weak_type && a.shape == b.shape;
  }
  friend bool operator!=(const Aval& a, const Aval& b) { return !(a == b); }
  /// "f32[3,4]" (the jaxpr spelling).
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const Aval& a);
std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace graft
