#include "graft/backend/cpu/gemm.h"

#include <cstring>
#include <cstring>
#include <vector>

#include "graft/backend/cpu/parallel.h"

#ifdef GRAFT_HAVE_BLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

namespace graft::cpu {

namespace {
template <class T>
void gemm_loop(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
               T* C, int64_t ldc) {
  using A_t = std::conditional_t<std::is_same_v<T, bool>, int32_t, compute_t<T>>;
  parallel_for(M, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, N * K)), [&](int64_t m0, int64_t m1) {
    std::vector<A_t> row(static_cast<size_t>(N));
    for (int64_t m = m0; m < m1; ++m) {
      std::fill(row.begin(), row.end(), A_t(0));
      for (int64_t k = 0; k < K; ++k) {
        A_t a = static_cast<A_t>(ta ? A[k * lda + m] : A[m * lda + k]);
        if (a == A_t(0)) continue;
        if (!tb) {
          const T* b = B + k * ldb;
          for (int64_t n = 0; n < N; ++n) row[n] += a * static_cast<A_t>(b[n]);
        } else {
          for (int64_t n = 0; n < N; ++n) row[n] += a * static_cast<A_t>(B[n * ldb + k]);
        }
      }
      for (int64_t n = 0; n < N; ++n) {
        if constexpr (std::is_same_v<T, bool>) {
          C[m * ldc + n] = row[n] != 0;
        } else {
          C[m * ldc + n] = static_cast<T>(row[n]);
        }
      }
    }
  });
}
}  // namespace

void gemm(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda, const void* B,
          int64_t ldb, void* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m) std::memset(static_cast<char*>(C) + m * ldc * itemsize(dt), 0, N * itemsize(dt));
    return;
  }
#ifdef GRAFT_HAVE_BLAS
  // BLAS call overhead dominates tiny products: they use the loop below
  bool tiny = M * N * K <= 512;
  if ((dt == DType::f32 || dt == DType::f64) && !tiny) {
    // One thread pool, not two: OpenBLAS's own threads busy-wait (sched_yield) after each call and
    // fight graft's pool for the cores (a CNN epoch took 52 s that way, 39 s with one pool). So
    // OpenBLAS runs single-threaded and graft splits the product along the larger of M and N, so that
    // the threads do not both pack the same large operand.
    static const bool single = (openblas_set_num_threads(1), true);
    (void)single;
    int64_t isz = static_cast<int64_t>(itemsize(dt));
    auto tA = ta ? CblasTrans : CblasNoTrans, tB = tb ? CblasTrans : CblasNoTrans;
    auto call = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
      const char* a = static_cast<const char*>(A) + (ta ? m0 : m0 * lda) * isz;
      const char* b = static_cast<const char*>(B) + (tb ? n0 * ldb : n0) * isz;
      char* c = static_cast<char*>(C) + (m0 * ldc + n0) * isz;
      int m = int(m1 - m0), n = int(n1 - n0);
      if (dt == DType::f32) {
        cblas_sgemm(CblasRowMajor, tA, tB, m, n, int(K), 1.0f, reinterpret_cast<const float*>(a), int(lda),
                    reinterpret_cast<const float*>(b), int(ldb), 0.0f, reinterpret_cast<float*>(c), int(ldc));
      } else {
        cblas_dgemm(CblasRowMajor, tA, tB, m, n, int(K), 1.0, reinterpret_cast<const double*>(a), int(lda),
                    reinterpret_cast<const double*>(b), int(ldb), 0.0, reinterpret_cast<double*>(c), int(ldc));
      }
    };
    int64_t work = M * N * K;
    if (work < (int64_t(1) << 18)) {
      call(0, M, 0, N);
    } else if (N >= M) {
      parallel_for(N, std::max<int64_t>(16, N / 8), [&](int64_t n0, int64_t n1) { call(0, M, n0, n1); });
    } else {
      parallel_for(M, std::max<int64_t>(16, M / 8), [&](int64_t m0, int64_t m1) { call(m0, m1, 0, N); });
    }
    return;
  }
#endif
  visit_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_loop<T>(ta, tb, M, N, K, static_cast<const T*>(A), lda, static_cast<const T*>(B), ldb, static_cast<T*>(C),
                 ldc);
  });
}

}  // namespace graft::cpu
