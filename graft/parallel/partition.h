// Sharded jit's compiler half (JAX's GSPMD, the seeds' pjit): sharding propagation over a jaxpr, and
// the SPMD partitioner that runs the program on each device's blocks, inserting the collectives.
//
//   ShardingPlan plan = propagate_shardings(*j.jaxpr, mesh, in, out);   // every value's layout
//   std::vector<Array> mine = run_partitioned(j, plan, blocks);         // inside shard_map: one device
//
// A value's layout (ValueSharding) names, per dimension, the mesh axes it is split over, and the mesh
// axes over which it is a partial sum (each device holds a term; what a product leaves when its
// contraction is split). Propagation walks the equations forward: each primitive's rule picks its
// operands' layouts (from theirs: an elementwise op follows its most split operand, a product keeps
// its batch and free dimensions' splits and turns a split contraction into a partial sum, a reduction
// over a split dimension leaves a partial sum or a pmax) and its results' layouts. Where an operand's
// layout differs from the one its equation wants, the partitioner moves it (reshard): a partial sum is
// summed (psum, or psum_scatter when the target splits a dimension over that axis), a split dimension
// the target keeps whole is gathered (all_gather_invariant), and a whole dimension the target splits
// is sliced locally (no communication). Control flow (scan, while, cond) is partitioned inside: its
// bodies run on blocks with their carries' layouts. Primitives without a rule (sort-like, dynamic
// slices, scatters other than an embedding's gradient, grouped convolutions, ...) run on whole
// operands: correct, not yet economical.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graft/ir/jaxpr.h"
#include "graft/parallel/mesh.h"

namespace graft {

/// How one value of a program lies over a mesh.
struct ValueSharding {
  /// Per dimension: how it is split (a split: the index of the mesh axis it is split over, or several
  /// axes packed by split_of), or -1 (whole).
  std::vector<int> dims;
  /// Bit k set: the value is the sum over mesh axis k of the devices' values (a partial sum).
  uint32_t partial = 0;

  /// The split over `axes` (mesh axis indices, major first): the index itself for one axis.
  static int split_of(const std::vector<int>& axes);
  /// A split's mesh axes, major first.
  static std::vector<int> axes_of(int split);
  /// A split's mesh axes as bits (bit k: axis k).
  static uint32_t bits_of(int split);
  /// The number of devices a split divides a dimension over.
  static int64_t devices_of(const Mesh& mesh, int split);
  static ValueSharding replicated(int64_t rank) { return {std::vector<int>(static_cast<size_t>(rank), -1), 0}; }
  /// From a PartitionSpec for a value of this aval (ValueError naming `what` when the spec names more
  /// dimensions than the value has, an axis the mesh lacks, an axis twice, or a split that does not divide).
  static ValueSharding from_spec(const PartitionSpec& spec, const Mesh& mesh, const Aval& a, const std::string& what);
  /// The PartitionSpec of the splits (partial sums are not part of it).
  PartitionSpec spec(const Mesh& mesh) const;
  /// The mesh axes it uses (splits and partial sums).
  uint32_t used() const;
  /// P('data', None), with `+partial('model')` for partial sums.
  std::string str(const Mesh& mesh) const;
  bool operator==(const ValueSharding& o) const { return dims == o.dims && partial == o.partial; }
};

/// The layouts propagation chose for one flat jaxpr.
struct ShardingPlan {
  /// What one equation does: its operands are brought to `in` (literal operands keep theirs), the
  /// primitive runs on the blocks, then `post` (pmax / pmin over `post_axes`) for an extremum over a
  /// split dimension; its results lie as `out`.
  struct Step {
    std::vector<ValueSharding> in, out;
    enum Post { kNone, kPmax, kPmin } post = kNone;
    uint32_t post_axes = 0;
    /// For control flow partitioned inside (scan's body, cond's branches, while's predicate and body):
    /// each sub-program (calls inlined) with its plan. Empty: the primitive runs as it is on blocks.
    struct Sub;
    std::vector<std::shared_ptr<const Sub>> subs;
  };
  std::vector<ValueSharding> consts, inputs;
  std::vector<Step> steps;  ///< one per equation
  /// How each output is returned (never a partial sum).
  std::vector<ValueSharding> outputs;
  /// Every variable's layout.
  std::unordered_map<const Var*, ValueSharding> of;
};

struct ShardingPlan::Step::Sub {
  ClosedJaxpr body;
  ShardingPlan plan;
};

/// A primitive's propagation rule: from its operands' layouts, the layouts it brings them to and its
/// results'. graft's own primitives have theirs in partition.cpp; a layer defining primitives of its
/// own registers theirs (without one, a primitive runs on whole operands).
using ShardingRule =
    std::function<ShardingPlan::Step(const Eqn& e, const std::vector<ValueSharding>& in, const Mesh& mesh)>;
void register_sharding_rule(const Primitive& p, ShardingRule rule);
/// The rule of a primitive whose operands and results share some dimensions (a batch, heads) and
/// work independently along them: in_dims[i][j] is where shared dimension j sits in operand i (-1: not
/// there; operands past the list have none), out_dims likewise for the results. The shared dimensions
/// are split alike everywhere (each over the first axis an operand splits it over), the rest whole.
ShardingRule aligned_dims_rule(std::vector<std::vector<int>> in_dims, std::vector<std::vector<int>> out_dims);

/// Propagates layouts through `j` (a flat jaxpr: calls inlined) from its inputs' (`in`, one per invar;
/// constvars are replicated) to its outputs (`out[i]`: the layout output i must have, nullopt: as
/// propagated, partial sums summed). The dimensions of `in` and `out` must divide over their axes.
ShardingPlan propagate_shardings(const Jaxpr& j, const Mesh& mesh, const std::vector<ValueSharding>& in,
                                 const std::vector<std::optional<ValueSharding>>& out);

/// Runs `j` on one device's blocks of its inputs (laid out as plan.inputs), under the mesh's named
/// axes (inside shard_map): each equation on blocks, with the collectives the plan's layouts need.
/// Returns the device's blocks of the outputs, laid out as plan.outputs.
std::vector<Array> run_partitioned(const ClosedJaxpr& j, const ShardingPlan& plan, const Mesh& mesh,
                                   const std::vector<Array>& blocks);

/// One device's block of a value laid out as `from`, brought to `to` (under the mesh's named axes).
Array reshard(const Array& x, const ValueSharding& from, const ValueSharding& to, const Mesh& mesh);

/// The bytes one device sends into collectives when running `plan` (each collective's operand, as
/// PjitLowered::collectives() counts them), computed from the layouts without tracing: the cost model
/// of the automatic sharding search.
double plan_collective_bytes(const Jaxpr& j, const ShardingPlan& plan, const Mesh& mesh);

/// The plan printed: each equation with its operands' and results' layouts, and the collectives
/// between (for GRAFT_DUMP_IR and lower().plan_text()).
std::string plan_str(const Jaxpr& j, const ShardingPlan& plan, const Mesh& mesh);

/// The primitive of with_sharding_constraint: `sharding_constraint[sharding=...]`, the identity on
/// values (under plain jit and eagerly); sharded jit lays its result out as the sharding says.
extern const Primitive sharding_constraint_p;

/// Pins x's layout inside a sharded jit (JAX's with_sharding_constraint): the partitioner moves x to
/// `s` there, and derivatives and batches keep the pin. Anywhere else it returns x.
Array with_sharding_constraint(const Array& x, const NamedSharding& s);

}  // namespace graft
