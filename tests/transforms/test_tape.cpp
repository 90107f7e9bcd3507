// The eager tape: GradientTape and requires_grad_/backward/grad, against grad.
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

Array mlp_loss(const Array& w1, const Array& b1, const Array& w2, const Array& x, const Array& y) {
  Array h = relu(matmul(x, w1) + b1);
  Array logits = matmul(h, w2);
  return mean(square(logits - y));
}

struct Data {
  Array w1, b1, w2, x, y;
};
Data data() {
  Rng rng(11);
  return {rng.uniform({5, 8}, f64), rng.uniform({8}, f64), rng.uniform({8, 3}, f64), rng.uniform({4, 5}, f64),
          rng.uniform({4, 3}, f64)};
}

TEST(Tape, GradientTapeMatchesGradOnAnMlpLoss) {
  Data d = data();
  auto want = grad(mlp_loss, {0, 1, 2})(d.w1, d.b1, d.w2, d.x, d.y);
  GradientTape tape;
  Array w1 = tape.watch(d.w1), b1 = tape.watch(d.b1), w2 = tape.watch(d.w2);
  Array loss = mlp_loss(w1, b1, w2, d.x, d.y);
  auto got = tape.gradient(loss, {w1, b1, w2});
  for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(close(got[k], want[k], 1e-12, 1e-12)) << k;
  EXPECT_NEAR(loss.item<double>(), mlp_loss(d.w1, d.b1, d.w2, d.x, d.y).item<double>(), 1e-12);
}

TEST(Tape, UnusedSourcesGetZerosAndOnlyWatchedArraysAreSources) {
  GradientTape tape;
  Array a = tape.watch(array({1.0, 2.0})), b = tape.watch(array(3.0));
  Array y = sum(a * a);
  auto g = tape.gradient(y, {a, b});
  EXPECT_EQ(values(g[0]), (std::vector<double>{2.0, 4.0}));
  EXPECT_EQ(values(g[1]), (std::vector<double>{0.0}));
  EXPECT_THROW(tape.gradient(y, y), ValueError);
}

TEST(Tape, ATapeInsideATapeGivesSecondDerivatives) {
  GradientTape outer;
  Array x = outer.watch(array(1.5));
  Array dy;
  {
    GradientTape inner;
    Array xi = inner.watch(x);
    Array y = xi * xi * xi;  // y = x^3
    dy = inner.gradient(y, xi);  // 3 x^2, recorded by the outer tape
  }
  EXPECT_NEAR(dy.item<double>(), 3 * 1.5 * 1.5, 1e-12);
  EXPECT_NEAR(outer.gradient(dy, x).item<double>(), 6 * 1.5, 1e-12);
}

TEST(Tape, RecordsThroughControlFlowAndJit) {
  GradientTape tape;
  Array w = tape.watch(array(0.5));
  auto step = jit([](const Array& c, const Array& w) { return c * w + 1.0; });
  Array c = scan([&](const Array& c, const Array& x) { return std::pair{step(c, w) + x, c}; }, array(1.0),
                 array({0.0, 0.0, 0.0}))
                .first;
  // c3 = w^3 + w^2 + w + 1: dc/dw = 3w^2 + 2w + 1
  EXPECT_NEAR(tape.gradient(c, w).item<double>(), 3 * 0.25 + 2 * 0.5 + 1, 1e-12);
}

TEST(Tape, WhatIsNoLongerReachableIsFreed) {
  GradientTape tape;
  Array w = tape.watch(array({1.0, 2.0, 3.0}));
  int64_t base = GradientTape::live_nodes();
  Array kept;
  for (int i = 0; i < 100; ++i) {
    Array y = sum(sin(w) * w + 1.0);  // four recorded operations, dropped at the end of the iteration
    if (i == 99) kept = y;
  }
  EXPECT_EQ(GradientTape::live_nodes(), base + 4);  // only the last iteration's, which `kept` uses
  EXPECT_TRUE(close(tape.gradient(kept, w), cos(array({1.0, 2.0, 3.0})) * array({1.0, 2.0, 3.0}) +
                                               sin(array({1.0, 2.0, 3.0})), 1e-12, 1e-12));
  kept = Array();
  EXPECT_EQ(GradientTape::live_nodes(), base);
}

TEST(Tape, RequiresGradBackwardAccumulates) {
  Data d = data();
  auto want = grad(mlp_loss, {0, 2})(d.w1, d.b1, d.w2, d.x, d.y);
  Array w1 = d.w1, w2 = d.w2;
  w1.requires_grad_();
  w2.requires_grad_();
  mlp_loss(w1, d.b1, w2, d.x, d.y).backward();
  EXPECT_TRUE(close(w1.grad(), want[0], 1e-12, 1e-12));
  EXPECT_TRUE(close(w2.grad(), want[1], 1e-12, 1e-12));
  mlp_loss(w1, d.b1, w2, d.x, d.y).backward();  // gradients accumulate
  EXPECT_TRUE(close(w1.grad(), want[0] * 2.0, 1e-12, 1e-12));
  w1.zero_grad_();
  EXPECT_FALSE(w1.grad().valid());
  EXPECT_THROW(d.x.grad(), ValueError);
  EXPECT_THROW(sum(d.x * 2.0).backward(), ValueError);
}

}  // namespace
}  // namespace graft
