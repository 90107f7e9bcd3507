// Sharded jit against the hand-written SPMD program, interleaved round by round in one process, over a
// mesh of this process's CPU devices (devices made by hand: no GRAFT_CPU_DEVICES needed):
//   - the main job's MLP (784-512-512-10, SGD, batch 128) data parallel over 4 devices: pjit of the
//     one-device step with the batch over "data", against jit(shard_map(step with the loss pmean'd));
//   - the first call of each (trace, partition, compile) for the MLP and for the byte-level transformer's
//     Adam step (width 128, 4 heads, 2 blocks, batch 8 x 128), with the disk cache off: the partitioning
//     (lower(): global trace, propagation, one device's program) against jit's first call of the same
//     step on one device (trace and compile).
// Prints one JSON object per figure: medians over rounds of the times and of the per-round ratios.
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace g = graft;
using g::Array;
using g::Tree;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void emit(const std::string& name, double value, const char* unit) {
  std::printf("{\"name\": \"%s\", \"value\": %.4g, \"unit\": \"%s\"}\n", name.c_str(), value, unit);
  std::fflush(stdout);
}

std::vector<g::GlobalDevice> cpus(int n) {
  std::vector<g::GlobalDevice> d;
  for (int k = 0; k < n; ++k) d.push_back(g::GlobalDevice{k, 0, g::Device::cpu()});
  return d;
}

using Step = std::function<std::pair<Tree, Array>(const Tree&, const Array&, const Array&)>;

double run(const Step& step, Tree& params, const Array& x, const Array& y, int n) {
  double t0 = now();
  Array loss;
  for (int i = 0; i < n; ++i) std::tie(params, loss) = step(params, x, y);
  loss.raw_data();
  return (now() - t0) / n;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  setenv("GRAFT_CACHE_DIR", "off", 1);  // compile times from scratch: no objects from an earlier run
  g::Mesh mesh(cpus(4), {"data"});
  g::NamedSharding rep{mesh, g::P()}, batch{mesh, g::P("data")};
  // ---- the MLP's data-parallel step --------------------------------------------------------------------
  g::nn::MLP net{{784, 512, 512, 10}};
  Tree params = net.init(g::random::key(0));
  Array x = g::random::normal(g::random::key(1), {128, 784});
  Array y = g::astype(g::random::bits(g::random::key(2), {128}, g::DType::u32) % 10u, g::DType::i32);
  auto sgd = [](const Tree& p, const Tree& grads) {
    return g::tree_map([](const Array& w, const Array& d) { return w - 0.01 * d; }, p, grads);
  };
  auto one_device = [&](const Tree& p, const Array& xb, const Array& yb) {
    auto [l, gr] = g::value_and_grad([&](const Tree& q) { return g::nn::cross_entropy(net(q, xb), yb); })(p);
    return std::make_pair(sgd(p, gr), l);
  };
  auto spmd = [&](const Tree& p, const Array& xb, const Array& yb) {
    auto [l, gr] = g::value_and_grad([&](const Tree& q) { return g::pmean(g::nn::cross_entropy(net(q, xb), yb), "data"); })(p);
    return std::make_pair(sgd(p, gr), l);
  };
  auto leaves = g::nn::parameter_shardings(params, mesh, {});
  std::vector<std::optional<g::NamedSharding>> outs = leaves;
  outs.push_back(rep);
  double t0 = now();
  Step by_hand = g::jit(g::shard_map(spmd, mesh, {g::P(), g::P("data"), g::P("data")}, {g::P()}));
  Tree p1 = params;
  run(by_hand, p1, x, y, 1);
  double first_by_hand = now() - t0;
  t0 = now();
  Step sharded = g::pjit(one_device, {.in_leaf_shardings = {leaves, {batch}, {batch}}, .out_shardings = outs});
  Tree p2 = params;
  run(sharded, p2, x, y, 1);
  double first_sharded = now() - t0;
  std::vector<double> t_hand, t_pjit, ratio;
  for (int r = 0; r < rounds; ++r) {
    double a = run(by_hand, p1, x, y, 20), b = run(sharded, p2, x, y, 20);
    t_hand.push_back(a);
    t_pjit.push_back(b);
    ratio.push_back(b / a);
  }
  emit("mlp_dp4_shard_map_step_ms", median(t_hand) * 1e3, "ms");
  emit("mlp_dp4_pjit_step_ms", median(t_pjit) * 1e3, "ms");
  emit("mlp_dp4_pjit_over_shard_map", median(ratio), "ratio");
  emit("mlp_dp4_first_call_shard_map_s", first_by_hand, "s");
  emit("mlp_dp4_first_call_pjit_s", first_sharded, "s");
  // ---- what partitioning adds to the transformer's compile --------------------------------------------
  g::nn::TransformerLM lm{.vocab = 256, .dim = 128, .heads = 4, .layers = 2, .max_len = 128};
  Tree tp = lm.init(g::random::key(3));
  auto opt = g::optim::adam(1e-3);
  Tree ts = opt.init(tp);
  Array tx = g::astype(g::random::bits(g::random::key(4), {8, 128}, g::DType::u32) % 256u, g::DType::i32);
  auto tstep = [&](const Tree& p, const Tree& s, const Array& xb, const Array& yb) {
    auto [l, gr] = g::value_and_grad([&](const Tree& q) { return g::nn::cross_entropy(lm(q, xb), yb); })(p);
    auto [u, s2] = opt.update(gr, s, p);
    return std::make_tuple(g::optim::apply_updates(p, u), s2, l);
  };
  auto tstep_spmd = [&](const Tree& p, const Tree& s, const Array& xb, const Array& yb) {
    auto [l, gr] = g::value_and_grad([&](const Tree& q) { return g::pmean(g::nn::cross_entropy(lm(q, xb), yb), "data"); })(p);
    auto [u, s2] = opt.update(gr, s, p);
    return std::make_tuple(g::optim::apply_updates(p, u), s2, l);
  };
  // cold: the one-device step compiled by jit, then the partitioning of the same step (lower(): the
  // global trace, propagation and one device's program traced), then the sharded step's first call
  auto ps = g::nn::parameter_shardings(tp, mesh, {}), ss = g::nn::parameter_shardings(ts, mesh, {});
  std::vector<std::optional<g::NamedSharding>> o = ps;
  o.insert(o.end(), ss.begin(), ss.end());
  o.push_back(rep);
  t0 = now();
  std::get<2>(g::jit(tstep)(tp, ts, tx, tx)).raw_data();
  double compile = now() - t0;
  auto f = g::pjit(tstep, {.in_leaf_shardings = {ps, ss, {batch}, {batch}}, .out_shardings = o});
  t0 = now();
  (void)f.lower(tp, ts, tx, tx);
  double partition = now() - t0;
  t0 = now();
  std::get<2>(f(tp, ts, tx, tx)).raw_data();
  double first_pjit = now() - t0;
  t0 = now();
  auto h = g::jit(g::shard_map(tstep_spmd, mesh, {g::P(), g::P(), g::P("data"), g::P("data")}, {g::P()}));
  std::get<2>(h(tp, ts, tx, tx)).raw_data();
  double first_hand = now() - t0;
  emit("transformer_jit_first_call_s", compile, "s");
  emit("transformer_dp4_partition_s", partition, "s");
  emit("transformer_dp4_partition_share_of_compile", partition / compile, "fraction");
  emit("transformer_dp4_first_call_pjit_s", first_pjit, "s");
  emit("transformer_dp4_first_call_shard_map_s", first_hand, "s");
  return 0;
}
