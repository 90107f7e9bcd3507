// optax's breadth in C++ against the formulas computed by hand in doubles over a few steps: adagrad,
// nadam, adabelief, lion, lamb, adafactor (factored and not), ema, masks and labels, gradient
// accumulation, injected hyperparameters and the joined schedules; and a jitted step with them.
#include <cmath>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

// a tree of one f64 leaf [3] (w) and one [2] (b)
Tree tree_of(std::vector<double> w, std::vector<double> b) {
  return Tree::dict({{"b", Rng::from_doubles(b, {2}, DType::f64)}, {"w", Rng::from_doubles(w, {3}, DType::f64)}});
}
std::vector<double> vals(const Array& a) {
  Array f = a.astype(DType::f64);
  return f.to_vector<double>();
}

const std::vector<std::vector<double>> kG = {{0.5, -1.0, 0.25, 2.0, -0.5}, {-0.3, 0.8, 0.1, -1.5, 0.7},
                                            {0.9, 0.2, -0.6, 0.4, -0.2}};
Tree grads_at(int k) { return tree_of({kG[k][0], kG[k][1], kG[k][2]}, {kG[k][3], kG[k][4]}); }
Tree params0() { return tree_of({1.0, -2.0, 0.5}, {0.3, -0.7}); }
std::vector<double> flat(const Tree& t) {  // b then w (sorted keys)
  std::vector<double> r = vals(t["b"].array()), w = vals(t["w"].array());
  r.insert(r.end(), w.begin(), w.end());
  return r;
}
std::vector<double> g_flat(int k) { return {kG[k][3], kG[k][4], kG[k][0], kG[k][1], kG[k][2]}; }

// Runs opt for 3 steps from params0 (params updated by the updates) and compares every step's update
// with ref(step, g, p) -> update, computed elementwise by the caller's state.
template <class Ref>
void check_steps(const optim::Optimizer& opt, Ref ref, double tol = 1e-7) {  // (learning rates are f32)
  Tree p = params0(), s = opt.init(p);
  for (int k = 0; k < 3; ++k) {
    auto [u, s2] = opt.update(grads_at(k), s, p);
    std::vector<double> want = ref(k, g_flat(k), flat(p)), got = flat(u);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "step " << k << " elem " << i;
    p = optim::apply_updates(p, u);
    s = s2;
  }
}

TEST(Optax, AdagradNadamAdabeliefLion) {
  {
    std::vector<double> acc(5, 0.1);
    check_steps(optim::adagrad(0.1), [&](int, auto g, auto) {
      std::vector<double> u;
      for (size_t i = 0; i < 5; ++i) {
        acc[i] += g[i] * g[i];
        u.push_back(-0.1 * g[i] / std::sqrt(acc[i] + 1e-7));
      }
      return u;
    });
  }
  {
    std::vector<double> m(5, 0), v(5, 0);
    check_steps(optim::nadam(0.01), [&](int k, auto g, auto) {
      std::vector<double> u;
      double t = k + 1;
      for (size_t i = 0; i < 5; ++i) {
        m[i] = 0.9 * m[i] + 0.1 * g[i];
        v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
        double mh = 0.9 * m[i] / (1 - std::pow(0.9, t + 1)) + 0.1 * g[i] / (1 - std::pow(0.9, t));
        double vh = v[i] / (1 - std::pow(0.999, t));
        u.push_back(-0.01 * mh / (std::sqrt(vh) + 1e-8));
      }
      return u;
    });
  }
  {
    std::vector<double> m(5, 0), v(5, 0);
    check_steps(optim::adabelief(0.01), [&](int k, auto g, auto) {
      std::vector<double> u;
      double t = k + 1;
      for (size_t i = 0; i < 5; ++i) {
        m[i] = 0.9 * m[i] + 0.1 * g[i];
        v[i] = 0.999 * v[i] + 0.001 * (g[i] - m[i]) * (g[i] - m[i]) + 1e-16;
        u.push_back(-0.01 * (m[i] / (1 - std::pow(0.9, t))) / (std::sqrt(v[i] / (1 - std::pow(0.999, t))) + 1e-16));
      }
      return u;
    });
  }
  {
    std::vector<double> m(5, 0);
    check_steps(optim::lion(0.01, 0.9, 0.99, 0.1), [&](int, auto g, auto p) {
      std::vector<double> u;
      for (size_t i = 0; i < 5; ++i) {
        double c = 0.1 * g[i] + 0.9 * m[i];
        u.push_back(-0.01 * ((c > 0) - (c < 0) + 0.1 * p[i]));
        m[i] = 0.01 * g[i] + 0.99 * m[i];
      }
      return u;
    });
  }
}

TEST(Optax, LambTrustRatioPerLeaf) {
  std::vector<double> m(5, 0), v(5, 0);
  check_steps(optim::lamb(0.01, 0.9, 0.999, 1e-6, 0.0, 0.05), [&](int k, auto g, auto p) {
    std::vector<double> d(5), u(5);
    double t = k + 1;
    for (size_t i = 0; i < 5; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
      d[i] = (m[i] / (1 - std::pow(0.9, t))) / (std::sqrt(v[i] / (1 - std::pow(0.999, t))) + 1e-6) + 0.05 * p[i];
    }
    for (auto [lo, hi] : {std::pair<size_t, size_t>{0, 2}, {2, 5}}) {  // per leaf: b, then w
      double pn = 0, dn = 0;
      for (size_t i = lo; i < hi; ++i) pn += p[i] * p[i], dn += d[i] * d[i];
      double r = std::sqrt(pn) / std::sqrt(dn);
      for (size_t i = lo; i < hi; ++i) u[i] = -0.01 * d[i] * r;
    }
    return u;
  });
}

// Adafactor on a [3, 4] matrix factored (min_dim_size_to_factor 3) and a [4] vector that is not: the
// row / column second moments and the update by hand, with clipping and the parameter scale.
TEST(Optax, AdafactorFactoredAndNot) {
  Rng rng(3);
  Array w = rng.uniform({3, 4}, DType::f64) - 0.5, b = rng.uniform({4}, DType::f64) - 0.5;
  Array gw = rng.uniform({3, 4}, DType::f64) - 0.5, gb = rng.uniform({4}, DType::f64) - 0.5;
  Tree p = Tree::dict({{"b", b}, {"w", w}}), g = Tree::dict({{"b", gb}, {"w", gw}});
  optim::AdafactorOptions o;
  o.min_dim_size_to_factor = 3;
  o.lr = optim::Schedule(0.1);
  auto opt = optim::adafactor(o);
  auto [u, s] = opt.update(g, opt.init(p), p);
  // step 1: rate = 1 - 1^-0.8 = 0, so the moments are the step's own g^2 (+ eps)
  auto rms = [](const Array& x) { return std::sqrt(mean(square(x)).item<double>()); };
  {
    Array g2 = square(gw) + 1e-30;
    Array row = mean(g2, {1}), col = mean(g2, {0});  // d0 = 1 (size 4), d1 = 0 (size 3)
    Array dir = gw * expand_dims(1.0 / sqrt(row / mean(row, {0}, true)), {1}) * expand_dims(1.0 / sqrt(col), {0});
    dir = dir / std::max(1.0, rms(dir) / 1.0);
    Array want = dir * 0.1 * std::max(rms(w), 1e-3) * -1.0;
    EXPECT_TRUE(close(u["w"].array(), want, 1e-7, 1e-14));  // (the learning rate is f32)
    EXPECT_EQ(s[0]["v"][1]["v_row"].array().shape(), Shape{3});
    EXPECT_EQ(s[0]["v"][1]["v_col"].array().shape(), Shape{4});
  }
  {
    Array dir = gb / sqrt(square(gb) + 1e-30);
    dir = dir / std::max(1.0, rms(dir));
    EXPECT_TRUE(close(u["b"].array(), dir * 0.1 * std::max(rms(b), 1e-3) * -1.0, 1e-7, 1e-14));
  }
}

TEST(Optax, EmaMaskedMultiTransform) {
  std::vector<double> e(5, 0);
  check_steps(optim::ema(0.9), [&](int k, auto g, auto) {
    std::vector<double> u;
    for (size_t i = 0; i < 5; ++i) {
      e[i] = 0.1 * g[i] + 0.9 * e[i];
      u.push_back(e[i] / (1 - std::pow(0.9, k + 1)));
    }
    return u;
  });
  // sgd on w only; b passes through unchanged
  auto only_w = [](const std::string& path, const Array&) { return path == "w"; };
  check_steps(optim::masked(optim::sgd(0.5), only_w), [](int, auto g, auto) {
    return std::vector<double>{g[0], g[1], -0.5 * g[2], -0.5 * g[3], -0.5 * g[4]};
  });
  // weight decay masked to w
  check_steps(optim::add_decayed_weights(0.1, only_w), [](int, auto g, auto p) {
    return std::vector<double>{g[0], g[1], g[2] + 0.1 * p[2], g[3] + 0.1 * p[3], g[4] + 0.1 * p[4]};
  });
  // labels: sgd(0.1) for b, sgd(1.0) for w
  auto mt = optim::multi_transform({{"slow", optim::sgd(0.1)}, {"fast", optim::sgd(1.0)}},
                                   [](const std::string& path, const Array&) { return path == "b" ? "slow" : "fast"; });
  check_steps(mt, [](int, auto g, auto) { return std::vector<double>{-0.1 * g[0], -0.1 * g[1], -g[2], -g[3], -g[4]}; });
  auto bad = optim::multi_transform({{"a", optim::sgd(0.1)}}, [](const std::string&, const Array&) { return "zzz"; });
  EXPECT_THROW(bad.init(params0()), ValueError);
}

TEST(Optax, MultiStepsAndInjectedHyperparams) {
  // accumulate 2: zero, then sgd on the mean of the two gradients, then zero again
  auto ms = optim::MultiSteps{optim::sgd(0.1), 2}.gradient_transformation();
  check_steps(ms, [](int k, auto, auto) {
    std::vector<double> u(5, 0.0);
    if (k == 1)
      for (size_t i = 0; i < 5; ++i) u[i] = -0.1 * (g_flat(0)[i] + g_flat(1)[i]) / 2;
    return u;
  });
  // the learning rate in the state, changed between steps without a new optimizer
  auto inj = optim::inject_hyperparams(
      [](const std::map<std::string, Array>& h) { return optim::sgd(optim::schedule_of(h.at("lr"))); },
      {{"lr", 0.1}});
  Tree p = params0(), s = inj.init(p);
  EXPECT_NEAR(s["hyperparams"]["lr"].array().item<double>(), 0.1, 1e-7);
  auto [u1, s1] = inj.update(grads_at(0), s, p);
  EXPECT_NEAR(flat(u1)[2], -0.1 * g_flat(0)[2], 1e-6);
  s1["hyperparams"]["lr"] = Tree(array(0.5f));
  auto [u2, s2] = inj.update(grads_at(1), s1, p);
  EXPECT_NEAR(flat(u2)[2], -0.5 * g_flat(1)[2], 1e-6);
  // a schedule among them is evaluated at the step
  auto sched = optim::inject_hyperparams(
      [](const std::map<std::string, Array>& h) { return optim::sgd(optim::schedule_of(h.at("lr"))); },
      {{"lr", optim::ScheduleFn([](const Array& c) { return (c + 1).astype(DType::f32) * 0.1; })}});
  Tree ss = sched.init(p);
  auto [v1, ss1] = sched.update(grads_at(0), ss, p);
  auto [v2, ss2] = sched.update(grads_at(0), ss1, p);
  EXPECT_NEAR(flat(v2)[2] / flat(v1)[2], 2.0, 1e-6);
}

TEST(Optax, JoinedSchedules) {
  auto j = optim::join_schedules({optim::linear_schedule(0.0, 1.0, 10), optim::constant_schedule(0.5)}, {10});
  EXPECT_NEAR(j(array(int32_t(5))).item<double>(), 0.5, 1e-7);
  EXPECT_NEAR(j(array(int32_t(12))).item<double>(), 0.5, 1e-7);
  auto oc = optim::cosine_onecycle_schedule(100, 1.0);
  EXPECT_NEAR(oc(array(int32_t(0))).item<double>(), 1.0 / 25, 1e-6);
  EXPECT_NEAR(oc(array(int32_t(30))).item<double>(), 1.0, 1e-6);
  EXPECT_NEAR(oc(array(int32_t(100))).item<double>(), 1.0 / 25 / 1e4, 1e-8);
  double mid = oc(array(int32_t(15))).item<double>();
  EXPECT_NEAR(mid, 1.0 / 25 + (1.0 - 1.0 / 25) / 2, 1e-6);  // the cosine's midpoint
  EXPECT_THROW(optim::join_schedules({optim::constant_schedule(1.0)}, {3}), ValueError);
}

// The composed optimizers inside one jitted training step: the loss falls.
TEST(Optax, JittedStepsLowerTheLoss) {
  Rng rng(9);
  Array x = rng.uniform({16, 3}, DType::f32), y = matmul(x, Rng::from_doubles({1.0, -2.0, 0.5}, {3, 1}, DType::f32));
  auto loss = [&](const Tree& p) { return mean(square(matmul(x, p["w"].array()) - y)); };
  for (auto opt : {optim::lamb(0.05), optim::lion(0.05), optim::adagrad(1.0), optim::nadam(0.05),
                   optim::MultiSteps{optim::adam(0.05), 2}.gradient_transformation()}) {
    Tree p = Tree::dict({{"w", zeros({3, 1})}}), s = opt.init(p);
    auto step = jit([&](const Tree& p, const Tree& s) {
      Tree g = grad(loss)(p);
      auto [u, s2] = opt.update(g, s, p);
      return std::make_pair(optim::apply_updates(p, u), s2);
    });
    double l0 = loss(p).item<double>();
    for (int k = 0; k < 60; ++k) std::tie(p, s) = step(p, s);
    EXPECT_LT(loss(p).item<double>(), 0.5 * l0);
  }
}

}  // namespace
}  // namespace graft
