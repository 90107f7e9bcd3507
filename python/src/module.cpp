// graft's Python extension, `graft._graft`: arrays (NumPy's buffer protocol both ways), the operations,
// and the transformations over flat lists of arrays. The package in python/graft adds pytrees and
// JAX's interface on top (grad, vmap, jit, ... over Python callables).
//
// The GIL is held while Python code may run (tracing calls back into it) and released while a jitted
// program executes.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <sstream>

#include "graft/graft.h"
#include "graft/io/npy.h"
#include "graft/io/onnx.h"
#include "graft/transforms/jit.h"

namespace py = pybind11;
using namespace graft;
using namespace pybind11::literals;

namespace {

// ---- dtypes ------------------------------------------------------------------------------------------
// NumPy has no bfloat16: graft's bf16 arrays convert to float32 for NumPy, and `dtype` reports the
// name as a string.
std::optional<DType> dtype_of_numpy(const py::dtype& d) {
  char kind = d.kind();
  size_t size = static_cast<size_t>(d.itemsize());
  if (kind == 'b') return DType::bool_;
  if (kind == 'f') {
    if (size == 2) return DType::f16;
    if (size == 4) return DType::f32;
    if (size == 8) return DType::f64;
  }
  if (kind == 'i') {
    if (size == 1) return DType::i8;
    if (size == 2) return DType::i16;
    if (size == 4) return DType::i32;
    if (size == 8) return DType::i64;
  }
  if (kind == 'u') {
    if (size == 1) return DType::u8;
    if (size == 2) return DType::u16;
    if (size == 4) return DType::u32;
    if (size == 8) return DType::u64;
  }
  return std::nullopt;
}

/// A dtype from a name ('float32', 'f32', 'bfloat16'), a NumPy dtype or scalar type (np.float32), or
/// a graft dtype name.
DType to_dtype(py::handle h) {
  if (py::isinstance<py::str>(h)) return parse_dtype(h.cast<std::string>());
  py::dtype d = py::dtype::from_args(py::reinterpret_borrow<py::object>(h));
  if (auto r = dtype_of_numpy(d)) return *r;
  throw py::type_error("graft has no dtype for " + std::string(py::str(h)));
}

py::object numpy_dtype(DType d) {
  if (d == DType::bf16) return py::str("bfloat16");
  return py::dtype(std::string(long_name(d)));
}

// ---- conversions ---------------------------------------------------------------------------------------
Array from_numpy(const py::array& a, std::optional<DType> want) {
  auto d = dtype_of_numpy(a.dtype());
  if (!d) throw py::type_error("graft has no dtype for NumPy's " + std::string(py::str(a.dtype())));
  Shape s(a.shape(), a.shape() + a.ndim());
  auto dense = py::array::ensure(a, py::array::c_style);
  Array out = Array::empty(Aval(s, *d));
  if (out.size() > 0) std::memcpy(out.concrete()->data(), dense.data(), static_cast<size_t>(out.size()) * itemsize(*d));
  return want && *want != *d ? out.astype(*want) : out;
}

/// Any Python value graft takes as an array: an Array, a Python scalar (weakly typed, as in JAX), a
/// NumPy array or anything NumPy turns into one (lists, NumPy scalars).
Array to_array(py::handle h, std::optional<DType> want = std::nullopt) {
  Array r;
  if (py::isinstance<Array>(h)) {
    r = h.cast<Array>();
  } else if (py::isinstance<py::bool_>(h)) {
    r = Array(h.cast<bool>());
  } else if (py::isinstance<py::int_>(h)) {
    r = Array(h.cast<int64_t>());
  } else if (py::isinstance<py::float_>(h)) {
    r = Array(h.cast<double>());
  } else if (py::hasattr(h, "__dlpack__") && !py::isinstance<py::array>(h) && py::hasattr(h, "numpy")) {
    // a torch tensor and the like: through NumPy (shares memory where the producer allows)
    r = from_numpy(py::array::ensure(h.attr("numpy")()), std::nullopt);
  } else {
    py::array a = py::array::ensure(h);
    if (!a) throw py::type_error("graft cannot make an array of " + std::string(py::str(py::type::of(h))));
    r = from_numpy(a, std::nullopt);
  }
  return want && r.dtype() != *want ? r.astype(*want) : r;
}

std::vector<Array> to_arrays(const py::handle& seq) {
  std::vector<Array> r;
  for (auto h : seq) r.push_back(to_array(h));
  return r;
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (size_t i = 0; i < s.size(); ++i) t[i] = s[i];
  return t;
}

Shape to_shape(py::handle h) {
  if (py::isinstance<py::int_>(h)) return Shape{h.cast<int64_t>()};
  Shape s;
  for (auto e : h) s.push_back(e.cast<int64_t>());
  return s;
}

AxisArg to_axis(py::handle h) {
  if (h.is_none()) return AxisArg();
  if (py::isinstance<py::int_>(h)) return AxisArg(h.cast<int64_t>());
  Axes a;
  for (auto e : h) a.push_back(e.cast<int64_t>());
  return AxisArg(a);
}

/// A NumPy view of a concrete array's storage (read-only: graft's arrays are immutable). bf16 arrays
/// come back as a float32 copy.
/// The value a traced array stands for where its transformation knows it (grad, jvp, a tape), else null.
std::optional<Array> known_value(const Array& x) {
  if (x.is_concrete()) return x;
  if (!x.is_tracer()) return std::nullopt;
  std::optional<Array> v = x.tracer()->concrete_value();
  while (v && !v->is_concrete() && v->is_tracer()) v = v->tracer()->concrete_value();
  return v && v->is_concrete() ? v : std::nullopt;
}

py::array to_numpy(const Array& arg) {
  std::optional<Array> known = known_value(arg);
  if (!known)
    throw ConcretizationError("this value is traced (" + arg.aval().str() +
                              "): it has no data until the transformed function runs (NumPy conversion)");
  if (!known->device().is_cpu()) return to_numpy(known->concretize("NumPy conversion"));  // read back from the device
  const Array& x = *known;
  if (x.dtype() == DType::bf16) return to_numpy(x.astype(DType::f32));
  std::vector<py::ssize_t> shape(x.shape().begin(), x.shape().end()), strides(shape.size());
  py::ssize_t st = static_cast<py::ssize_t>(itemsize(x.dtype()));
  for (size_t k = shape.size(); k-- > 0;) {
    strides[k] = st;
    st *= std::max<py::ssize_t>(shape[k], 1);
  }
  py::object owner = py::cast(x);  // keeps the storage alive as long as the view
  py::array a(py::dtype(std::string(long_name(x.dtype()))), shape, strides, x.raw_data(), owner);
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

// ---- DLPack (the tensor exchange ABI of NumPy, PyTorch, JAX; structures as its specification gives) ------
struct DLDevice {
  int32_t device_type;  // kDLCPU = 1
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

DLDataType dl_dtype(DType d) {
  uint8_t bits = static_cast<uint8_t>(itemsize(d) * 8);
  if (d == DType::bool_) return {6, 8, 1};
  if (d == DType::bf16) return {4, 16, 1};
  if (is_floating(d)) return {2, bits, 1};
  return {static_cast<uint8_t>(is_unsigned(d) ? 1 : 0), bits, 1};
}

DType from_dl_dtype(DLDataType t) {
  if (t.lanes != 1) throw py::type_error("from_dlpack: vector dtypes (lanes != 1) are not supported");
  for (int i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    DLDataType e = dl_dtype(d);
    if (e.code == t.code && e.bits == t.bits) return d;
  }
  throw py::type_error("from_dlpack: no graft dtype for DLPack type code " + std::to_string(t.code) + " of " +
                       std::to_string(t.bits) + " bits");
}

// What an exported tensor keeps alive: the array (its storage) and the shape / strides arrays.
struct DlExport {
  Array keep;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

/// x.__dlpack__(): a capsule that shares x's storage (no copy).
py::capsule to_dlpack(const Array& arg) {
  std::optional<Array> known = known_value(arg);
  if (!known) throw ConcretizationError("__dlpack__: a traced value (" + arg.aval().str() + ") has no data to share");
  auto* ex = new DlExport{*known, {}, {}, {}};
  ex->shape.assign(ex->keep.shape().begin(), ex->keep.shape().end());
  ex->strides.resize(ex->shape.size());
  int64_t st = 1;
  for (size_t k = ex->shape.size(); k-- > 0;) {
    ex->strides[k] = st;
    st *= std::max<int64_t>(ex->shape[k], 1);
  }
  DLTensor& t = ex->managed.dl_tensor;
  t.data = const_cast<void*>(ex->keep.raw_data());
  t.device = {1, 0};
  t.ndim = static_cast<int32_t>(ex->shape.size());
  t.dtype = dl_dtype(ex->keep.dtype());
  t.shape = ex->shape.data();
  t.strides = ex->strides.data();
  t.byte_offset = 0;
  ex->managed.manager_ctx = ex;
  ex->managed.deleter = [](DLManagedTensor* self) { delete static_cast<DlExport*>(self->manager_ctx); };
  // a capsule nobody consumed frees the tensor; a consumer renames it "used_dltensor" and owns it
  return py::capsule(&ex->managed, "dltensor", [](PyObject* cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      if (m && m->deleter) m->deleter(m);
    }
  });
}

// Storage of a tensor received through DLPack: the producer's deleter runs when graft lets go.
class DlBuffer final : public Buffer {
 public:
  DlBuffer(DLManagedTensor* m, void* data, size_t nbytes) : Buffer(data, nbytes, Device::cpu(), nullptr), m_(m) {}
  ~DlBuffer() override {
    if (m_ && m_->deleter) m_->deleter(m_);
  }
  bool reusable() const override { return false; }  // lent memory: never donated or written by graft

 private:
  DLManagedTensor* m_;
};

/// gf.from_dlpack(x): an array over x's memory — no copy when it is row-major (graft never writes into
/// it: the buffer is not reusable); a copy of a strided tensor.
Array from_dlpack(py::handle producer) {
  py::object cap = py::hasattr(producer, "__dlpack__") ? producer.attr("__dlpack__")()
                                                       : py::reinterpret_borrow<py::object>(producer);
  if (!PyCapsule_IsValid(cap.ptr(), "dltensor"))
    throw py::type_error("from_dlpack: expects an object with __dlpack__ or an unused DLPack capsule");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  PyCapsule_SetName(cap.ptr(), "used_dltensor");  // graft owns it now
  struct Release {  // the producer's deleter, unless a buffer took the tensor over
    DLManagedTensor* m;
    ~Release() {
      if (m && m->deleter) m->deleter(m);
    }
  } release{m};
  const DLTensor& t = m->dl_tensor;
  if (t.device.device_type != 1)  // DLPack's kDLCPU
    throw py::value_error("from_dlpack: only CPU tensors (device type 1), got device type " +
                          std::to_string(t.device.device_type));
  DType d = from_dl_dtype(t.dtype);
  Shape shape(t.shape, t.shape + t.ndim);
  bool dense = true;
  int64_t st = 1;
  for (int32_t k = t.ndim; k-- > 0;) {
    if (t.strides && shape[static_cast<size_t>(k)] > 1 && t.strides[k] != st) dense = false;
    st *= std::max<int64_t>(shape[static_cast<size_t>(k)], 1);
  }
  char* base = static_cast<char*>(t.data) + t.byte_offset;
  size_t nbytes = static_cast<size_t>(numel(shape)) * itemsize(d);
  if (dense && reinterpret_cast<uintptr_t>(base) % itemsize(d) == 0 && nbytes > ConcreteNode::kInlineBytes) {
    Ref<Buffer> buf(new DlBuffer(m, base, nbytes));
    release.m = nullptr;
    return Array(Ref<ArrayNode>(new ConcreteNode(Aval(shape, d), buf, 0)));
  }
  // a copy, element by element along the producer's strides
  Array out = Array::empty(Aval(shape, d));
  char* dst = static_cast<char*>(out.concrete()->data());
  size_t isz = itemsize(d);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < numel(shape); ++e) {
    int64_t off = 0;
    for (size_t k = 0; k < shape.size(); ++k) off += idx[k] * (t.strides ? t.strides[k] : 1);
    if (!t.strides) off = e;
    std::memcpy(dst + static_cast<size_t>(e) * isz, base + off * static_cast<int64_t>(isz), isz);
    for (size_t k = shape.size(); k-- > 0;) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

// ---- indexing ------------------------------------------------------------------------------------------
IndexItem index_item(py::handle h) {
  if (h.is_none()) return IndexItem(newaxis);
  if (h.ptr() == Py_Ellipsis) return IndexItem(ellipsis);
  if (py::isinstance<py::bool_>(h)) return IndexItem(to_array(h));
  if (py::isinstance<py::int_>(h)) return IndexItem(h.cast<int64_t>());
  if (py::isinstance<py::slice>(h)) {
    auto get = [&](const char* f) -> std::optional<int64_t> {
      py::object v = h.attr(f);
      if (v.is_none()) return std::nullopt;
      return v.cast<int64_t>();
    };
    auto step = get("step");
    return IndexItem(slice(get("start"), get("stop"), step.value_or(1)));
  }
  return IndexItem(to_array(h));
}

Index to_index(py::handle h) {
  Index idx;
  if (py::isinstance<py::tuple>(h)) {
    for (auto e : h) idx.push_back(index_item(e));
  } else {
    idx.push_back(index_item(h));
  }
  return idx;
}

// ---- printing ------------------------------------------------------------------------------------------
std::string array_repr(const Array& x) {
  if (!known_value(x)) return "Traced<" + x.aval().str() + ">";
  py::object np = py::module_::import("numpy");
  py::array a = to_numpy(x);
  std::string body = py::str(np.attr("array2string")(a, "separator"_a = ", ", "prefix"_a = "Array("));
  std::string s = "Array(" + body;
  s += ", dtype=" + std::string(long_name(x.dtype()));  // as JAX prints it
  if (x.weak_type()) s += ", weak_type=True";
  return s + ")";
}

// ---- transformations over Python callables ---------------------------------------------------------------
/// A Python function of a list of arrays returning a list (or tuple) of arrays, as a FlatFn. Errors
/// raised in Python propagate through graft as pybind11's error_already_set.
FlatFn flat_fn(py::function f) {
  return [f](const std::vector<Array>& xs) {
    py::list args;
    for (auto& x : xs) args.append(py::cast(x));
    py::object out = f(args);
    return to_arrays(out);
  };
}

std::vector<std::optional<int64_t>> to_axes_list(const py::handle& h) {
  std::vector<std::optional<int64_t>> r;
  for (auto e : h) r.push_back(e.is_none() ? std::nullopt : std::optional<int64_t>(e.cast<int64_t>()));
  return r;
}

/// jit over Python callables: the shared front end (graft::JitFunction, the same one the C++ jit uses)
/// on the call Python flattened; the Python side keys the cache on the pytree structure and the static
/// arguments, and the front end appends the arrays' types.
///
/// The common call — positional arrays only, no static arguments — has a fast path that stays in C++
/// (call_cached): its key is the arrays' types, and the entry remembers how to rebuild the outputs.
class PyJit {
 public:
  PyJit(std::string name, std::vector<int> donate, py::object unflatten, std::vector<std::string> polymorphic,
        std::vector<int64_t> buckets)
      : jit_(JitOptions{std::move(name), std::move(donate), std::move(polymorphic), std::move(buckets)}),
        unflatten_(std::move(unflatten)) {}

  /// A call: `key` names the structure and static values, `leaves` the arrays of the traced
  /// arguments (positional ones, then keywords), `offset[a]` where positional argument a's leaves
  /// start (len(args) + 1 entries), `traced[a]` whether it is traced (static arguments are not).
  std::vector<Array> call(py::function f, std::string key, std::vector<Array> leaves, const std::vector<size_t>& offset,
                          const std::vector<bool>& traced) {
    FlatCall c;
    c.fn = flat_fn(std::move(f));
    c.leaves = std::move(leaves);
    c.offset.assign(offset.begin(), offset.end());
    c.traced.assign(traced.begin(), traced.end());
    c.key = std::move(key);
    return jit_(c);
  }
  size_t num_compiles() const { return jit_.num_compiles(); }
  size_t num_traces() const { return jit_.num_traces(); }

  /// The fast path: the cached result for positional arrays `args`, or None when this call needs the
  /// general path (other arguments, or not traced yet).
  py::object call_cached(const py::args& args) {
    std::vector<Array> leaves;
    leaves.reserve(args.size());
    for (auto h : args) {
      if (!py::isinstance<Array>(h)) return py::none();
      leaves.push_back(h.cast<Array>());
    }
    std::string k = fast_key(leaves);
    auto it = fast_.find(k);
    if (it == fast_.end()) return py::none();
    std::vector<Array> outs = run(*it->second.entry, leaves);
    if (it->second.shape == Shape::single) return py::cast(outs[0]);
    if (it->second.shape == Shape::tuple) {
      py::tuple t(outs.size());
      for (size_t i = 0; i < outs.size(); ++i) t[i] = py::cast(std::move(outs[i]));
      return t;
    }
    return unflatten_(it->second.out_tree, outs);
  }

  /// After the general path traced positional arrays `args`: remember the entry for the fast path.
  /// `shape`: "leaf" (one array), "tuple" (a flat tuple of arrays) or anything else (unflattened in Python).
  void remember(const py::tuple& args, py::object out_tree, const std::string& shape) {
    std::vector<Array> leaves;
    for (auto h : args) leaves.push_back(h.cast<Array>());
    std::string k = fast_key(leaves);
    auto entry = jit_.cached(k);
    if (!entry) return;  // not cacheable (it closed over a value of an enclosing transformation)
    fast_[k] = Fast{entry, std::move(out_tree),
                    shape == "leaf" ? Shape::single : shape == "tuple" ? Shape::tuple : Shape::other};
  }

  /// The key the general path uses for positional arrays, so that both paths share entries.
  static std::string fast_prefix(size_t n) { return "A" + std::to_string(n) + "|"; }

 private:
  enum class Shape { single, tuple, other };
  struct Fast {
    std::shared_ptr<const detail::JitEntry> entry;
    py::object out_tree;
    Shape shape = Shape::other;
  };

  std::string fast_key(const std::vector<Array>& leaves) const {
    std::string k = fast_prefix(leaves.size());
    detail::append_aval_key(k, leaves);
    return k;
  }

  std::vector<Array> run(const detail::JitEntry& e, const std::vector<Array>& leaves) {
    // a concrete call runs compiled code only: other Python threads may run meanwhile
    bool eager = std::all_of(leaves.begin(), leaves.end(), [](const Array& x) { return x.is_concrete(); });
    std::optional<py::gil_scoped_release> release;
    if (eager) release.emplace();
    return jit_.run(e, leaves);
  }

  JitFunction jit_;
  py::object unflatten_;
  std::unordered_map<std::string, Fast> fast_;
};

}  // namespace

PYBIND11_MODULE(_graft, m) {
  m.doc() = "graft's C++ core: arrays, operations and transformations over flat lists of arrays";

  // errors: the base first (pybind11 tries the translators registered last first)
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<ShapeError> shape_error(m, "ShapeError", PyExc_ValueError);
  static py::exception<ConcretizationError> concretization_error(m, "ConcretizationError", PyExc_TypeError);
  static py::exception<TracerLeakError> leak_error(m, "UnexpectedTracerError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConcretizationError& e) {
      concretization_error(e.what());
    } catch (const TracerLeakError& e) {
      leak_error(e.what());
    } catch (const ShapeError& e) {
      shape_error(e.what());
    } catch (const graft::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const graft::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const graft::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const graft::MemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const graft::IOError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const graft::FloatingPointError& e) {
      PyErr_SetString(PyExc_FloatingPointError, e.what());
    } catch (const graft::RecursionError& e) {
      PyErr_SetString(PyExc_RecursionError, e.what());
    } catch (const Error& e) {
      error(e.what());
    }
  });

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

  // ---- operations (graft.numpy and graft.lax call these) ----------------------------------------------------
  m.def("asarray", [](py::handle h, py::object d) {
    return to_array(h, d.is_none() ? std::nullopt : std::optional<DType>(to_dtype(d)));
  }, "x"_a, "dtype"_a = py::none());
  m.def("from_dlpack", &from_dlpack, "x"_a);
  // devices: "cpu", "cuda", "cuda:1" (JAX's device_put commits the array there)
  m.def("device_put", [](py::handle x, const std::string& d) { return device_put(to_array(x), parse_device(d)); }, "x"_a,
        "device"_a);
  m.def("default_device_name", [] { return default_device().str(); });
  struct DefaultDeviceScope {
    Device d;
    std::unique_ptr<DefaultDevice> on;
  };
  py::class_<DefaultDeviceScope>(m, "DefaultDevice")
      .def(py::init([](const std::string& d) { return DefaultDeviceScope{parse_device(d), nullptr}; }), "device"_a)
      .def("__enter__", [](DefaultDeviceScope& s) { s.on = std::make_unique<DefaultDevice>(s.d); })
      .def("__exit__", [](DefaultDeviceScope& s, py::args) { s.on.reset(); });
  m.def("canonical_dtype", [](py::handle d) { return std::string(long_name(to_dtype(d))); });
  using Un = Array (*)(const Array&);
  auto unary = [&](const char* name, Un f) { m.def(name, [f](py::handle x) { return f(to_array(x)); }, "x"_a); };
  unary("negative", &negative);
  unary("abs", &abs);
  unary("sign", &sign);
  unary("floor", &floor);
  unary("ceil", &ceil);
  unary("round", &graft::round);
  unary("exp", &exp);
  unary("exp2", &exp2);
  unary("log", &log);
  unary("log1p", &log1p);
  unary("log2", &log2);
  unary("log10", &log10);
  unary("expm1", &expm1);
  unary("sqrt", &sqrt);
  unary("rsqrt", &rsqrt);
  unary("cbrt", &cbrt);
  unary("square", &square);
  unary("reciprocal", &reciprocal);
  unary("sin", &sin);
  unary("cos", &cos);
  unary("tan", &tan);
  unary("arcsin", &arcsin);
  unary("arccos", &arccos);
  unary("arctan", &arctan);
  unary("sinh", &sinh);
  unary("cosh", &cosh);
  unary("tanh", &tanh);
  unary("arcsinh", &arcsinh);
  unary("arccosh", &arccosh);
  unary("arctanh", &arctanh);
  unary("erf", &erf);
  unary("erfc", &erfc);
  unary("erf_inv", &erfinv);
  unary("sigmoid", &sigmoid);
  unary("isfinite", &isfinite);
  unary("isnan", &isnan);
  unary("isinf", &isinf);
  unary("logical_not", &logical_not);
  unary("stop_gradient", &stop_gradient);
  unary("relu", &relu);
  unary("relu6", &relu6);
  unary("silu", &silu);
  unary("softplus", &softplus);
  unary("log_sigmoid", &log_sigmoid);
  unary("ravel", &ravel);
  m.def("gelu", [](py::handle x, bool approximate) { return gelu(to_array(x), approximate); }, "x"_a,
        "approximate"_a = true);
  auto binary = [&](const char* name, Bin f) {
    m.def(name, [f](py::handle a, py::handle b) { return f(to_array(a), to_array(b)); }, "x"_a, "y"_a);
  };
  binary("add", &add);
  binary("subtract", &subtract);
  binary("multiply", &multiply);
  binary("divide", &divide);
  binary("floor_divide", &floor_divide);
  binary("remainder", &remainder);
  binary("power", &power);
  binary("maximum", &maximum);
  binary("minimum", &minimum);
  binary("arctan2", &arctan2);
  binary("logaddexp", &logaddexp);
  binary("logical_and", &logical_and);
  binary("logical_or", &logical_or);
  binary("logical_xor", &logical_xor);
  binary("equal", &equal);
  binary("not_equal", &not_equal);
  binary("less", &less);
  binary("less_equal", &less_equal);
  binary("greater", &greater);
  binary("greater_equal", &greater_equal);
  binary("matmul", &matmul);
  binary("dot", &dot);
  binary("vdot", &vdot);
  binary("inner", &inner);
  binary("outer", &outer);
  m.def("where", [](py::handle c, py::handle x, py::handle y) { return where(to_array(c), to_array(x), to_array(y)); });
  m.def("clip", [](py::handle x, py::handle lo, py::handle hi) {
    auto opt = [](py::handle h) { return h.is_none() ? std::nullopt : std::optional<Array>(to_array(h)); };
    return clip(to_array(x), opt(lo), opt(hi));
  }, "x"_a, "min"_a = py::none(), "max"_a = py::none());
  using Red = Array (*)(const Array&, AxisArg, bool);
  auto reduction = [&](const char* name, Red f) {
    m.def(name, [f](py::handle x, py::handle axis, bool keepdims) { return f(to_array(x), to_axis(axis), keepdims); },
          "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  };
  reduction("sum", &sum);
  reduction("prod", &prod);
  reduction("max", &max);
  reduction("min", &min);
  reduction("mean", &mean);
  reduction("all", &all);
  reduction("any", &any);
  reduction("logsumexp", &logsumexp);
  reduction("norm", &norm);
  m.def("var", [](py::handle x, py::handle axis, bool keepdims, int64_t ddof) {
    return var(to_array(x), to_axis(axis), keepdims, ddof);
  }, "x"_a, "axis"_a = py::none(), "keepdims"_a = false, "ddof"_a = 0);
  m.def("std", [](py::handle x, py::handle axis, bool keepdims, int64_t ddof) {
    return graft::std(to_array(x), to_axis(axis), keepdims, ddof);
  }, "x"_a, "axis"_a = py::none(), "keepdims"_a = false, "ddof"_a = 0);
  m.def("argmax", [](py::handle x, std::optional<int64_t> axis, bool keepdims) { return argmax(to_array(x), axis, keepdims); },
        "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  m.def("argmin", [](py::handle x, std::optional<int64_t> axis, bool keepdims) { return argmin(to_array(x), axis, keepdims); },
        "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  m.def("softmax", [](py::handle x, int64_t axis) { return softmax(to_array(x), axis); }, "x"_a, "axis"_a = -1);
  m.def("log_softmax", [](py::handle x, int64_t axis) { return log_softmax(to_array(x), axis); }, "x"_a, "axis"_a = -1);
  m.def("cumsum", [](py::handle x, std::optional<int64_t> axis) { return cumsum(to_array(x), axis); }, "x"_a,
        "axis"_a = py::none());
  m.def("sort", [](py::handle x, int64_t axis) { return sort(to_array(x), axis); }, "x"_a, "axis"_a = -1);
  m.def("argsort", [](py::handle x, int64_t axis) { return argsort(to_array(x), axis); }, "x"_a, "axis"_a = -1);
  m.def("reshape", [](py::handle x, py::handle s) { return reshape(to_array(x), to_shape(s)); }, "x"_a, "shape"_a);
  m.def("transpose", [](py::handle x, py::handle axes) {
    return transpose(to_array(x), axes.is_none() ? Axes{} : to_shape(axes));
  }, "x"_a, "axes"_a = py::none());
  m.def("swapaxes", [](py::handle x, int64_t a, int64_t b) { return swapaxes(to_array(x), a, b); });
  m.def("moveaxis", [](py::handle x, int64_t s, int64_t d) { return moveaxis(to_array(x), s, d); });
  m.def("expand_dims", [](py::handle x, py::handle axis) { return expand_dims(to_array(x), to_axis(axis)); });
  m.def("squeeze", [](py::handle x, py::handle axis) { return squeeze(to_array(x), to_axis(axis)); }, "x"_a,
        "axis"_a = py::none());
  m.def("broadcast_to", [](py::handle x, py::handle s) { return broadcast_to(to_array(x), to_shape(s)); });
  m.def("concatenate", [](py::handle xs, int64_t axis) { return concatenate(to_arrays(xs), axis); }, "arrays"_a,
        "axis"_a = 0);
  m.def("stack", [](py::handle xs, int64_t axis) { return stack(to_arrays(xs), axis); }, "arrays"_a, "axis"_a = 0);
  m.def("flip", [](py::handle x, py::handle axis) { return flip(to_array(x), to_axis(axis)); }, "x"_a,
        "axis"_a = py::none());
  m.def("tile", [](py::handle x, py::handle reps) { return tile(to_array(x), to_shape(reps)); });
  m.def("repeat", [](py::handle x, int64_t r, std::optional<int64_t> axis) { return repeat(to_array(x), r, axis); },
        "x"_a, "repeats"_a, "axis"_a = py::none());
  m.def("take", [](py::handle x, py::handle i, std::optional<int64_t> axis) {
    return take(to_array(x), to_array(i), axis);
  }, "x"_a, "indices"_a, "axis"_a = py::none());
  m.def("one_hot", [](py::handle x, int64_t n, py::handle d) { return one_hot(to_array(x), n, to_dtype(d)); }, "x"_a,
        "num_classes"_a, "dtype"_a = "float32");
  m.def("einsum", [](const std::string& s, py::args ops) { return einsum(s, to_arrays(ops)); });
  m.def("zeros", [](py::handle s, py::handle d) { return zeros(to_shape(s), to_dtype(d)); }, "shape"_a,
        "dtype"_a = "float32");
  m.def("ones", [](py::handle s, py::handle d) { return ones(to_shape(s), to_dtype(d)); }, "shape"_a,
        "dtype"_a = "float32");
  m.def("full", [](py::handle s, double v, py::handle d) { return full(to_shape(s), v, to_dtype(d)); }, "shape"_a,
        "fill_value"_a, "dtype"_a = "float32");
  m.def("zeros_like", [](py::handle x) { return zeros_like(to_array(x)); });
  m.def("ones_like", [](py::handle x) { return ones_like(to_array(x)); });
  m.def("arange", [](double start, py::object stop, double step, py::object d) {
    std::optional<DType> dt = d.is_none() ? std::nullopt : std::optional<DType>(to_dtype(d));
    if (stop.is_none()) return arange(start, dt);
    return arange(start, stop.cast<double>(), step, dt);
  }, "start"_a, "stop"_a = py::none(), "step"_a = 1.0, "dtype"_a = py::none());
  m.def("linspace", [](double a, double b, int64_t n, py::handle d, bool endpoint) {
    return linspace(a, b, n, to_dtype(d), endpoint);
  }, "start"_a, "stop"_a, "num"_a = 50, "dtype"_a = "float32", "endpoint"_a = true);
  m.def("eye", [](int64_t n, std::optional<int64_t> mm, int64_t k, py::handle d) { return eye(n, mm, k, to_dtype(d)); },
        "N"_a, "M"_a = py::none(), "k"_a = 0, "dtype"_a = "float32");

  // collectives over named axes (inside vmap(axis_name=...), shard_map, pmap)
  auto names = [](py::handle h) {
    std::vector<std::string> n;
    if (py::isinstance<py::str>(h)) {
      n.push_back(h.cast<std::string>());
    } else {
      for (auto e : h) n.push_back(e.cast<std::string>());
    }
    return AxisNameArg(n);
  };
  m.def("psum", [names](py::handle x, py::handle axis) { return psum(to_array(x), names(axis)); });
  m.def("pmean", [names](py::handle x, py::handle axis) { return pmean(to_array(x), names(axis)); });
  m.def("pmax", [names](py::handle x, py::handle axis) { return pmax(to_array(x), names(axis)); });
  m.def("pmin", [names](py::handle x, py::handle axis) { return pmin(to_array(x), names(axis)); });
  m.def("axis_index", [](const std::string& name) { return axis_index(name); });

  // random (threefry keys)
  m.def("random_key", [](uint64_t seed) { return random::key(seed); });
  m.def("random_split", [](py::handle k, int64_t n) { return random::split(to_array(k), n); }, "key"_a, "num"_a = 2);
  m.def("random_fold_in", [](py::handle k, uint32_t d) { return random::fold_in(to_array(k), d); });
  m.def("random_normal", [](py::handle k, py::handle s, py::handle d) {
    return random::normal(to_array(k), to_shape(s), to_dtype(d));
  }, "key"_a, "shape"_a = py::tuple(), "dtype"_a = "float32");
  m.def("random_uniform", [](py::handle k, py::handle s, py::handle d, double lo, double hi) {
    return random::uniform(to_array(k), to_shape(s), to_dtype(d), lo, hi);
  }, "key"_a, "shape"_a = py::tuple(), "dtype"_a = "float32", "minval"_a = 0.0, "maxval"_a = 1.0);
  m.def("random_bernoulli", [](py::handle k, py::handle p, py::handle s) {
    return random::bernoulli(to_array(k), to_array(p), s.is_none() ? std::nullopt : std::optional<Shape>(to_shape(s)));
  }, "key"_a, "p"_a = 0.5, "shape"_a = py::none());
  m.def("random_permutation", [](py::handle k, int64_t n) { return random::permutation(to_array(k), n); });

  // neural-network layers' functional forms (graft.nn builds its layers on these)
  auto padding_of = [](py::handle h) -> nn::Padding {
    if (py::isinstance<py::str>(h)) return nn::Padding(h.cast<std::string>());
    return nn::Padding(h.cast<std::vector<std::pair<int64_t, int64_t>>>());
  };
  m.def("conv2d", [padding_of](py::handle x, py::handle w, std::array<int64_t, 2> stride, py::handle padding,
                               std::array<int64_t, 2> dilation, int64_t groups) {
    Array xa = to_array(x), wa = to_array(w);
    if (xa.ndim() != 4 || wa.ndim() != 4)
      throw graft::ShapeError("conv2d: expects x [N, C, H, W] and w [O, C / groups, KH, KW], got " + xa.aval().str() +
                              " and " + wa.aval().str());
    Shape spatial{xa.shape()[2], xa.shape()[3]}, s{stride[0], stride[1]};
    Shape dk{(wa.shape()[2] - 1) * dilation[0] + 1, (wa.shape()[3] - 1) * dilation[1] + 1};
    return lax::conv_general_dilated(xa, wa.astype(xa.dtype()), s, padding_of(padding).resolve(spatial, dk, s), {1, 1},
                                     {dilation[0], dilation[1]}, lax::ConvDims::nchw(2), groups);
  }, "x"_a, "w"_a, "stride"_a = std::array<int64_t, 2>{1, 1}, "padding"_a = "VALID",
        "dilation"_a = std::array<int64_t, 2>{1, 1}, "groups"_a = 1);
  m.def("max_pool2d", [padding_of](py::handle x, std::array<int64_t, 2> window,
                                   std::optional<std::array<int64_t, 2>> stride, py::handle padding) {
    return nn::max_pool2d(to_array(x), window, stride, padding_of(padding));
  }, "x"_a, "window"_a, "stride"_a = py::none(), "padding"_a = "VALID");
  m.def("avg_pool2d", [padding_of](py::handle x, std::array<int64_t, 2> window,
                                   std::optional<std::array<int64_t, 2>> stride, py::handle padding) {
    return nn::avg_pool2d(to_array(x), window, stride, padding_of(padding));
  }, "x"_a, "window"_a, "stride"_a = py::none(), "padding"_a = "VALID");
  m.def("dropout", [](py::handle key, py::handle x, double rate, bool train) {
    return nn::dropout(to_array(key), to_array(x), rate, train);
  }, "key"_a, "x"_a, "rate"_a, "train"_a = true);
  m.def("cross_entropy", [](py::handle l, py::handle y) { return nn::cross_entropy(to_array(l), to_array(y)); });
  m.def("softmax_cross_entropy", [](py::handle l, py::handle y) { return nn::softmax_cross_entropy(to_array(l), to_array(y)); });
  m.def("accuracy", [](py::handle l, py::handle y) { return nn::accuracy(to_array(l), to_array(y)); });
  m.def("load_fashion_mnist", [](const std::string& dir) {
    data::FashionMnist d = data::load_fashion_mnist(dir);
    py::dict r;
    r["train_images"] = d.train_images;
    r["train_labels"] = d.train_labels;
    r["test_images"] = d.test_images;
    r["test_labels"] = d.test_labels;
    return r;
  }, "dir"_a = data::kFashionMnistDir);

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

  // ---- transformations over flat lists ----------------------------------------------------------------
  m.def("jvp", [](py::function f, py::handle primals, py::handle tangents) {
    return jvp_flat(flat_fn(f), to_arrays(primals), to_arrays(tangents));
  });
  m.def("vjp", [](py::function f, py::handle primals) {
    VjpResult r = vjp_flat(flat_fn(f), to_arrays(primals));
    std::function<std::vector<Array>(const std::vector<Array>&)> pull = r.pullback;
    // a None cotangent is a zero one
    py::cpp_function pb([pull](py::handle cts) {
      std::vector<Array> c;
      for (auto h : cts) c.push_back(h.is_none() ? Array() : to_array(h));
      return pull(c);
    });
    return py::make_tuple(r.outs, pb);
  });
  // out_axes: a list (one entry for every output, or one for all), or a callable that gives the list
  // once the function has returned (given the number of outputs): the outputs' structure is known then
  m.def("vmap", [](py::function f, py::handle args, py::handle in_axes, py::object out_axes, const std::string& name,
                   std::optional<int64_t> size) {
    std::vector<std::optional<int64_t>> oa;
    FlatFn inner = flat_fn(f);
    FlatFn fn = inner;
    if (PyCallable_Check(out_axes.ptr())) {
      fn = [&oa, inner, out_axes](const std::vector<Array>& xs) {
        std::vector<Array> r = inner(xs);
        oa = to_axes_list(out_axes(r.size()));
        return r;
      };
    } else {
      oa = to_axes_list(out_axes);
    }
    return vmap_flat(fn, to_arrays(args), to_axes_list(in_axes), oa, name, size);
  }, "f"_a, "args"_a, "in_axes"_a, "out_axes"_a, "axis_name"_a = "", "axis_size"_a = py::none());
  m.def("cond", [](py::handle index, py::handle branches, py::handle operands) {
    std::vector<FlatFn> bs;
    for (auto b : branches) bs.push_back(flat_fn(py::reinterpret_borrow<py::function>(b)));
    return cond_flat(to_array(index), bs, to_arrays(operands));
  });
  m.def("while_loop", [](py::function c, py::function b, py::handle init, int64_t max_steps) {
    return while_flat(flat_fn(c), flat_fn(b), to_arrays(init), WhileOptions{max_steps});
  }, "cond_fun"_a, "body_fun"_a, "init"_a, "max_steps"_a = -1);
  m.def("scan", [](py::function f, py::handle init, py::handle xs, std::optional<int64_t> length, bool reverse) {
    return scan_flat(flat_fn(f), to_arrays(init), to_arrays(xs), ScanOptions{length, reverse});
  }, "f"_a, "init"_a, "xs"_a, "length"_a = py::none(), "reverse"_a = false);
  m.def("make_jaxpr", [](py::function f, py::handle args) {
    std::vector<Aval> avals;
    for (auto& x : to_arrays(args)) avals.push_back(x.aval());
    std::ostringstream s;
    s << make_jaxpr_flat(flat_fn(f), avals);
    return s.str();
  });
  // ---- the seeds' other paradigms ------------------------------------------------------------------
  // PyTorch's tape: x.requires_grad_(), y.backward(), x.grad
  arr.def("requires_grad_", [](py::object self) {
        self.cast<Array&>().requires_grad_();
        return self;
      })
      .def("backward", [](const Array& y) { y.backward(); })
      .def_property_readonly("grad", [](const Array& x) -> py::object {
        Array g = x.grad();
        return g.valid() ? py::cast(g) : py::none();
      })
      .def("zero_grad_", [](const Array& x) { x.zero_grad_(); })
      .def("_assign", [](Array& self, const Array& v) { self = v; });
  // TF2's GradientTape (graft/python/graft/_paradigms.py gives it TF's `with` and watch semantics)
  py::class_<GradientTape>(m, "_Tape")
      .def(py::init<>())
      .def("watch", &GradientTape::watch)
      .def("stop_recording", &GradientTape::stop_recording)
      .def("gradient", [](const GradientTape& t, const Array& target, const std::vector<Array>& sources) {
        return t.gradient(target, sources);
      });
  // Theano / TF1: placeholders build a graph; function() closes it into a callable
  py::class_<Function>(m, "Function")
      .def("__call__", [](const Function& f, py::args args) { return f(to_arrays(args)); })
      .def_property_readonly("jaxpr", [](const Function& f) {
        std::ostringstream s;
        s << f.jaxpr();
        return s.str();
      })
      .def_property_readonly("name", &Function::name);
  py::class_<Graph>(m, "_Graph")
      .def(py::init<std::string>(), "name"_a = "graph")
      .def("placeholder", [](Graph& g, py::handle shape, py::handle d) { return g.placeholder(to_shape(shape), to_dtype(d)); },
           "shape"_a = py::tuple(), "dtype"_a = "float32")
      .def("function", [](Graph& g, const std::vector<Array>& in, const std::vector<Array>& out) {
        return g.function(in, out);
      });
  m.def("graph_grad", [](const Function& f, std::vector<int> argnums) { return grad(f, argnums); }, "f"_a,
        "argnums"_a = std::vector<int>{0});

  // user-defined derivatives and rematerialization (graft.custom_jvp / custom_vjp / checkpoint wrap these)
  auto pair_of_lists = [](py::handle h) {
    py::tuple t = py::reinterpret_borrow<py::tuple>(h);
    if (t.size() != 2) throw py::type_error("expected a pair (outputs, second list)");
    return std::pair<std::vector<Array>, std::vector<Array>>(to_arrays(t[0]), to_arrays(t[1]));
  };
  m.def("custom_jvp", [pair_of_lists](py::function f, py::function rule, py::handle args, const std::string& name) {
    CustomJvpRule r = [rule, pair_of_lists](const std::vector<Array>& p, const std::vector<Array>& t) {
      return pair_of_lists(rule(p, t));
    };
    return custom_jvp_apply(flat_fn(f), r, to_arrays(args), name);
  });
  m.def("custom_vjp", [pair_of_lists](py::function f, py::function fwd, py::function bwd, py::handle args,
                                      const std::string& name) {
    CustomFwd fw = [fwd, pair_of_lists](const std::vector<Array>& p) { return pair_of_lists(fwd(p)); };
    CustomBwd bw = [bwd](const std::vector<Array>& res, const std::vector<Array>& ct) {
      std::vector<Array> r;
      for (auto h : bwd(res, ct)) r.push_back(h.is_none() ? Array() : to_array(h));
      return r;
    };
    return custom_vjp_apply(flat_fn(f), fw, bw, to_arrays(args), name);
  });
  m.def("checkpoint", [](py::function f, py::handle args, const std::string& policy, std::vector<std::string> names) {
    CheckpointPolicy p = policy == "dots_saveable"         ? CheckpointPolicy::dots_saveable()
                         : policy == "everything_saveable" ? CheckpointPolicy::everything_saveable()
                         : policy == "save_only_these_names" ? CheckpointPolicy::save_only_these_names(names)
                                                             : CheckpointPolicy::nothing_saveable();
    return checkpoint_flat(flat_fn(f), to_arrays(args), p);
  }, "f"_a, "args"_a, "policy"_a = "nothing_saveable", "names"_a = std::vector<std::string>{});
  m.def("checkpoint_name", [](py::handle x, const std::string& n) { return checkpoint_name(to_array(x), n); });

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

  py::class_<PyJit>(m, "Jit")
      .def(py::init<std::string, std::vector<int>, py::object, std::vector<std::string>, std::vector<int64_t>>(),
           "name"_a, "donate_argnums"_a, "unflatten"_a, "polymorphic"_a = std::vector<std::string>{},
           "buckets"_a = std::vector<int64_t>{})
      .def("call", &PyJit::call)
      .def_property_readonly("num_compiles", &PyJit::num_compiles)
      .def("call_cached", &PyJit::call_cached)
      .def("remember", &PyJit::remember)
      .def_static("fast_prefix", &PyJit::fast_prefix)
      .def_property_readonly("num_traces", &PyJit::num_traces);
}
