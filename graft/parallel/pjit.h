// Sharded jit (the seeds' pjit; JAX's jit with in_shardings / out_shardings): write the program for one
// device, say how its inputs and outputs lie over a mesh, and the compiler partitions it, inserting the
// collectives itself.
//
//   Mesh mesh(devices(), {"data", "model"}, {2, 2});
//   auto step = pjit(train_step, {.in_shardings = {NamedSharding{mesh, P(std::nullopt, "model")},   // w
//                                                  NamedSharding{mesh, P("data")}},                 // x
//                                 .out_shardings = {NamedSharding{mesh, P(std::nullopt, "model")}}});
//   Array w2 = step(w, x);                                   // whole arrays in and out (this process)
//   std::vector<ShardedArray> r = step(device_put(w, s_w), device_put(x, s_x));   // sharded in and out
//   std::cout << step.lower(w, x).as_text();                 // one device's program, collectives and all
//
// The function is traced at the global shapes; propagation (graft/parallel/partition.h) lays every
// value out from the inputs' shardings; the partitioned program runs as a shard_map over the mesh: on
// this process's devices (GRAFT_CPU_DEVICES) or one device per process under mpirun, where each
// process passes and gets back its own blocks (sharded arrays' addressable data). It is compiled once
// per signature and sharding (a jit around the shard_map), and composes with grad, vmap and jit as
// shard_map does. An in-sharding left out (std::nullopt) is the argument's own sharding for a sharded
// array and replicated otherwise; an out-sharding left out is what propagation chose.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graft/parallel/partition.h"
#include "graft/parallel/shard_map.h"
#include "graft/parallel/sharded.h"
#include "graft/transforms/jit.h"

namespace graft {

struct PjitOptions {
  /// The name printed in jaxprs and compile logs.
  std::string name = "<lambda>";
  /// One per positional argument, applied to each of its leaves (empty: all std::nullopt).
  std::vector<std::optional<NamedSharding>> in_shardings;
  /// Per-leaf in-shardings for arguments whose leaves lie differently (JAX's pytree of shardings):
  /// in_leaf_shardings[i], when not empty, has one entry per leaf of argument i in flattening order and
  /// replaces in_shardings[i] (leaf_shardings(tree, rule) makes one from the leaves' paths).
  std::vector<std::vector<std::optional<NamedSharding>>> in_leaf_shardings;
  /// One per output leaf, or one for all (empty: all std::nullopt).
  std::vector<std::optional<NamedSharding>> out_shardings;
  /// The mesh, when no sharding names it (otherwise every sharding must be over this one).
  std::optional<Mesh> mesh;
  /// Positional arguments the call may take over (JitOptions::donate_argnums): a training step's
  /// parameters and optimizer state, updated in place where a result has a donated leaf's block type.
  /// Whole arrays given are deleted; across processes, the donated blocks are the sharded arrays' own.
  std::vector<int> donate_argnums;
};

/// One device's program and the layouts behind it (pjit(f).lower(args...)).
struct PjitLowered {
  Mesh mesh;
  ClosedJaxpr global;                    ///< f at the global shapes, calls inlined
  ShardingPlan plan;                     ///< every value's layout
  ClosedJaxpr local;                     ///< one device's program, with its collectives
  std::vector<PartitionSpec> in_specs, out_specs;
  /// The per-device program as text (what GRAFT_DUMP_IR writes next to the plan).
  std::string as_text() const;
  /// Each equation with its operands' layouts and the moves between (graft/parallel/partition.h).
  std::string plan_text() const;
  /// The collectives of one device's program: (primitive name, operand bytes) in program order.
  std::vector<std::pair<std::string, int64_t>> collectives() const;
};

/// Sharded jit on flat lists: in[i] is argument leaf i's spec (nullopt: replicated), out one spec per
/// output leaf or one for all (nullopt or empty: as propagated). Over a mesh of this process's
/// devices the arguments and results are whole arrays; across processes they are this process's
/// blocks. `out_specs`, when given, receives the results' specs.
std::vector<Array> pjit_flat(const FlatFn& f, const Mesh& mesh, const std::vector<std::optional<PartitionSpec>>& in,
                             const std::vector<std::optional<PartitionSpec>>& out, const std::vector<Array>& args,
                             std::vector<PartitionSpec>* out_specs = nullptr);
/// The lowering of the same call for arguments of these avals (global shapes).
PjitLowered pjit_lower_flat(const FlatFn& f, const Mesh& mesh, const std::vector<std::optional<PartitionSpec>>& in,
                            const std::vector<std::optional<PartitionSpec>>& out, const std::vector<Aval>& avals);

/// One sharding per leaf of `t` (in flattening order), from its path ("blocks.0.fc1.w": dict keys and
/// list positions joined by dots) and value: for PjitOptions::in_leaf_shardings and out_shardings.
std::vector<std::optional<NamedSharding>> leaf_shardings(
    const Tree& t, const std::function<std::optional<NamedSharding>(const std::string& path, const Array& leaf)>& rule);

namespace detail {
/// What a Pjitted settles once: the mesh (from the options or the shardings) and per-argument specs.
struct PjitSetup {
  std::optional<Mesh> mesh;
  std::vector<std::optional<PartitionSpec>> in, out;
  std::vector<std::vector<std::optional<PartitionSpec>>> in_leaf;  ///< per argument; empty: `in` applies
  bool in_exact = false;  ///< in_shardings given: one per argument
  std::string key;  ///< the mesh, its devices and the specs, for the compile cache
  /// The specs the results got, per call signature (for sharded results after a cache hit).
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
  std::shared_ptr<std::map<std::string, std::vector<PartitionSpec>>> out_specs =
      std::make_shared<std::map<std::string, std::vector<PartitionSpec>>>();
};
PjitSetup pjit_setup(const PjitOptions& o, const std::vector<const ShardedArray*>& args = {});
/// The spec of every argument leaf of the call.
std::vector<std::optional<PartitionSpec>> leaf_specs(const PjitSetup& s, const FlatCall& c);
/// Runs a flattened call: the specs per leaf, the jit around the partitioned shard_map.
std::vector<Array> pjit_call(const JitFunction& jit, const PjitSetup& s, FlatCall& c,
                             const std::vector<std::optional<PartitionSpec>>& leaf_in,
                             std::vector<PartitionSpec>* out_specs = nullptr);
/// The arguments' leaves laid out for the call (whole arrays on one process, blocks across processes).
Array sharded_argument(const ShardedArray& x);
/// Results as sharded arrays.
ShardedArray sharded_result(const Array& x, const Mesh& mesh, const PartitionSpec& spec);
}  // namespace detail

template <class F>
class Pjitted {
 public:
  Pjitted(F f, PjitOptions o) : f_(std::move(f)), opts_(std::move(o)), jit_(JitOptions{.name = opts_.name, .donate_argnums = opts_.donate_argnums}) {}

  /// Whole arrays (pytrees) in, f's output type out.
  template <class... Args>
    requires std::is_invocable_v<const F&, const Args&...>
  auto operator()(const Args&... args) const {
    detail::PjitSetup s = setup();
    return detail::flat_call(
        f_, [&](FlatCall& c) { return detail::pjit_call(jit_, s, c, detail::leaf_specs(s, c)); },
        args...);
  }

  /// Sharded arrays in (one per argument; their shardings are the default in-shardings), the output
  /// leaves out as sharded arrays.
  template <class... S>
    requires(sizeof...(S) > 0 && (std::is_same_v<S, ShardedArray> && ...))
  std::vector<ShardedArray> operator()(const S&... xs) const {
    detail::PjitSetup s = detail::pjit_setup(opts_, {&xs...});
    s.mu = mu_;
    s.out_specs = record_;
    std::vector<PartitionSpec> out_specs;
    std::vector<Array> outs = detail::with_flat_call(
        f_, {},
        [&](FlatCall& c) { return detail::pjit_call(jit_, s, c, detail::leaf_specs(s, c), &out_specs); },
        detail::sharded_argument(xs)...);
    std::vector<ShardedArray> r;
    for (size_t k = 0; k < outs.size(); ++k) r.push_back(detail::sharded_result(outs[k], *s.mesh, out_specs[k]));
    return r;
  }

  /// One device's program for these arguments (whole arrays or their avals' stand-ins).
  template <class... Args>
    requires std::is_invocable_v<const F&, const Args&...>
  PjitLowered lower(const Args&... args) const {
    detail::PjitSetup s = setup();
    return detail::with_flat_call(
        f_, {},
        [&](FlatCall& c) {
          std::vector<Aval> avals;
          for (auto& x : c.leaves) avals.push_back(x.aval());
          return pjit_lower_flat(c.fn, *s.mesh, detail::leaf_specs(s, c), s.out, avals);
        },
        args...);
  }
  size_t num_traces() const { return jit_.num_traces(); }

 private:
  detail::PjitSetup setup() const {
    std::call_once(*once_, [&] {
      *setup_ = detail::pjit_setup(opts_);
      setup_->mu = mu_;
      setup_->out_specs = record_;
    });
    return *setup_;
  }
  F f_;
  PjitOptions opts_;
  JitFunction jit_;
  std::shared_ptr<std::once_flag> once_ = std::make_shared<std::once_flag>();
  std::shared_ptr<detail::PjitSetup> setup_ = std::make_shared<detail::PjitSetup>();
  std::shared_ptr<std::mutex> mu_ = std::make_shared<std::mutex>();
  std::shared_ptr<std::map<std::string, std::vector<PartitionSpec>>> record_ =
      std::make_shared<std::map<std::string, std::vector<PartitionSpec>>>();
};

/// pjit(f, {.in_shardings, .out_shardings}): sharded jit (see the top of this file).
template <class F>
Pjitted<F> pjit(F f, PjitOptions o = {}) {
  return Pjitted<F>(std::move(f), std::move(o));
}

}  // namespace graft
