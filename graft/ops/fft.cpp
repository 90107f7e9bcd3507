#include "graft/ops/fft.h"

#include <cmath>
#include <numeric>
#include <vector>

#include "graft/ops/internal.h"
#include "graft/ops/numpy_more.h"

namespace graft::fft {

namespace {

using lax::FftType;

// x as the complex type its transform computes in (JAX's to_complex_dtype: f16 / bf16 and integers go
// through f32 or the default float).
Array as_complex(const Array& x, const char* op) {
  ops_detail::checked(x, op);
  if (is_complex(x.dtype())) return x;
  Array f = ops_detail::as_float(x);
  if (f.dtype() != DType::f64) f = astype(f, DType::f32);
  return astype(f, complex_dtype(f.dtype()));
}

// A real input of rfft / rfftn / ihfft, in f32 or f64.
Array as_real(const Array& x, const char* op) {
  ops_detail::checked(x, op);
  if (is_complex(x.dtype()))
    fail<TypeError>(op, ": takes a real input (the transform of a complex one is fft's), got ", x.aval().str());
  Array f = ops_detail::as_float(x);
  return f.dtype() == DType::f64 ? f : astype(f, DType::f32);
}

// x's `axis` cropped or zero-padded to n.
Array resize_axis(const Array& x, int64_t axis, int64_t n) {
  int64_t have = x.shape()[axis];
  if (have == n) return x;
  if (have > n) return lax::slice_in_dim(x, 0, n, 1, axis);
  std::vector<IntList> cfg(static_cast<size_t>(x.ndim()), IntList{0, 0, 0});
  cfg[axis][1] = n - have;
  return lax::pad(x, lax::full({}, 0, x.dtype()), cfg);
}

// The factor jnp.fft's `norm` puts on a transform over N points, relative to lax::fft's (unscaled forward,
// 1/N inverse).
double norm_factor(const std::string& norm, double n, bool inverse, const char* op) {
  if (norm == "backward") return 1;
  if (norm == "ortho") return inverse ? std::sqrt(n) : 1 / std::sqrt(n);
  if (norm == "forward") return inverse ? n : 1 / n;
  fail<ValueError>(op, ": invalid norm value '", norm, "'; should be \"backward\", \"ortho\" or \"forward\"");
}

// "backward" <-> "forward" (hfft and ihfft are irfft and rfft with the direction of the scaling swapped).
std::string swap_direction(const std::string& norm) {
  if (norm == "backward") return "forward";
  if (norm == "forward") return "backward";
  return norm;
}

struct Plan {
  Axes axes;  // normalized, in the order given
  Shape s;    // the transform lengths (for IRFFT the real output's)
};

// NumPy's s / axes defaults: every axis, or the last s.size() ones when only s is given; s from the input's
// shape (for IRFFT the last one 2 (m - 1)).
Plan make_plan(const Array& x, const std::optional<Shape>& s, const std::optional<Axes>& axes, FftType type,
               const char* op) {
  Plan p;
  int64_t nd = x.ndim();
  if (axes) {
    for (int64_t a : *axes) p.axes.push_back(normalize_axis(a, nd, op));
  } else {
    int64_t k = s ? static_cast<int64_t>(s->size()) : nd;
    if (k > nd) fail<ValueError>(op, ": s has ", k, " entries for an input of rank ", nd, " (", x.aval().str(), ")");
    for (int64_t a = nd - k; a < nd; ++a) p.axes.push_back(a);
  }
  for (size_t i = 0; i < p.axes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (p.axes[i] == p.axes[j]) fail<ValueError>(op, ": repeated axis ", p.axes[i], " in axes");
  if (p.axes.empty()) fail<ValueError>(op, ": no axes to transform (", x.aval().str(), ")");
  if (s && s->size() != p.axes.size())
    fail<ValueError>(op, ": s has ", s->size(), " entries and axes ", p.axes.size(), "; they must match");
  for (size_t i = 0; i < p.axes.size(); ++i) {
    int64_t n = s ? (*s)[i] : x.shape()[p.axes[i]];
    if (!s && type == FftType::IRFFT && i + 1 == p.axes.size()) n = 2 * (n - 1);
    if (n < 1) fail<ValueError>(op, ": invalid number of data points (", n, ") along axis ", p.axes[i]);
    p.s.push_back(n);
  }
  return p;
}

Array transform(const Array& x0, const std::optional<Shape>& s, const std::optional<Axes>& axes, FftType type,
                const std::string& norm, const char* op) {
  Array x = type == FftType::RFFT ? as_real(x0, op) : as_complex(x0, op);
  Plan p = make_plan(x, s, axes, type, op);
  size_t k = p.axes.size();
  bool inverse = type == FftType::IFFT || type == FftType::IRFFT;
  double factor = norm_factor(norm, std::accumulate(p.s.begin(), p.s.end(), 1.0, std::multiplies<>()), inverse, op);
  for (size_t i = 0; i < k; ++i) {
    int64_t n = p.s[i];
    if (type == FftType::IRFFT && i + 1 == k) n = n / 2 + 1;
    x = resize_axis(x, p.axes[i], n);
  }
  // the transformed axes last, in the order given
  int64_t nd = x.ndim();
  Axes perm;
  for (int64_t a = 0; a < nd; ++a)
    if (std::find(p.axes.begin(), p.axes.end(), a) == p.axes.end()) perm.push_back(a);
  for (int64_t a : p.axes) perm.push_back(a);
  bool moved = false;
  for (int64_t i = 0; i < nd; ++i) moved = moved || perm[i] != i;
  if (moved) x = lax::transpose(x, perm);
  Array y = lax::fft(x, type, p.s);
  if (moved) {
    Axes back(static_cast<size_t>(nd));
    for (int64_t i = 0; i < nd; ++i) back[perm[i]] = i;
    y = lax::transpose(y, back);
  }
  if (factor != 1) y = multiply(y, Array::scalar(factor, is_complex(y.dtype()) ? real_dtype(y.dtype()) : y.dtype()));
  return y;
}

std::optional<Shape> one(std::optional<int64_t> n) {
  if (!n) return std::nullopt;
  return Shape{*n};
}

}  // namespace

Array fft(const Array& x, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  return transform(x, one(n), Axes{axis}, FftType::FFT, norm, "fft");
}
Array ifft(const Array& x, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  return transform(x, one(n), Axes{axis}, FftType::IFFT, norm, "ifft");
}
Array rfft(const Array& x, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  return transform(x, one(n), Axes{axis}, FftType::RFFT, norm, "rfft");
}
Array irfft(const Array& x, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  return transform(x, one(n), Axes{axis}, FftType::IRFFT, norm, "irfft");
}
Array hfft(const Array& x, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  norm_factor(norm, 1, false, "hfft");
  return transform(conj(as_complex(x, "hfft")), one(n), Axes{axis}, FftType::IRFFT, swap_direction(norm), "hfft");
}
Array ihfft(const Array& x, std::optional<int64_t> n, int64_t axis, const std::string& norm) {
  norm_factor(norm, 1, false, "ihfft");
  return conj(transform(x, one(n), Axes{axis}, FftType::RFFT, swap_direction(norm), "ihfft"));
}

Array fftn(const Array& x, const std::optional<Shape>& s, const std::optional<Axes>& axes, const std::string& norm) {
  return transform(x, s, axes, FftType::FFT, norm, "fftn");
}
Array ifftn(const Array& x, const std::optional<Shape>& s, const std::optional<Axes>& axes, const std::string& norm) {
  return transform(x, s, axes, FftType::IFFT, norm, "ifftn");
}
Array rfftn(const Array& x, const std::optional<Shape>& s, const std::optional<Axes>& axes, const std::string& norm) {
  return transform(x, s, axes, FftType::RFFT, norm, "rfftn");
}
Array irfftn(const Array& x, const std::optional<Shape>& s, const std::optional<Axes>& axes, const std::string& norm) {
  return transform(x, s, axes, FftType::IRFFT, norm, "irfftn");
}
Array fft2(const Array& x, const std::optional<Shape>& s, const Axes& axes, const std::string& norm) {
  return transform(x, s, axes, FftType::FFT, norm, "fft2");
}
Array ifft2(const Array& x, const std::optional<Shape>& s, const Axes& axes, const std::string& norm) {
  return transform(x, s, axes, FftType::IFFT, norm, "ifft2");
}
Array rfft2(const Array& x, const std::optional<Shape>& s, const Axes& axes, const std::string& norm) {
  return transform(x, s, axes, FftType::RFFT, norm, "rfft2");
}
Array irfft2(const Array& x, const std::optional<Shape>& s, const Axes& axes, const std::string& norm) {
  return transform(x, s, axes, FftType::IRFFT, norm, "irfft2");
}

namespace {
Array freqs(int64_t n, double d, std::optional<DType> dtype, bool half, const char* op) {
  if (n < 1) fail<ValueError>(op, ": n must be positive, got ", n);
  if (d == 0) fail<ValueError>(op, ": the sample spacing d must be nonzero");
  int64_t m = half ? n / 2 + 1 : n;
  std::vector<double> v(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    int64_t k = half || i <= (n - 1) / 2 ? i : i - n;
    v[i] = static_cast<double>(k) / (d * static_cast<double>(n));
  }
  DType dt = dtype.value_or(default_float_dtype());
  if (!is_inexact(dt)) fail<TypeError>(op, ": dtype must be floating or complex, got ", short_name(dt));
  return astype(array(v, Shape{m}), dt);
}

Array shift(const Array& x, const AxisArg& axes, bool inverse, const char* op) {
  ops_detail::checked(x, op);
  Array y = x;
  for (int64_t a : axes.resolve(x.ndim(), op)) {
    int64_t n = x.shape()[a];
    y = roll(y, inverse ? -(n / 2) : n / 2, a);
  }
  return y;
}
}  // namespace

Array fftfreq(int64_t n, double d, std::optional<DType> dtype) { return freqs(n, d, dtype, false, "fftfreq"); }
Array rfftfreq(int64_t n, double d, std::optional<DType> dtype) { return freqs(n, d, dtype, true, "rfftfreq"); }
Array fftshift(const Array& x, const AxisArg& axes) { return shift(x, axes, false, "fftshift"); }
Array ifftshift(const Array& x, const AxisArg& axes) { return shift(x, axes, true, "ifftshift"); }

}  // namespace graft::fft
