#include "graft/core/array.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

#include "graft/core/backend.h"
#include "graft/core/format.h"
#include "graft/core/trace.h"

namespace graft {

ConcreteNode::ConcreteNode(Aval a) : ArrayNode(std::move(a), false) {
  checked_numel(aval_.shape, "array");  // the byte count below cannot wrap
  size_t nb = aval_.nbytes();
  if (nb <= kInlineBytes) {
    data_ = inline_;
  } else {
    buffer_ = Buffer::allocate_cpu(nb);
    data_ = buffer_->data();
  }
}

ConcreteNode::ConcreteNode(Aval a, Ref<Buffer> buf, size_t offset)
    : ArrayNode(std::move(a), false), buffer_(std::move(buf)), data_(static_cast<char*>(buffer_->data()) + offset) {}

Ref<ConcreteNode> ConcreteNode::take_storage() {
  if (!owns_storage()) return {};
  Ref<ConcreteNode> n(new ConcreteNode(aval_, std::move(buffer_), 0));
  data_ = nullptr;
  return n;
}

void check_not_deleted(const Array& x, const char* what) {
  if (auto* c = x.concrete(); c && c->deleted())
    fail<ValueError>(what, ": the array ", x.aval().str(),
                     " was donated to a jitted function (donate_argnums) and deleted; use that function's result "
                     "instead");
}

Tracer::Tracer(Aval a, Ref<Trace> t) : ArrayNode(std::move(a), true), trace_(std::move(t)) {}
Tracer::~Tracer() = default;
std::optional<Array> Tracer::concrete_value() const { return std::nullopt; }

Array::Array(double v) : Array(scalar(v, DType::f64, true)) {}
Array::Array(float v) : Array(scalar(v, DType::f32, true)) {}
Array::Array(int v) : Array(scalar(v, DType::i64, true)) {}
Array::Array(int64_t v) {
  *this = empty(Aval({}, DType::i64, true));
  *static_cast<int64_t*>(concrete()->data()) = v;  // exact for |v| > 2^53
}
Array::Array(bool v) : Array(scalar(v ? 1.0 : 0.0, DType::bool_, false)) {}
Array::Array(uint32_t v) : Array(scalar(v, DType::u32, true)) {}

int64_t Array::shape(int64_t axis) const { return shape()[normalize_axis(axis, ndim(), "shape")]; }

Device Array::device() const {
  if (auto* c = concrete()) return c->device();
  return Device::cpu();
}

void Array::check_dtype(DType d, const char* what) const {
  if (!node_) fail<ValueError>(what, ": the array is null");
  if (dtype() != d) fail<TypeError>(what, ": array has dtype ", dtype(), ", requested ", d);
}

const void* Array::raw_data() const {
  if (!node_) fail<ValueError>("raw_data: the array is null");
  if (auto* c = concrete()) {
    check_not_deleted(*this, "raw_data");
    if (!c->device().is_cpu())
      fail<ValueError>("raw_data: the array ", aval().str(), " lives on ", c->device(),
                       "; read it with to_vector() or item(), or move it with device_put(x, Device::cpu())");
    return c->data();
  }
  fail<ConcretizationError>("raw_data: ", aval().str(), " is a tracer of ", tracer()->trace()->describe(),
                            "; its data is not available while the transformation runs");
}

const Array& Array::block_until_ready() const {
  if (auto* c = concrete(); c && !c->device().is_cpu()) usable_backend(c->device(), "block_until_ready").synchronize(c->device());
  return *this;
}

Array Array::empty_on(const Aval& a, Device d) {
  if (d.is_cpu()) return empty(a);
  checked_numel(a.shape, "array");
  Ref<Buffer> buf = usable_backend(d, "array").allocate(a.nbytes(), d);
  return Array(Ref<ArrayNode>(new ConcreteNode(a, std::move(buf), 0)));
}

Array transfer(const Array& x, Device d) {
  ConcreteNode* c = x.concrete();
  if (!c) fail<ValueError>("device_put: a tracer reached the transfer of ", x.aval().str());
  check_not_deleted(x, "device_put");
  Device from = c->device();
  if (from == d) return x;
  Array out = Array::empty_on(x.aval(), d);
  size_t nb = x.nbytes();
  if (nb) {
    if (from.is_cpu() || d.is_cpu() || from.type == d.type) {
      usable_backend(d.is_cpu() ? from : d, "device_put").copy(c->data(), from, out.concrete()->data(), d, nb);
    } else {  // between devices of two backends: through the host
      Array host = transfer(x, Device::cpu());
      return transfer(host, d);
    }
  }
  out.concrete()->set_committed(c->committed());
  return out;
}

Array Array::concretize(const char* what) const {
  if (!node_) fail<ValueError>(what, ": the array is null");
  if (auto* c = concrete(); c && !c->device().is_cpu() && !c->deleted()) return transfer(*this, Device::cpu());
  if (is_concrete()) return *this;
  Tracer* t = tracer();
  if (auto v = t->concrete_value()) return v->concretize(what);
  fail<ConcretizationError>(
      "Abstract tracer value encountered where a concrete value is expected: ", what, " was called on a ",
      aval().str(), " value that ", t->trace()->describe(),
      " made abstract. Its value is not known while the function is traced. Branch on values with "
      "graft::where / graft::cond instead, or pass the value as a static (non-Array) argument.");
}

Array Array::empty(const Aval& a) { return Array(Ref<ArrayNode>(new ConcreteNode(a))); }

Array Array::from_data(const void* data, Shape shape, DType d, bool weak) {
  Array out = empty(Aval(std::move(shape), d, weak));
  if (out.nbytes()) std::memcpy(out.concrete()->data(), data, out.nbytes());
  return out;
}

Array Array::scalar(double v, DType d, bool weak) {
  Array out = empty(Aval({}, d, weak));
  convert_elements(&v, DType::f64, out.concrete()->data(), d, 1);
  return out;
}

namespace {
template <class To, class From>
To convert_one(From v) {
  if constexpr (is_complex_v<From>) {
    // complex -> complex keeps both parts; -> bool tests both; -> real keeps the real part (JAX's
    // convert_element_type, NumPy's ComplexWarning cast)
    if constexpr (is_complex_v<To>) {
      return static_cast<To>(v);
    } else if constexpr (std::is_same_v<To, bool>) {
      return v.real() != 0 || v.imag() != 0;
    } else {
      return convert_one<To>(v.real());
    }
  } else if constexpr (is_complex_v<To>) {
    using R = typename To::value_type;
    return To(static_cast<R>(static_cast<compute_t<From>>(v)), R(0));
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<compute_t<From>>(v) != compute_t<From>(0);
  } else if constexpr (std::is_integral_v<To> && !std::is_same_v<From, bool> && !std::is_integral_v<From>) {
    // float -> int: NaN becomes 0 and out-of-range values saturate (XLA's CPU convert clamps too).
    double x = static_cast<double>(static_cast<compute_t<From>>(v));
    if (std::isnan(x)) return To(0);
    if (x <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (x >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(static_cast<compute_t<To>>(static_cast<compute_t<From>>(v)));
  }
}

template <class To, class From>
void convert_loop(const From* in, To* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = convert_one<To>(in[i]);
}
}  // namespace

void convert_elements(const void* in, DType from, void* out, DType to, int64_t n) {
  if (n <= 0) return;  // empty arrays may have null data pointers (memcpy(nullptr, ..., 0) is UB)
  if (from == to) {
    std::memcpy(out, in, static_cast<size_t>(n) * itemsize(from));
    return;
  }
  // the common half conversions in their own loops (core/half.h), whatever the visitor inlines
  if (to == DType::f32 && from == DType::f16)
    return widen(static_cast<const float16*>(in), static_cast<float*>(out), n);
  if (to == DType::f32 && from == DType::bf16)
    return widen(static_cast<const bfloat16*>(in), static_cast<float*>(out), n);
  if (from == DType::f32 && to == DType::f16)
    return narrow(static_cast<const float*>(in), static_cast<float16*>(out), n);
  if (from == DType::f32 && to == DType::bf16)
    return narrow(static_cast<const float*>(in), static_cast<bfloat16*>(out), n);
  visit_any_dtype(from, [&](auto ft) {
    using F = typename decltype(ft)::type;
    visit_any_dtype(to, [&](auto tt) {
      using T = typename decltype(tt)::type;
      convert_loop<T, F>(static_cast<const F*>(in), static_cast<T*>(out), n);
    });
  });
}

// ---- printing -----------------------------------------------------------------------------------
namespace {
void print_elems(std::ostream& os, const Array& a) {
  auto vals = a.to_vector<double>();
  std::vector<std::string> strs(vals.size());
  bool fl = is_floating(a.dtype());
  size_t width = 0;
  std::vector<complex128> zs;
  if (is_complex(a.dtype())) zs = a.to_vector<complex128>();
  for (size_t i = 0; i < vals.size(); ++i) {
    if (!zs.empty()) {
      // NumPy's form: 1.+2.j, 3.-0.5j
      double im = zs[i].imag();
      strs[i] = format_float_numpy(zs[i].real()) + (std::signbit(im) && !std::isnan(im) ? "-" : "+") +
                format_float_numpy(std::abs(im)) + "j";
    } else if (is_bool(a.dtype())) {
      strs[i] = vals[i] != 0 ? "True" : "False";
    } else if (fl) {
      strs[i] = format_float_numpy(vals[i]);
    } else if (is_unsigned(a.dtype())) {
      strs[i] = std::to_string(static_cast<uint64_t>(vals[i]));
    } else {
      strs[i] = std::to_string(static_cast<int64_t>(vals[i]));
    }
    width = std::max(width, strs[i].size());
  }
  // NumPy aligns the decimal points of floats: pad the integer parts left and the fractions right
  if (fl) {
    size_t ip = 0, fp = 0;
    bool plain = true;
    for (auto& e : strs) {
      size_t dot = e.find('.');
      if (dot == std::string::npos || e.find('e') != std::string::npos) {
        plain = false;
        break;
      }
      ip = std::max(ip, dot);
      fp = std::max(fp, e.size() - dot - 1);
    }
    if (plain) {
      for (auto& e : strs) {
        size_t dot = e.find('.');
        e = std::string(ip - dot, ' ') + e + std::string(fp - (e.size() - dot - 1), ' ');
      }
      width = ip + 1 + fp;
    }
  }
  // int64 values above 2^53 would lose digits through double: print them exactly.
  if (a.dtype() == DType::i64 || a.dtype() == DType::u64) {
    auto c = a.concretize("print");
    for (size_t i = 0; i < strs.size(); ++i)
      strs[i] = a.dtype() == DType::i64 ? std::to_string(static_cast<const int64_t*>(c.raw_data())[i])
                                        : std::to_string(static_cast<const uint64_t*>(c.raw_data())[i]);
    width = 0;
    for (auto& s : strs) width = std::max(width, s.size());
  }
  const Shape& s = a.shape();
  if (s.empty()) {
    os << strs[0];
    return;
  }
  Shape st = strides_of(s);
  // recursive printer over dimensions
  std::function<void(size_t, int64_t)> rec = [&](size_t dim, int64_t off) {
    os << '[';
    for (int64_t i = 0; i < s[dim]; ++i) {
      if (i) {
        os << ',';
        if (dim + 1 < s.size()) {
          for (size_t k = dim + 1; k < s.size(); ++k) os << '\n';
          os << std::string(7 + dim, ' ');
        } else {
          os << ' ';
        }
      }
      if (dim + 1 == s.size()) {
        std::string& e = strs[static_cast<size_t>(off + i)];
        os << std::string(width - e.size(), ' ') << e;
      } else {
        rec(dim + 1, off + i * st[dim]);
      }
    }
    os << ']';
  };
  if (numel(s) == 0) {
    os << "[]";
    return;
  }
  rec(0, 0);
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const Array& a) {
  if (!a.valid()) return os << "Array(null)";
  if (a.is_concrete() && a.concrete()->deleted()) return os << "Array(<deleted: donated>, " << a.aval().str() << ")";
  if (a.is_tracer() && !a.tracer()->concrete_value())
    return os << "Traced<" << a.aval().str() << ">with<" << a.tracer()->trace()->describe() << ">";
  Array c = a.concretize("print");
  os << "Array(";
  print_elems(os, c);
  bool default_dtype = c.dtype() == DType::f32 || c.dtype() == DType::i32 || c.dtype() == DType::bool_;
  if (!default_dtype || c.weak_type()) {
    os << ", dtype=" << long_name(c.dtype());
    if (c.weak_type()) os << ", weak_type=True";
  }
  return os << ")";
}

std::string to_string(const Array& a) {
  std::ostringstream os;
  os << a;
  return os.str();
}

}  // namespace graft
