// Helpers of the NumPy-layer tests (test_numpy_more, test_numpy_stats, test_numpy_shape): arrays from
// row-major values, and an assertion on dtype, shape and values.
#pragma once

#include <vector>

#include "testing.h"

namespace graft::testing {

/// An array of `shape` and dtype d from row-major values.
inline Array arr(const std::vector<double>& v, const Shape& shape, DType d = f64) { return concrete(v, shape, d); }

/// A complex array of `shape` (c128, or converted to d) from row-major values.
inline Array zarr(const std::vector<complex128>& v, const Shape& shape, DType d = c128) {
  Array a = Array::from_data(v.data(), shape, c128);
  return d == c128 ? a : a.astype(d);
}

/// Asserts dtype d, shape `shape` and values v (within rtol / atol; NaNs and infinities must match).
inline ::testing::AssertionResult is(const Array& a, DType d, const Shape& shape, const std::vector<double>& v,
                                     double rtol = 1e-12, double atol = 1e-12) {
  if (!a.valid()) return ::testing::AssertionFailure() << "null array";
  if (a.dtype() != d) return ::testing::AssertionFailure() << "dtype " << a.dtype() << ", expected " << d;
  return close(a, concrete(v, shape, f64), rtol, atol);
}

}  // namespace graft::testing
