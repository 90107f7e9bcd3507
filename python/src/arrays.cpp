// The Array class: construction, NumPy and DLPack exchange, properties, indexing, operators.
#include "common.h"

namespace graft::python {

using namespace pybind11::literals;

namespace {
// `a + b`, `a - b`, `a * b` on two arrays of one type and shape: straight into the primitive from the type's
// number slots, without pybind11's overload dispatch (a third of an eager `a + b`'s host time). Anything
// else (a Python scalar, another type, an error to report) goes the way __add__ / __radd__ are bound.
PyTypeObject* array_type = nullptr;

// The bound operators' functions (looked up once), by slot: 0 add, 1 sub, 2 mul; [k][1] reflected.
PyObject* bound[3][2] = {};

// The bound operator: Array.__add__(a, b), or Array.__radd__(b, a) when only b is an array (CPython
// calls the slot with the operands in their written order).
PyObject* bound_binop(PyObject* a, PyObject* b, int k) {
  if (PyObject_TypeCheck(a, array_type)) {
    PyObject* args[] = {a, b};
    return PyObject_Vectorcall(bound[k][0], args, 2, nullptr);
  }
  if (PyObject_TypeCheck(b, array_type)) {
    PyObject* args[] = {b, a};
    return PyObject_Vectorcall(bound[k][1], args, 2, nullptr);
  }
  Py_RETURN_NOTIMPLEMENTED;
}

template <Array (*Same)(const Array&, const Array&), int K>
PyObject* fast_binop(PyObject* a, PyObject* b) {
  if (Py_TYPE(a) == array_type && Py_TYPE(b) == array_type) {
    try {
      const Array& x = py::handle(a).cast<const Array&>();
      const Array& y = py::handle(b).cast<const Array&>();
      if (x.dtype() == y.dtype() && !x.weak_type() && !y.weak_type() && x.shape() == y.shape())
        return py::cast(Same(x, y)).release().ptr();
    } catch (...) {
      PyErr_Clear();  // the bound operator raises it, translated
    }
  }
  return bound_binop(a, b, K);
}

void install_fast_arithmetic(py::class_<Array>& arr) {
  array_type = reinterpret_cast<PyTypeObject*>(arr.ptr());
  PyNumberMethods* n = array_type->tp_as_number;
  if (!n) return;  // (keep pybind11's slots)
  const char* names[3][2] = {{"__add__", "__radd__"}, {"__sub__", "__rsub__"}, {"__mul__", "__rmul__"}};
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < 2; ++r) bound[k][r] = py::object(arr.attr(names[k][r])).release().ptr();  // kept for the process
  n->nb_add = &fast_binop<&lax::add, 0>;
  n->nb_subtract = &fast_binop<&lax::sub, 1>;
  n->nb_multiply = &fast_binop<&lax::mul, 2>;
}
}  // namespace

void bind_arrays(py::module_& m) {
  // ---- Array ------------------------------------------------------------------------------------------
  // NumPy reads arrays through __array__ (a view of the storage, no copy); no buffer protocol: a buffer
  // getter cannot report an error (a traced value, bfloat16) to Python.
  py::class_<Array> arr(m, "Array");
  arr.def(py::init([](py::handle h) { return to_array(h); }), "value"_a)
      .def_property_readonly("shape", [](const Array& x) { return shape_tuple(x.shape()); })
      .def_property_readonly("dtype", [](const Array& x) { return numpy_dtype(x.dtype()); })
      .def_property_readonly("ndim", [](const Array& x) { return x.ndim(); })
      .def_property_readonly("size", [](const Array& x) { return x.size(); })
      .def_property_readonly("weak_type", [](const Array& x) { return x.weak_type(); })
      .def_property_readonly("aval", [](const Array& x) { return x.aval().str(); })
      .def_property_readonly("is_traced", [](const Array& x) { return !x.is_concrete(); })
      .def_property_readonly("T", [](const Array& x) { return transpose(x); })
      .def("__repr__", &array_repr)
      .def("__str__",
           [](const Array& x) {
             if (!known_value(x)) return array_repr(x);
             return std::string(py::str(to_numpy(x)));
           })
      .def("__array__",
           [](const Array& x, py::object dtype, py::object copy) {
             py::array a = to_numpy(x);
             if (!dtype.is_none()) return py::array(a.attr("astype")(dtype));
             if (!copy.is_none() && copy.cast<bool>()) return py::array(a.attr("copy")());
             return a;
           },
           "dtype"_a = py::none(), "copy"_a = py::none())
      .def("__dlpack__", [](const Array& x, py::object stream) { return to_dlpack(x); }, "stream"_a = py::none())
      .def("__dlpack_device__", [](const Array&) { return py::make_tuple(1, 0); })
      .def_property_readonly("device", [](const Array& x) { return x.is_concrete() ? x.device().str() : std::string("traced"); })
      .def("block_until_ready", [](const Array& x) { return x.block_until_ready(); })
      .def("item", [](const Array& x) -> py::object { return to_numpy(x).attr("item")(); })
      .def("tolist", [](const Array& x) -> py::object { return to_numpy(x).attr("tolist")(); })
      .def("__bool__", [](const Array& x) { return x.item<bool>(); })
      .def("__float__", [](const Array& x) { return x.item<double>(); })
      .def("__int__", [](const Array& x) { return x.item<int64_t>(); })
      .def("__index__", [](const Array& x) {
        if (!is_integer(x.dtype()) && !is_bool(x.dtype()))
          throw py::type_error("only integer arrays can be used as an index, got " + x.aval().str());
        return x.item<int64_t>();
      })
      .def("__len__", [](const Array& x) {
        if (x.ndim() == 0) throw py::type_error("len() of a 0-d array");
        return x.shape()[0];
      })
      .def("__hash__", [](const Array&) -> py::int_ { throw py::type_error("graft arrays are not hashable"); })
      .def("__getitem__", [](const Array& x, py::handle i) { return index(x, to_index(i)); })
      .def("_at_apply",
           [](const Array& x, py::handle i, const std::string& op, py::handle v) {
             AtRef r{x, to_index(i)};
             if (op == "get") return r.get();
             Array val = to_array(v);
             if (op == "set") return r.set(val);
             if (op == "add") return r.add(val);
             if (op == "multiply") return r.mul(val);
             if (op == "min") return r.min(val);
             if (op == "max") return r.max(val);
             throw py::value_error("unknown .at[] operation " + op);
           })
      .def("astype", [](const Array& x, py::handle d) { return x.astype(to_dtype(d)); })
      .def("reshape",
           [](const Array& x, py::args shape) {
             if (shape.size() == 1 && !py::isinstance<py::int_>(shape[0])) return reshape(x, to_shape(shape[0]));
             return reshape(x, to_shape(shape));
           })
      .def("block_until_ready", [](const Array& x) { return x; })
      .def("__neg__", [](const Array& x) { return negative(x); })
      .def("__pos__", [](const Array& x) { return x; })
      .def("__abs__", [](const Array& x) { return abs(x); })
      .def("__invert__", [](const Array& x) { return is_bool(x.dtype()) ? logical_not(x) : bitwise_not(x); });

  // binary operators, both ways round (a Python scalar on either side stays weakly typed)
  using Bin = Array (*)(const Array&, const Array&);
  // `same` (the primitive itself) when both operands are arrays of one type and shape: NumPy's
  // promotion and broadcasting have nothing to do then, and the eager call is that much cheaper
  auto binop = [&](const char* name, const char* rname, Bin f, Bin same = nullptr) {
    arr.def(name, [f, same](const Array& a, py::handle b) {
      if (same && py::isinstance<Array>(b)) {
        const Array& y = b.cast<const Array&>();
        if (a.dtype() == y.dtype() && !a.weak_type() && !y.weak_type() && a.shape() == y.shape()) return same(a, y);
        return f(a, y);
      }
      return f(a, to_array(b));
    }, py::is_operator());
    if (rname) arr.def(rname, [f](const Array& a, py::handle b) { return f(to_array(b), a); }, py::is_operator());
  };
  binop("__add__", "__radd__", &add, &lax::add);
  binop("__sub__", "__rsub__", &subtract, &lax::sub);
  binop("__mul__", "__rmul__", &multiply, &lax::mul);
  binop("__truediv__", "__rtruediv__", &divide);
  binop("__floordiv__", "__rfloordiv__", &floor_divide);
  binop("__mod__", "__rmod__", &remainder);
  binop("__pow__", "__rpow__", &power);
  binop("__matmul__", "__rmatmul__", &matmul);
  binop("__and__", "__rand__", [](const Array& a, const Array& b) {
    return is_bool(a.dtype()) ? logical_and(a, b) : bitwise_and(a, b);
  });
  binop("__or__", "__ror__", [](const Array& a, const Array& b) {
    return is_bool(a.dtype()) ? logical_or(a, b) : bitwise_or(a, b);
  });
  binop("__xor__", "__rxor__", [](const Array& a, const Array& b) {
    return is_bool(a.dtype()) ? logical_xor(a, b) : bitwise_xor(a, b);
  });
  binop("__lt__", nullptr, &less);
  binop("__le__", nullptr, &less_equal);
  binop("__gt__", nullptr, &greater);
  binop("__ge__", nullptr, &greater_equal);
  binop("__eq__", nullptr, &equal);
  binop("__ne__", nullptr, &not_equal);
  install_fast_arithmetic(arr);
}

}  // namespace graft::python
