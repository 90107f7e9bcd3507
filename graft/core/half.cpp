// Rows of 16-bit float conversions: each a loop of its own, so that the compiler vectorizes it.
#include "graft/core/half.h"

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace graft {

namespace {
template <class H>
void widen_row(const H* __restrict in, float* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}
template <class H>
void narrow_row(const float* __restrict in, H* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = H(in[i]);
}
}  // namespace

#if defined(__F16C__) && defined(__AVX__)
// Where the build assumes F16C (-march on any x86 CPU since 2012), its instructions: 8 values an
// instruction against a dozen operations a value, with the same results bit for bit (half.h).
void widen(const float16* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  widen_row(in + i, out + i, n - i);
}
void narrow(const float* in, float16* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  narrow_row(in + i, out + i, n - i);
}
#else
void widen(const float16* in, float* out, int64_t n) { widen_row(in, out, n); }
void narrow(const float* in, float16* out, int64_t n) { narrow_row(in, out, n); }
#endif
void widen(const bfloat16* in, float* out, int64_t n) { widen_row(in, out, n); }
void narrow(const float* in, bfloat16* out, int64_t n) { narrow_row(in, out, n); }

}  // namespace graft
