// The transformations on flat lists of arrays. The typed, pytree-aware API in graft/transforms/api.h
// is a thin layer over these.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graft/core/array.h"
#include "graft/ir/jaxpr.h"

namespace graft {

using FlatFn = std::function<std::vector<Array>(const std::vector<Array>&)>;

/// Forward mode: (f(primals), J·tangents). Null tangents are zeros.
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& f, const std::vector<Array>& primals,
                                                         const std::vector<Array>& tangents);

/// The linearization of f at `primals`: its outputs, and the linear map from input tangents to
/// output tangents as a jaxpr (whose constvars are the residuals).
struct Linearized {
  std::vector<Array> outs;
  ClosedJaxpr linear;               ///< invars: one per float input; outvars: one per nonzero output tangent
  std::vector<int> in_index;        ///< input position of each linear invar
  std::vector<int> out_index;       ///< output position of each linear outvar
  std::vector<Aval> in_avals, out_avals;
};
Linearized linearize_flat(const FlatFn& f, const std::vector<Array>& primals);

/// Reverse mode: the pullback maps output cotangents (null = zero) to input cotangents (zeros for
/// inputs that do not influence the outputs).
struct VjpResult {
  std::vector<Array> outs;
  std::function<std::vector<Array>(const std::vector<Array>&)> pullback;
};
VjpResult vjp_flat(const FlatFn& f, const std::vector<Array>& primals);

/// vmap: in_axes[i] is the mapped axis of argument i (nullopt: not mapped); out_axes[i] where the
/// mapped axis goes in output i (a single entry applies to all outputs).
std::vector<Array> vmap_flat(const FlatFn& f, const std::vector<Array>& args,
                             const std::vector<std::optional<int64_t>>& in_axes, const std::vector<int64_t>& out_axes,
                             const std::string& axis_name = "", std::optional<int64_t> axis_size = std::nullopt);

/// Traces f on abstract inputs into a closed jaxpr (its consts are the captured values).
ClosedJaxpr make_jaxpr_flat(const FlatFn& f, const std::vector<Aval>& in_avals, const std::string& kind = "make_jaxpr");

/// Converts a closed jaxpr's constvars into leading invars (consts are then passed as arguments).
std::shared_ptr<const Jaxpr> hoist_consts(const Jaxpr& j);

/// jvp of a jaxpr: inputs (primals..., tangents for inputs with nonzero[i]...), outputs (primal outs...,
/// tangent outs...) with all output tangents instantiated.
ClosedJaxpr jvp_jaxpr(const ClosedJaxpr& j, const std::vector<bool>& nonzero);
/// vmap of a jaxpr: inputs batched at `dims` (kNotMapped: not batched); all outputs batched at 0.
ClosedJaxpr batch_jaxpr(const ClosedJaxpr& j, const std::vector<int64_t>& dims, int64_t size, const std::string& name);

/// Splits j into a known part, run now, and an unknown part that depends on the inputs marked
/// unknown. known: known inputs -> (known outputs, residuals); unknown: (residuals, unknown inputs)
/// -> unknown outputs. `out_unknown[i]` tells which outputs the unknown part produces.
struct PartialEval {
  ClosedJaxpr known, unknown;
  size_t num_residuals = 0;
  std::vector<bool> out_unknown;
};
PartialEval partial_eval_jaxpr(const ClosedJaxpr& j, const std::vector<bool>& unknown_inputs);

}  // namespace graft
