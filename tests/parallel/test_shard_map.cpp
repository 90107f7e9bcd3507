// shard_map and pmap on one process (meshes of this process's devices; the devices are made by hand,
// so the tests do not depend on GRAFT_CPU_DEVICES): against the same computation on whole arrays.
#include <graft/graft.h>

#include "parallel/devices.h"
#include "testing.h"

namespace graft::testing {
namespace {

Array loss(const Array& w, const Array& x, const Array& y) {
  Array d = tanh(matmul(x, w)) - y;
  return sum(d * d);
}

TEST(Mesh, ShapesAndErrors) {
  Mesh m(cpus(8), {"data", "model"}, {4, 2});
  EXPECT_EQ(m.axis_size("data"), 4);
  EXPECT_EQ(m.axis_size("model"), 2);
  EXPECT_EQ(m.coords(5), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(m.str(), "Mesh('data': 4, 'model': 2)");
  EXPECT_EQ(P("data", std::nullopt).str(), "P('data', None)");
  EXPECT_THROW(Mesh(cpus(8), {"data", "model"}, {4, 3}), ValueError);
  EXPECT_THROW(Mesh(cpus(4), {"a", "a"}, {2, 2}), ValueError);
  EXPECT_THROW(m.axis_size("x"), ValueError);
  NamedSharding s{m, P("data", "model")};
  EXPECT_EQ(s.shard_shape({8, 6}), (Shape{2, 3}));
  EXPECT_THROW(s.shard_shape({6, 6}), ValueError);
  EXPECT_EQ(devices().size(), static_cast<size_t>(local_device_count() * process_count()));
}

// Data-parallel training step: the gradient of the pmean'd loss, replicated on every device, is the
// full-batch gradient of the mean.
TEST(ShardMap, DataParallelGradient) {
  Rng rng(3);
  Array w = rng.uniform({3, 2}, DType::f64), x = rng.uniform({8, 3}, DType::f64), y = rng.uniform({8, 2}, DType::f64);
  Mesh mesh(cpus(4), {"data"});
  auto step = [](const Array& w, const Array& x, const Array& y) {
    return value_and_grad([&](const Array& v) { return pmean(loss(v, x, y), "data"); })(w);
  };
  auto sm = shard_map(step, mesh, {P(), P("data"), P("data")}, {P()});
  auto [l, g] = sm(w, x, y);
  EXPECT_NEAR(l.item<double>(), loss(w, x, y).item<double>() / 4, 1e-12);
  EXPECT_TRUE(close(g, grad(loss)(w, x, y) / 4.0, 1e-12, 1e-12));
  auto [lj, gj] = jit(sm)(w, x, y);  // and jitted
  EXPECT_TRUE(close(gj, g, 1e-12, 1e-12));
  EXPECT_TRUE(close(lj, l, 1e-12, 1e-12));
}

// Outputs split over an axis are the devices' blocks put back together; a 2-D mesh splits two dims.
TEST(ShardMap, BlocksAndTwoAxes) {
  Rng rng(4);
  Array a = rng.uniform({4, 6}, DType::f64);
  Mesh mesh(cpus(4), {"r", "c"}, {2, 2});
  // each device adds its row-block index * 10 + column-block index
  auto f = [](const Array& blk) {
    Array tag = axis_index("r").astype(DType::f64) * 10.0 + axis_index("c").astype(DType::f64);
    return blk + tag;
  };
  Array got = shard_map(f, mesh, {P("r", "c")}, {P("r", "c")})(a);
  Array want = a + concatenate({concatenate({full({2, 3}, 0.0, DType::f64), full({2, 3}, 1.0, DType::f64)}, 1),
                                concatenate({full({2, 3}, 10.0, DType::f64), full({2, 3}, 11.0, DType::f64)}, 1)},
                               0);
  EXPECT_TRUE(close(got, want, 0, 0));
  // row sums over the column axis: psum over "c" of the block's row sums, split over rows only
  auto rows = [](const Array& blk) { return psum(sum(blk, 1), "c"); };
  Array rs = shard_map(rows, mesh, {P("r", "c")}, {P("r")})(a);
  EXPECT_TRUE(close(rs, sum(a, 1), 1e-12, 1e-12));
  // an output that varies over an axis its spec replicates is an error
  EXPECT_THROW(shard_map([](const Array& b) { return b; }, mesh, {P("r", "c")}, {P("r")})(a), ValueError);
  EXPECT_THROW(shard_map(f, mesh, {P("r", "c")}, {P("r", "c")})(ones({3, 6})), ValueError);  // 3 rows over 2
  EXPECT_THROW(shard_map(f, mesh, {P("x")}, {P()})(a), ValueError);                          // no axis x
}

// One dimension over two axes: device (r, c) holds block r * 2 + c of it ("r" major), or c * 2 + r when
// the spec names "c" first; psum over both axes sums every block.
TEST(ShardMap, OneDimensionOverTwoAxes) {
  Array a = arange(8, DType::f64);
  Mesh mesh(cpus(4), {"r", "c"}, {2, 2});
  auto tag = [](const Array& blk) {
    return full_like(blk, 0.0) + (axis_index("r") * 2 + axis_index("c")).astype(DType::f64);
  };
  const SpecDim rc{"r", "c"}, cr{"c", "r"};
  EXPECT_TRUE(close(shard_map(tag, mesh, {P(rc)}, {P(rc)})(a), array(std::vector<double>{0, 0, 1, 1, 2, 2, 3, 3}), 0, 0));
  EXPECT_TRUE(close(shard_map(tag, mesh, {P(rc)}, {P(cr)})(a), array(std::vector<double>{0, 0, 2, 2, 1, 1, 3, 3}), 0, 0));
  // each device sees its own block of the input
  auto first = [](const Array& blk) { return blk[{slice(0, 1)}]; };
  EXPECT_TRUE(close(shard_map(first, mesh, {P(rc)}, {P(rc)})(a), array(std::vector<double>{0, 2, 4, 6}), 0, 0));
  EXPECT_TRUE(close(shard_map(first, mesh, {P(cr)}, {P(rc)})(a), array(std::vector<double>{0, 4, 2, 6}), 0, 0));
  auto total = [](const Array& blk) { return psum(sum(blk), std::vector<std::string>{"r", "c"}); };
  EXPECT_NEAR(shard_map(total, mesh, {P(rc)}, {P()})(a).item<double>(), 28.0, 1e-12);
  EXPECT_EQ(P(rc, std::nullopt).str(), "P(('r', 'c'), None)");
  EXPECT_THROW(shard_map(tag, mesh, {P(SpecDim{"r", "r"})}, {P(rc)})(a), ValueError);
  EXPECT_THROW(shard_map(tag, mesh, {P(rc)}, {P(rc)})(arange(6, DType::f64)), ValueError);  // 6 over 4
}

// grad through a shard_map (outside it): the whole mapped function's derivative.
TEST(ShardMap, GradOutside) {
  Rng rng(5);
  Array w = rng.uniform({3, 2}, DType::f64), x = rng.uniform({8, 3}, DType::f64), y = rng.uniform({8, 2}, DType::f64);
  Mesh mesh(cpus(2), {"data"});
  auto total = [&](const Array& v) {
    return shard_map([](const Array& v, const Array& x, const Array& y) { return psum(loss(v, x, y), "data"); }, mesh,
                     {P(), P("data"), P("data")}, {P()})(v, x, y);
  };
  EXPECT_TRUE(close(grad(total)(w), grad(loss)(w, x, y), 1e-12, 1e-12));
}

// pmap over this process's devices (the leading axis = the device count).
TEST(Pmap, OverLocalDevices) {
  int n = local_device_count();
  Rng rng(6);
  Array x = rng.uniform({n, 3}, DType::f64);
  Array got = pmap([](const Array& v) { return v - pmean(v, "i"); }, "i")(x);
  EXPECT_TRUE(close(got, x - mean(x, 0), 1e-12, 1e-12));
}

}  // namespace
}  // namespace graft::testing
