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

/// (residuals, linear inputs) -> outputs: a function linear in its second list (linear_call's fun and
/// transpose).
using LinearFn = std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>;
/// JAX's linear_call: fun(residuals, linear) with the transpose the caller gives, transpose(residuals,
/// output cotangents) -> the linear inputs' cotangents. Reverse mode transposes the call with
/// `transpose` instead of differentiating fun (an iterative solve, a factorization: custom_linear_solve's
/// and custom_root's tangents); forward mode applies fun to the tangents; vmap batches both. fun and
/// transpose must not close over traced values (pass them as residuals). A residual with a tangent (a
/// second derivative, where the point the solve linearizes at moves) takes fun_res_jvp (transpose_res_jvp
/// for the transposed call), or without one differentiates fun in it.
extern const Primitive linear_call_p;
/// (residuals, their tangents, linear inputs, outputs) -> the outputs' tangent that the residuals' motion
/// makes: the derivative of fun in its residuals, when the caller knows it (a solve's: -A^-1 A' A^-1 r),
/// so that fun (an iterative solver) is not differentiated.
using LinearResJvp = std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&,
                                                      const std::vector<Array>&, const std::vector<Array>&)>;
std::vector<Array> linear_call(const LinearFn& fun, const LinearFn& transpose, const std::vector<Array>& residuals,
                               const std::vector<Array>& linear, const std::string& name = "linear_call",
                               const LinearResJvp& fun_res_jvp = {}, const LinearResJvp& transpose_res_jvp = {});

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
