// Training steps in f32 and in bf16 on the CPU, interleaved round by round in one process:
//   - the main job's MLP (784-512-512-10, Adam, batch 128), CNN (two conv + max-pool blocks, two dense
//     layers, batch 32) and byte-level transformer (vocab 256, width 128, 4 heads, 2 blocks, batch
//     8 x 128), with Adam, each jitted with donated parameters;
//   - bf16 as the main job runs it (parameters and inputs cast on the way in, f32 master weights, loss
//     and optimizer), on the CPU's native bf16 dot products and, forced, on the f32 route (what a CPU
//     without them runs);
//   - oneDNN's sgemm rate at 1024^3 in the same rounds, for the transformer step's share of the GEMM
//     roofline (its FLOP count printed with it);
//   - one layer's fused attention, forward and backward under jit (the transformer's [8, 128, 4, 32],
//     causal) in f32, bf16 and f16, in the same rounds.
// Prints one JSON object per figure: the median over rounds of each step time and of the per-round ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graft/graft.h"
#include "graft/runtime/cpu/features.h"
#include "graft/runtime/cpu/gemm.h"

namespace g = graft;
using g::Array;
using g::Tree;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A jitted training step of `apply` (params, x) -> logits, computing in `compute`.
struct Trainer {
  Tree params, state;
  std::function<std::tuple<Tree, Tree, Array>(const Tree&, const Tree&, const Array&, const Array&)> step;
  Array x, y;
  double run(int n) {  // seconds per step over n steps
    double t0 = now();
    Array loss;
    for (int i = 0; i < n; ++i) std::tie(params, state, loss) = step(params, state, x, y);
    loss.raw_data();
    return (now() - t0) / n;
  }
};

Trainer make(std::function<Array(const Tree&, const Array&)> apply, Tree params, Array x, Array y, g::DType compute) {
  auto opt = g::optim::adam(1e-3);
  Trainer t;
  t.state = opt.init(params);
  t.params = std::move(params);
  t.x = std::move(x);
  t.y = std::move(y);
  auto loss = [apply, compute](const Tree& p, const Array& xx, const Array& yy) {
    Tree pc = g::tree_map([compute](const Array& a) { return g::is_floating(a.dtype()) ? a.astype(compute) : a; }, p);
    Array xc = g::is_floating(xx.dtype()) ? xx.astype(compute) : xx;
    return g::nn::cross_entropy(apply(pc, xc).astype(g::f32), yy);
  };
  auto body = [loss, opt](const Tree& p, const Tree& s, const Array& xx, const Array& yy) {
    auto [l, grads] = g::value_and_grad(loss)(p, xx, yy);
    auto [updates, s2] = opt.update(grads, s, p);
    return std::make_tuple(g::optim::apply_updates(p, updates), s2, l);
  };
  t.step = g::jit(body, {.name = "train_step", .donate_argnums = {0, 1}});
  return t;
}

void emit(const std::string& name, double value, const char* unit, const std::string& extra = "") {
  std::printf("{\"name\": \"%s\", \"value\": %.4g, \"unit\": \"%s\"%s}\n", name.c_str(), value, unit, extra.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  Array key = g::random::key(0);
  // the MLP on random images (the step's time does not depend on the data)
  g::nn::MLP mlp{{784, 512, 512, 10}};
  auto mlp_apply = [mlp](const Tree& p, const Array& x) { return mlp(p, x); };
  Array mx = g::random::normal(g::random::fold_in(key, 1), {128, 784});
  Array my = g::floor(g::random::uniform(g::random::fold_in(key, 2), {128}, g::f32, 0, 10)).astype(g::i32);
  // the main job's CNN (two conv + pool blocks, two dense layers) at its batch of 32
  g::nn::Conv2d c1{1, 32, {3, 3}}, c2{32, 64, {3, 3}};
  g::nn::Linear d1{1600, 128}, d2{128, 10};
  auto cnn_init = [=](const Array& k) {
    Array ks = g::random::split(k, 4);
    return Tree::dict({{"conv1", c1.init(ks[0])},
                       {"conv2", c2.init(ks[1])},
                       {"dense1", d1.init(ks[2])},
                       {"dense2", d2.init(ks[3])}});
  };
  auto cnn_apply = [=](const Tree& p, const Array& x) {
    Array h = g::nn::max_pool2d(g::relu(c1(p["conv1"], x)), {2, 2});
    h = g::nn::max_pool2d(g::relu(c2(p["conv2"], h)), {2, 2});
    return d2(p["dense2"], g::relu(d1(p["dense1"], g::reshape(h, {h.shape(0), -1}))));
  };
  Array cx = g::random::normal(g::random::fold_in(key, 7), {32, 1, 28, 28});
  Array cy = g::floor(g::random::uniform(g::random::fold_in(key, 8), {32}, g::f32, 0, 10)).astype(g::i32);
  // the transformer on random bytes
  g::nn::TransformerLM lm{.vocab = 256, .dim = 128, .heads = 4, .layers = 2, .max_len = 128};
  auto lm_apply = [lm](const Tree& p, const Array& x) { return lm(p, x); };
  Array tx = g::floor(g::random::uniform(g::random::fold_in(key, 3), {8, 128}, g::f32, 0, 256)).astype(g::i32);
  Array ty = g::floor(g::random::uniform(g::random::fold_in(key, 4), {8, 128}, g::f32, 0, 256)).astype(g::i32);

  struct Config {
    std::string name;
    Trainer t;
    int native;  // -1: as detected, 0: forced off
    int steps;
    std::vector<double> times;
  };
  std::vector<Config> cs;
  for (auto [model, steps] : {std::pair<std::string, int>{"mlp", 40}, {"cnn", 16}, {"transformer", 8}}) {
    for (auto [dt, native] : {std::pair<g::DType, int>{g::f32, -1}, {g::bf16, -1}, {g::bf16, 0}}) {
      Trainer t = model == "mlp"   ? make(mlp_apply, mlp.init(g::random::fold_in(key, 5)), mx, my, dt)
                  : model == "cnn" ? make(cnn_apply, cnn_init(g::random::fold_in(key, 9)), cx, cy, dt)
                                   : make(lm_apply, lm.init(g::random::fold_in(key, 6)), tx, ty, dt);
      std::string name = model + "_" + (dt == g::f32 ? "f32" : native == 0 ? "bf16_via_f32" : "bf16");
      cs.push_back({name, std::move(t), native, steps, {}});
    }
  }
  // sgemm 1024^3 through graft's GEMM (oneDNN's sgemm)
  const int64_t S = 1024;
  std::vector<float> A(S * S, 0.5f), B(S * S, 0.25f), C(S * S);
  auto sgemm = [&] {
    double t0 = now();
    for (int i = 0; i < 3; ++i) g::cpu::gemm(g::f32, false, false, S, S, S, A.data(), S, B.data(), S, C.data(), S);
    return 2.0 * S * S * S * 3 / (now() - t0) / 1e9;
  };
  // one layer's attention: the gradient of <fused_attention(q, k, v), ct> with respect to q, k and v
  struct Attention {
    std::string name;
    std::function<void()> run;
    std::vector<double> times;
  };
  std::vector<Attention> att;
  for (g::DType dt : {g::f32, g::bf16, g::f16}) {
    auto draw = [&](uint32_t i) {
      return g::random::normal(g::random::fold_in(key, 10 + i), {8, 128, 4, 32}).astype(dt);
    };
    Array q = draw(0), k = draw(1), v = draw(2), ct = draw(3);
    auto grads = g::jit(g::grad(
        [ct](const Array& a, const Array& b, const Array& c) {
          return g::sum((g::nn::fused_attention(a, b, c, true, std::nullopt) * ct).astype(g::f32));
        },
        {0, 1, 2}));
    att.push_back({"attention_fwd_bwd_" + std::string(g::short_name(dt)),
                   [grads, q, k, v] {
                     for (int i = 0; i < 20; ++i) grads(q, k, v)[0].block_until_ready();
                   },
                   {}});
  }
  // warm-up: compile every step, fault in the buffers
  for (auto& c : cs) {
    g::cpu::set_native_bf16_for_testing(c.native);
    c.t.run(2);
  }
  g::cpu::set_native_bf16_for_testing(-1);  // the CPU's own bf16 products for attention
  for (auto& a : att) a.run();
  std::vector<double> gflops;
  std::map<std::string, std::vector<double>> ratios;
  for (int r = 0; r < rounds; ++r) {
    gflops.push_back(sgemm());
    for (auto& c : cs) {
      g::cpu::set_native_bf16_for_testing(c.native);
      c.times.push_back(c.t.run(c.steps));
    }
    g::cpu::set_native_bf16_for_testing(-1);
    for (auto& a : att) {
      double t0 = now();
      a.run();
      a.times.push_back((now() - t0) / 20);
    }
    ratios["attention_bf16/f32"].push_back(att[1].times.back() / att[0].times.back());
    ratios["attention_f16/f32"].push_back(att[2].times.back() / att[0].times.back());
    for (size_t i = 0; i < cs.size(); i += 3) {
      ratios[cs[i + 1].name + "/f32"].push_back(cs[i + 1].times.back() / cs[i].times.back());
      ratios[cs[i + 2].name + "/f32"].push_back(cs[i + 2].times.back() / cs[i].times.back());
    }
  }
  g::cpu::set_native_bf16_for_testing(-1);
  emit("sgemm_1024_gflops", median(gflops), "GFLOP/s");
  for (auto& c : cs) emit(c.name + "_step_ms", median(c.times) * 1e3, "ms");
  for (auto& a : att) emit(a.name + "_us", median(a.times) * 1e6, "us");
  for (auto& [k, v] : ratios) emit(k, median(v), "ratio");
  // the transformer step's FLOPs: forward (projections, MLP, both attention products over all T x T
  // pairs, the head) and twice that backward
  const double Bt = 8 * 128, d = 128, T = 128, V = 256, L = 2;
  double fwd = L * (4 * 2 * Bt * d * d + 2 * 2 * Bt * d * 4 * d + 2 * 2 * Bt * T * d) + 2 * Bt * d * V;
  double flop = 3 * fwd;
  const Config& tf32 =
      *std::find_if(cs.begin(), cs.end(), [](const Config& c) { return c.name == "transformer_f32"; });
  std::vector<double> share;
  for (int r = 0; r < rounds; ++r) share.push_back(flop / tf32.times[size_t(r)] / 1e9 / gflops[size_t(r)]);
  emit("transformer_f32_gemm_roofline_share", median(share), "fraction",
       ", \"gflop\": " + std::to_string(flop / 1e9) + ", \"native_bf16\": " + (g::cpu::native_bf16() ? "true" : "false"));
  return 0;
}
