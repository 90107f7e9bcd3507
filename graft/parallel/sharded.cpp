#include "graft/parallel/sharded.h"

#include <sstream>

#include "graft/runtime/collectives.h"
#include "graft/core/error.h"
#include "graft/ops/ops.h"
#include "graft/prims/lax.h"

namespace graft {

namespace {

// The positions in the mesh of this process's devices.
std::vector<size_t> local_positions(const Mesh& m) {
  std::vector<size_t> r;
  for (size_t i = 0; i < m.devices().size(); ++i)
    if (m.devices()[i].process_index == process_index()) r.push_back(i);
  return r;
}

Array starts_array(const std::vector<std::pair<int64_t, int64_t>>& index, size_t k) {
  return Array(index[k].first).astype(DType::i64);
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> shard_index(const NamedSharding& s, const Shape& global, size_t position) {
  Shape block = s.shard_shape(global);
  std::vector<int64_t> coords = s.mesh.coords(position);
  std::vector<std::pair<int64_t, int64_t>> index;
  for (size_t d = 0; d < global.size(); ++d) {
    int64_t start = 0;
    if (d < s.spec.dims.size() && s.spec.dims[d])
      start = s.mesh.block_index(s.spec.dims[d], coords) * block[d];
    index.push_back({start, start + block[d]});
  }
  return index;
}

ShardedArray::ShardedArray(Shape shape, DType dtype, NamedSharding sharding, std::vector<Shard> shards)
    : shape_(std::move(shape)), dtype_(dtype), sharding_(std::move(sharding)), shards_(std::move(shards)) {}

const Array& ShardedArray::addressable_data(size_t i) const {
  if (i >= shards_.size())
    fail<ValueError>("addressable_data(", i, "): this process holds ", shards_.size(), " blocks of ", str());
  return shards_[i].data;
}

bool ShardedArray::is_fully_addressable() const {
  return shards_.size() == sharding_.mesh.devices().size();
}

Array ShardedArray::gather() const {
  const Mesh& m = sharding_.mesh;
  Shape block = sharding_.shard_shape(shape_);
  // every device's block, in the mesh's device order: here, or all-gathered from every process
  std::vector<Array> blocks(m.devices().size());
  if (is_fully_addressable()) {
    for (size_t i = 0; i < shards_.size(); ++i) blocks[i] = shards_[i].data;
  } else {
    auto world = distributed::world();
    int64_t per = static_cast<int64_t>(shards_.size()), n = numel(block);
    // the all-gather takes as many blocks from every process
    std::vector<int64_t> count(static_cast<size_t>(world->size()), 0);
    for (auto& d : m.devices()) ++count[static_cast<size_t>(d.process_index)];
    for (size_t p = 0; p < count.size(); ++p)
      if (count[p] != per)
        fail<NotImplementedError>("gather: ", m.str(), " gives process ", p, " ", count[p], " devices and this one ", per,
                                  "; gathering across processes needs every process to hold as many blocks");
    std::vector<Array> local;
    for (auto& sh : shards_) local.push_back(sh.data);
    Array packed = lax::concatenate(local, 0);  // [per * block0, ...]: contiguous blocks
    Shape all{static_cast<int64_t>(world->size()) * per};
    all.insert(all.end(), block.begin(), block.end());
    Array out = Array::empty(Aval(all, dtype_));
    world->allgather(packed.raw_data(), out.concrete()->data(), per * n, dtype_);
    // process p's blocks are its devices', in mesh order; map mesh positions to (process, k)
    std::vector<int64_t> seen(static_cast<size_t>(world->size()), 0);
    for (size_t i = 0; i < m.devices().size(); ++i) {
      int p = m.devices()[i].process_index;
      blocks[i] = out[static_cast<int64_t>(p) * per + seen[static_cast<size_t>(p)]++];
    }
  }
  Array whole = lax::broadcast_in_dim(Array(0.0).astype(dtype_), shape_, {});
  for (size_t i = 0; i < blocks.size(); ++i) {
    auto index = shard_index(sharding_, shape_, i);
    std::vector<Array> starts;
    for (size_t k = 0; k < index.size(); ++k) starts.push_back(starts_array(index, k));
    whole = lax::dynamic_update_slice(whole, blocks[i], starts);
  }
  return whole;
}

std::string ShardedArray::str() const {
  std::ostringstream s;
  s << "ShardedArray(" << Aval(shape_, dtype_).str() << ", NamedSharding(" << sharding_.mesh.str() << ", "
    << sharding_.spec.str() << "))";
  return s.str();
}

ShardedArray device_put(const Array& x, const NamedSharding& s) {
  if (!x.is_concrete())
    fail<ValueError>("device_put: the array to lay out must be concrete, got ", x.aval().str(), " (a traced value)");
  s.shard_shape(x.shape());  // checks that the splits divide
  std::vector<Shard> shards;
  for (size_t pos : local_positions(s.mesh)) {
    auto index = shard_index(s, x.shape(), pos);
    Shape start, limit;
    for (auto& [a, b] : index) {
      start.push_back(a);
      limit.push_back(b);
    }
    shards.push_back(Shard{s.mesh.devices()[pos], index, lax::slice(x, start, limit)});
  }
  return ShardedArray(x.shape(), x.dtype(), s, std::move(shards));
}

ShardedArray make_array_from_single_device_arrays(const Shape& global, const NamedSharding& s,
                                                  std::vector<Array> blocks) {
  Shape block = s.shard_shape(global);
  std::vector<size_t> pos = local_positions(s.mesh);
  if (blocks.size() != pos.size())
    fail<ValueError>("make_array_from_single_device_arrays: ", blocks.size(), " blocks for the ", pos.size(),
                     " devices of this process in ", s.mesh.str());
  std::vector<Shard> shards;
  DType d = blocks.empty() ? DType::f32 : blocks[0].dtype();
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].shape() != block || blocks[i].dtype() != d)
      fail<ValueError>("make_array_from_single_device_arrays: block ", i, " is ", blocks[i].aval().str(), "; every block of ",
                       Aval(global, d).str(), " over ", s.spec.str(), " is ", Aval(block, d).str());
    shards.push_back(Shard{s.mesh.devices()[pos[i]], shard_index(s, global, pos[i]), std::move(blocks[i])});
  }
  return ShardedArray(global, d, s, std::move(shards));
}

}  // namespace graft
