// GPU figures of issue 17, printed as one line each for bench/run_cuda.sh (which runs the PyTorch peer,
// bench/torch_cuda.py, in the same command on the same GPU):
//   eager_add_us      host time to enqueue `a + b` on 1-element GPU arrays (10^5 calls, no sync)
//   matmul_<t>_tflops dot_general 8192^3 (f32 without and with TF32, bf16)
//   copy_gbs / neg_gbs device-to-device copy vs an elementwise op over 2^28 f32 (bytes read + written)
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>

#include "graft/backend/cuda/runtime.h"
#include "graft/graft.h"

using namespace graft;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main() {
  if (cuda::device_count() == 0) {
    std::printf("no GPU: %s\n", cuda::unavailable_reason().c_str());
    return 1;
  }
  Device gpu = Device::cuda();
  {  // eager enqueue overhead
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
  {  // matmul
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
  {  // bandwidth
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
  return 0;
}
