// SPMD over a mesh of devices (graft.sharding and graft.shard_map wrap these).
#include "common.h"

#include <map>
#include <mutex>

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
    for (auto e : h) {
      SpecDim d;  // None, an axis name, or a tuple of them (one dimension over several axes, the major first)
      if (py::isinstance<py::str>(e)) {
        d.axes.push_back(e.cast<std::string>());
      } else if (!e.is_none()) {
        for (auto a : e) d.axes.push_back(a.cast<std::string>());
      }
      p.dims.push_back(std::move(d));
    }
    return p;
  };
  auto spec_tuple = [](const PartitionSpec& p) {
    py::list l;
    for (auto& d : p.dims) {
      if (d.axes.size() == 1) {
        l.append(py::str(d.axes[0]));
      } else if (d.axes.empty()) {
        l.append(py::none());
      } else {
        l.append(py::tuple(py::cast(d.axes)));
      }
    }
    return py::tuple(l);
  };
  py::class_<NamedSharding>(m, "NamedSharding")
      .def(py::init([to_spec](const Mesh& mesh, py::handle spec) { return NamedSharding{mesh, to_spec(spec)}; }),
           "mesh"_a, "spec"_a)
      .def_readonly("mesh", &NamedSharding::mesh)
      .def_property_readonly("spec", [spec_tuple](const NamedSharding& s) { return spec_tuple(s.spec); })
      .def("shard_shape", [](const NamedSharding& s, py::handle shape) { return shape_tuple(s.shard_shape(to_shape(shape))); })
      .def("__repr__", [](const NamedSharding& s) { return "NamedSharding(" + s.mesh.str() + ", " + s.spec.str() + ")"; });
  py::class_<ShardedArray>(m, "ShardedArray")
      .def_property_readonly("shape", [](const ShardedArray& x) { return shape_tuple(x.shape()); })
      .def_property_readonly("dtype", [](const ShardedArray& x) { return numpy_dtype(x.dtype()); })
      .def_property_readonly("ndim", &ShardedArray::ndim)
      .def_property_readonly("sharding", &ShardedArray::sharding)
      .def_property_readonly("addressable_shards",
                             [](const ShardedArray& x) {
                               py::list l;
                               for (auto& sh : x.addressable_shards()) {
                                 py::list index;
                                 for (auto [a, b] : sh.index) index.append(py::slice(a, b, 1));
                                 l.append(py::make_tuple(sh.device, py::tuple(index), sh.data));
                               }
                               return l;
                             })
      .def("is_fully_addressable", &ShardedArray::is_fully_addressable)
      .def("gather", &ShardedArray::gather, "The whole array (a collective across processes).")
      .def("__array__", [](const ShardedArray& x, py::args, py::kwargs) { return to_numpy(x.gather()); })
      .def("__repr__", &ShardedArray::str);
  m.def("device_put_sharded", [](py::handle x, const NamedSharding& s) { return device_put(to_array(x), s); });
  m.def("with_sharding_constraint", [](py::handle x, const NamedSharding& s) { return with_sharding_constraint(to_array(x), s); });
  // sharded jit: one "argument" per leaf (Python broadcasts its pytrees of shardings to the leaves)
  struct PyPjit {
    JitFunction jit;
    std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
    std::shared_ptr<std::map<std::string, std::vector<PartitionSpec>>> record =
        std::make_shared<std::map<std::string, std::vector<PartitionSpec>>>();
  };
  py::class_<PyPjit>(m, "Pjit")
      .def(py::init([](const std::string& name, std::vector<int> donate) {
             return PyPjit{JitFunction(JitOptions{.name = name, .donate_argnums = std::move(donate)})};
           }),
           py::arg("name"), py::arg("donate_argnums") = std::vector<int>{})
      // in: one sharding per leaf; offsets: where each positional argument's leaves start (and the end),
      // for donate_argnums
      .def("call",
           [spec_tuple](PyPjit& self, py::function f, py::handle args, std::vector<std::optional<NamedSharding>> in,
                        std::vector<std::optional<NamedSharding>> out, std::optional<Mesh> mesh, const std::string& key,
                        std::vector<size_t> offsets) {
             std::vector<Array> leaves = to_arrays(args);
             if (offsets.empty())
               for (size_t i = 0; i <= leaves.size(); ++i) offsets.push_back(i);
             if (offsets.back() != leaves.size() || in.size() != leaves.size())
               throw ValueError("jit: the argument offsets or in_shardings do not match the " + std::to_string(leaves.size()) +
                                " leaves");
             std::vector<std::vector<std::optional<NamedSharding>>> per_arg;
             for (size_t a = 0; a + 1 < offsets.size(); ++a)
               per_arg.emplace_back(in.begin() + static_cast<std::ptrdiff_t>(offsets[a]),
                                    in.begin() + static_cast<std::ptrdiff_t>(offsets[a + 1]));
             PjitOptions o{.in_leaf_shardings = std::move(per_arg), .out_shardings = std::move(out), .mesh = std::move(mesh)};
             detail::PjitSetup s = detail::pjit_setup(o);
             s.mu = self.mu;
             s.out_specs = self.record;
             FlatCall c;
             c.fn = flat_fn(f);
             c.leaves = leaves;
             c.offset = offsets;
             c.traced.assign(offsets.size() - 1, true);
             c.key = key;
             std::vector<PartitionSpec> specs;
             std::vector<Array> r = detail::pjit_call(self.jit, s, c, detail::leaf_specs(s, c), &specs);
             py::list sh;
             for (auto& p : specs) sh.append(NamedSharding{*s.mesh, p});
             return py::make_tuple(r, sh);
           },
           py::arg("f"), py::arg("args"), py::arg("in_shardings"), py::arg("out_shardings"), py::arg("mesh"), py::arg("key"),
           py::arg("offsets") = std::vector<size_t>{})
      .def_property_readonly("num_traces", [](const PyPjit& self) { return self.jit.num_traces(); });
  m.def("shard_map", [to_spec](py::function f, const Mesh& mesh, py::handle in_specs, py::handle out_specs,
                               py::handle args) {
    std::vector<PartitionSpec> ins, outs;
    for (auto h : in_specs) ins.push_back(to_spec(h));
    for (auto h : out_specs) outs.push_back(to_spec(h));
    return shard_map_flat(flat_fn(f), mesh, ins, outs, to_arrays(args));
  });
}

}  // namespace graft::python
