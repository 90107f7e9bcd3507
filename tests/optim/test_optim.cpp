// graft::optim: optimizers and schedules against hand-computed updates, and a short training run
// whose loss must fall.
#include <cmath>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

Tree params1(double w) { return Tree::dict({{"w", array({float(w)})}}); }
Tree grads1(double g) { return Tree::dict({{"w", array({float(g)})}}); }
double w_of(const Tree& t) { return t["w"].array().item<double>(); }

TEST(Optim, SgdAndMomentum) {
  auto opt = optim::sgd(0.1);
  Tree s = opt.init(params1(1));
  auto [u, s2] = opt.update(grads1(2), s, params1(1));
  EXPECT_NEAR(w_of(u), -0.2, 1e-7);
  EXPECT_EQ(s2["count"].array().item<int>(), 1);
  auto mom = optim::sgd(0.1, 0.9);
  Tree ms = mom.init(params1(1));
  auto [u1, ms1] = mom.update(grads1(1), ms, params1(1));
  auto [u2, ms2] = mom.update(grads1(1), ms1, params1(1));
  EXPECT_NEAR(w_of(u1), -0.1, 1e-7);
  EXPECT_NEAR(w_of(u2), -0.1 * (1 + 0.9), 1e-7);  // trace = g + 0.9 * trace
  auto nes = optim::sgd(0.1, 0.9, true);
  Tree ns = nes.init(params1(1));
  auto [n1, ns1] = nes.update(grads1(1), ns, params1(1));
  EXPECT_NEAR(w_of(n1), -0.1 * (1 + 0.9), 1e-7);  // g + 0.9 * (g + 0.9 * 0)
}

TEST(Optim, AdamFirstStepsByHand) {
  auto opt = optim::adam(0.01);
  Tree p = params1(1.0), s = opt.init(p);
  auto [u1, s1] = opt.update(grads1(0.5), s, p);
  // step 1: mu_hat = g, nu_hat = g^2 -> update = -lr * g / (|g| + eps)
  EXPECT_NEAR(w_of(u1), -0.01 * 0.5 / (0.5 + 1e-8), 1e-7);
  auto [u2, s2] = opt.update(grads1(-1.0), s1, p);
  double mu = 0.9 * 0.05 + 0.1 * -1.0, nu = 0.999 * 0.00025 + 0.001 * 1.0;
  double mh = mu / (1 - 0.81), nh = nu / (1 - 0.999 * 0.999);
  EXPECT_NEAR(w_of(u2), -0.01 * mh / (std::sqrt(nh) + 1e-8), 1e-6);
  // AdamW adds the decoupled decay lr * wd * w
  auto aw = optim::adamw(0.01, 0.9, 0.999, 1e-8, 0.1);
  auto [wu, ws] = aw.update(grads1(0.5), aw.init(p), p);
  EXPECT_NEAR(w_of(wu), -0.01 * (1.0 + 0.1 * 1.0), 1e-6);
}

TEST(Optim, RmspropAndClipping) {
  auto opt = optim::rmsprop(0.1, 0.9);
  auto [u, s] = opt.update(grads1(2), opt.init(params1(0)), params1(0));
  EXPECT_NEAR(w_of(u), -0.1 * 2 / (std::sqrt(0.1 * 4) + 1e-8), 1e-6);
  Tree g = Tree::dict({{"a", array({3.0f})}, {"b", array({4.0f})}});  // global norm 5
  auto c = optim::clip_by_global_norm(1.0);
  auto [cg, cs] = c.update(g, c.init(g), g);
  EXPECT_NEAR(cg["a"].array().item<double>(), 0.6, 1e-6);
  EXPECT_NEAR(cg["b"].array().item<double>(), 0.8, 1e-6);
  EXPECT_NEAR(optim::global_norm(g).item<double>(), 5, 1e-6);
  auto both = optim::chain({optim::clip(1.0), optim::sgd(1.0)});
  auto [bu, bs] = both.update(g, both.init(g), g);
  EXPECT_NEAR(bu["a"].array().item<double>(), -1, 1e-6);
}

TEST(Optim, Schedules) {
  auto at = [](const optim::Schedule& s, int step) { return s(array(int32_t(step))).item<double>(); };
  EXPECT_NEAR(at(optim::exponential_decay(1.0, 0.5, 10), 20), 0.25, 1e-6);
  EXPECT_NEAR(at(optim::exponential_decay(1.0, 0.5, 10, true), 15), 0.5, 1e-6);
  EXPECT_NEAR(at(optim::cosine_decay(1.0, 100), 50), 0.5, 1e-6);
  EXPECT_NEAR(at(optim::cosine_decay(1.0, 100, 0.1), 200), 0.1, 1e-6);
  EXPECT_NEAR(at(optim::linear_schedule(1.0, 0.0, 10), 5), 0.5, 1e-6);
  auto wc = optim::warmup_cosine_decay(1.0, 10, 110);
  EXPECT_NEAR(at(wc, 5), 0.5, 1e-6);
  EXPECT_NEAR(at(wc, 10), 1.0, 1e-6);
  EXPECT_NEAR(at(wc, 60), 0.5, 1e-6);
  auto pc = optim::piecewise_constant({10, 20}, {1.0, 0.1, 0.01});
  EXPECT_NEAR(at(pc, 5), 1.0, 1e-6);
  EXPECT_NEAR(at(pc, 15), 0.1, 1e-6);
  EXPECT_NEAR(at(pc, 25), 0.01, 1e-6);
  // a schedule drives an optimizer through the step count in its state
  auto opt = optim::sgd(optim::piecewise_constant({1}, {1.0, 0.5}));
  Tree s = opt.init(params1(0));
  auto [u1, s1] = opt.update(grads1(1), s, params1(0));
  auto [u2, s2] = opt.update(grads1(1), s1, params1(0));
  EXPECT_NEAR(w_of(u1), -1.0, 1e-6);
  EXPECT_NEAR(w_of(u2), -0.5, 1e-6);
}

TEST(Optim, AJittedTrainingStepReducesTheLoss) {
  // fit y = 3x - 1 with a one-hidden-layer MLP; the whole step is jitted
  Array x = linspace(-1, 1, 64).reshape({64, 1});
  Array y = x * 3.0 - 1.0;
  nn::MLP mlp{{1, 16, 1}};
  Tree params = mlp.init(random::key(0));
  auto opt = optim::adam(0.05);
  Tree state = opt.init(params);
  auto loss_fn = [&](const Tree& p, const Array& x, const Array& y) { return nn::mse(mlp(p, x), y); };
  auto step = jit([&](const Tree& p, const Tree& s, const Array& x, const Array& y) {
    auto [loss, g] = value_and_grad(loss_fn)(p, x, y);
    auto [u, s2] = opt.update(g, s, p);
    return std::make_tuple(optim::apply_updates(p, u), s2, loss);
  });
  double first = 0, last = 0;
  for (int i = 0; i < 200; ++i) {
    Array loss;
    std::tie(params, state, loss) = step(params, state, x, y);
    if (i == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.01) << "first " << first << " last " << last;
  EXPECT_EQ(state["count"].array().item<int>(), 200);
  EXPECT_EQ(step.num_traces(), 1u);
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {
using namespace graft::testing;

// Loss scaling: the scale halves on overflow and doubles after `period` finite steps, by hand.
TEST(LossScale, AdjustsByHand) {
  auto ls = optim::dynamic_loss_scale(8, 2, 2, 2);
  Tree s = ls.init();
  auto scale = [](const Tree& t) { return t["scale"].array().item<double>(); };
  auto good = [](const Tree& t) { return t["good_steps"].array().item<int>(); };
  EXPECT_EQ(scale(s), 8);
  s = ls.adjust(s, array(true));
  EXPECT_EQ(scale(s), 8);
  EXPECT_EQ(good(s), 1);
  s = ls.adjust(s, array(true));  // the period's second finite step: doubles, counter restarts
  EXPECT_EQ(scale(s), 16);
  EXPECT_EQ(good(s), 0);
  s = ls.adjust(s, array(false));
  EXPECT_EQ(scale(s), 8);
  s = ls.adjust(ls.adjust(ls.adjust(s, array(false)), array(false)), array(false));
  EXPECT_EQ(scale(s), 2);  // not below min_scale
  EXPECT_EQ(good(s), 0);
  EXPECT_EQ(optim::all_finite(Tree::dict({{"a", array({1.0f, 2.0f})}, {"i", array({int32_t(3)})}})).item<bool>(), true);
  EXPECT_EQ(optim::all_finite(Tree::dict({{"a", array({1.0f, INFINITY})}})).item<bool>(), false);
  EXPECT_EQ(optim::all_finite(Tree::dict({{"a", array({NAN, 1.0f})}})).item<bool>(), false);
  expect_throws<ValueError>([] { optim::dynamic_loss_scale(0); }, "initial must be finite and positive");
  expect_throws<ValueError>([] { optim::dynamic_loss_scale(8, 0); }, "period must be at least 1");
  expect_throws<TypeError>([] { optim::select_tree(array({true, false}), Tree(), Tree()); }, "bool scalar");
}

// f16 gradients below f16's smallest subnormal flush to zero unscaled; scaled, they survive and come
// back as f32 of the right size. An overflowing step is skipped (parameters and optimizer state kept)
// inside one jitted step, and the scale falls.
TEST(LossScale, SavesSmallF16GradientsAndSkipsOverflowingSteps) {
  Array x = array({1e-4f, -2e-4f, 2.5e-4f}).astype(DType::f16);
  auto loss_fn = [&x](const Tree& p, const Array& k) { return sum(p["w"].array().astype(DType::f16) * x) * k.astype(DType::f16); };
  Tree params = Tree::dict({{"w", array({0.5f, 0.25f, 1.0f})}});
  Array tiny = array(1e-4f);  // d loss / d w = x * 1e-4 ~ 1e-8, under f16's 6e-8
  Tree plain = grad([&](const Tree& p) { return loss_fn(p, tiny).astype(DType::f32); })(params);
  EXPECT_EQ(sum(abs(plain["w"].array())).item<float>(), 0.0f);
  auto ls = optim::dynamic_loss_scale(32768, 100);
  Tree s = ls.init();
  Tree scaled = grad([&](const Tree& p) { return ls.scale(loss_fn(p, tiny), s).astype(DType::f32); })(params);
  Tree g = ls.unscale(scaled, s);
  EXPECT_EQ(g["w"].array().dtype(), DType::f32);
  std::vector<float> got = g["w"].array().to_vector<float>();
  float want[] = {1e-8f, -2e-8f, 2.5e-8f};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[static_cast<size_t>(i)], want[i], 5e-3 * std::fabs(want[i])) << i;

  auto opt = optim::sgd(0.1);
  auto step = jit([&](const Tree& p, const Tree& os, const Tree& lss, const Array& k) {
    Tree gr = ls.unscale(grad([&](const Tree& q) { return ls.scale(loss_fn(q, k), lss).astype(DType::f32); })(p), lss);
    Array ok = optim::all_finite(gr);
    auto [u, os2] = opt.update(gr, os, p);
    return std::make_tuple(optim::select_tree(ok, optim::apply_updates(p, u), p), optim::select_tree(ok, os2, os),
                           ls.adjust(lss, ok));
  });
  Tree os = opt.init(params);
  auto [p1, os1, s1] = step(params, os, s, array(1.0f));  // scaled loss ~ 1e-4 * 32768 * w: finite
  EXPECT_EQ(s1["good_steps"].array().item<int>(), 1);
  EXPECT_NE(p1["w"].array().to_vector<float>(), params["w"].array().to_vector<float>());
  auto [p2, os2, s2] = step(p1, os1, s1, array(1e4f));  // scaled in f16: overflows to inf
  EXPECT_EQ(p2["w"].array().to_vector<float>(), p1["w"].array().to_vector<float>());
  EXPECT_EQ(os2["count"].array().item<int>(), os1["count"].array().item<int>());
  EXPECT_EQ(s2["scale"].array().item<float>(), 16384.0f);
  EXPECT_EQ(s2["good_steps"].array().item<int>(), 0);
}

}  // namespace
}  // namespace graft
