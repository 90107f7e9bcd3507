// checkpoint (rematerialization): trade compute for memory in reverse mode.
//
//   auto block = checkpoint([&](const Array& x) { return tanh(matmul(tanh(matmul(x, w1)), w2)); },
//                           CheckpointPolicy::dots_saveable());
//   grad(loss_using(block))(x);                   // the backward pass recomputes what was not saved
//   std::cout << saved_residuals(f)(x);           // what reverse mode keeps from the forward pass
//
// A checkpointed function is a `checkpoint` equation whose body is traced once. Under grad, only the
// residuals its policy allows are saved by the forward pass (plus its inputs); the linear program gets a
// `checkpoint` equation that recomputes the others from them before using them. Being an opaque
// equation to the compiler, the recomputation is not merged back into the forward pass (JAX's
// prevent_cse).
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "graft/core/primitive.h"
#include "graft/transforms/flat.h"
#include "graft/transforms/pytree.h"

namespace graft {

extern const Primitive checkpoint_p;
/// name[name=...] x: the identity, marking a value for CheckpointPolicy::save_only_these_names.
extern const Primitive name_p;

struct CheckpointPolicy {
  enum class Kind { nothing_saveable, dots_saveable, save_names, everything_saveable };
  Kind kind = Kind::nothing_saveable;
  std::vector<std::string> names;
  /// Save only the inputs; recompute everything else (the default).
  static CheckpointPolicy nothing_saveable() { return {}; }
  /// Save the results of matrix products (dot_general), recompute the cheap elementwise rest.
  static CheckpointPolicy dots_saveable() { return {Kind::dots_saveable, {}}; }
  /// Save the values marked with checkpoint_name(x, name) for one of `names`.
  static CheckpointPolicy save_only_these_names(std::vector<std::string> names) {
    return {Kind::save_names, std::move(names)};
  }
  /// Save everything (no rematerialization; the same as not checkpointing).
  static CheckpointPolicy everything_saveable() { return {Kind::everything_saveable, {}}; }
  std::string str() const;
};

/// The `policy` parameter of a checkpoint equation (what graft/io builds when it reads one back).
Ref<const ParamObject> checkpoint_policy_param(const CheckpointPolicy& policy);

/// Marks x with a name for CheckpointPolicy::save_only_these_names.
Array checkpoint_name(const Array& x, const std::string& name);

/// The flat form: f applied to args as one checkpoint equation.
std::vector<Array> checkpoint_flat(const FlatFn& f, const std::vector<Array>& args, const CheckpointPolicy& policy);

/// checkpoint(f, policy): f, with its residuals under reverse mode chosen by `policy`.
template <class F>
auto checkpoint(F f, CheckpointPolicy policy = {}) {
  return [f, policy](const auto&... args) {
    using R = std::decay_t<decltype(f(args...))>;
    auto tup = std::tuple<std::decay_t<decltype(args)>...>(args...);
    TreeDef in_def, out_def;
    std::vector<Array> leaves = tree_flatten(tup, &in_def);
    FlatFn flat = [&](const std::vector<Array>& xs) {
      auto t = tree_unflatten<decltype(tup)>(in_def, xs);
      return tree_flatten(R(std::apply(f, t)), &out_def);
    };
    std::vector<Array> out = checkpoint_flat(flat, leaves, policy);
    return tree_unflatten<R>(out_def, out);
  };
}

/// jax.remat: checkpoint's other name.
template <class F>
auto remat(F f, CheckpointPolicy policy = {}) {
  return checkpoint(std::move(f), std::move(policy));
}

/// jax.checkpoint_policies: the policies under JAX's names.
namespace checkpoint_policies {
inline CheckpointPolicy nothing_saveable() { return CheckpointPolicy::nothing_saveable(); }
inline CheckpointPolicy everything_saveable() { return CheckpointPolicy::everything_saveable(); }
inline CheckpointPolicy dots_saveable() { return CheckpointPolicy::dots_saveable(); }
inline CheckpointPolicy save_only_these_names(std::vector<std::string> names) {
  return CheckpointPolicy::save_only_these_names(std::move(names));
}
}  // namespace checkpoint_policies

/// What reverse mode saves from the forward pass of f at these argument types, one line per
/// residual: its type and where it comes from (an argument, or the primitive that computes it).
std::string saved_residuals_flat(const FlatFn& f, const std::vector<Aval>& in_avals);
template <class F>
auto saved_residuals(F f) {
  return [f](const auto&... args) {
    auto tup = std::tuple<std::decay_t<decltype(args)>...>(args...);
    TreeDef in_def;
    std::vector<Array> leaves = tree_flatten(tup, &in_def);
    std::vector<Aval> avals;
    for (auto& x : leaves) avals.push_back(x.aval());
    FlatFn flat = [&](const std::vector<Array>& xs) {
      auto t = tree_unflatten<decltype(tup)>(in_def, xs);
      return tree_flatten(std::apply(f, t));
    };
    return saved_residuals_flat(flat, avals);
  };
}

}  // namespace graft
