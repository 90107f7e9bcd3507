// shard_map and pmap: SPMD programs over a mesh of devices. Each device runs f on its block of every
// argument (as the in_specs split them); collectives inside f (psum(x, "data"), all_gather, ppermute
// ...) communicate along the mesh's named axes; the out_specs say how the devices' results form the
// outputs (an axis an output is not split over must be one it is invariant over: a psum's result).
//
//   Mesh mesh(devices(), {"data"});
//   auto step = jit(shard_map(train_step, mesh, {P(), P("data"), P("data")}, {P(), P()}));
//
// Where the devices are decides how it runs:
//   - every device of the mesh in this process (GRAFT_CPU_DEVICES=N): the arguments are whole arrays;
//     f runs once per device as nested vmap(axis_name) over the blocks (the reference semantics of
//     collectives), so shard_map composes with jit, grad, vmap and control flow like any function;
//   - one device per process (mpirun, distributed::initialize()): each process passes its own blocks
//     (process-local data, as JAX's make_array_from_process_local_data) and gets its own blocks back;
//     the body is compiled and staged as a `shard_map` equation, and its collectives run over MPI.
//     Differentiate inside the body there (grad of a psum'd loss is the full-batch gradient).
#pragma once

#include <vector>

#include "graft/parallel/mesh.h"
#include "graft/transforms/api.h"

namespace graft {

/// The staged SPMD call of the multi-process path: `shard_map[jaxpr={...} mesh=... in_specs=...
/// out_specs=...]`.
extern const Primitive shard_map_p;

/// shard_map on flat lists: in_specs per argument leaf, out_specs per output leaf (or one for all).
std::vector<Array> shard_map_flat(const FlatFn& f, const Mesh& mesh, const std::vector<PartitionSpec>& in_specs,
                                  const std::vector<PartitionSpec>& out_specs, const std::vector<Array>& args);

template <class F>
class ShardMapFn {
 public:
  ShardMapFn(F f, Mesh mesh, std::vector<PartitionSpec> in_specs, std::vector<PartitionSpec> out_specs)
      : f_(std::move(f)), mesh_(std::move(mesh)), in_(std::move(in_specs)), out_(std::move(out_specs)) {}
  template <class... Args>
    requires std::is_invocable_v<const F&, const Args&...>
  auto operator()(const Args&... args) const {
    return detail::flat_call(
        f_, [&](FlatCall& c) { return shard_map_flat(c.fn, mesh_, c.per_leaf(in_, "shard_map: in_specs"), out_, c.leaves); },
        args...);
  }

 private:
  F f_;
  Mesh mesh_;
  std::vector<PartitionSpec> in_, out_;
};

/// shard_map(f, mesh, in_specs (one per argument, applied to all its leaves), out_specs (one per output
/// leaf, or one for all)).
template <class F>
ShardMapFn<F> shard_map(F f, Mesh mesh, std::vector<PartitionSpec> in_specs, std::vector<PartitionSpec> out_specs) {
  return ShardMapFn<F>(std::move(f), std::move(mesh), std::move(in_specs), std::move(out_specs));
}

/// pmap(f, axis_name)(xs...): f on each device's slice x[k] of the leading axis of every argument (one
/// slice per device of this process: local_device_count() of them), collectives over `axis_name`,
/// results stacked. Across processes, the axis spans every process's devices. f takes and returns
/// arrays; it runs as a shard_map over all devices.
template <class F>
auto pmap(F f, std::string axis_name) {
  return [f = std::move(f), axis_name](const auto&... args) -> Array {
    static_assert((std::is_same_v<std::decay_t<decltype(args)>, Array> && ...), "pmap: the arguments are arrays");
    auto body = [&f](const decltype(args)&... blocks) {
      return lax::expand_dims(f(lax::squeeze(blocks, {0})...), {0});
    };
    std::vector<PartitionSpec> in(sizeof...(args), P(axis_name));
    return ShardMapFn<decltype(body)>(body, Mesh(devices(), {axis_name}), in, {P(axis_name)})(args...);
  };
}

}  // namespace graft
