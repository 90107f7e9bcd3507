// Automatic sharding: the searched layouts of a training step's parameters move no more bytes than the
// hand-written data-parallel, FSDP and Megatron plans that fit the same memory limit; without a limit the
// search keeps data parallelism; and training with the plan equals jit.
#include <graft/graft.h>

#include "parallel/devices.h"
#include "testing.h"

namespace graft::testing {
namespace {

struct StepCase {
  nn::MLP net{{64, 128, 128, 16}};
  Tree params = net.init(random::key(0), DType::f64);
  Array x, y;
  StepCase() {
    Rng rng(1);
    x = rng.uniform({32, 64}, DType::f64);
    y = astype(floor(rng.uniform({32}, DType::f64, 0, 16)), DType::i32);
  }
  auto step() const {
    return [this](const Tree& p, const Array& xb, const Array& yb) {
      auto [l, g] = value_and_grad([&](const Tree& q) { return nn::cross_entropy(net(q, xb), yb); })(p);
      return std::make_pair(tree_map([](const Array& w, const Array& d) { return w - 0.1 * d; }, p, g), l);
    };
  }
  std::vector<std::pair<size_t, size_t>> carry() const {
    std::vector<std::pair<size_t, size_t>> c;
    for (size_t k = 0; k < params.leaves().size(); ++k) c.push_back({k, k});
    return c;
  }
  double param_bytes() const {
    double b = 0;
    for (auto& l : params.leaves()) b += static_cast<double>(l.size() * 8);
    return b;
  }
};

TEST(AutoSharding, WithoutALimitKeepsDataParallelism) {
  StepCase s;
  Mesh m(cpus(4), {"data"});
  NamedSharding batch{m, P("data")};
  auto r = auto_sharding(s.step(), {.mesh = m, .auto_args = {true, false, false}, .in_shardings = {std::nullopt, batch, batch},
                                    .carry = s.carry()},
                         s.params, s.x, s.y);
  for (auto& sh : r.in_leaf_shardings[0]) EXPECT_EQ(sh->spec, P()) << r.summary;
  // the data-parallel plan's cost (the partitioner's choice for each product: at batch 32 it gathers a
  // layer's activations rather than all-reduce its weight gradient where that moves fewer bytes)
  PlanCost dp = plan_cost(s.step(), m, {nn::parameter_shardings(s.params, m, {}), {batch}, {batch}}, s.carry(), s.params,
                          s.x, s.y);
  EXPECT_DOUBLE_EQ(r.collective_bytes, dp.collective_bytes) << r.summary;
  EXPECT_LE(dp.collective_bytes, s.param_bytes() + 8);
  EXPECT_GT(r.evaluations, 1);
}

TEST(AutoSharding, UnderALimitBeatsTheHandWrittenPlansThatFit) {
  StepCase s;
  Mesh m(cpus(4), {"data", "model"}, {2, 2});
  NamedSharding batch{m, P("data")};
  const double limit = s.param_bytes() * 0.4 + 32 * 64 * 8 / 2 + 32 * 4 / 2;  // replicated parameters do not fit
  auto r = auto_sharding(s.step(), {.mesh = m, .auto_args = {true, false, false}, .in_shardings = {std::nullopt, batch, batch},
                                    .carry = s.carry(), .device_memory = static_cast<int64_t>(limit)},
                         s.params, s.x, s.y);
  EXPECT_LE(r.memory_bytes, limit) << r.summary;
  // the hand-written plans, costed by the same model
  double best_fit = 1e300;
  std::string table;
  for (nn::Layout layout : {nn::Layout{}, nn::Layout{.fsdp = "data"}, nn::Layout{.tensor = "model"},
                            nn::Layout{.fsdp = "data", .tensor = "model"}}) {
    auto leaves = nn::parameter_shardings(s.params, m, layout);
    PlanCost c = plan_cost(s.step(), m, {leaves, {batch}, {batch}}, s.carry(), s.params, s.x, s.y);
    table += "fsdp '" + layout.fsdp + "' tensor '" + layout.tensor + "': " + std::to_string(c.collective_bytes) + " bytes, " +
             std::to_string(c.memory_bytes) + " held\n";
    if (c.memory_bytes <= limit) best_fit = std::min(best_fit, c.collective_bytes);
  }
  EXPECT_LT(best_fit, 1e300) << table;
  EXPECT_LE(r.collective_bytes, best_fit) << r.summary << table;
  std::printf("%s%s", r.summary.c_str(), table.c_str());
  // and training with it follows jit
  auto f = pjit(s.step(), {.in_leaf_shardings = {r.in_leaf_shardings[0], {batch}, {batch}}, .out_shardings = r.out_shardings});
  auto g = jit(s.step());
  Tree a = s.params, b = s.params;
  Array la, lb;
  for (int i = 0; i < 3; ++i) {
    std::tie(a, la) = f(a, s.x, s.y);
    std::tie(b, lb) = g(b, s.x, s.y);
  }
  EXPECT_NEAR(la.item<double>(), lb.item<double>(), 1e-10);
  auto pa = a.leaves(), pb = b.leaves();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(close(pa[i], pb[i], 1e-10, 1e-10)) << "leaf " << i;
  // the cost model counts what the partitioned program issues
  auto lowered = f.lower(s.params, s.x, s.y);
  double issued = 0;
  for (auto& [name, bytes] : lowered.collectives()) issued += static_cast<double>(bytes);
  EXPECT_DOUBLE_EQ(issued, r.collective_bytes) << lowered.as_text();
}

TEST(AutoSharding, ErrorsWhenNothingFits) {
  StepCase s;
  Mesh m(cpus(2), {"data"});
  NamedSharding batch{m, P("data")};
  EXPECT_THROW(auto_sharding(s.step(), {.mesh = m, .auto_args = {true, false, false}, .in_shardings = {std::nullopt, batch, batch},
                                        .carry = s.carry(), .device_memory = 100},
                             s.params, s.x, s.y),
               ValueError);
  EXPECT_THROW(auto_sharding(s.step(), {.mesh = m, .auto_args = {true}}, s.params, s.x, s.y), ValueError);
}

}  // namespace
}  // namespace graft::testing
