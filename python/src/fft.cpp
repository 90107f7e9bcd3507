// The discrete Fourier transforms (graft/ops/fft.h and the fft primitive) for graft.numpy.fft and
// graft.lax.fft, which give them NumPy's and JAX's signatures.
#include "common.h"
#include "graft/ops/fft.h"

namespace graft::python {

namespace {

std::optional<int64_t> opt_int(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return h.cast<int64_t>();
}
std::optional<Shape> opt_shape(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_shape(h);
}
std::optional<Axes> opt_axes(py::handle h) {
  if (h.is_none()) return std::nullopt;
  Axes a;
  for (auto v : py::iter(h)) a.push_back(v.cast<int64_t>());
  return a;
}
std::string norm_of(py::handle h) { return h.is_none() ? "backward" : h.cast<std::string>(); }

using OneAxis = Array (*)(const Array&, std::optional<int64_t>, int64_t, const std::string&);
using ManyAxes = Array (*)(const Array&, const std::optional<Shape>&, const std::optional<Axes>&, const std::string&);

}  // namespace

void bind_fft(py::module_& m) {
  using namespace py::literals;
  // one axis: fft_<name>(a, n, axis, norm)
  for (auto [name, f] : std::initializer_list<std::pair<const char*, OneAxis>>{
           {"fft_fft", &fft::fft},   {"fft_ifft", &fft::ifft}, {"fft_rfft", &fft::rfft},
           {"fft_irfft", &fft::irfft}, {"fft_hfft", &fft::hfft}, {"fft_ihfft", &fft::ihfft}}) {
    m.def(name, [f](py::handle a, py::handle n, int64_t axis, py::handle norm) {
      return f(to_array(a), opt_int(n), axis, norm_of(norm));
    }, "a"_a, "n"_a = py::none(), "axis"_a = -1, "norm"_a = py::none());
  }
  // several: fft_<name>n(a, s, axes, norm); the 2-D ones are these with axes (-2, -1)
  for (auto [name, f] : std::initializer_list<std::pair<const char*, ManyAxes>>{
           {"fft_fftn", &fft::fftn}, {"fft_ifftn", &fft::ifftn}, {"fft_rfftn", &fft::rfftn}, {"fft_irfftn", &fft::irfftn}}) {
    m.def(name, [f](py::handle a, py::handle s, py::handle axes, py::handle norm) {
      return f(to_array(a), opt_shape(s), opt_axes(axes), norm_of(norm));
    }, "a"_a, "s"_a = py::none(), "axes"_a = py::none(), "norm"_a = py::none());
  }
  m.def("fft_fftfreq", [](int64_t n, double d, py::handle dtype) {
    return fft::fftfreq(n, d, dtype.is_none() ? std::nullopt : std::optional<DType>(to_dtype(dtype)));
  }, "n"_a, "d"_a = 1.0, "dtype"_a = py::none());
  m.def("fft_rfftfreq", [](int64_t n, double d, py::handle dtype) {
    return fft::rfftfreq(n, d, dtype.is_none() ? std::nullopt : std::optional<DType>(to_dtype(dtype)));
  }, "n"_a, "d"_a = 1.0, "dtype"_a = py::none());
  m.def("fft_fftshift", [](py::handle x, py::handle axes) { return fft::fftshift(to_array(x), to_axis(axes)); }, "x"_a,
        "axes"_a = py::none());
  m.def("fft_ifftshift", [](py::handle x, py::handle axes) { return fft::ifftshift(to_array(x), to_axis(axes)); },
        "x"_a, "axes"_a = py::none());
  // the primitive (JAX's lax.fft: fft_type 0-3 or its name)
  m.def("lax_fft", [](py::handle x, int64_t type, py::handle lengths) {
    if (type < 0 || type > 3) fail<ValueError>("fft: unknown FFT type ", type);
    return lax::fft(to_array(x), static_cast<lax::FftType>(type), to_shape(lengths));
  }, "x"_a, "fft_type"_a, "fft_lengths"_a);
}

}  // namespace graft::python
