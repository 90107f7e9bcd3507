// NumPy's discrete Fourier transforms (jax.numpy.fft) as composites of the fft primitive (lax::fft,
// graft/prims/lax.h), so all of them are differentiable, batchable and compilable.
//
//   Array y = fft::fft(x);                          // complex spectrum along the last axis
//   Array x2 = fft::irfft(fft::rfft(x), x.shape().back());
//   Array img = fft::fft2(a, std::nullopt, {-2, -1}, "ortho");
//
// Inputs promote as in JAX: integers and booleans to the default float, f16 / bf16 to f32, real to complex
// (c64, or c128 for f64) where the transform is complex; rfft, rfftn and ihfft take real inputs only.
// `n` (or `s`) crops or zero-pads each transformed axis first. `norm` is NumPy's: "backward" (the
// default: the inverse transforms scale by 1/n), "ortho" (both by 1/sqrt(n)) or "forward" (the forward
// ones by 1/n).
#pragma once

#include <optional>
#include <string>

#include "graft/ops/ops.h"

namespace graft::fft {

/// One transform along `axis`: the first n entries of x's axis (zero-padded to n when shorter; its whole
/// length when n is unset).
Array fft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1, const std::string& norm = "backward");
Array ifft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
           const std::string& norm = "backward");
/// The non-negative frequencies (n/2 + 1 of them) of a real input's transform.
Array rfft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
           const std::string& norm = "backward");
/// The real signal of length n (default 2 (m - 1) for m frequencies) whose rfft is x.
Array irfft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
            const std::string& norm = "backward");
/// The transform of a signal with Hermitian symmetry (x holds its first half): a real array of length n
/// (default 2 (m - 1)); ihfft is its inverse, the first n/2 + 1 terms of a real signal's inverse transform.
Array hfft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
           const std::string& norm = "backward");
Array ihfft(const Array& x, std::optional<int64_t> n = std::nullopt, int64_t axis = -1,
            const std::string& norm = "backward");

/// Transforms over several axes: `axes` (every axis, or the last s.size() when only s is given), each
/// cropped or padded to the matching entry of s. For rfftn / irfftn the last of `axes` is the halved one.
Array fftn(const Array& x, const std::optional<Shape>& s = std::nullopt, const std::optional<Axes>& axes = std::nullopt,
           const std::string& norm = "backward");
Array ifftn(const Array& x, const std::optional<Shape>& s = std::nullopt, const std::optional<Axes>& axes = std::nullopt,
            const std::string& norm = "backward");
Array rfftn(const Array& x, const std::optional<Shape>& s = std::nullopt, const std::optional<Axes>& axes = std::nullopt,
            const std::string& norm = "backward");
Array irfftn(const Array& x, const std::optional<Shape>& s = std::nullopt,
             const std::optional<Axes>& axes = std::nullopt, const std::string& norm = "backward");
/// The n-dimensional ones over two axes (the last two by default).
Array fft2(const Array& x, const std::optional<Shape>& s = std::nullopt, const Axes& axes = {-2, -1},
           const std::string& norm = "backward");
Array ifft2(const Array& x, const std::optional<Shape>& s = std::nullopt, const Axes& axes = {-2, -1},
            const std::string& norm = "backward");
Array rfft2(const Array& x, const std::optional<Shape>& s = std::nullopt, const Axes& axes = {-2, -1},
            const std::string& norm = "backward");
Array irfft2(const Array& x, const std::optional<Shape>& s = std::nullopt, const Axes& axes = {-2, -1},
             const std::string& norm = "backward");

/// The sample frequencies of an n-point transform with sample spacing d: [0, 1, ..., -(n/2), ..., -1] / (d n)
/// (fftfreq), [0, 1, ..., n/2] / (d n) (rfftfreq). dtype: the default float when unset.
Array fftfreq(int64_t n, double d = 1.0, std::optional<DType> dtype = std::nullopt);
Array rfftfreq(int64_t n, double d = 1.0, std::optional<DType> dtype = std::nullopt);
/// Rolls each of `axes` (all by default) by half its length so that the zero frequency is in the middle;
/// ifftshift undoes it (they differ for odd lengths).
Array fftshift(const Array& x, const AxisArg& axes = {});
Array ifftshift(const Array& x, const AxisArg& axes = {});

}  // namespace graft::fft
