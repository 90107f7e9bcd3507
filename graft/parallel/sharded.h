// Arrays laid out over a mesh (JAX's jax.Array with a NamedSharding, multi-controller): a global shape
// and a sharding, of which each process holds the blocks of its own devices.
//
//   graft::NamedSharding s{mesh, graft::P("data")};
//   graft::ShardedArray xs = graft::device_put(x, s);     // x: the whole array, the same on every process
//   for (auto& shard : xs.addressable_shards()) ...       // this process's blocks: device, index, data
//   graft::Array back = xs.gather();                      // the whole array again (all-gathered over MPI)
//
// A block is replicated on every device along the mesh axes its spec does not name. Inside shard_map a
// process computes on its blocks: across processes pass `xs.addressable_data(0)` (one device per
// process), and wrap the results with make_array_from_single_device_arrays.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graft/core/array.h"
#include "graft/parallel/mesh.h"

namespace graft {

/// One device's block of a sharded array.
struct Shard {
  GlobalDevice device;
  /// Where the block sits in the global array: [start, stop) per dimension.
  std::vector<std::pair<int64_t, int64_t>> index;
  Array data;
};

class ShardedArray {
 public:
  ShardedArray(Shape shape, DType dtype, NamedSharding sharding, std::vector<Shard> shards);
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  const NamedSharding& sharding() const { return sharding_; }
  /// This process's blocks, in the mesh's device order.
  const std::vector<Shard>& addressable_shards() const { return shards_; }
  /// The data of this process's i-th block.
  const Array& addressable_data(size_t i) const;
  /// Whether every device of the mesh belongs to this process.
  bool is_fully_addressable() const;
  /// The whole array, on every process. Across processes this is a collective (an all-gather over
  /// the world): every process must call it.
  Array gather() const;
  /// ShardedArray(f32[8,4], NamedSharding(Mesh('data': 4), P('data')))
  std::string str() const;

 private:
  Shape shape_;
  DType dtype_;
  NamedSharding sharding_;
  std::vector<Shard> shards_;
};

/// Where each device of `s`'s mesh holds its block of an array of `global` shape: [start, stop) per
/// dimension, for the device at `position` in the mesh (ValueError when a split does not divide).
std::vector<std::pair<int64_t, int64_t>> shard_index(const NamedSharding& s, const Shape& global, size_t position);

/// Lays x (the whole array, the same on every process) out over `s`: this process keeps the blocks of
/// its devices.
ShardedArray device_put(const Array& x, const NamedSharding& s);

/// A sharded array from this process's blocks (one per local device of the mesh, in the mesh's device
/// order), each of `s.shard_shape(global)`; the results of a shard_map, or data each process loaded.
ShardedArray make_array_from_single_device_arrays(const Shape& global, const NamedSharding& s,
                                                  std::vector<Array> blocks);

}  // namespace graft
