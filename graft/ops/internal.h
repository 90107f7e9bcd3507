// Helpers of the NumPy-style layer: promotion, broadcasting, scalar conversion.
#pragma once

#include <utility>

#include "graft/ops/ops.h"

namespace graft::ops_detail {

/// x as dtype d: concrete scalars are converted directly (no primitive), others with
/// convert_element_type.
Array convert(const Array& x, DType d, bool weak = false);
/// The promoted dtype of the operands (JAX's lattice) and whether it is weak.
DType result_type(std::initializer_list<const Array*> xs, bool* weak);
/// Promotes a and b to a common dtype and broadcasts them to a common shape (rank-0 operands stay
/// rank 0: the primitives broadcast scalars themselves).
std::pair<Array, Array> promote_broadcast(const Array& a, const Array& b, const char* op);
/// Broadcasts x to `shape` (NumPy rules), or returns it when it already has that shape.
Array broadcast_to(const Array& x, const Shape& shape, const char* op);
/// Checks that x is a usable (non-null) array.
const Array& checked(const Array& x, const char* op);
/// Floating dtype for x (int/bool promote to the default float).
DType float_dtype(const Array& x);
/// x itself when floating, else converted to float_dtype(x).
inline Array as_float(const Array& x) { return is_floating(x.dtype()) ? x : convert(x, float_dtype(x)); }
/// x, after a TypeError naming `op` when x is complex: for the operations that have no complex form
/// yet (their real-valued paths would silently drop the imaginary part).
inline const Array& real_only(const Array& x, const char* op) {
  if (x.valid() && is_complex(x.dtype()))
    fail<TypeError>(op, ": complex inputs are not supported yet (got ", x.aval().str(), ")");
  return x;
}
/// The scalar v in x's dtype.
inline Array scalar_like(double v, const Array& x) { return Array::scalar(v, x.dtype()); }

}  // namespace graft::ops_detail
