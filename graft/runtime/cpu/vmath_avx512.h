// vmath's functions on AVX-512 registers, for kernels written with intrinsics (GRAFT_TARGET_AVX512
// functions, called where cpu::has_avx512()): the same operations in the same order as the scalar
// functions of vmath.h, so the results are theirs bit for bit (tests/runtime/test_vmath.cpp checks).
#pragma once

#include "graft/runtime/cpu/features.h"

#if GRAFT_HAVE_TARGET_AVX512
#include <immintrin.h>

#include "graft/runtime/cpu/vmath.h"

namespace graft::vmath::avx512 {

/// e^x on 16 lanes (vmath::exp).
GRAFT_TARGET_AVX512 inline __m512 exp(__m512 x) {
  // min(89, x) and max(-104, x) return x where x is NaN (the second operand), as the scalar selects do
  // (the maskz forms: GCC 12's plain ones start from _mm512_undefined_*(), which -Wuninitialized reports)
  x = _mm512_maskz_min_ps(0xffff, _mm512_set1_ps(89.0f), x);
  x = _mm512_maskz_max_ps(0xffff, _mm512_set1_ps(-104.0f), x);
  const __m512 shift = _mm512_set1_ps(detail::kShift);
  __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), shift);
  __m512 nf = _mm512_sub_ps(t, shift);
  __m512 r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-0.693145751953125f), x);
  r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-1.4286068203094172e-06f), r);
  __m512 q = _mm512_fmadd_ps(r, _mm512_set1_ps(detail::kExpm1[4]), _mm512_set1_ps(detail::kExpm1[3]));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(detail::kExpm1[2]));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(detail::kExpm1[1]));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(detail::kExpm1[0]));
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(q, r, one), r, one);
  __m512i n = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_castps_si512(shift));
  __m512i n1 = _mm512_maskz_srai_epi32(0xffff, n, 1);
  const __m512i bias = _mm512_set1_epi32(127);
  __m512 s1 = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, _mm512_add_epi32(n1, bias), 23));
  __m512 s2 = _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(0xffff, _mm512_add_epi32(_mm512_sub_epi32(n, n1), bias), 23));
  return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
}

/// Lanes [8 I, 8 I + 8) of v.
template <int I>
GRAFT_TARGET_AVX512 inline __m256 half(__m512 v) {
  return _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xf, _mm512_castps_pd(v), I));
}

/// The sum of 16 lanes, by halves (the order of the sums is not the lanes' order). Written out
/// rather than _mm512_reduce_add_ps: GCC 12's expansion of it (and of _mm512_castps512_ps256 and the
/// unmasked extracts) starts from _mm256_undefined_*(), which -Wuninitialized reports.
GRAFT_TARGET_AVX512 inline float reduce_add(__m512 v) {
  __m256 h = _mm256_add_ps(half<0>(v), half<1>(v));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}

/// The largest of 16 lanes (none of them NaN), as reduce_add.
GRAFT_TARGET_AVX512 inline float reduce_max(__m512 v) {
  __m256 h = _mm256_max_ps(half<0>(v), half<1>(v));
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(q, _mm_shuffle_ps(q, q, 1)));
}

}  // namespace graft::vmath::avx512

#endif
