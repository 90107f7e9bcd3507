#include "graft/runtime/cpu/dot_kernels.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "graft/core/error.h"
#include "graft/runtime/cpu/features.h"
#include "graft/runtime/cpu/vmath_avx512.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GRAFT_BF16_DOT 1
// Compiled for AVX512-BF16 whatever the build's -march (one binary runs everywhere): callers check
// available() first, and nothing here is inlined into code built without it. The f32 instantiations
// carry the same target and run on AVX-512 CPUs without BF16: they name no BF16 intrinsic, and the
// compiler introduces none of its own.
#define GRAFT_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized (and, at
// -O1, -Wuninitialized) reports
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#else
#define GRAFT_BF16_DOT 0
#endif

namespace graft::cpu {

#if GRAFT_BF16_DOT
namespace {

GRAFT_TARGET inline __mmask16 first(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
}

// One word of the reduction into a register tile's accumulators s. E is the operands' element type:
// bf16 takes a pair of A's elements (a 32-bit word) and a vector of 16 pairs of B (vdpbf16ps); f32 one
// element and a vector of 16 (an FMA). Half: an odd K's last pair, its high halves cleared.
template <class E, int MR, int NV, bool Half>
GRAFT_TARGET inline void step(__m512 (&s)[MR][NV], const E* a, int64_t am, const E* b) {
  constexpr bool kPairs = std::is_same_v<E, bfloat16>;
  constexpr int kWord = kPairs ? 2 : 1;  // elements of A per broadcast, of B per lane
  const __m512i low = _mm512_set1_epi32(0xffff);
  __m512i bv[NV];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j) {
    bv[j] = _mm512_loadu_si512(b + 16 * kWord * j);
    if constexpr (Half) bv[j] = _mm512_and_si512(bv[j], low);
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    int32_t w;  // a word of A (memcpy: A is bf16 or f32 storage, of any alignment), broadcast
    std::memcpy(&w, a + kWord * i * am, 4);
    if constexpr (Half) w &= 0xffff;
    __m512i av = _mm512_set1_epi32(w);
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      if constexpr (kPairs) {
        s[i][j] = _mm512_dpbf16_ps(s[i][j], (__m512bh)av, (__m512bh)bv[j]);
      } else {
        s[i][j] = _mm512_fmadd_ps(_mm512_castsi512_ps(av), _mm512_castsi512_ps(bv[j]), s[i][j]);
      }
    }
  }
}

// One register tile: MR rows by NV vectors of 16 columns, every accumulator in a register (MR x NV
// <= 16 of the 32 zmm: a product's latency is hidden by the others in flight), over `steps` words of
// the reduction (A's word (i, k) at a + w (i am + k ak), w its elements), the last one half used where
// half_last. The last vector's columns are `last`.
template <class E, int MR, int NV>
GRAFT_TARGET void tile(int64_t steps, bool half_last, const E* a, int64_t am, int64_t ak, const E* b,
                       int64_t ldb, float* c, int64_t ldc, float alpha, bool accumulate, __mmask16 last) {
  constexpr int kWord = std::is_same_v<E, bfloat16> ? 2 : 1;
  __m512 s[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) s[i][j] = _mm512_setzero_ps();
  // an odd K's last pair holds one element: its other halves (A's padding and B's next row, which
  // may be a real row of the operand packed whole) are cleared, so that nothing past K enters a sum,
  // not even an infinity times zero
  const int64_t full = steps - (half_last ? 1 : 0);
  for (int64_t k = 0; k < full; ++k) step<E, MR, NV, false>(s, a + kWord * k * ak, am, b + k * ldb);
  if (half_last) step<E, MR, NV, true>(s, a + kWord * full * ak, am, b + full * ldb);
  const __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      __mmask16 m = j == NV - 1 ? last : __mmask16(0xffff);
      float* p = c + i * ldc + 16 * j;
      __m512 r =
          accumulate ? _mm512_fmadd_ps(s[i][j], va, _mm512_maskz_loadu_ps(m, p)) : _mm512_mul_ps(s[i][j], va);
      _mm512_mask_storeu_ps(p, m, r);
    }
}

// The last rows of a panel, fewer than a tile's: a tile of exactly that many.
template <class E, int NV, int R>
GRAFT_TARGET void tail(int64_t rows, int64_t steps, bool half_last, const E* a, int64_t am, int64_t ak,
                       const E* b, int64_t ldb, float* c, int64_t ldc, float alpha, bool accumulate,
                       __mmask16 last) {
  if constexpr (R > 0) {
    if (rows == R)
      return tile<E, R, NV>(steps, half_last, a, am, ak, b, ldb, c, ldc, alpha, accumulate, last);
    tail<E, NV, R - 1>(rows, steps, half_last, a, am, ak, b, ldb, c, ldc, alpha, accumulate, last);
  }
}

// A panel of NV vectors of columns over all M rows.
template <class E, int NV>
GRAFT_TARGET void panel(int64_t M, int64_t steps, bool half_last, const E* a, int64_t am, int64_t ak,
                        const E* b, int64_t ldb, float* c, int64_t ldc, float alpha, bool accumulate,
                        __mmask16 last) {
  constexpr int MR = NV == 1 ? 12 : 8;
  constexpr int kWord = std::is_same_v<E, bfloat16> ? 2 : 1;
  int64_t m = 0;
  for (; m + MR <= M; m += MR)
    tile<E, MR, NV>(steps, half_last, a + kWord * m * am, am, ak, b, ldb, c + m * ldc, ldc, alpha, accumulate,
                    last);
  if (m < M)
    tail<E, NV, MR - 1>(M - m, steps, half_last, a + kWord * m * am, am, ak, b, ldb, c + m * ldc, ldc, alpha,
                        accumulate, last);
}

// Panels of 32 columns (16 for the last when no more are left) over a reduction of K elements.
template <class E>
GRAFT_TARGET void gemm_avx512(int64_t M, int64_t N, int64_t K, const E* a, int64_t am, int64_t ak, const E* b,
                              int64_t ldb, float* c, int64_t ldc, float alpha, bool accumulate) {
  constexpr int kWord = std::is_same_v<E, bfloat16> ? 2 : 1;
  const int64_t steps = (K + kWord - 1) / kWord;
  const bool half_last = K % kWord != 0;
  for (int64_t n0 = 0; n0 < N; n0 += 32) {
    int64_t w = std::min<int64_t>(32, N - n0);
    if (w > 16)
      panel<E, 2>(M, steps, half_last, a, am, ak, b + kWord * n0, ldb, c + n0, ldc, alpha, accumulate,
                  first(w - 16));
    else
      panel<E, 1>(M, steps, half_last, a, am, ak, b + kWord * n0, ldb, c + n0, ldc, alpha, accumulate,
                  first(w));
  }
}

GRAFT_TARGET void pack_avx512(const bfloat16* b, int64_t ldb, int64_t K, int64_t N, bfloat16* out,
                              int64_t ld) {
  for (int64_t k = 0; k < K; k += 2) {
    const bfloat16* r0 = b + k * ldb;
    const bfloat16* r1 = k + 1 < K ? r0 + ldb : nullptr;
    bfloat16* o = out + (k / 2) * ld;
    for (int64_t n0 = 0; n0 < ld / 2; n0 += 16) {
      __mmask16 m = n0 < N ? first(N - n0) : __mmask16(0);
      __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0 + n0));
      __m512i hi = r1 ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r1 + n0)) : _mm512_setzero_si512();
      _mm512_storeu_si512(o + 2 * n0, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
}

// A 16 x 16 transpose of 32-bit words: out[c] holds word c of every r[i]. Interleaving words, then
// pairs of words, puts column 4 L + k of rows 4 g .. 4 g + 3 in 128-bit lane L of u[4 g + k]; two
// rounds of lane shuffles gather each column's four lanes.
GRAFT_TARGET inline void transpose16(const __m512i r[16], __m512i out[16]) {
  __m512i t[16], u[16];
  for (int p = 0; p < 8; ++p) {
    t[2 * p] = _mm512_unpacklo_epi32(r[2 * p], r[2 * p + 1]);
    t[2 * p + 1] = _mm512_unpackhi_epi32(r[2 * p], r[2 * p + 1]);
  }
  for (int g = 0; g < 4; ++g) {
    u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    __m512i v0 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x88), v1 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xdd);
    __m512i w0 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x88),
            w1 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xdd);
    out[k] = _mm512_shuffle_i32x4(v0, w0, 0x88);
    out[8 + k] = _mm512_shuffle_i32x4(v0, w0, 0xdd);
    out[4 + k] = _mm512_shuffle_i32x4(v1, w1, 0x88);
    out[12 + k] = _mm512_shuffle_i32x4(v1, w1, 0xdd);
  }
}

// Word (kp, n) of the packed operand is word kp of x's row n: blocks of 16 rows by 16 words,
// transposed in registers. Elements past K (half of an odd K's last word) and rows past N load as 0.
GRAFT_TARGET void pack_transposed_avx512(const bfloat16* x, int64_t ldx, int64_t N, int64_t K, bfloat16* out,
                                         int64_t ld) {
  const int64_t words = (K + 1) / 2;
  for (int64_t w0 = 0; w0 < words; w0 += 16) {
    const int64_t elems = std::min<int64_t>(32, K - 2 * w0);
    const __mmask32 em = elems >= 32 ? __mmask32(0xffffffffu) : __mmask32((1u << elems) - 1);
    const int64_t rows_out = std::min<int64_t>(16, words - w0);
    for (int64_t n0 = 0; n0 < ld / 2; n0 += 16) {
      __m512i r[16], o[16];
      for (int i = 0; i < 16; ++i)
        r[i] =
            n0 + i < N ? _mm512_maskz_loadu_epi16(em, x + (n0 + i) * ldx + 2 * w0) : _mm512_setzero_si512();
      transpose16(r, o);
      for (int64_t j = 0; j < rows_out; ++j) _mm512_storeu_si512(out + (w0 + j) * ld + 2 * n0, o[j]);
    }
  }
}

GRAFT_TARGET void to_rows_avx512(const float* x, int64_t ldx, int64_t M, int64_t N, bfloat16* out,
                                 int64_t ld) {
  for (int64_t r = 0; r < M; ++r) {
    const float* xr = x + r * ldx;
    bfloat16* o = out + r * ld;
    for (int64_t n0 = 0; n0 < N; n0 += 16) {
      __mmask16 m = first(N - n0);
      __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, xr + n0));
      _mm256_mask_storeu_epi16(o + n0, m, (__m256i)v);
    }
    if (N % 2) o[N] = bfloat16::from_bits(0);
  }
}

GRAFT_TARGET void to_pairs_avx512(const float* x, int64_t ldx, int64_t M, int64_t N, bfloat16* out) {
  // cvtne2ps puts row 2i's 16 values in the low half, row 2i + 1's in the high half: the permutation
  // interleaves them into words
  alignas(64) static constexpr uint16_t kInterleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                           21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                           11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i idx = _mm512_load_si512(kInterleave);
  for (int64_t i = 0; 2 * i < M; ++i) {
    const float* r0 = x + 2 * i * ldx;
    const float* r1 = 2 * i + 1 < M ? r0 + ldx : nullptr;
    bfloat16* o = out + 2 * i * N;
    for (int64_t n0 = 0; n0 < N; n0 += 16) {
      __mmask16 m = first(N - n0);
      __m512 v0 = _mm512_maskz_loadu_ps(m, r0 + n0);
      __m512 v1 = r1 ? _mm512_maskz_loadu_ps(m, r1 + n0) : _mm512_setzero_ps();
      __m512i p = _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(v1, v0));
      _mm512_mask_storeu_epi32(o + 2 * n0, m, p);
    }
  }
}

GRAFT_TARGET void row_dots_avx512(const bfloat16* a, int64_t lda, const bfloat16* b, int64_t ldb, int64_t M,
                                  int64_t N, float* out) {
  for (int64_t m = 0; m < M; ++m) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t n0 = 0; n0 < N; n0 += 32) {
      const int64_t e = std::min<int64_t>(32, N - n0);
      const __mmask32 k = e >= 32 ? __mmask32(0xffffffffu) : __mmask32((1u << e) - 1);
      acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_maskz_loadu_epi16(k, a + m * lda + n0),
                             (__m512bh)_mm512_maskz_loadu_epi16(k, b + m * ldb + n0));
    }
    out[m] = vmath::avx512::reduce_add(acc);
  }
}

// bfloat16::from_float on 16 lanes: u + 0x7fff + (bit 16 of u), shifted; NaNs keep their top bits,
// quieted
GRAFT_TARGET void round_rows_avx512(const float* x, int64_t ldx, int64_t M, int64_t N, bfloat16* out,
                                    int64_t ld) {
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40),
                abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n0 = 0; n0 < N; n0 += 16) {
      const __mmask16 k = first(N - n0);
      __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(k, x + m * ldx + n0));
      __m512i hi = _mm512_srli_epi32(u, 16);
      __m512i r =
          _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, bias), _mm512_and_si512(hi, one)), 16);
      __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
      r = _mm512_mask_or_epi32(r, nan, hi, quiet);
      _mm256_mask_storeu_epi16(out + m * ld + n0, k, _mm512_cvtepi32_epi16(r));
    }
}

// f32 rows [K, N] copied into rows of whole vectors, zeros past N.
GRAFT_TARGET void pack_f32_avx512(const float* b, int64_t ldb, int64_t K, int64_t N, float* out, int64_t ld) {
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n0 = 0; n0 < ld; n0 += 16)
      _mm512_storeu_ps(out + k * ld + n0,
                       _mm512_maskz_loadu_ps(n0 < N ? first(N - n0) : __mmask16(0), b + k * ldb + n0));
}

// Row dots of f32 rows on 16 lanes of FMAs.
GRAFT_TARGET void row_dots_f32_avx512(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t M,
                                      int64_t N, float* out) {
  for (int64_t m = 0; m < M; ++m) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t n0 = 0; n0 < N; n0 += 16) {
      const __mmask16 k = first(N - n0);
      acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + m * lda + n0),
                            _mm512_maskz_loadu_ps(k, b + m * ldb + n0), acc);
    }
    out[m] = vmath::avx512::reduce_add(acc);
  }
}

// f32 X [N, K] transposed into rows of whole vectors: blocks of 16 x 16, as for bf16's words.
GRAFT_TARGET void pack_transposed_f32_avx512(const float* x, int64_t ldx, int64_t N, int64_t K, float* out,
                                             int64_t ld) {
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    const __mmask16 km = first(K - k0);
    const int64_t rows_out = std::min<int64_t>(16, K - k0);
    for (int64_t n0 = 0; n0 < ld; n0 += 16) {
      __m512i r[16], o[16];
      for (int i = 0; i < 16; ++i)
        r[i] = n0 + i < N ? _mm512_castps_si512(_mm512_maskz_loadu_ps(km, x + (n0 + i) * ldx + k0))
                          : _mm512_setzero_si512();
      transpose16(r, o);
      for (int64_t j = 0; j < rows_out; ++j) _mm512_storeu_si512(out + (k0 + j) * ld + n0, o[j]);
    }
  }
}

}  // namespace
#endif

}  // namespace graft::cpu

namespace graft::cpu::bf16dot {

bool available() {
#if GRAFT_BF16_DOT
  static const bool cpu = __builtin_cpu_supports("avx512bf16");
  return cpu && has_avx512() && native_bf16();
#else
  return false;
#endif
}

#if GRAFT_BF16_DOT

Packed pack(const bfloat16* b, int64_t ldb, int64_t K, int64_t N, bfloat16* out) {
  const int64_t ld = packed_ld(N);
  pack_avx512(b, ldb, K, N, out, ld);
  return {out, ld};
}

Packed pack_transposed(const bfloat16* x, int64_t ldx, int64_t N, int64_t K, bfloat16* out) {
  const int64_t ld = packed_ld(N);
  pack_transposed_avx512(x, ldx, N, K, out, ld);
  return {out, ld};
}

void gemm(int64_t M, int64_t N, int64_t K, const bfloat16* a, int64_t am, int64_t ak, Packed b, float* c,
          int64_t ldc, float alpha, bool accumulate) {
  if (M > 0 && N > 0) gemm_avx512<bfloat16>(M, N, K, a, am, ak, b.p, b.ld, c, ldc, alpha, accumulate);
}

void to_rows(const float* x, int64_t ldx, int64_t M, int64_t N, bfloat16* out, int64_t ld) {
  to_rows_avx512(x, ldx, M, N, out, ld);
}

void to_pairs_of_rows(const float* x, int64_t ldx, int64_t M, int64_t N, bfloat16* out) {
  to_pairs_avx512(x, ldx, M, N, out);
}

void row_dots(const bfloat16* a, int64_t lda, const bfloat16* b, int64_t ldb, int64_t M, int64_t N,
              float* out) {
  row_dots_avx512(a, lda, b, ldb, M, N, out);
}

void round_rows(const float* x, int64_t ldx, int64_t M, int64_t N, bfloat16* out, int64_t ld) {
  round_rows_avx512(x, ldx, M, N, out, ld);
}

#else  // no x86-64: available() is false, and a call is a bug

namespace {
[[noreturn]] void missing(const char* what) {
  fail<Error>("bf16dot::", what, ": this build has no AVX512-BF16 kernels");
}
}  // namespace

Packed pack(const bfloat16*, int64_t, int64_t, int64_t, bfloat16*) { missing("pack"); }
Packed pack_transposed(const bfloat16*, int64_t, int64_t, int64_t, bfloat16*) { missing("pack_transposed"); }
void gemm(int64_t, int64_t, int64_t, const bfloat16*, int64_t, int64_t, Packed, float*, int64_t, float,
          bool) {
  missing("gemm");
}
void to_rows(const float*, int64_t, int64_t, int64_t, bfloat16*, int64_t) { missing("to_rows"); }
void to_pairs_of_rows(const float*, int64_t, int64_t, int64_t, bfloat16*) { missing("to_pairs_of_rows"); }
void row_dots(const bfloat16*, int64_t, const bfloat16*, int64_t, int64_t, int64_t, float*) {
  missing("row_dots");
}
void round_rows(const float*, int64_t, int64_t, int64_t, bfloat16*, int64_t) { missing("round_rows"); }

#endif

}  // namespace graft::cpu::bf16dot

namespace graft::cpu::f32dot {

bool available() { return GRAFT_BF16_DOT && has_avx512(); }

#if GRAFT_BF16_DOT

Packed pack(const float* b, int64_t ldb, int64_t K, int64_t N, float* out) {
  if (packs_in_place(N)) return {b, ldb};
  const int64_t ld = packed_ld(N);
  pack_f32_avx512(b, ldb, K, N, out, ld);
  return {out, ld};
}

void row_dots(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t M, int64_t N, float* out) {
  row_dots_f32_avx512(a, lda, b, ldb, M, N, out);
}

Packed pack_transposed(const float* x, int64_t ldx, int64_t N, int64_t K, float* out) {
  const int64_t ld = packed_ld(N);
  pack_transposed_f32_avx512(x, ldx, N, K, out, ld);
  return {out, ld};
}

void gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t am, int64_t ak, Packed b, float* c,
          int64_t ldc, float alpha, bool accumulate) {
  if (M > 0 && N > 0) gemm_avx512<float>(M, N, K, a, am, ak, b.p, b.ld, c, ldc, alpha, accumulate);
}

#else  // no x86-64: available() is false, and a call is a bug

namespace {
[[noreturn]] void missing(const char* what) {
  fail<Error>("f32dot::", what, ": this build has no AVX-512 kernels");
}
}  // namespace

Packed pack(const float*, int64_t, int64_t, int64_t, float*) { missing("pack"); }
Packed pack_transposed(const float*, int64_t, int64_t, int64_t, float*) { missing("pack_transposed"); }
void gemm(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, Packed, float*, int64_t, float, bool) {
  missing("gemm");
}
void row_dots(const float*, int64_t, const float*, int64_t, int64_t, int64_t, float*) { missing("row_dots"); }

#endif

}  // namespace graft::cpu::f32dot
