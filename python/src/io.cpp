// NumPy's files and exported programs (graft.io, graft.export).
#include "graft/io/npy.h"
#include "graft/io/onnx.h"
#include "common.h"

namespace graft::python {

using namespace pybind11::literals;

void bind_io(py::module_& m) {
  // NumPy's files (graft.io)
  m.def("save_npy", [](const std::string& path, py::handle x) { io::save_npy(path, to_array(x)); });
  m.def("load_npy", &io::load_npy);
  m.def("save_npz", [](const std::string& path, const py::dict& arrays) {
    io::TensorMap t;
    for (auto [k, v] : arrays) t[k.cast<std::string>()] = to_array(v);
    io::save_npz(path, t);
  });
  m.def("load_npz", [](const std::string& path) {
    py::dict d;
    for (auto& [k, v] : io::load_npz(path)) d[py::str(k)] = v;
    return d;
  });

  // Exported programs and the text format (graft.export)
  py::class_<Exported>(m, "Exported")
      .def_property_readonly("name", &Exported::name)
      .def_property_readonly("in_names", &Exported::in_names)
      .def_property_readonly("out_names", &Exported::out_names)
      .def_property_readonly("in_types", [](const Exported& e) {
        std::vector<std::string> t;
        for (auto& a : e.in_avals()) t.push_back(a.str());
        return t;
      })
      .def_property_readonly("out_types", [](const Exported& e) {
        std::vector<std::string> t;
        for (auto& a : e.out_avals()) t.push_back(a.str());
        return t;
      })
      .def_property_readonly("text", [](const Exported& e) { return e.jaxpr().str(); })
      .def("call", [](const Exported& e, py::handle args) { return e.call(to_arrays(args)); })
      .def("save", [](const Exported& e, const std::string& path) {
        py::gil_scoped_release nogil;
        e.save(path);
      })
      .def("serialize", [](const Exported& e) { return py::bytes(e.serialize()); })
      .def("onnx", [](const Exported& e) { return py::bytes(io::onnx_model_bytes(e)); });
  m.def("export", [](py::function f, py::handle args, const std::string& name, std::vector<std::string> in_names,
                     std::vector<std::string> out_names) {
    std::vector<Aval> avals;
    for (auto& x : to_arrays(args)) avals.push_back(x.aval());
    return Exported::from_jaxpr(make_jaxpr_flat(flat_fn(f), avals),
                                {.name = name, .in_names = std::move(in_names), .out_names = std::move(out_names)});
  });
  m.def("load_exported", [](const std::string& path) { return load_exported(path); });
  m.def("deserialize_exported", [](const py::bytes& b) { return deserialize_exported(std::string(b)); });
  m.def("parse_jaxpr", [](const std::string& text) { return parse_jaxpr(text).str(); });
}

}  // namespace graft::python
