#include "graft/runtime/cpu/gemm.h"

#include <cstring>
#include <vector>

#include "graft/core/buffer.h"
#include "graft/runtime/cpu/features.h"
#include "graft/runtime/cpu/parallel.h"

#include <omp.h>

#ifdef GRAFT_HAVE_BLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif
#ifdef GRAFT_HAVE_DNNL
#include <map>
#include <mutex>
#include <string>

#include "graft/runtime/cpu/dnnl_util.h"
#endif

namespace graft::cpu {

void use_single_threaded_blas() {
#ifdef GRAFT_HAVE_BLAS
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
#endif
}

namespace {
// acc + a * b; integers wrap around as XLA's dot does (computed unsigned: signed overflow is undefined in C++)
template <class A>
inline A mul_add(A acc, A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using W = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;
    return static_cast<A>(static_cast<W>(acc) + static_cast<W>(a) * static_cast<W>(b));
  } else {
    return acc + a * b;
  }
}

template <class T>
void gemm_loop(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
               T* C, int64_t ldc, double alpha, double beta) {
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
          for (int64_t n = 0; n < N; ++n) row[n] = mul_add(row[n], a, static_cast<A_t>(b[n]));
        } else {
          for (int64_t n = 0; n < N; ++n) row[n] = mul_add(row[n], a, static_cast<A_t>(B[n * ldb + k]));
        }
      }
      if constexpr (std::is_floating_point_v<A_t> || is_complex_v<A_t>) {
        if (alpha != 1.0 || beta != 0.0) {
          A_t a = static_cast<A_t>(alpha), b = static_cast<A_t>(beta);
          for (int64_t n = 0; n < N; ++n)
            C[m * ldc + n] = static_cast<T>(a * row[n] + (beta != 0.0 ? b * static_cast<A_t>(C[m * ldc + n]) : A_t(0)));
          continue;
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
#ifdef GRAFT_HAVE_DNNL
// One oneDNN matmul, C[batch..., M, N] = A[batch..., M, K] B[batch..., K, N], every operand given by its
// dims' strides in elements (batch strides first). Primitives are made once per dtype, shape, layout
// and team size (~0.3-3 ms; a primitive made for two threads runs two, and parallel.h may ask for one
// while the cores are contended) and cached. False where oneDNN refuses the layout or offers only its
// reference kernels, which are slower than copying to a dense layout.
bool cached_matmul(DType dt, std::span<const int64_t> batch, int64_t M, int64_t N, int64_t K, const void* A,
                   std::span<const int64_t> a_strides, const void* B, std::span<const int64_t> b_strides, void* C,
                   std::span<const int64_t> c_strides) {
  using namespace dnnl;
  std::vector<int64_t> key{static_cast<int64_t>(dt), omp_get_max_threads(), M, N, K};
  for (auto part : {batch, a_strides, b_strides, c_strides}) {
    key.push_back(static_cast<int64_t>(part.size()));
    key.insert(key.end(), part.begin(), part.end());
  }
  struct Entry {
    matmul prim;
    memory::desc a, b, c, scratch;
    bool fast;
  };
  static std::mutex mu;
  static auto* cache = new std::map<std::vector<int64_t>, std::shared_ptr<Entry>>();
  engine& eng = dnnl_engine();
  std::shared_ptr<Entry> e;
  auto type = dt == DType::bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  try {
    {
      std::lock_guard<std::mutex> lk(mu);
      auto it = cache->find(key);
      if (it != cache->end()) e = it->second;
    }
    if (!e) {
      std::lock_guard<std::mutex> made(dnnl_create_mutex());
      memory::dims ad(batch.begin(), batch.end()), bd = ad, cd = ad;
      ad.push_back(M), ad.push_back(K);
      bd.push_back(K), bd.push_back(N);
      cd.push_back(M), cd.push_back(N);
      auto strides = [](std::span<const int64_t> v) { return memory::dims(v.begin(), v.end()); };
      memory::desc a(ad, type, strides(a_strides)), b(bd, type, strides(b_strides)), c(cd, type, strides(c_strides));
      matmul::primitive_desc pd(matmul::desc(a, b, c), dnnl_attr(), eng);
      bool fast = std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
      e = std::make_shared<Entry>(Entry{matmul(pd), a, b, c, pd.scratchpad_desc(), fast});
      std::lock_guard<std::mutex> lk(mu);
      cache->emplace(key, e);
    }
    if (!e->fast) return false;
    stream s(eng);
    memory ma(e->a, eng, const_cast<void*>(A)), mb(e->b, eng, const_cast<void*>(B)), mc(e->c, eng, C);
    dnnl_execute(e->prim, e->scratch, s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

// oneDNN's sgemm is slow when only B is transposed (132 against 210 GFLOP/s for 128x512x512 here),
// which is the shape of every backward product dx = dy W^T; its matmul primitive (brgemm kernels)
// reads a transposed B at full speed. bf16 products use the same primitive with bf16 operands and
// result: on CPUs with AVX512-BF16 or AMX its kernels take the native dot products, accumulate in f32
// and round each result once. False: the caller falls back to sgemm (f32) or the f32 route (bf16).
bool dnnl_matmul(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda,
                 const void* B, int64_t ldb, void* C, int64_t ldc) {
  const int64_t as[2] = {ta ? 1 : lda, ta ? lda : 1}, bs[2] = {tb ? 1 : ldb, tb ? ldb : 1}, cs[2] = {ldc, 1};
  return cached_matmul(dt, {}, M, N, K, A, as, B, bs, C, cs);
}
#endif

// Half-precision products without native kernels: the operands widened to f32 (exactly), the f32
// GEMM (BLAS or oneDNN), the result rounded once. Widening costs O(MK + KN) against the product's
// O(MNK), and the f32 kernels run an order of magnitude faster than a loop over half values.
void half_gemm_in_f32(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda,
                      const void* B, int64_t ldb, void* C, int64_t ldc, double alpha, double beta) {
  // scratch from graft's recycling allocator: fresh vectors cost a page fault per 4 KiB at every call
  // (and a zero fill), a third of the product's time for a layer of 512 x 512
  auto scratch = [](int64_t n) { return Buffer::allocate_cpu(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float)); };
  auto widen = [&](const void* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
    parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)), [&](int64_t r0, int64_t r1) {
      visit_dtype(dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
          for (int64_t r = r0; r < r1; ++r)
            graft::widen(static_cast<const T*>(src) + r * ld, dst + r * cols, cols);
        }
      });
    });
  };
  Ref<Buffer> a = scratch(M * K), b = scratch(K * N), c = scratch(M * N);
  float *ap = static_cast<float*>(a->data()), *bp = static_cast<float*>(b->data()), *cp = static_cast<float*>(c->data());
  widen(A, ta ? K : M, ta ? M : K, lda, ap);
  widen(B, tb ? N : K, tb ? K : N, ldb, bp);
  if (beta != 0.0) widen(C, M, N, ldc, cp);
  gemm(DType::f32, ta, tb, M, N, K, ap, ta ? M : K, bp, tb ? K : N, cp, N, alpha, beta);
  parallel_for(M, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, N)), [&](int64_t m0, int64_t m1) {
    visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
        for (int64_t m = m0; m < m1; ++m) graft::narrow(cp + m * N, static_cast<T*>(C) + m * ldc, N);
      }
    });
  });
}

}  // namespace

void gemm_small(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda, const void* B,
                int64_t ldb, void* C, int64_t ldc, double alpha, double beta) {
  if (M > 0 && N > 0 && K > 0) {
#ifdef GRAFT_HAVE_DNNL
    if (dt == DType::f32 &&
        dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, static_cast<float>(alpha), static_cast<const float*>(A), lda,
                   static_cast<const float*>(B), ldb, static_cast<float>(beta), static_cast<float*>(C), ldc) == dnnl_success)
      return;
#endif
#ifdef GRAFT_HAVE_BLAS
    auto tA = ta ? CblasTrans : CblasNoTrans, tB = tb ? CblasTrans : CblasNoTrans;
    if (dt == DType::f64) {
      cblas_dgemm(CblasRowMajor, tA, tB, int(M), int(N), int(K), alpha, static_cast<const double*>(A), int(lda),
                  static_cast<const double*>(B), int(ldb), beta, static_cast<double*>(C), int(ldc));
      return;
    }
    if (dt == DType::f32) {
      cblas_sgemm(CblasRowMajor, tA, tB, int(M), int(N), int(K), static_cast<float>(alpha), static_cast<const float*>(A),
                  int(lda), static_cast<const float*>(B), int(ldb), static_cast<float>(beta), static_cast<float*>(C), int(ldc));
      return;
    }
#endif
  }
  gemm(dt, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta);
}

bool strided_matmul(DType dt, std::span<const int64_t> batch, int64_t M, int64_t N, int64_t K, const void* A,
                    std::span<const int64_t> a_strides, const void* B, std::span<const int64_t> b_strides, void* C) {
#ifdef GRAFT_HAVE_DNNL
  if (!(dt == DType::f32 || (dt == DType::bf16 && native_bf16()))) return false;
  size_t nb = batch.size();
  if (nb + 2 > 12 || a_strides.size() != nb + 2 || b_strides.size() != nb + 2 || M <= 0 || N <= 0 || K <= 0) return false;
  std::vector<int64_t> cs(nb + 2);  // C dense: [batch..., M, N] row-major
  cs[nb + 1] = 1, cs[nb] = N;
  int64_t st = M * N;
  for (size_t i = nb; i-- > 0;) cs[i] = st, st *= batch[i];
  use_kernel_threads();
  return cached_matmul(dt, batch, M, N, K, A, a_strides, B, b_strides, C, cs);
#else
  (void)dt, (void)batch, (void)M, (void)N, (void)K, (void)A, (void)a_strides, (void)B, (void)b_strides, (void)C;
  return false;
#endif
}

void gemm(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda, const void* B,
          int64_t ldb, void* C, int64_t ldc, double alpha, double beta) {
  if (M <= 0 || N <= 0) return;
  if (K == 0 && beta == 0.0) {
    for (int64_t m = 0; m < M; ++m) std::memset(static_cast<char*>(C) + m * ldc * itemsize(dt), 0, N * itemsize(dt));
    return;
  }
  // library call overhead dominates tiny products: they use the loop below
  bool tiny = M * N * K <= 512;
#ifdef GRAFT_HAVE_BLAS
  if (is_complex(dt) && !tiny) {
    // BLAS's complex GEMM (alpha and beta passed as complex scalars)
    use_single_threaded_blas();
    auto tA = ta ? CblasTrans : CblasNoTrans, tB = tb ? CblasTrans : CblasNoTrans;
    if (dt == DType::c64) {
      complex64 a(static_cast<float>(alpha)), b(static_cast<float>(beta));
      cblas_cgemm(CblasRowMajor, tA, tB, int(M), int(N), int(K), &a, A, int(lda), B, int(ldb), &b, C, int(ldc));
    } else {
      complex128 a(alpha), b(beta);
      cblas_zgemm(CblasRowMajor, tA, tB, int(M), int(N), int(K), &a, A, int(lda), B, int(ldb), &b, C, int(ldc));
    }
    return;
  }
#endif
  [[maybe_unused]] bool plain = alpha == 1.0 && beta == 0.0;
  if ((dt == DType::bf16 || dt == DType::f16) && !tiny) {
#ifdef GRAFT_HAVE_DNNL
    if (plain && native_half_gemm(dt)) {
      use_kernel_threads();
      if (dnnl_matmul(dt, ta, tb, M, N, K, A, lda, B, ldb, C, ldc)) return;
    }
#endif
    half_gemm_in_f32(dt, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, alpha, beta);
    return;
  }
#ifdef GRAFT_HAVE_DNNL
  // f32 goes to oneDNN's sgemm (row-major, transposes as flags, no copies), which threads itself
  // on the OpenMP team that graft's kernels share
  if (dt == DType::f32 && !tiny) {
    use_kernel_threads();  // the team size follows GRAFT_NUM_THREADS and contention (parallel.h)
    if (plain && tb && !ta &&
        dnnl_matmul(dt, ta, tb, M, N, K, A, lda, B, ldb, C, ldc))
      return;
    dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, static_cast<float>(alpha),
                                  static_cast<const float*>(A), lda, static_cast<const float*>(B), ldb,
                                  static_cast<float>(beta), static_cast<float*>(C), ldc);
    if (st == dnnl_success) return;
  }
#endif
#ifdef GRAFT_HAVE_BLAS
  if ((dt == DType::f32 || dt == DType::f64) && !tiny) {
    // One thread pool, not two (use_single_threaded_blas): graft splits the product along the larger of M
    // and N, so that the threads do not both pack the same large operand.
    use_single_threaded_blas();
    int64_t isz = static_cast<int64_t>(itemsize(dt));
    auto tA = ta ? CblasTrans : CblasNoTrans, tB = tb ? CblasTrans : CblasNoTrans;
    auto call = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
      const char* a = static_cast<const char*>(A) + (ta ? m0 : m0 * lda) * isz;
      const char* b = static_cast<const char*>(B) + (tb ? n0 * ldb : n0) * isz;
      char* c = static_cast<char*>(C) + (m0 * ldc + n0) * isz;
      int m = int(m1 - m0), n = int(n1 - n0);
      if (dt == DType::f32) {
        cblas_sgemm(CblasRowMajor, tA, tB, m, n, int(K), static_cast<float>(alpha), reinterpret_cast<const float*>(a),
                    int(lda), reinterpret_cast<const float*>(b), int(ldb), static_cast<float>(beta),
                    reinterpret_cast<float*>(c), int(ldc));
      } else {
        cblas_dgemm(CblasRowMajor, tA, tB, m, n, int(K), alpha, reinterpret_cast<const double*>(a), int(lda),
                    reinterpret_cast<const double*>(b), int(ldb), beta, reinterpret_cast<double*>(c), int(ldc));
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
  visit_any_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_loop<T>(ta, tb, M, N, K, static_cast<const T*>(A), lda, static_cast<const T*>(B), ldb, static_cast<T*>(C),
                 ldc, alpha, beta);
  });
}

}  // namespace graft::cpu
