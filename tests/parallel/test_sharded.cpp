// Sharded arrays on one process (meshes of this process's devices, made by hand): device_put lays the
// whole array out block by block, addressable_shards names each device's block, gather puts it back.
#include <graft/graft.h>

#include "parallel/devices.h"
#include "testing.h"

namespace graft::testing {
namespace {

using Index = std::vector<std::pair<int64_t, int64_t>>;

TEST(Sharded, BlocksOverTwoAxes) {
  Mesh m(cpus(8), {"data", "model"}, {4, 2});
  Array x = reshape(arange(48, DType::f32), {8, 6});
  ShardedArray xs = device_put(x, NamedSharding{m, P("data", "model")});
  EXPECT_EQ(xs.shape(), (Shape{8, 6}));
  EXPECT_EQ(xs.dtype(), DType::f32);
  EXPECT_TRUE(xs.is_fully_addressable());
  ASSERT_EQ(xs.addressable_shards().size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    const Shard& s = xs.addressable_shards()[i];
    EXPECT_EQ(s.device.id, static_cast<int>(i));
    int64_t r = static_cast<int64_t>(i) / 2, c = static_cast<int64_t>(i) % 2;  // row-major over (data, model)
    EXPECT_EQ(s.index, (Index{{2 * r, 2 * r + 2}, {3 * c, 3 * c + 3}}));
    EXPECT_TRUE(close(s.data, x[{slice(2 * r, 2 * r + 2), slice(3 * c, 3 * c + 3)}], 0, 0));
  }
  EXPECT_TRUE(close(xs.gather(), x, 0, 0));
  EXPECT_EQ(xs.str(), "ShardedArray(f32[8,6], NamedSharding(Mesh('data': 4, 'model': 2), P('data', 'model')))");
}

// P(('data', 'model')): the rows in eight blocks, device (d, m) holding block d * 2 + m.
TEST(Sharded, OneDimensionOverTwoAxes) {
  Mesh m(cpus(8), {"data", "model"}, {4, 2});
  Array x = reshape(arange(48, DType::f32), {16, 3});
  NamedSharding s{m, P(SpecDim{"data", "model"})};
  EXPECT_EQ(s.shard_shape({16, 3}), (Shape{2, 3}));
  ShardedArray xs = device_put(x, s);
  ASSERT_EQ(xs.addressable_shards().size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    const Shard& sh = xs.addressable_shards()[i];
    int64_t b = static_cast<int64_t>(i);  // the devices are row-major over (data, model): block i
    EXPECT_EQ(sh.index, (Index{{2 * b, 2 * b + 2}, {0, 3}}));
    EXPECT_TRUE(close(sh.data, x[{slice(2 * b, 2 * b + 2)}], 0, 0));
  }
  EXPECT_TRUE(close(xs.gather(), x, 0, 0));
  // the other order: device (d, m) holds block m * 4 + d
  ShardedArray ys = device_put(x, NamedSharding{m, P(SpecDim{"model", "data"})});
  for (size_t i = 0; i < 8; ++i) {
    int64_t b = static_cast<int64_t>(i % 2) * 4 + static_cast<int64_t>(i / 2);
    EXPECT_EQ(ys.addressable_shards()[i].index[0], (std::pair<int64_t, int64_t>{2 * b, 2 * b + 2}));
  }
  EXPECT_TRUE(close(ys.gather(), x, 0, 0));
  EXPECT_THROW(device_put(reshape(arange(12, DType::f32), {4, 3}), s), ValueError);  // 4 rows over 8
}

TEST(Sharded, ReplicatedAlongTheAxesTheSpecDoesNotName) {
  Mesh m(cpus(4), {"data", "model"}, {2, 2});
  Array x = reshape(arange(12, DType::i32), {4, 3});
  ShardedArray rows = device_put(x, NamedSharding{m, P("data")});
  ASSERT_EQ(rows.addressable_shards().size(), 4u);
  // devices (0, 0) and (0, 1) hold rows 0-1; (1, 0) and (1, 1) rows 2-3
  for (size_t i = 0; i < 4; ++i) {
    int64_t r = static_cast<int64_t>(i) / 2;
    EXPECT_EQ(rows.addressable_shards()[i].index, (Index{{2 * r, 2 * r + 2}, {0, 3}}));
    EXPECT_TRUE(close(rows.addressable_data(i), x[{slice(2 * r, 2 * r + 2)}], 0, 0));
  }
  EXPECT_TRUE(close(rows.gather(), x, 0, 0));
  ShardedArray rep = device_put(x, NamedSharding{m, P()});
  for (auto& s : rep.addressable_shards()) EXPECT_TRUE(close(s.data, x, 0, 0));
  EXPECT_TRUE(close(rep.gather(), x, 0, 0));
}

TEST(Sharded, FromBlocksAndErrors) {
  Mesh m(cpus(2), {"data"});
  NamedSharding s{m, P(std::nullopt, "data")};
  Array a = ones({3, 2}), b = zeros({3, 2});
  ShardedArray xs = make_array_from_single_device_arrays({3, 4}, s, {a, b});
  EXPECT_TRUE(close(xs.gather(), concatenate({a, b}, 1), 0, 0));
  EXPECT_EQ(xs.addressable_shards()[1].index, (Index{{0, 3}, {2, 4}}));
  // a split that does not divide, blocks of the wrong shape or number
  EXPECT_THROW(device_put(ones({3, 3}), s), ValueError);
  EXPECT_THROW(make_array_from_single_device_arrays({3, 4}, s, {a}), ValueError);
  EXPECT_THROW(make_array_from_single_device_arrays({3, 4}, s, {a, ones({2, 2})}), ValueError);
  EXPECT_THROW(xs.addressable_data(2), ValueError);
  EXPECT_THROW(device_put(ones({4}), NamedSharding{m, P("model")}), ValueError);  // no such axis
}

}  // namespace
}  // namespace graft::testing
