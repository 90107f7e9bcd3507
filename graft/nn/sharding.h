// Layouts of nn's models over a mesh, written as sharding annotations for sharded jit (pjit): data
// parallelism, FSDP / ZeRO-3 and Megatron's tensor parallelism without a collective in the model.
//
//   Mesh mesh(devices(), {"data", "model"}, {2, 2});
//   nn::Layout layout{.fsdp = "data", .tensor = "model"};
//   auto p_sh = nn::parameter_shardings(params, mesh, layout);       // one per leaf of params
//   auto s_sh = nn::parameter_shardings(opt_state, mesh, layout);    // Adam's mu / nu follow their parameters
//   auto step = pjit(train_step, {.in_leaf_shardings = {p_sh, s_sh, {batch}, {batch}, {}}, ...});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graft/parallel/mesh.h"
#include "graft/transforms/pytree.h"

namespace graft::nn {

struct Layout {
  /// FSDP: every parameter (and optimizer state) split over this axis along its first dimension that
  /// divides and is not split otherwise; gathered per use by the partitioner. Empty: replicated.
  std::string fsdp;
  /// Megatron: over this axis, the attention projections query / key / value and the first layer of
  /// each MLP (`fc1`, and the even layers of an MLP list) split by output columns, the attention output
  /// and the second layers (`fc2`, odd MLP layers but the last) by input rows; one all-reduce per pair
  /// forward and backward. Empty: none.
  std::string tensor;
};

/// One sharding per leaf of `params` (flattening order), by the leaves' paths: an nn model's
/// parameters, or an optimizer state holding trees shaped like them (`mu.blocks.0.fc1.w` lies as
/// `blocks.0.fc1.w`). Scalars and leaves whose dimensions do not divide stay replicated.
std::vector<std::optional<NamedSharding>> parameter_shardings(const Tree& params, const Mesh& mesh, const Layout& layout);

/// The sharding one leaf gets (what parameter_shardings applies to each); `mlp_layers`: the number of
/// layers when the parameters are an MLP's list of layers (paths "0.w", "1.b", ...).
NamedSharding parameter_sharding(const std::string& path, const Aval& leaf, const Mesh& mesh, const Layout& layout,
                                 int64_t mlp_layers = 0);

}  // namespace graft::nn
