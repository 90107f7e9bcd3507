// GRAFT_DEBUG_NANS / config::set_debug_nans: the first primitive that makes a NaN (or, with
// debug_infs, an infinity) is named, eagerly, inside jit (run again op by op), inside control flow,
// and under grad; with the checks off nothing is checked.
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

struct Numerics {
  Numerics(bool nans, bool infs) {
    config::set_debug_nans(nans);
    config::set_debug_infs(infs);
  }
  ~Numerics() {
    config::set_debug_nans(false);
    config::set_debug_infs(false);
  }
};

TEST(DebugNans, EagerNamesThePrimitive) {
  Array x = array({1.0f, -1.0f, 4.0f});
  EXPECT_TRUE(std::isnan(log(x)[1].item<float>()));  // off: NaNs flow silently, as NumPy's
  Numerics on(true, false);
  expect_throws<FloatingPointError>([&] { log(x); }, "log produced 1 NaN in its output f32[3] from (f32[3]): this operation made it");
  EXPECT_TRUE(close(log(array({1.0f, 4.0f})), array({0.0f, std::log(4.0f)})));  // clean values pass
  // an operand that already holds a NaN is said so
  config::set_debug_nans(false);
  Array bad = log(x);
  config::set_debug_nans(true);
  expect_throws<FloatingPointError>([&] { bad + 1.0; }, "f32[3] holding NaN, f32[]): it came in with an operand");
}

TEST(DebugNans, JitRunsTheProgramAgainOpByOp) {
  auto f = jit([](const Array& x) { return exp(x) + sqrt(x - 2.0) * 3.0; }, {.name = "model"});
  Array ok = array({3.0f, 4.0f}), bad = array({3.0f, 1.0f});
  f(ok);
  Numerics on(true, false);
  f(ok);  // no false alarm
  expect_throws<FloatingPointError>([&] { f(bad); }, "sqrt produced 1 NaN in its output f32[2] from (f32[2]): this operation made it [in jit(model)]");
}

TEST(DebugNans, InsideControlFlowAndGrad) {
  Numerics on(true, false);
  // a while_loop body: the loop runs op by op, the division by zero names div
  auto loop = [](const Array& x) {
    return while_loop([](const Array& c) { return c[0] < 3.0; },
                      [](const Array& c) { return c / (c - c) + 1.0; }, x);
  };
  expect_throws<FloatingPointError>([&] { loop(array({0.0, 0.0})); }, "div produced");
  expect_throws<FloatingPointError>([&] { jit(loop)(array({0.0, 0.0})); }, "div produced");
  // the backward pass of sqrt at 0 makes 0 * inf: the gradient's primitive is named
  auto g = grad([](const Array& x) { return sum(sqrt(x) * 0.0); });
  expect_throws<FloatingPointError>([&] { g(array({0.0, 1.0})); }, "mul produced 1 NaN");
  expect_throws<FloatingPointError>([&] { g(array({0.0, 1.0})); }, "[in the backward pass (transpose rules)]");
  expect_throws<FloatingPointError>([&] { jit(loop)(array({0.0, 0.0})); }, "[in jit(");
}

TEST(DebugNans, DonatedArgumentsSurviveForTheRerun) {
  auto step = jit([](const Array& w, const Array& x) { return w - log(x); }, {.name = "step", .donate_argnums = {0}});
  Numerics on(true, false);
  Array w = ones({3});
  expect_throws<FloatingPointError>([&] { step(w, array({1.0f, -1.0f, 1.0f})); }, "log produced 1 NaN");
  EXPECT_TRUE(close(w, ones({3})));  // not deleted: the checked call does not donate
}

TEST(DebugInfs, InfinitiesAreCheckedApart) {
  Array x = array({1.0f, 0.0f});
  {
    Numerics nans_only(true, false);
    EXPECT_TRUE(std::isinf((1.0 / x)[1].item<float>()));  // an infinity is not a NaN
  }
  Numerics infs(false, true);
  expect_throws<FloatingPointError>([&] { 1.0 / x; }, "div produced 1 infinity values");
  expect_throws<FloatingPointError>([&] { 1.0 / x; }, "(GRAFT_DEBUG_INFS)");
}

}  // namespace
}  // namespace graft
