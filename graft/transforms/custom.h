// User-defined derivatives: custom_jvp_call and custom_vjp_call primitives (flat level). The typed
// API (graft::custom_jvp / graft::custom_vjp) is in api.h.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graft/core/primitive.h"
#include "graft/transforms/flat.h"

namespace graft {

/// (primals, tangents) -> (outputs, output tangents); tangents arrive instantiated (zeros, not null).
using CustomJvpRule =
    std::function<std::pair<std::vector<Array>, std::vector<Array>>(const std::vector<Array>&, const std::vector<Array>&)>;
/// primals -> (outputs, residuals)
using CustomFwd = std::function<std::pair<std::vector<Array>, std::vector<Array>>(const std::vector<Array>&)>;
/// (residuals, output cotangents) -> one cotangent per primal input
using CustomBwd = std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>;

extern const Primitive custom_jvp_call_p;
extern const Primitive custom_vjp_call_p;
/// The linear stand-in for a custom_vjp function inside a linearized program; transposing it calls bwd.
extern const Primitive custom_lin_p;

/// Applies f (flat) to args with the custom JVP rule. Eagerly (no transformation running) it just
/// calls f; otherwise it binds custom_jvp_call so that transformations use the rule.
/// Registers custom_jvp_call / custom_vjp_call / custom_lin and their jaxpr spellings (a process that
/// only reads programs calls it through register_transform_primitives()).
void register_custom_call_primitives();

std::vector<Array> custom_jvp_apply(const FlatFn& f, const CustomJvpRule& rule, const std::vector<Array>& args,
                                    const std::string& name);
/// Applies f (flat) with the custom VJP (fwd, bwd).
std::vector<Array> custom_vjp_apply(const FlatFn& f, const CustomFwd& fwd, const CustomBwd& bwd,
                                    const std::vector<Array>& args, const std::string& name);

}  // namespace graft
