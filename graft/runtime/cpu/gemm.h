// Dense matrix multiply on the CPU: C = alpha op(A) op(B) + beta C, row-major (BLAS's gemm).
#pragma once

#include <cstdint>
#include <span>

#include "graft/core/dtype.h"

namespace graft::cpu {

/// Makes OpenBLAS run each call on the calling thread (once; a no-op without BLAS). Its own threads
/// busy-wait after each call and fight graft's pool for the cores (a CNN epoch took 52 s that way, 39 s
/// with one pool), so graft parallelizes around BLAS and LAPACK calls instead: GEMMs split along M or N,
/// factorizations over the matrices of a batch.
void use_single_threaded_blas();

/// `ta`/`tb` transpose A ([K,M] in memory) / B ([N,K] in memory). f32/f64 go to BLAS when graft was
/// built with it. bf16 and f16 accumulate in f32 and round each result once: on oneDNN's native bf16
/// kernels where the CPU has them (features.h), else by widening the operands to f32 for the f32 GEMM.
/// Integers (and tiny products) use a loop that accumulates in the compute type.
/// A, B, C all have dtype `dt`. With beta 0 (the default) C's old contents are not read (NaNs there do
/// not propagate); alpha and beta other than 1 and 0 are for floating dtypes.
void gemm(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda, const void* B,
          int64_t ldb, void* C, int64_t ldc, double alpha = 1.0, double beta = 0.0);

/// The same product for small operands inside a kernel that already runs in parallel (per attention
/// head, say): oneDNN's or BLAS's sgemm/dgemm on the calling thread, without the matmul primitive's
/// per-call setup (a cache lookup, a stream, scratch memory), which costs more than a 64 x 64 product.
/// f32 and f64 (other dtypes as gemm).
void gemm_small(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda, const void* B,
                int64_t ldb, void* C, int64_t ldc, double alpha = 1.0, double beta = 0.0);

/// Batched products in one call, on operands laid out by strides: C[b..., m, n] = sum_k A[b..., m, k]
/// B[b..., k, n] for every batch index b (dims `batch`), A and B given by their strides in elements
/// (batch strides, then M and K for A, K and N for B), C dense row-major. For f32, and bf16 where the
/// CPU has native bf16 (features.h): one oneDNN matmul over all batches, reading strided operands in
/// place, where a transposed or interleaved layout would otherwise cost a copy and a GEMM per batch
/// (attention's q k^T and p v per head). Returns false, computing nothing, where oneDNN has no fast
/// kernel for the layout or dtype: the caller then lays the operands out densely.
bool strided_matmul(DType dt, std::span<const int64_t> batch, int64_t M, int64_t N, int64_t K, const void* A,
                    std::span<const int64_t> a_strides, const void* B, std::span<const int64_t> b_strides, void* C);

}  // namespace graft::cpu
