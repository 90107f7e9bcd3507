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

/// Which outputs of j depend on the inputs marked in `linear_in` (data flow, refined by the
/// primitives' linear_outputs rules).
std::vector<bool> linear_outputs(const Jaxpr& j, const std::vector<bool>& linear_in);

/// Which results of `e` are linear, given which of its inputs are.
std::vector<bool> eqn_linear_outputs(const Eqn& e, const std::vector<bool>& linear_in);

}  // namespace graft
