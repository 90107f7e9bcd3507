// The backward pass: runs a linear jaxpr in reverse, calling each primitive's transpose rule.
#pragma once

#include <span>

#include "graft/ir/jaxpr.h"

namespace graft {

/// Transposes the linear function `lin` (invars = linear inputs, constvars = known values `consts`).
/// `cts_out` holds one cotangent per output (null = zero). Returns one cotangent per input (null =
/// zero). Equations that use no linear value are evaluated forward first. The primitives of the
/// backward pass are bound under the current trace, so it can itself be traced, jitted or
/// differentiated.
Arrays backward_pass(const Jaxpr& lin, std::span<const Array> consts, std::span<const Array> cts_out);

}  // namespace graft
