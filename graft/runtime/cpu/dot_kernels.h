// Register-tile kernels for small products, for kernels that already run in parallel and multiply
// blocks of a few dozen rows many times over (fused attention's per-head products): a library call
// costs as much as such a product (oneDNN's bf16 matmul measured no faster than sgemm at 64 x 128 x
// 32, and its sgemm allocates and packs at every call); these run inline on the calling thread, B
// packed once and reused, A read in place by any two strides (so a block serves as its own transpose).
// Compiled for AVX-512 whatever the build's -march; callers check available() first.
//
// bf16dot: bf16 operands, f32 accumulation, on AVX512-BF16's dot-product instruction (vdpbf16ps).
// A product C [M, N] = alpha A B takes its operands in the instruction's layout, pairs along the
// reduction axis K: each 32-bit word holds elements k and k + 1 (k even) of a row of A or a column of B.
//  - B is packed once (pack, pack_transposed): its pair row k / 2 holds N words, padded with zeros to a
//    multiple of 16 (whole vectors), and an odd K gets a zero row.
//  - A is read in place, its pair (m, k / 2) being the two elements at a + 2 (m * am + (k / 2) * ak):
//    a row-major A with an even row length L has am = L / 2 and ak = 1; a block stored in pairs of rows
//    (to_pairs_of_rows) serves as the transpose of those rows, am = 1 and ak = the row length.
// Results are f32; every bf16 product is exact in f32, so they differ from a widened f32 GEMM in the
// order of the sums and in subnormals (see gemm).
#pragma once

#include <cstdint>

#include "graft/core/half.h"

namespace graft::cpu::bf16dot {

/// Whether these kernels run here: the CPU has AVX512-BF16 and native bf16 products are on
/// (native_bf16(): GRAFT_NATIVE_BF16=0 turns both off).
bool available();

/// A packed B operand: element (k, n) at p[(k / 2) * ld + 2 * n + k % 2].
struct Packed {
  const bfloat16* p;
  int64_t ld;
  /// The operand from pair row kp (k = 2 kp) and column n on.
  Packed at(int64_t kp, int64_t n) const { return {p + kp * ld + 2 * n, ld}; }
};

/// The row length (in elements) of a packed [K, N] operand, and its size.
inline int64_t packed_ld(int64_t N) { return 2 * ((N + 15) / 16 * 16); }
inline int64_t packed_size(int64_t K, int64_t N) { return (K + 1) / 2 * packed_ld(N); }

/// Packs B [K, N], B(k, n) = b[k * ldb + n], into out (packed_size(K, N) elements).
Packed pack(const bfloat16* b, int64_t ldb, int64_t K, int64_t N, bfloat16* out);

/// Packs B = X^T for X [N, K], B(k, n) = x[n * ldx + k], into out (packed_size(K, N) elements).
Packed pack_transposed(const bfloat16* x, int64_t ldx, int64_t N, int64_t K, bfloat16* out);

/// C [M, N] (row stride ldc) = alpha A B, plus C's old values when accumulate: A as in the file's
/// comment, its ceil(K / 2) pairs a row; b packed. M and N from 1 up (N's last vector is masked). An odd
/// K's last pair counts its first element only (whatever the other halves of A and B hold).
/// vdpbf16ps treats bf16 subnormals as zero and flushes subnormal sums (below 1.2e-38 in magnitude).
void gemm(int64_t M, int64_t N, int64_t K, const bfloat16* a, int64_t am, int64_t ak, Packed b, float* c,
          int64_t ldc, float alpha, bool accumulate);

/// Rounds rows [M, N] of f32 (row stride ldx) to bf16 rows of `ld` elements (ld >= N rounded up to
/// even): the zero that pads an odd N completes its last pair. As an A operand: am = ld / 2, ak = 1.
/// Rounding is vcvtneps2bf16's (to nearest even; f32 subnormals flush to zero: below 1.2e-38, they
/// change no sum they enter by more than their own size).
void to_rows(const float* x, int64_t ldx, int64_t M, int64_t N, bfloat16* out, int64_t ld);

/// Rounds rows [M, N] of f32 (row stride ldx) to bf16 in pairs of rows: word (i, n) of out holds rows
/// 2i and 2i + 1 at column n (a zero row pads an odd M), rows of N words. As the A operand of the
/// transpose [N, M]: am = 1, ak = N. Rounding as to_rows.
void to_pairs_of_rows(const float* x, int64_t ldx, int64_t M, int64_t N, bfloat16* out);

/// out[m] = sum_n a(m, n) b(m, n) over rows [M, N] of bf16 (row strides lda, ldb), products exact,
/// summed in f32.
void row_dots(const bfloat16* a, int64_t lda, const bfloat16* b, int64_t ldb, int64_t M, int64_t N,
              float* out);

/// Rounds rows [M, N] of f32 (row stride ldx) to bf16 rows (stride ld) exactly as bfloat16(float)
/// does (to nearest even, subnormals kept, NaNs quieted): for results, where to_rows' flush would
/// show.
void round_rows(const float* x, int64_t ldx, int64_t M, int64_t N, bfloat16* out, int64_t ld);

}  // namespace graft::cpu::bf16dot

// f32dot: f32 operands on AVX-512 FMAs, the same tiles: A(m, k) at a[m * am + k * ak] (row-major A
// has am = its row stride and ak = 1; the transpose of a row-major block, am = 1 and ak = its row
// stride), B packed in rows of whole vectors.
namespace graft::cpu::f32dot {

/// Whether these kernels run here: the CPU has AVX-512 (cpu::has_avx512()).
bool available();

/// A packed B operand: element (k, n) at p[k * ld + n].
struct Packed {
  const float* p;
  int64_t ld;
  /// The operand from row k and column n on.
  Packed at(int64_t k, int64_t n) const { return {p + k * ld + n, ld}; }
};

/// The row length of a packed [K, N] operand (N rounded up to whole vectors of 16, zeros past N), and
/// its size.
inline int64_t packed_ld(int64_t N) { return (N + 15) / 16 * 16; }
inline int64_t packed_size(int64_t K, int64_t N) { return K * packed_ld(N); }

/// Whether pack reads B [K, N] in place: rows of whole vectors (N a multiple of 16).
inline bool packs_in_place(int64_t N) { return N % 16 == 0; }

/// Packs B [K, N], B(k, n) = b[k * ldb + n], into out (packed_size(K, N) elements), or returns b
/// itself where packs_in_place(N) (out unused: null will do).
Packed pack(const float* b, int64_t ldb, int64_t K, int64_t N, float* out);

/// Packs B = X^T for X [N, K], B(k, n) = x[n * ldx + k], into out (packed_size(K, N) elements).
Packed pack_transposed(const float* x, int64_t ldx, int64_t N, int64_t K, float* out);

/// C [M, N] (row stride ldc) = alpha A B, plus C's old values when accumulate; A(m, k) at
/// a[m * am + k * ak], b packed. M, N from 1 up; K from 0.
void gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t am, int64_t ak, Packed b, float* c,
          int64_t ldc, float alpha, bool accumulate);

/// out[m] = sum_n a(m, n) b(m, n) over rows [M, N] (row strides lda, ldb), on 16 lanes.
void row_dots(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t M, int64_t N, float* out);

}  // namespace graft::cpu::f32dot
