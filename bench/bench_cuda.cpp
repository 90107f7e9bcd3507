// GPU figures of issue 17, printed as one line each for tools/cuda_device.sh (which runs the PyTorch peer,
// bench/torch_cuda.py, in the same command on the same GPU):
//   eager_add_us      host time to enqueue `a + b` on 1-element GPU arrays (10^5 calls, no sync)
//   matmul_<t>_tflops dot_general 8192^3 (f32 without and with TF32, bf16)
//   copy_gbs / neg_gbs device-to-device copy vs an elementwise op over 2^28 f32 (bytes read + written)
// and of issue 18 (jit on the GPU):
//   jit_chain_gbs     jitted tanh(x) * 0.5 + x * x - 1 over 2^28 f32: one fused kernel (bytes read + written)
//   jit_softmax_gbs   jitted softmax over the rows of 8192 x 8192 f32 (bytes read + written)
//   mlp_step_b<B>[_tf32]_ms  the main job's MLP training step (784-512-512-10, Adam, donated), median of
//                     200, f32 products without and with TF32 (JAX's default on GPUs is TF32), with the host's
//                     time to enqueue a step (<name>_enqueue_us) and graft's kernel launches per step
//   cnn_step_b128[_tf32]_ms, transformer_step_b<B>[_tf32]_ms  the main job's CNN and transformer steps alike
// Arguments name the sections to run (eager matmul bandwidth jit mlp cnn transformer; default all).
#include <algorithm>
#include <functional>
#include <vector>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "graft/backends/cuda/runtime.h"
#include "graft/graft.h"

using namespace graft;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  auto want = [&](const char* section) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) == section) return true;
    return false;
  };
  if (cuda::device_count() == 0) {
    std::printf("no GPU: %s\n", cuda::unavailable_reason().c_str());
    return 1;
  }
  Device gpu = Device::cuda();
  if (want("eager")) {  // eager enqueue overhead
    Array a = device_put(ones({1}, DType::f32), gpu), b = device_put(ones({1}, DType::f32), gpu);
    for (int i = 0; i < 1000; ++i) a + b;
    cuda::synchronize();
    const int n = 100000;
    auto t = Clock::now();
    Array c;
    for (int i = 0; i < n; ++i) c = a + b;
    double s = seconds_since(t);
    cuda::synchronize();
    std::printf("eager_add_us %.3f\n", s / n * 1e6);
  }
  auto time_it = [](auto&& f, int reps) {
    f();
    cuda::synchronize();
    auto t = Clock::now();
    for (int i = 0; i < reps; ++i) f();
    cuda::synchronize();
    return seconds_since(t) / reps;
  };
  if (want("matmul")) {
    const int64_t n = 8192;
    for (auto [name, dt, tf32] : {std::tuple{"f32", DType::f32, false}, std::tuple{"tf32", DType::f32, true},
                                  std::tuple{"bf16", DType::bf16, false}}) {
      cuda::allow_tf32(tf32);
      Array x = device_put(random::normal(random::key(1), {n, n}, dt), gpu);
      Array y = device_put(random::normal(random::key(2), {n, n}, dt), gpu);
      double s = time_it([&] { (void)matmul(x, y); }, 10);
      std::printf("matmul_%s_tflops %.1f\n", name, 2.0 * n * n * n / s / 1e12);
    }
    cuda::allow_tf32(false);
  }
  if (want("bandwidth")) {
    const int64_t n = int64_t(1) << 28;
    Array x = device_put(ones({n}, DType::f32), gpu);
    Array y = Array::empty_on(Aval({n}, DType::f32), gpu);
    void* dst = const_cast<void*>(static_cast<const void*>(y.concrete()->data()));
    const void* src = x.concrete()->data();
    double s = time_it([&] { cudaMemcpyAsync(dst, src, n * 4, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(cuda::stream(0))); }, 20);
    std::printf("copy_gbs %.0f\n", 2.0 * n * 4 / s / 1e9);
    double s2 = time_it([&] { (void)(-x); }, 20);
    std::printf("neg_gbs %.0f\n", 2.0 * n * 4 / s2 / 1e9);
    Array z = device_put(ones({n}, DType::f32), gpu);
    double s3 = time_it([&] { (void)(x + z); }, 20);
    std::printf("add_gbs %.0f\n", 3.0 * n * 4 / s3 / 1e9);
  }
  if (want("jit")) {  // fused loops
    const int64_t n = int64_t(1) << 28;
    Array x = device_put(random::normal(random::key(4), {n}, DType::f32), gpu);
    auto chain = jit([](const Array& x) { return tanh(x) * 0.5 + x * x - 1.0; });
    double s = time_it([&] { (void)chain(x); }, 20);
    std::printf("jit_chain_gbs %.0f\n", 2.0 * n * 4 / s / 1e9);
    const int64_t r = 8192;
    Array m = device_put(random::normal(random::key(5), {r, r}, DType::f32), gpu);
    auto sm = jit([](const Array& x) { return softmax(x, -1); });
    s = time_it([&] { (void)sm(m); }, 20);
    std::printf("jit_softmax_gbs %.0f\n", 2.0 * r * r * 4 / s / 1e9);
  }
  // A training step (Adam, the state donated) of `apply` on one batch, jitted; the median of 200 steps
  // after 20, the host's time to enqueue one, and graft's kernel launches per step.
  const int steps = std::getenv("BENCH_STEPS") ? std::atoi(std::getenv("BENCH_STEPS")) : 200;
  auto time_step = [&](const std::string& name, const std::function<Array(const Tree&, const Array&)>& apply, const Tree& init,
                       const Array& x, const Array& y) {
    auto on_gpu = [&](const Array& a) { return device_put(a, gpu); };
    Tree p = tree_map(on_gpu, init);
    auto opt = optim::adam(1e-3);
    Tree st = tree_map(on_gpu, opt.init(p));
    Array xg = on_gpu(x), yg = on_gpu(y);
    auto step = jit(
        [&](const Tree& p, const Tree& s, const Array& x, const Array& y) {
          auto [l, g] = value_and_grad([&](const Tree& q) { return nn::cross_entropy(apply(q, x), y); })(p);
          auto [u, s2] = opt.update(g, s, p);
          return std::make_tuple(optim::apply_updates(p, u), s2, l);
        },
        {.name = name, .donate_argnums = {0, 1}});
    std::vector<double> ms, enqueue;
    int64_t launches = 0;
    for (int i = 0; i < steps + 20; ++i) {
      auto t = Clock::now();
      int64_t before = cuda::kernel_stats().launches;
      Array l;
      std::tie(p, st, l) = step(p, st, xg, yg);
      double e = seconds_since(t);
      launches = cuda::kernel_stats().launches - before;
      l.block_until_ready();
      if (i >= 20) ms.push_back(seconds_since(t) * 1e3), enqueue.push_back(e * 1e6);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(enqueue.begin(), enqueue.end());
    std::string tag = name + (cuda::tf32_allowed() ? "_tf32" : "");
    std::printf("%s_ms %.4f\n", tag.c_str(), ms[ms.size() / 2]);
    std::printf("%s_enqueue_us %.1f (%lld launches)\n", tag.c_str(), enqueue[enqueue.size() / 2], static_cast<long long>(launches));
  };
  auto labels = [](uint32_t seed, Shape shape, uint32_t classes) {
    return (random::bits(random::key(seed), shape) % classes).astype(DType::i32);
  };
  for (bool tf32 : {false, true}) {
    cuda::allow_tf32(tf32);
    if (want("mlp"))  // the main job's MLP (784-512-512-10)
      for (int64_t b : {int64_t(128), int64_t(4096)}) {
        nn::MLP net{{784, 512, 512, 10}};
        time_step("mlp_step_b" + std::to_string(b), [net](const Tree& p, const Array& x) { return net(p, x); },
                  net.init(random::key(0)), random::normal(random::key(1), {b, 784}, DType::f32), labels(2, {b}, 10));
      }
    if (want("cnn")) {  // the main job's CNN: conv 3x3 (32), pool, conv 3x3 (64), pool, dense 128, dense 10
      nn::Conv2d c1{1, 32, {3, 3}}, c2{32, 64, {3, 3}};
      nn::Linear d1{1600, 128}, d2{128, 10};
      Array ks = random::split(random::key(0), 4);
      Tree init = Tree::dict({{"conv1", c1.init(ks[0])}, {"conv2", c2.init(ks[1])}, {"dense1", d1.init(ks[2])},
                              {"dense2", d2.init(ks[3])}});
      auto apply = [=](const Tree& p, const Array& x) {
        Array h = nn::max_pool2d(relu(c1(p["conv1"], x)), {2, 2});
        h = nn::max_pool2d(relu(c2(p["conv2"], h)), {2, 2});
        h = reshape(h, {h.shape(0), -1});
        return d2(p["dense2"], relu(d1(p["dense1"], h)));
      };
      time_step("cnn_step_b128", apply, init, random::normal(random::key(1), {128, 1, 28, 28}, DType::f32), labels(2, {128}, 10));
    }
    if (want("transformer"))  // the main job's byte-level transformer (width 128, 4 heads, 2 blocks), windows of 128
      for (int64_t b : {int64_t(8), int64_t(64)}) {
        nn::TransformerLM lm{.vocab = 256, .dim = 128, .heads = 4, .layers = 2, .max_len = 128};
        time_step("transformer_step_b" + std::to_string(b), [lm](const Tree& p, const Array& x) { return lm(p, x); },
                  lm.init(random::key(0)), labels(1, {b, 128}, 256), labels(2, {b, 128}, 256));
      }
  }
  cuda::allow_tf32(false);
  return 0;
}
