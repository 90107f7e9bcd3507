// Compile time of the main job's training step (MLP 784-512-512-10, Adam, batch 128, parameters and
// optimizer state donated) in a fresh process: the time to build its executable from the traced
// program (optimizing or reading the cached program, planning memory, compiling or loading the fused
// loops' machine code). bench/run_compile_cache.sh runs it in new processes against an empty cache,
// a cache holding only the kernels' objects, and a full cache.
#include <chrono>
#include <cstdio>

#include "graft/compiler/executable.h"
#include "graft/graft.h"

namespace g = graft;
using g::Array;
using g::Tree;

int main() {
  g::nn::MLP net{{784, 512, 512, 10}};
  Tree params = net.init(g::random::key(0));
  Array x = g::random::uniform(g::random::key(1), {128, 784});
  Array y = (g::random::uniform(g::random::key(2), {128}) * 10.0).astype(g::i32);
  g::optim::Optimizer opt = g::optim::adam(1e-3);
  Tree state = opt.init(params);
  auto loss = [&net](const Tree& p, const Array& xb, const Array& yb) { return g::nn::cross_entropy(net(p, xb), yb); };
  auto step = [&](const Tree& p, const Tree& s, const Array& xb, const Array& yb) {
    auto [l, grads] = g::value_and_grad(loss)(p, xb, yb);
    auto [updates, s2] = opt.update(grads, s, p);
    return std::make_tuple(g::optim::apply_updates(p, updates), s2, l);
  };
  g::ClosedJaxpr program = g::make_jaxpr(step)(params, state, x, y);
  size_t n_state = params.leaves().size() + state.leaves().size();
  std::vector<bool> donated(program.jaxpr->invars.size(), false);
  for (size_t i = 0; i < n_state; ++i) donated[i] = true;
  auto t0 = std::chrono::steady_clock::now();
  g::Executable exe(program, "mlp_step", donated);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"name\": \"mlp_step_compile\", \"value\": %.4g, \"unit\": \"ms\", \"cached_program\": %s, "
              "\"optimize_ms\": %.4g, \"kernels_ms\": %.4g, \"fused_loops\": %d}\n",
              ms, exe.stats().cached_program ? "true" : "false", exe.stats().optimize_ms, exe.stats().kernels_ms,
              exe.stats().fused_loops);
  return 0;
}
