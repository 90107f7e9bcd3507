// graft/ops/numpy_more.h (jax.numpy's rarer functions in C++) for graft.numpy: the Python module keeps
// only NumPy's calling conventions (tuples of axes, keyword names) around these.
#include "graft/ops/numpy_more.h"

#include "common.h"

namespace graft::python {

using namespace pybind11::literals;

void bind_numpy_more(py::module_& m) {
  using Un = Array (*)(const Array&);
  using Bin = Array (*)(const Array&, const Array&);
  auto unary = [&](const char* name, Un f) { m.def(name, [f](py::handle x) { return f(to_array(x)); }, "x"_a); };
  auto binary = [&](const char* name, Bin f) {
    m.def(name, [f](py::handle a, py::handle b) { return f(to_array(a), to_array(b)); }, "a"_a, "b"_a);
  };
  binary("np_hypot", &hypot);
  binary("np_fmod", &fmod);
  binary("np_heaviside", &heaviside);
  unary("np_sinc", &sinc);
  m.def("np_nan_to_num", [](py::handle x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
    return nan_to_num(to_array(x), nan, posinf, neginf);
  }, "x"_a, "nan"_a = 0.0, "posinf"_a = py::none(), "neginf"_a = py::none());
  m.def("np_rot90", [](py::handle x, int64_t k, int64_t a0, int64_t a1) { return rot90(to_array(x), k, {a0, a1}); },
        "x"_a, "k"_a, "a0"_a, "a1"_a);
  m.def("np_roll", [](py::handle x, int64_t shift, std::optional<int64_t> axis) { return roll(to_array(x), shift, axis); },
        "x"_a, "shift"_a, "axis"_a = py::none());
  using Red = Array (*)(const Array&, AxisArg, bool);
  auto reduction = [&](const char* name, Red f) {
    m.def(name, [f](py::handle x, py::handle axis, bool keepdims) { return f(to_array(x), to_axis(axis), keepdims); },
          "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  };
  reduction("np_nansum", &nansum);
  reduction("np_nanprod", &nanprod);
  reduction("np_nanmax", &nanmax);
  reduction("np_nanmin", &nanmin);
  reduction("np_nanmean", &nanmean);
  m.def("np_nanvar", [](py::handle x, py::handle axis, bool keepdims, int64_t ddof) {
    return nanvar(to_array(x), to_axis(axis), keepdims, ddof);
  }, "x"_a, "axis"_a = py::none(), "keepdims"_a = false, "ddof"_a = 0);
  m.def("np_nanstd", [](py::handle x, py::handle axis, bool keepdims, int64_t ddof) {
    return nanstd(to_array(x), to_axis(axis), keepdims, ddof);
  }, "x"_a, "axis"_a = py::none(), "keepdims"_a = false, "ddof"_a = 0);
  m.def("np_nanargmax", [](py::handle x, std::optional<int64_t> axis, bool keepdims) {
    return nanargmax(to_array(x), axis, keepdims);
  }, "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  m.def("np_nanargmin", [](py::handle x, std::optional<int64_t> axis, bool keepdims) {
    return nanargmin(to_array(x), axis, keepdims);
  }, "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  m.def("np_nancumsum", [](py::handle x, std::optional<int64_t> axis) { return nancumsum(to_array(x), axis); }, "x"_a,
        "axis"_a = py::none());
  m.def("np_nancumprod", [](py::handle x, std::optional<int64_t> axis) { return nancumprod(to_array(x), axis); }, "x"_a,
        "axis"_a = py::none());
}

}  // namespace graft::python
