// Number formatting shared by the array printer and the jaxpr printer.
#pragma once

#include <string>

#include "graft/core/dtype.h"

namespace graft {

/// Python's repr() of a float of dtype `d` (shortest round-trip digits): 1.0, 0.1, 1e-05, inf, nan.
/// For f32/f16/bf16 the digits are the shortest that round-trip in f32, as NumPy's float32 repr.
std::string format_float_repr(double v, DType d);
/// NumPy's array-element spelling: "1." for integral values, else the repr digits.
std::string format_float_numpy(double v);

}  // namespace graft
