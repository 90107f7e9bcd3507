// graft/ops/numpy_more.h (jax.numpy's rarer functions in C++) for graft.numpy: the Python module keeps
// only NumPy's calling conventions (tuples of axes, keyword names) around these.
#include "graft/ops/numpy_more.h"

#include "common.h"

namespace graft::python {

using namespace pybind11::literals;

void bind_numpy_more(py::module_& m) {
  def_binary(m, "np_hypot", &hypot);
  def_binary(m, "np_fmod", &fmod);
  def_binary(m, "np_heaviside", &heaviside);
  def_binary(m, "np_float_power", &float_power);
  def_unary(m, "np_sinc", &sinc);
  m.def("np_nan_to_num", [](py::handle x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
    return nan_to_num(to_array(x), nan, posinf, neginf);
  }, "x"_a, "nan"_a = 0.0, "posinf"_a = py::none(), "neginf"_a = py::none());
  m.def("np_rot90", [](py::handle x, int64_t k, int64_t a0, int64_t a1) { return rot90(to_array(x), k, {a0, a1}); },
        "x"_a, "k"_a, "a0"_a, "a1"_a);
  m.def("np_roll", [](py::handle x, int64_t shift, std::optional<int64_t> axis) { return roll(to_array(x), shift, axis); },
        "x"_a, "shift"_a, "axis"_a = py::none());
  def_reduction(m, "np_nansum", &nansum);
  def_reduction(m, "np_nanprod", &nanprod);
  def_reduction(m, "np_nanmax", &nanmax);
  def_reduction(m, "np_nanmin", &nanmin);
  def_reduction(m, "np_nanmean", &nanmean);
  def_moment(m, "np_nanvar", &nanvar);
  def_moment(m, "np_nanstd", &nanstd);
  using ArgRed = Array (*)(const Array&, std::optional<int64_t>, bool);
  for (auto [name, f] : {std::pair<const char*, ArgRed>{"np_nanargmax", &nanargmax}, {"np_nanargmin", &nanargmin}})
    m.def(name, [f](py::handle x, std::optional<int64_t> axis, bool keepdims) { return f(to_array(x), axis, keepdims); },
          "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  using Cum = Array (*)(const Array&, std::optional<int64_t>);
  for (auto [name, f] : {std::pair<const char*, Cum>{"np_nancumsum", &nancumsum}, {"np_nancumprod", &nancumprod}})
    m.def(name, [f](py::handle x, std::optional<int64_t> axis) { return f(to_array(x), axis); }, "x"_a, "axis"_a = py::none());
}

}  // namespace graft::python
