// The cost of jit's batch polymorphism on the main job's training step (MLP 784-512-512-10, Adam,
// parameters and optimizer state donated): the step of a full batch of 128 in the masked program
// against the exact program, interleaved in one process (the ratio is the figure), and the partial
// batch of 96 (60000 = 468 x 128 + 96) in the masked program against an exact program of its own.
// Prints one JSON line per figure. Run: build/bench/bench_polymorphic [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "graft/graft.h"

namespace g = graft;
using g::Array;
using g::Tree;

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int steps = 50;
  g::nn::MLP net{{784, 512, 512, 10}};
  g::optim::Optimizer opt = g::optim::adam(1e-3);
  auto loss = [&net](const Tree& p, const Array& xb, const Array& yb) { return g::nn::cross_entropy(net(p, xb), yb); };
  auto body = [&](const Tree& p, const Tree& s, const Array& xb, const Array& yb) {
    auto [l, grads] = g::value_and_grad(loss)(p, xb, yb);
    auto [updates, s2] = opt.update(grads, s, p);
    return std::make_tuple(g::optim::apply_updates(p, updates), s2, l);
  };
  auto exact = g::jit(body, {.name = "exact", .donate_argnums = {0, 1}});
  auto poly = g::jit(body, {.name = "poly", .donate_argnums = {0, 1}, .polymorphic = {"", "", "b, ...", "b"}});
  Array x = g::random::uniform(g::random::key(1), {128, 784});
  Array y = (g::random::uniform(g::random::key(2), {128}) * 10.0).astype(g::i32);
  Array xp = x[{g::slice(0, 96)}], yp = y[{g::slice(0, 96)}];
  Tree p1 = net.init(g::random::key(0)), p2 = net.init(g::random::key(0));
  Tree s1 = opt.init(p1), s2 = opt.init(p2);
  // seconds per step of `f` on (x, y), its state threaded through
  auto time = [&](auto& f, Tree& p, Tree& s, const Array& xb, const Array& yb) {
    Array l;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) std::tie(p, s, l) = f(p, s, xb, yb);
    l.item<float>();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
  };
  time(exact, p1, s1, x, y), time(poly, p2, s2, x, y), time(exact, p1, s1, xp, yp), time(poly, p2, s2, xp, yp);
  std::vector<double> full_ratio, part_ratio, full_ms, part_ms;
  for (int r = 0; r < rounds; ++r) {
    double e = time(exact, p1, s1, x, y), m = time(poly, p2, s2, x, y);
    double ep = time(exact, p1, s1, xp, yp), mp = time(poly, p2, s2, xp, yp);
    full_ratio.push_back(m / e), part_ratio.push_back(mp / ep), full_ms.push_back(m * 1e3), part_ms.push_back(mp * 1e3);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("{\"name\": \"masked_step_full_batch\", \"ratio_to_exact\": %.3f, \"ms\": %.3f}\n", median(full_ratio),
              median(full_ms));
  std::printf("{\"name\": \"masked_step_partial_batch\", \"ratio_to_exact\": %.3f, \"ms\": %.3f}\n",
              median(part_ratio), median(part_ms));
  std::printf("{\"name\": \"compiles\", \"masked\": %zu, \"exact\": %zu}\n", poly.num_compiles(), exact.num_compiles());
  return 0;
}
