// Discrete Fourier transforms on the CPU through FFTW 3 (Debian's libfftw3-dev, found at build time):
// f32 (fftwf) and f64, any length (FFTW's mixed-radix and prime-size codelets keep every length
// O(n log n)), one to several trailing dimensions, batched over the leading ones. The fft primitive
// (graft/prims/fft.cpp) calls this.
//
// Why FFTW: it is the fastest CPU FFT Debian packages, and the only one there in both precisions
// (Debian's kissfft is built for float only). It is GPL-2-or-later, so it is optional (GRAFT_WITH_FFTW):
// a graft binary linked with it is distributed under the GPL's terms; one built without it raises
// NotImplementedError from the FFT and nothing else.
//
// Plans are FFTW_ESTIMATE's, the faster of its SIMD and non-SIMD plan (timed once per kind, precision and
// lengths; GRAFT_FFTW_SIMD=on / off fixes it); GRAFT_FFTW_MEASURE=1 asks for FFTW_MEASURE's (faster, but
// seconds of planning per new shape).
//
// All transforms are unnormalized (the inverse ones sum with e^{+2 pi i jk / n}); the caller scales.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/core/dtype.h"

namespace graft::cpu::fft {

/// Whether graft was built with FFTW. Without it `transform` throws NotImplementedError.
bool available();

enum class Kind {
  forward,   ///< complex -> complex, e^{-2 pi i jk / n}
  backward,  ///< complex -> complex, e^{+2 pi i jk / n}
  r2c,       ///< real -> the n/2 + 1 non-negative frequencies of the last dimension (forward)
  c2r,       ///< those n/2 + 1 frequencies -> real (backward); the imaginary parts of the self-conjugate
             ///< terms are ignored, as NumPy's irfft does
};

/// Transforms `howmany` contiguous row-major arrays whose trailing dimensions are `lengths` (the last
/// one n/2 + 1 on the complex side of r2c and c2r). `real` is f32 or f64: the precision, the complex
/// side being pairs of it. `in` is not modified.
void transform(Kind kind, DType real, const std::vector<int64_t>& lengths, int64_t howmany, const void* in, void* out);

}  // namespace graft::cpu::fft
