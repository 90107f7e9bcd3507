// Peak heap memory of one jitted training step of the MLP 784-512-512-10 at batch 128, measured by
// bench/memshim.c (preloaded) exactly as bench/torch_memory.py measures PyTorch's step: one warm-up
// step (compiling, first-use allocations, optimizer state), then baseline = the live heap bytes,
// then the high-water mark over 20 steps. Reports (high-water mark - baseline): the memory a step
// needs beyond the parameters, optimizer state and batch that persist between steps. Run it with
// GRAFT_CPU_CACHE_BYTES=0 so that graft's recycled buffers count when they are in use, not while
// they wait in the cache (PyTorch's CPU allocator keeps no cache).
//   GRAFT_CPU_CACHE_BYTES=0 LD_PRELOAD=memshim.so bench_memory sgd|adam donate|keep
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "graft/graft.h"

namespace g = graft;
using g::Array;
using g::Tree;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bench_memory sgd|adam donate|keep\n");
    return 2;
  }
  auto live = reinterpret_cast<long (*)()>(dlsym(RTLD_DEFAULT, "memshim_live"));
  auto reset = reinterpret_cast<long (*)()>(dlsym(RTLD_DEFAULT, "memshim_reset_peak"));
  auto peak = reinterpret_cast<long (*)()>(dlsym(RTLD_DEFAULT, "memshim_peak"));
  if (!live || !reset || !peak) {
    std::fprintf(stderr, "bench_memory: run it with LD_PRELOAD=memshim.so (bench/run_memory.sh)\n");
    return 2;
  }
  std::string opt_name = argv[1];
  bool donate = std::strcmp(argv[2], "donate") == 0;
  g::nn::MLP net{{784, 512, 512, 10}};
  Tree params = net.init(g::random::key(0));
  Array x = g::random::uniform(g::random::key(1), {128, 784});
  Array y = (g::random::uniform(g::random::key(2), {128}) * 10.0).astype(g::i32);
  g::optim::Optimizer opt = opt_name == "adam" ? g::optim::adam(1e-3) : g::optim::sgd(0.01);
  Tree state = opt.init(params);
  auto loss = [&net](const Tree& p, const Array& xb, const Array& yb) { return g::nn::cross_entropy(net(p, xb), yb); };
  g::JitOptions o{.name = "mlp_step"};
  if (donate) o.donate_argnums = {0, 1};
  auto step = g::jit(
      [&](const Tree& p, const Tree& s, const Array& xb, const Array& yb) {
        auto [l, grads] = g::value_and_grad(loss)(p, xb, yb);
        auto [updates, s2] = opt.update(grads, s, p);
        return std::make_tuple(g::optim::apply_updates(p, updates), s2, l);
      },
      o);
  Array l;
  std::tie(params, state, l) = step(params, state, x, y);
  long base = reset();
  for (int i = 0; i < 20; ++i) std::tie(params, state, l) = step(params, state, x, y);
  double mib = double(peak() - base) / 1048576.0;
  std::printf("{\"name\": \"graft_mlp_step_peak_heap_%s_%s\", \"value\": %.4g, \"unit\": \"MiB\", \"loss\": %.4g}\n",
              opt_name.c_str(), donate ? "donated" : "kept", mib, l.item<double>());
  return 0;
}
