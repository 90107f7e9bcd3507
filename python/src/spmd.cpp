// SPMD over a mesh of devices (graft.sharding and graft.shard_map wrap these).
#include "common.h"

namespace graft::python {

using namespace pybind11::literals;

void bind_spmd(py::module_& m) {
  // SPMD over a mesh of devices (graft.sharding and graft.shard_map wrap these)
  py::class_<GlobalDevice>(m, "Device")
      .def_readonly("id", &GlobalDevice::id)
      .def_readonly("process_index", &GlobalDevice::process_index)
      .def("__repr__", [](const GlobalDevice& d) { return "Device(" + d.str() + ")"; });
  m.def("devices", &devices);
  m.def("local_devices", &local_devices);
  m.def("process_index", &process_index);
  m.def("process_count", &process_count);
  m.def("distributed_initialize", &distributed::initialize);
  py::class_<Mesh>(m, "Mesh")
      .def(py::init([](std::vector<GlobalDevice> d, std::vector<std::string> names, py::handle shape) {
             return Mesh(std::move(d), std::move(names), shape.is_none() ? Shape{} : to_shape(shape));
           }),
           "devices"_a, "axis_names"_a, "shape"_a = py::none())
      .def_property_readonly("axis_names", &Mesh::axis_names)
      .def_property_readonly("shape", [](const Mesh& m) { return shape_tuple(m.shape()); })
      .def_property_readonly("size", &Mesh::size)
      .def("__repr__", &Mesh::str);
  auto to_spec = [](py::handle h) {
    PartitionSpec p;
    if (h.is_none()) return p;
    for (auto e : h) p.dims.push_back(e.is_none() ? std::nullopt : std::optional<std::string>(e.cast<std::string>()));
    return p;
  };
  m.def("shard_map", [to_spec](py::function f, const Mesh& mesh, py::handle in_specs, py::handle out_specs,
                               py::handle args) {
    std::vector<PartitionSpec> ins, outs;
    for (auto h : in_specs) ins.push_back(to_spec(h));
    for (auto h : out_specs) outs.push_back(to_spec(h));
    return shard_map_flat(flat_fn(f), mesh, ins, outs, to_arrays(args));
  });
}

}  // namespace graft::python
