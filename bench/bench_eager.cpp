// Eager per-primitive host overhead on 1-element arrays, next to libtorch in the same binary, the
// per-call overhead of a cached jit call, and eager throughput in f32, bf16 and f16 over 2^20 elements. Run:
// bench/run_eager.sh (it prints the ratios).
#include <benchmark/benchmark.h>

#include <graft/graft.h>

#ifdef GRAFT_BENCH_TORCH
#include <torch/torch.h>
#endif

namespace g = graft;

namespace {

// ---- graft -------------------------------------------------------------------------------------------
void graft_add(benchmark::State& st) {
  g::Array a = g::ones({1}), b = g::ones({1}), c;
  for (auto _ : st) {
    c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_add);

void graft_lax_add(benchmark::State& st) {  // the primitive without NumPy-style promotion checks
  g::Array a = g::ones({1}), b = g::ones({1}), c;
  for (auto _ : st) {
    c = g::lax::add(a, b);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_lax_add);

void graft_mul_scalar(benchmark::State& st) {  // weak C++ scalar operand
  g::Array a = g::ones({1}), c;
  for (auto _ : st) {
    c = a * 2.0;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_mul_scalar);

void graft_sin(benchmark::State& st) {
  g::Array a = g::ones({1}), c;
  for (auto _ : st) {
    c = g::sin(a);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_sin);

void graft_sum(benchmark::State& st) {
  g::Array a = g::ones({1}), c;
  for (auto _ : st) {
    c = g::sum(a);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_sum);

void graft_matmul_1x1(benchmark::State& st) {
  g::Array a = g::ones({1, 1}), c;
  for (auto _ : st) {
    c = g::matmul(a, a);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_matmul_1x1);

void graft_jit_call(benchmark::State& st) {  // cached jit call of a 3-op function
  auto f = g::jit([](const g::Array& x) { return g::sin(x) * 2.0 + 1.0; });
  g::Array a = g::ones({1}), c = f(a);
  for (auto _ : st) {
    c = f(a);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_jit_call);

void graft_jit_call_1op(benchmark::State& st) {  // cached jit call of x + 1: the fixed cost of a call
  auto f = g::jit([](const g::Array& x) { return g::lax::add(x, g::Array::scalar(1, g::f32)); });
  g::Array a = g::ones({1}), c = f(a);
  for (auto _ : st) {
    c = f(a);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_jit_call_1op);

void graft_jit_call_eager_equivalent(benchmark::State& st) {  // the same 3 ops eagerly
  g::Array a = g::ones({1}), c;
  for (auto _ : st) {
    c = g::sin(a) * 2.0 + 1.0;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_jit_call_eager_equivalent);

void graft_grad_call(benchmark::State& st) {  // grad of sum(sin(x)), traced every call
  auto df = g::grad([](const g::Array& x) { return g::sum(g::sin(x)); });
  g::Array a = g::ones({1}), c;
  for (auto _ : st) {
    c = df(a);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(graft_grad_call);

// ---- 16-bit floats: eager throughput over 2^20 elements --------------------------------------------
// Args: the op (0 a + a, 1 exp, 2 sum) and the dtype (0 f32, 1 bf16, 2 f16).
const char* const kWideOps[] = {"add", "exp", "sum"};
void graft_wide(benchmark::State& st) {
  const g::DType dts[] = {g::f32, g::bf16, g::f16};
  g::Array a = g::random::normal(g::random::key(0), {1 << 20}).astype(dts[st.range(1)]), c;
  for (auto _ : st) {
    c = st.range(0) == 0 ? a + a : st.range(0) == 1 ? g::exp(a) : g::sum(a);
    c.block_until_ready();
  }
  st.SetLabel(kWideOps[st.range(0)]);
}
BENCHMARK(graft_wide)->ArgsProduct({{0, 1, 2}, {0, 1, 2}})->Unit(benchmark::kMicrosecond);

// ---- libtorch (the peer) -----------------------------------------------------------------------------
#ifdef GRAFT_BENCH_TORCH
void torch_add(benchmark::State& st) {
  torch::Tensor a = torch::ones({1}), b = torch::ones({1}), c;
  for (auto _ : st) {
    c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(torch_add);

void torch_add_inference_mode(benchmark::State& st) {
  c10::InferenceMode im;
  torch::Tensor a = torch::ones({1}), b = torch::ones({1}), c;
  for (auto _ : st) {
    c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(torch_add_inference_mode);

void torch_mul_scalar(benchmark::State& st) {
  torch::Tensor a = torch::ones({1}), c;
  for (auto _ : st) {
    c = a * 2.0;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(torch_mul_scalar);

void torch_sin(benchmark::State& st) {
  torch::Tensor a = torch::ones({1}), c;
  for (auto _ : st) {
    c = torch::sin(a);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(torch_sin);

void torch_sum(benchmark::State& st) {
  torch::Tensor a = torch::ones({1}), c;
  for (auto _ : st) {
    c = torch::sum(a);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(torch_sum);

void torch_matmul_1x1(benchmark::State& st) {
  torch::Tensor a = torch::ones({1, 1}), c;
  for (auto _ : st) {
    c = torch::matmul(a, a);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(torch_matmul_1x1);

void torch_grad_call(benchmark::State& st) {  // the same gradient with autograd
  torch::Tensor a = torch::ones({1}, torch::requires_grad());
  for (auto _ : st) {
    auto y = torch::sum(torch::sin(a));
    auto gr = torch::autograd::grad({y}, {a});
    benchmark::DoNotOptimize(gr);
  }
}
BENCHMARK(torch_grad_call);

#endif

}  // namespace

int main(int argc, char** argv) {
#ifdef GRAFT_BENCH_TORCH
  torch::set_num_threads(2);
#endif
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
