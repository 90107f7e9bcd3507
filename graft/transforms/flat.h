// The transformations on flat lists of arrays. The typed, pytree-aware API in graft/transforms/api.h
// is a thin layer over these.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graft/core/array.h"
#include "graft/core/small_vector.h"
#include "graft/ir/jaxpr.h"
#include "graft/transforms/pytree.h"

namespace graft {

using FlatFn = std::function<std::vector<Array>(const std::vector<Array>&)>;

/// A call of a function of pytrees, flattened: what each transformation's typed wrapper
/// (graft/transforms/api.h, detail::flat_call) and the Python binding hand to the flat implementation.
struct FlatCall {
  /// The function on the leaves; it records its output's structure in *out_def when it runs.
  FlatFn fn;
  /// The arrays of the flattened arguments, in order.
  std::vector<Array> leaves;
  /// The leaves of positional argument i are [offset[i], offset[i+1]) (one more entry than arguments).
  SmallVector<size_t, 8> offset;
  /// Per positional argument: whether it was flattened (false: static, or not selected).
  SmallVector<bool, 8> traced;
  /// The arguments' structure and static values (jit's cache key, without the leaves' types).
  std::string key;
  /// The output's structure: set by fn, or by a callee that did not run it (jit's cache hit). May be
  /// null where the caller rebuilds the output itself (Python).
  std::shared_ptr<TreeDef> out_def;

  size_t num_args() const { return traced.size(); }
  /// One value per leaf from one per positional argument, e.g. vmap's in_axes or shard_map's in_specs
  /// (ValueError naming `what` when `per_arg` has another length).
  template <class T>
  std::vector<T> per_leaf(const std::vector<T>& per_arg, const char* what) const {
    if (per_arg.size() != num_args())
      fail<ValueError>(what, " has ", per_arg.size(), " entries for ", num_args(), " arguments");
    std::vector<T> out;
    out.reserve(leaves.size());
    for (size_t i = 0; i < num_args(); ++i)
      for (size_t k = offset[i]; k < offset[i + 1]; ++k) out.push_back(per_arg[i]);
    return out;
  }
};

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
/// `diff[i]` selects the inputs that get a tangent (default: every floating input); with
/// `instantiate`, every floating output gets a linear outvar (zeros where it has no tangent).
Linearized linearize_flat(const FlatFn& f, const std::vector<Array>& primals, const std::vector<bool>& diff = {},
                          bool instantiate = false);

/// JAX's linearize: f's outputs at `primals`, and its JVP there as a function of one tangent per input
/// (null or for a non-floating input: zero), which evaluates the linear program on the residuals
/// linearization stored (f is not run again). Non-floating outputs get zero tangents.
std::pair<std::vector<Array>, FlatFn> linearize_fn(const FlatFn& f, const std::vector<Array>& primals);
/// JAX's linear_transpose: the transpose of f, a function linear in all its (floating) inputs, traced at
/// the types of `primals` (their values are not used): one cotangent per output -> one per input. A
/// function that is not linear raises the transposition's error naming the primitive.
FlatFn linear_transpose_fn(const FlatFn& f, const std::vector<Aval>& in_avals);
/// JAX's eval_shape: the types of f's outputs on inputs of these types, traced without computing anything.
std::vector<Aval> eval_shape_flat(const FlatFn& f, const std::vector<Aval>& in_avals);

/// Reverse mode: the pullback maps output cotangents (null = zero) to input cotangents (zeros for
/// inputs that do not influence the outputs).
struct VjpResult {
  std::vector<Array> outs;
  std::function<std::vector<Array>(const std::vector<Array>&)> pullback;
};
VjpResult vjp_flat(const FlatFn& f, const std::vector<Array>& primals);

/// vmap: in_axes[i] is the mapped axis of argument i (nullopt: not mapped); out_axes[i] where the
/// mapped axis goes in output i (a single entry applies to all outputs; nullopt: the output is the
/// same on every lane and is returned without the axis). With an axis_name, collectives inside
/// (psum(x, name), ...) combine the lanes.
std::vector<Array> vmap_flat(const FlatFn& f, const std::vector<Array>& args,
                             const std::vector<std::optional<int64_t>>& in_axes,
                             const std::vector<std::optional<int64_t>>& out_axes,
                             const std::string& axis_name = "", std::optional<int64_t> axis_size = std::nullopt);

/// Traces f on abstract inputs into a closed jaxpr (its consts are the captured values).
ClosedJaxpr make_jaxpr_flat(const FlatFn& f, const std::vector<Aval>& in_avals, const std::string& kind = "make_jaxpr");

/// Converts a closed jaxpr's constvars into leading invars (consts are then passed as arguments).
std::shared_ptr<const Jaxpr> hoist_consts(const Jaxpr& j);

/// jvp of a jaxpr: inputs (primals..., tangents for inputs with nonzero[i]...), outputs (primal outs...,
/// tangent outs...) with all output tangents instantiated.
ClosedJaxpr jvp_jaxpr(const ClosedJaxpr& j, const std::vector<bool>& nonzero);
/// vmap of a jaxpr: inputs batched at `dims` (kNotMapped: not batched); all outputs batched at 0. With
/// `out_mapped`: on entry, the outputs that must be batched (missing entries: false); the others stay
/// unbatched when they are the same on every lane (a psum's result); on return, which are batched.
ClosedJaxpr batch_jaxpr(const ClosedJaxpr& j, const std::vector<int64_t>& dims, int64_t size, const std::string& name,
                        std::vector<bool>* out_mapped = nullptr);

/// Linearization of a jaxpr, split for reverse mode (what higher-order primitives use under grad).
/// known: primal inputs -> (primal outputs..., residuals...); linear: (residuals..., tangents of the
/// inputs marked `nonzero`...) -> (tangents of the outputs marked `out_nonzero`...). Residuals that are
/// primal inputs themselves are marked in `residual_input` (the input's index, else -1), so a caller
/// can pass the input instead of a copy (loop-invariant consts of a scan, its xs).
struct LinearizedJaxpr {
  ClosedJaxpr known, linear;
  size_t num_residuals = 0;
  std::vector<int> residual_input;
  std::vector<bool> out_nonzero;
};
/// With `instantiate`, every floating output gets a tangent (zeros where it has none).
LinearizedJaxpr linearize_jaxpr(const ClosedJaxpr& j, const std::vector<bool>& nonzero, bool instantiate);

/// The transpose of j seen as linear in the inputs marked `linear`: (the other inputs..., one
/// cotangent per output...) -> (one cotangent per linear input...), zeros instantiated.
ClosedJaxpr transpose_jaxpr(const ClosedJaxpr& j, const std::vector<bool>& linear);

}  // namespace graft
