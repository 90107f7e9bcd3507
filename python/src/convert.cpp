// Conversions between Python values and graft arrays: dtypes, NumPy arrays, DLPack, indexing, printing.
#include <cstring>
#include <limits>
#include <sstream>

#include "common.h"
#include "graft/core/config.h"
#include "graft/core/env.h"

namespace graft::python {

using namespace pybind11::literals;

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
  if (kind == 'c') {
    if (size == 8) return DType::c64;
    if (size == 16) return DType::c128;
  }
  if (kind == 'u') {
    if (size == 1) return DType::u8;
    if (size == 2) return DType::u16;
    if (size == 4) return DType::u32;
    if (size == 8) return DType::u64;
  }
  return std::nullopt;
}

// ---- 64-bit mode (JAX's jax_enable_x64) ------------------------------------------------------------------
// Off by default, as in JAX: the Python front end makes no 64-bit values. Python floats and ints are
// weakly typed f32 / i32, NumPy's float64 / int64 / uint64 arrays arrive as f32 / i32 / u32, and a
// requested 64-bit dtype is its 32-bit sibling. The C++ API is unaffected: its values carry their types.
// The flag itself is the core's (graft::config::enable_x64), which also sets the default dtypes of the
// C++ operations (an int promoted to floating point is f64 with x64).
bool x64_enabled() { return config::enable_x64(); }
void set_x64(bool on) { config::set_enable_x64(on); }

DType canonical_dtype(DType d) {
  if (config::enable_x64()) return d;
  switch (d) {
    case DType::f64: return DType::f32;
    case DType::i64: return DType::i32;
    case DType::u64: return DType::u32;
    case DType::c128: return DType::c64;
    default: return d;
  }
}

/// A dtype from a name ('float32', 'f32', 'bfloat16'), a NumPy dtype or scalar type (np.float32), or
/// a graft dtype name, made canonical (64-bit ones are 32-bit without x64). Python's `float` and `int`
/// (and the names "float_", "int_") are the default float and int: 64-bit with x64, else 32-bit.
DType to_dtype(py::handle h) {
  if (py::isinstance<py::str>(h)) {
    std::string s = h.cast<std::string>();
    if (s == "float_") return canonical_dtype(DType::f64);
    if (s == "int_") return canonical_dtype(DType::i64);
    return canonical_dtype(parse_dtype(s));
  }
  py::dtype d = py::dtype::from_args(py::reinterpret_borrow<py::object>(h));
  if (auto r = dtype_of_numpy(d)) return canonical_dtype(*r);
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
  DType target = want ? *want : canonical_dtype(*d);  // without x64, NumPy's 64-bit arrays arrive as 32-bit
  return target != *d ? out.astype(target) : out;
}

/// Any Python value graft takes as an array: an Array, a Python scalar (weakly typed, as in JAX), a
/// NumPy array or anything NumPy turns into one (lists, NumPy scalars).
Array to_array(py::handle h, std::optional<DType> want) {
  Array r;
  if (py::isinstance<Array>(h)) {
    r = h.cast<Array>();
  } else if (py::isinstance<py::bool_>(h)) {
    r = Array(h.cast<bool>());
  } else if (py::isinstance<py::int_>(h)) {
    // weak i32 without x64 (JAX's); an int beyond i32's range stays a weak i64 so that `x * 2**40`
    // still means what it says
    auto v = h.cast<int64_t>();
    bool fits = v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    r = config::enable_x64() || !fits ? Array(v) : Array::scalar(static_cast<double>(v), DType::i32, /*weak=*/true);
  } else if (py::isinstance<py::float_>(h)) {
    r = config::enable_x64() ? Array(h.cast<double>()) : Array(static_cast<float>(h.cast<double>()));
  } else if (PyComplex_Check(h.ptr())) {
    // a Python complex is weakly typed: c64, or c128 with x64 (JAX's)
    complex128 z(PyComplex_RealAsDouble(h.ptr()), PyComplex_ImagAsDouble(h.ptr()));
    complex64 z32(z);
    r = config::enable_x64() ? Array::from_data(&z, {}, DType::c128, /*weak=*/true)
                             : Array::from_data(&z32, {}, DType::c64, /*weak=*/true);
  } else if (py::hasattr(h, "_graft_key_data")) {
    // a typed PRNG key array (graft.random.key): its raw uint32 words, what the samplers take
    r = h.attr("_graft_key_data").cast<Array>();
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
  if (is_complex(d)) return {5, bits, 1};  // kDLComplex
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

// ---- Python callables ------------------------------------------------------------------------------------
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

}  // namespace graft::python
