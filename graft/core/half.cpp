// Rows of 16-bit float conversions: each a loop of its own, so that the compiler vectorizes it.
#include "graft/core/half.h"

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

void widen(const float16* in, float* out, int64_t n) { widen_row(in, out, n); }
void widen(const bfloat16* in, float* out, int64_t n) { widen_row(in, out, n); }
void narrow(const float* in, float16* out, int64_t n) { narrow_row(in, out, n); }
void narrow(const float* in, bfloat16* out, int64_t n) { narrow_row(in, out, n); }

}  // namespace graft
