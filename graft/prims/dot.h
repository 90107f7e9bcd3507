// dot_general's CPU kernel with BLAS's scaling, for products that accumulate into an existing value
// (the compiler's dot_general_add, graft/compiler/cpu/accumulate.h).
#pragma once

#include "graft/core/array.h"
#include "graft/core/params.h"

namespace graft::prims {

/// out = alpha * dot_general(lhs, rhs) + beta * out, with dot_general's parameters; `out` is a
/// concrete CPU array of the product's type, written in place. With beta 0 its old contents are not
/// read. lhs and rhs are converted to out's dtype first when they differ (preferred_element_type).
void dot_general_into(const Array& lhs, const Array& rhs, const Params& params, const Array& out, double alpha,
                      double beta);

}  // namespace graft::prims
