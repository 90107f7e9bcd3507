// checkpoint / remat: same values and gradients as without it; policies choose what is saved.
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

struct Net {
  Array w1, w2;
};
Net net() {
  Rng rng(2);
  return {rng.uniform({4, 6}, f64), rng.uniform({6, 3}, f64)};
}

Array block(const Array& x, const Array& w1, const Array& w2) { return tanh(matmul(sin(matmul(x, w1)), w2)); }

TEST(Remat, EveryPolicyGivesTheSameValuesAndGradients) {
  Net n = net();
  Array x = Rng(4).uniform({5, 4}, f64);
  auto plain = [&](const Array& x, const Array& w1, const Array& w2) { return sum(block(x, w1, w2)); };
  auto want = grad(plain, {0, 1, 2})(x, n.w1, n.w2);
  for (auto policy : {CheckpointPolicy::nothing_saveable(), CheckpointPolicy::dots_saveable(),
                      CheckpointPolicy::save_only_these_names({"h"}), CheckpointPolicy::everything_saveable()}) {
    auto f = [&](const Array& x, const Array& w1, const Array& w2) {
      auto b = checkpoint(
          [](const Array& x, const Array& w1, const Array& w2) {
            return tanh(matmul(checkpoint_name(sin(matmul(x, w1)), "h"), w2));
          },
          policy);
      return sum(b(x, w1, w2));
    };
    EXPECT_NEAR(f(x, n.w1, n.w2).item<double>(), plain(x, n.w1, n.w2).item<double>(), 1e-12) << policy.str();
    for (auto g : {grad(f, {0, 1, 2})(x, n.w1, n.w2), jit(grad(f, {0, 1, 2}))(x, n.w1, n.w2),
                   grad(jit(f), {0, 1, 2})(x, n.w1, n.w2)})
      for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(close(g[k], want[k], 1e-12, 1e-12)) << policy.str() << " " << k;
    // forward mode and vmap see through it
    auto [y, dy] = jvp([&](const Array& w1) { return f(x, w1, n.w2); }, {n.w1}, {ones_like(n.w1)});
    auto [y0, dy0] = jvp([&](const Array& w1) { return plain(x, w1, n.w2); }, {n.w1}, {ones_like(n.w1)});
    EXPECT_NEAR(dy.item<double>(), dy0.item<double>(), 1e-12);
    Array xs = Rng(5).uniform({3, 5, 4}, f64);
    auto per = [&](const Array& x) { return f(x, n.w1, n.w2); };
    Array vb = vmap(per)(xs);
    for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(values(vb)[i], per(xs[i]).item<double>(), 1e-12);
  }
}

TEST(Remat, PoliciesChangeWhatIsSaved) {
  Net n = net();
  Array x = Rng(4).uniform({5, 4}, f64);
  auto with = [&](CheckpointPolicy p) {
    return saved_residuals([p](const Array& x, const Array& w1, const Array& w2) {
      return sum(checkpoint([](const Array& x, const Array& w1, const Array& w2) {
                   return tanh(matmul(checkpoint_name(sin(matmul(x, w1)), "h"), w2));
                 }, p)(x, w1, w2));
    })(x, n.w1, n.w2);
  };
  std::string plain = saved_residuals([](const Array& x, const Array& w1, const Array& w2) {
    return sum(block(x, w1, w2));
  })(x, n.w1, n.w2);
  std::string nothing = with(CheckpointPolicy::nothing_saveable());
  std::string dots = with(CheckpointPolicy::dots_saveable());
  std::string names = with(CheckpointPolicy::save_only_these_names({"h"}));
  // without checkpoint the forward pass keeps intermediates (cos of the first product, tanh's output...)
  EXPECT_NE(plain.find("output of"), std::string::npos) << plain;
  // nothing_saveable keeps only the arguments
  EXPECT_EQ(nothing.find("output of"), std::string::npos) << nothing;
  EXPECT_NE(nothing.find("from argument"), std::string::npos) << nothing;
  // dots_saveable keeps the products' results; the names policy the named value
  EXPECT_NE(dots.find("saved by checkpoint: output of dot_general"), std::string::npos) << dots;
  EXPECT_EQ(dots.find("output of sin"), std::string::npos) << dots;
  EXPECT_NE(names.find("saved by checkpoint: output of name 'h'"), std::string::npos) << names;
  EXPECT_EQ(names.find("dot_general"), std::string::npos) << names;
}

TEST(Remat, TheBackwardPassRecomputesInsideACheckpointEquation) {
  auto f = [](const Array& x) { return sum(checkpoint([](const Array& x) { return sin(sin(x)); })(x)); };
  std::string s = make_jaxpr(grad(f))(array({1.0f, 2.0f})).str();
  // the forward checkpoint, the linear one (recompute + tangents) and its transpose
  size_t count = 0;
  for (size_t p = s.find("checkpoint["); p != std::string::npos; p = s.find("checkpoint[", p + 1)) ++count;
  EXPECT_GE(count, 2u) << s;
  EXPECT_NE(s.find("policy=nothing_saveable"), std::string::npos) << s;
}

}  // namespace
}  // namespace graft
