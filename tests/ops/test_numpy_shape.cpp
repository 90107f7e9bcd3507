// graft/ops/numpy_shape.h against values computed with NumPy (pasted as literals), errors named, and the
// differentiable ones' derivatives against finite differences in f64.
#include <vector>

#include "ops/numpy_testing.h"

namespace graft::testing {
namespace {

TEST(NumpyShape, Construction) {
  EXPECT_TRUE(is(identity(2, f64), f64, {2, 2}, {1, 0, 0, 1}));
  EXPECT_TRUE(is(empty_like(ones({2, 3}, i32)), i32, {2, 3}, std::vector<double>(6, 0)));
  EXPECT_TRUE(is(geomspace(1, 1000, 4, true, f64), f64, {4}, {1, 10, 100, 1000}));
  EXPECT_TRUE(is(geomspace(-2, -32, 5, false, f64), f64, {5},
                 {-2.0, -3.4822022531844965, -6.062866266041592, -10.556063286183157, -18.379173679952565}));
  EXPECT_TRUE(is(logspace(0, 2, 3, true, 2.0, f64), f64, {3}, {1, 2, 4}));
  expect_throws<ValueError>([] { geomspace(-1, 1); }, "one sign");
  auto g = meshgrid({arr({1, 2, 3}, {3}), arr({4, 5}, {2})});
  EXPECT_TRUE(is(g[0], f64, {2, 3}, {1, 2, 3, 1, 2, 3}));
  EXPECT_TRUE(is(g[1], f64, {2, 3}, {4, 4, 4, 5, 5, 5}));
  auto ij = meshgrid({arr({1, 2, 3}, {3}), arr({4, 5}, {2})}, "ij");
  EXPECT_EQ(ij[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(meshgrid({arr({1, 2, 3}, {3}), arr({4, 5}, {2})}, "ij", true)[1].shape(), (Shape{1, 2}));
  expect_throws<ValueError>([] { meshgrid({ones({2})}, "yx"); }, "indexing");
  EXPECT_TRUE(is(indices({2, 3}), i32, {2, 2, 3}, {0, 0, 0, 1, 1, 1, 0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(is(diagflat(arr({1, 2}, {2}), 1), f64, {3, 3}, {0, 1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_TRUE(is(diagflat(arr({1, 2}, {2}), -1), f64, {3, 3}, {0, 0, 0, 1, 0, 0, 0, 2, 0}));
}

TEST(NumpyShape, Coordinates) {
  auto [r, c] = tril_indices(3, -1);
  EXPECT_TRUE(is(r, i32, {3}, {1, 2, 2}));
  EXPECT_TRUE(is(c, i32, {3}, {0, 0, 1}));
  auto [r2, c2] = triu_indices(3, 1, 4);
  EXPECT_TRUE(is(r2, i32, {6}, {0, 0, 0, 1, 1, 2}));
  EXPECT_TRUE(is(c2, i32, {6}, {1, 2, 3, 2, 3, 3}));
  auto [r3, c3] = triu_indices_from(ones({2, 3, 4}), 1);
  EXPECT_TRUE(close(r3, r2, 0, 0));
  EXPECT_EQ(tril_indices_from(ones({4, 4})).first.shape(), (Shape{10}));
  auto d = diag_indices_from(ones({3, 3, 3}));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(is(d[2], i32, {3}, {0, 1, 2}));
  expect_throws<ValueError>([] { diag_indices_from(ones({2, 3})); }, "one length");
  auto u = unravel_index(arr({5, 7, 0}, {3}, i32), {2, 4});
  EXPECT_TRUE(is(u[0], i32, {3}, {1, 1, 0}));
  EXPECT_TRUE(is(u[1], i32, {3}, {1, 3, 0}));
  std::vector<Array> co{arr({1, 0, 3}, {3}, i32), arr({2, 1, 9}, {3}, i32)};
  EXPECT_TRUE(is(ravel_multi_index(co, {2, 4}, "clip"), i32, {3}, {6, 1, 7}));
  EXPECT_TRUE(is(ravel_multi_index(co, {2, 4}, "wrap"), i32, {3}, {6, 1, 5}));
  expect_throws<ValueError>([&] { ravel_multi_index(co, {2, 4}); }, "outside");
  // the round trip
  Array flat = arange(0.0, 8.0, 1.0, i32);
  EXPECT_TRUE(close(ravel_multi_index(unravel_index(flat, {2, 4}), {2, 4}), flat, 0, 0));
}

TEST(NumpyShape, SplittingAndJoining) {
  Array x = arange(0.0, 7.0, 1.0, f64);
  auto p = array_split(x, 3);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(is(p[0], f64, {3}, {0, 1, 2}));
  EXPECT_TRUE(is(p[2], f64, {2}, {5, 6}));
  auto q = array_split(x, std::vector<int64_t>{2, 5, 9});
  ASSERT_EQ(q.size(), 4u);
  EXPECT_TRUE(is(q[1], f64, {3}, {2, 3, 4}));
  EXPECT_EQ(q[3].shape(), (Shape{0}));
  Array m = reshape(arange(0.0, 24.0, 1.0, f64), {2, 4, 3});
  EXPECT_EQ(hsplit(m, 2)[1].shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(vsplit(m, 2)[0].shape(), (Shape{1, 4, 3}));
  EXPECT_EQ(dsplit(m, 3)[2].shape(), (Shape{2, 4, 1}));
  expect_throws<ValueError>([&] { dsplit(ones({2, 2}), 2); }, "3 dimensions");
  auto us = unstack(m, 1);
  ASSERT_EQ(us.size(), 4u);
  EXPECT_TRUE(is(us[1], f64, {2, 3}, {3, 4, 5, 15, 16, 17}));
  EXPECT_TRUE(is(append(arr({1, 2}, {2}), arr({3, 4, 5, 6}, {2, 2})), f64, {6}, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(is(append(arr({1, 2}, {1, 2}), arr({3, 4, 5, 6}, {2, 2}), 0), f64, {3, 2}, {1, 2, 3, 4, 5, 6}));
  Array six = reshape(arange(0.0, 6.0, 1.0, f64), {2, 3});
  EXPECT_TRUE(is(delete_entries(six, {0, -1}, 1), f64, {2, 1}, {1, 4}));
  EXPECT_TRUE(is(delete_entries(arr({1, 2, 3, 4}, {4}), {1}), f64, {3}, {1, 3, 4}));
  expect_throws<ValueError>([&] { delete_entries(six, {3}, 1); }, "out of range");
  EXPECT_TRUE(is(insert(arr({1, 2, 3}, {3}), {0, 2, 3}, arr({9, 8, 7}, {3})), f64, {6}, {9, 1, 2, 8, 3, 7}));
  EXPECT_TRUE(is(insert(reshape(arange(0.0, 4.0, 1.0, f64), {2, 2}), {1}, Array(5.0), 1), f64, {2, 3}, {0, 5, 1, 2, 5, 3}));
  EXPECT_EQ(rollaxis(zeros({2, 3, 4, 5}), 3, 1).shape(), (Shape{2, 5, 3, 4}));
  EXPECT_EQ(rollaxis(zeros({2, 3, 4, 5}), 1, 4).shape(), (Shape{2, 4, 5, 3}));
  EXPECT_TRUE(is(resize(arr({1, 2, 3}, {3}), {2, 4}), f64, {2, 4}, {1, 2, 3, 1, 2, 3, 1, 2}));
  EXPECT_TRUE(is(trim_zeros(arr({0, 0, 1, 0, 2, 0}, {6})), f64, {3}, {1, 0, 2}));
  EXPECT_TRUE(is(trim_zeros(arr({0, 0, 1, 0, 2, 0}, {6}), "b"), f64, {5}, {0, 0, 1, 0, 2}));
  // derivatives flow through the pieces
  auto f = [](const Array& v) { return sum(square(array_split(v, 3)[1])) + sum(insert(v, {1}, v[{slice(0, 1)}])); };
  Array v = arr({0.5, -1, 2, 0.25, 3}, {5});
  EXPECT_TRUE(close(grad(f)(v), num_grad(f, v), 1e-6, 1e-8));
}

}  // namespace
}  // namespace graft::testing
