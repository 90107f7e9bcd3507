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
//                     time to enqueue a step (mlp_enqueue_b<B>_us) and graft's kernel launches per step
// Arguments name the sections to run (eager matmul bandwidth jit mlp; default all).
#include <algorithm>
#include <vector>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
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
  for (auto [b, tf32] : {std::pair{int64_t(128), false}, std::pair{int64_t(128), true}, std::pair{int64_t(4096), false},
                         std::pair{int64_t(4096), true}}) {  // the main job's training step
    if (!want("mlp")) break;
    cuda::allow_tf32(tf32);
    nn::MLP net{{784, 512, 512, 10}};
    auto on_gpu = [&](const Array& a) { return device_put(a, gpu); };
    Tree p = tree_map(on_gpu, net.init(random::key(0)));
    auto opt = optim::adam(1e-3);
    Tree st = tree_map(on_gpu, opt.init(p));
    Array x = on_gpu(random::normal(random::key(1), {b, 784}, DType::f32));
    Array y = on_gpu((random::bits(random::key(2), {b}) % 10u).astype(DType::i32));
    auto step = jit(
        [&](const Tree& p, const Tree& s, const Array& x, const Array& y) {
          auto [l, g] = value_and_grad([&](const Tree& q) { return nn::cross_entropy(net(q, x), y); })(p);
          auto [u, s2] = opt.update(g, s, p);
          return std::make_tuple(optim::apply_updates(p, u), s2, l);
        },
        {.name = "mlp_step", .donate_argnums = {0, 1}});
    std::vector<double> ms, enqueue;
    int64_t launches = 0;
    for (int i = 0; i < 220; ++i) {
      auto t = Clock::now();
      int64_t before = cuda::kernel_stats().launches;
      Array l;
      std::tie(p, st, l) = step(p, st, x, y);
      double e = seconds_since(t);
      launches = cuda::kernel_stats().launches - before;
      l.block_until_ready();
      if (i >= 20) ms.push_back(seconds_since(t) * 1e3), enqueue.push_back(e * 1e6);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(enqueue.begin(), enqueue.end());
    const char* tag = tf32 ? "_tf32" : "";
    std::printf("mlp_step_b%lld%s_ms %.4f\n", static_cast<long long>(b), tag, ms[ms.size() / 2]);
    std::printf("mlp_enqueue_b%lld%s_us %.1f (%lld launches)\n", static_cast<long long>(b), tag, enqueue[enqueue.size() / 2],
                static_cast<long long>(launches));
  }
  cuda::allow_tf32(false);
  return 0;
}
