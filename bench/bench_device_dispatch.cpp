// What graft's host side costs per step of a jitted program on a device, without a GPU: a "null" device
// (registered as any backend is) whose kernels only allocate their outputs, from a cache, as CUDA's
// caching allocator does. The main job's MLP Adam step (batch 128) runs on it; the time per step is the
// jit call, the program's steps and their dispatch, with no launch, copy or device work. On a GPU the
// launches, cuBLAS's host work and the allocator come on top (bench_cuda's mlp_step_b128_enqueue_us).
//   build/bench/bench_device_dispatch        (GRAFT_PROFILE=1 for the per-step table)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <mutex>
#include "graft/graft.h"
#include "graft/backends/backend.h"
#include "graft/compiler/fusion.h"
#include "graft/prims/primitives.h"
using namespace graft;
class NullBackend final : public Backend {
 public:
  std::string name() const override { return "null"; }
  bool available(int index, std::string*) const override { return index == 0; }
  Ref<Buffer> allocate(size_t nbytes, Device d) override {
    size_t n = (nbytes + 63) / 64 * 64 + 64;
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lk(mu);
      auto it = cache.find(n);
      if (it != cache.end()) { p = it->second; cache.erase(it); }
    }
    if (!p) p = std::aligned_alloc(64, n);
    return make_ref<Buffer>(p, nbytes, d, [](void* q, size_t nb, Device) {
      std::lock_guard<std::mutex> lk(mu);
      cache.emplace((nb + 63) / 64 * 64 + 64, q);
    });
  }
  static inline std::mutex mu;
  static inline std::multimap<size_t, void*> cache;
  void copy(const void* src, Device, void* dst, Device, size_t n) override { if (n) std::memcpy(dst, src, n); }
  void synchronize(Device) override {}
};
NullBackend g_null;
int16_t g_type;
Arrays empty_outputs(const Primitive&, std::span<const Array>, std::span<const Aval> outs, const Params&) {
  Arrays r;
  for (const Aval& a : outs) r.push_back(Array::empty_on(a, Device{g_type, 0}));
  return r;
}
void kernels(int16_t t) {
  for (const char* n : {"dot_general", "dot_bias", "dot_bias_grad", "reduce_sum", "div", "add", "pow", "sub", "neg",
                        "convert_element_type", "iota", "mul", "exp", "log", "max", "select_n", "broadcast_in_dim", "reshape",
                        "transpose", "reduce_max", "eq", "lt", "gt", "ge", "sqrt"})
    if (const Primitive* p = prims::find_primitive(n)) register_device_impl(t, *p, &empty_outputs);
}
int main() {
  BackendDescriptor b;
  b.name = "null";
  b.runtime = &g_null;
  b.kernels = &kernels;
  b.fusion = &empty_outputs;
  b.passes = {"gemm_epilogues"};
  g_type = register_backend(b);
  Device d{g_type, 0};
  for (int64_t bs : {int64_t(128)}) {
    nn::MLP net{{784, 512, 512, 10}};
    auto on = [&](const Array& a) { return device_put(a, d); };
    Tree p = tree_map(on, net.init(random::key(0)));
    auto opt = optim::adam(1e-3);
    Tree st = tree_map(on, opt.init(p));
    Array x = on(random::normal(random::key(1), {bs, 784}, DType::f32));
    Array y = on((random::bits(random::key(2), {bs}) % 10u).astype(DType::i32));
    auto step = jit([&](const Tree& p, const Tree& s, const Array& x, const Array& y) {
          auto [l, g] = value_and_grad([&](const Tree& q) { return nn::cross_entropy(net(q, x), y); })(p);
          auto [u, s2] = opt.update(g, s, p);
          return std::make_tuple(optim::apply_updates(p, u), s2, l);
        }, {.name = "mlp_step", .donate_argnums = {0, 1}});
    std::vector<double> us;
    for (int i = 0; i < 2200; ++i) {
      auto t = std::chrono::steady_clock::now();
      Array l;
      std::tie(p, st, l) = step(p, st, x, y);
      if (i >= 200) us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
    }
    std::sort(us.begin(), us.end());
    std::printf("null-device MLP step b%lld: %.1f us per step (host only)\n", (long long)bs, us[us.size() / 2]);
    auto fb = device_fallbacks(g_type);
    for (auto& [n, c] : fb) std::printf("  fallback %s %lld\n", n.c_str(), (long long)c);
  }
}
