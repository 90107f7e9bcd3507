// Automatic sharding (Alpa's idea, beyond JAX's default): the compiler picks the layouts of chosen
// arguments (the parameters and optimizer state of a training step) to move the fewest bytes between
// devices while each device's share of the arguments fits a memory limit.
//
//   AutoShardingResult plan = auto_sharding(step, {.mesh = mesh, .auto_args = {true, true, false, false},
//                                                  .in_shardings = {std::nullopt, std::nullopt, batch, batch},
//                                                  .carry = training_state_carry(params, state)},
//                                           params, state, x, y);
//   std::cout << plan.summary;
//   auto train = pjit(step, {.in_leaf_shardings = plan.in_leaf_shardings, .out_shardings = plan.out_shardings});
//
// The search: every leaf of an automatic argument may be whole, or split along one of its dimensions
// over one mesh axis, or along two over two; starting from all whole (data parallelism when the batch
// is split), it visits the leaves from the largest and keeps, for each, the option that lowers the cost
// most (coordinate descent, repeated until a pass changes nothing). The cost is the bytes of every
// collective one step issues (from the propagated layouts: graft/parallel/partition.h) plus, while
// the arguments' bytes per device exceed the limit, the excess weighted to dominate: so without a limit
// it keeps data parallelism, and with one it splits the largest leaves where that costs least.
// Outputs that carry to the next call as inputs (`carry`: the updated parameters) are laid out as those
// inputs, so the step's cost includes keeping them so.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graft/parallel/pjit.h"

namespace graft {

struct AutoShardingOptions {
  Mesh mesh;
  /// Per positional argument: whether the compiler lays its leaves out.
  std::vector<bool> auto_args;
  /// Per positional argument, the layout of the others' leaves (nullopt or missing: replicated).
  std::vector<std::optional<NamedSharding>> in_shardings;
  /// (output leaf, input leaf) pairs: the output is the input's next value and is laid out alike.
  std::vector<std::pair<size_t, size_t>> carry;
  /// Bytes of the arguments each device may hold (0: GRAFT_DEVICE_MEMORY if set, else no limit).
  int64_t device_memory = 0;
};

struct AutoShardingResult {
  /// Per positional argument, one sharding per leaf: for PjitOptions::in_leaf_shardings.
  std::vector<std::vector<std::optional<NamedSharding>>> in_leaf_shardings;
  /// One per output leaf (the carried ones as their inputs, the rest nullopt): for out_shardings.
  std::vector<std::optional<NamedSharding>> out_shardings;
  double collective_bytes = 0;  ///< per device and step, as the search's cost model counts them
  double memory_bytes = 0;      ///< the arguments' bytes per device
  int64_t evaluations = 0;      ///< plans the search costed
  /// The chosen layout of every automatic leaf, with the figures.
  std::string summary;
};

/// The cost model's figures for given layouts (one sharding per argument leaf) of the same call:
/// to compare a hand-written plan with the search's.
struct PlanCost {
  double collective_bytes = 0, memory_bytes = 0;
};

namespace detail {
AutoShardingResult auto_sharding_flat(FlatCall& c, const AutoShardingOptions& o);
PlanCost plan_cost_flat(FlatCall& c, const Mesh& mesh, const std::vector<std::optional<NamedSharding>>& leaf_in,
                        const std::vector<std::pair<size_t, size_t>>& carry);
}  // namespace detail

template <class F, class... Args>
AutoShardingResult auto_sharding(const F& f, const AutoShardingOptions& o, const Args&... args) {
  return detail::with_flat_call(f, {}, [&](FlatCall& c) { return detail::auto_sharding_flat(c, o); }, args...);
}

/// The cost of layouts given per argument leaf (in_leaf[i]: one per leaf of argument i).
template <class F, class... Args>
PlanCost plan_cost(const F& f, const Mesh& mesh, const std::vector<std::vector<std::optional<NamedSharding>>>& in_leaf,
                   const std::vector<std::pair<size_t, size_t>>& carry, const Args&... args) {
  std::vector<std::optional<NamedSharding>> flat;
  for (auto& a : in_leaf) flat.insert(flat.end(), a.begin(), a.end());
  return detail::with_flat_call(f, {}, [&](FlatCall& c) { return detail::plan_cost_flat(c, mesh, flat, carry); },
                                args...);
}

/// The carry of a training step f(params, state, ...) -> (params, state, ...): output leaf k is input
/// leaf k for every leaf of the two trees.
std::vector<std::pair<size_t, size_t>> training_state_carry(const Tree& params, const Tree& state);

}  // namespace graft
