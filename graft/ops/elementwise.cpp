// Elementwise NumPy-style operations: promotion, broadcasting, arithmetic, comparisons, activations.
#include <cmath>
#include <numbers>

#include "graft/ops/internal.h"
#include "graft/transforms/api.h"

namespace graft {

namespace ops_detail {

const Array& checked(const Array& x, const char* op) {
  if (!x.valid()) fail<ValueError>(op, ": argument is a null array");
  return x;
}

Array convert(const Array& x, DType d, bool weak) {
  if (x.dtype() == d && x.weak_type() == weak) return x;
  if (x.is_concrete() && x.ndim() == 0 && x.device().is_cpu()) {
    Array out = Array::empty(Aval({}, d, weak));
    convert_elements(x.raw_data(), x.dtype(), out.concrete()->data(), d, 1);
    return out;
  }
  return lax::convert_element_type(x, d, weak);
}

DType result_type(std::initializer_list<const Array*> xs, bool* weak) {
  const Array* first = nullptr;
  DType d = DType::bool_;
  bool w = true;
  for (const Array* x : xs) {
    if (!first) {
      first = x;
      d = x->dtype();
      w = x->weak_type();
    } else {
      d = promote_types(d, w, x->dtype(), x->weak_type(), &w);
    }
  }
  if (weak) *weak = w;
  return d;
}

Array broadcast_to(const Array& x, const Shape& shape, const char* op) {
  if (x.shape() == shape) return x;
  int64_t nd = static_cast<int64_t>(shape.size()), xd = x.ndim();
  if (xd > nd) fail<ShapeError>(op, ": cannot broadcast ", x.aval().str(), " to shape (", shape_str(shape), ")");
  Axes dims;
  for (int64_t i = 0; i < xd; ++i) {
    int64_t od = nd - xd + i;
    if (x.shape()[i] != 1 && x.shape()[i] != shape[od])
      fail<ShapeError>(op, ": cannot broadcast ", x.aval().str(), " to shape (", shape_str(shape), ")");
    dims.push_back(od);
  }
  return lax::broadcast_in_dim(x, shape, dims);
}

std::pair<Array, Array> promote_broadcast(const Array& a0, const Array& b0, const char* op) {
  const Array& a = checked(a0, op);
  const Array& b = checked(b0, op);
  // fast path (the common eager case): nothing to promote or broadcast
  if (a.dtype() == b.dtype() && a.weak_type() == b.weak_type() && a.shape() == b.shape()) return {a, b};
  bool weak;
  DType d = result_type({&a, &b}, &weak);
  Array x = convert(a, d, a.weak_type() && weak);
  Array y = convert(b, d, b.weak_type() && weak);
  if (x.shape() == y.shape() || x.ndim() == 0 || y.ndim() == 0) return {x, y};
  Shape s = broadcast_shapes(x.shape(), y.shape(), op);
  return {broadcast_to(x, s, op), broadcast_to(y, s, op)};
}

DType float_dtype(const Array& x) { return is_inexact(x.dtype()) ? x.dtype() : default_float_dtype(); }

}  // namespace ops_detail

using namespace ops_detail;

namespace {
// float ops on integer inputs promote to the default float (as jnp.sin(int) does)
Array to_float(const Array& x, const char* op) {
  const Array& c = checked(x, op);
  return is_inexact(c.dtype()) ? c : convert(c, default_float_dtype(), c.weak_type());
}
Array c_like(double v, const Array& x) { return Array::scalar(v, x.dtype(), false); }
Array as_bool(const Array& x) { return x.dtype() == DType::bool_ ? x : lax::ne(x, Array::scalar(0, x.dtype())); }
}  // namespace

// ---- unary -----------------------------------------------------------------------------------------------
Array negative(const Array& x) { return lax::neg(checked(x, "negative")); }
Array abs(const Array& x) { return lax::abs(checked(x, "abs")); }
Array sign(const Array& x) { return lax::sign(checked(x, "sign")); }
Array real(const Array& x) { return is_complex(checked(x, "real").dtype()) ? lax::real(x) : x; }
Array imag(const Array& x) {
  return is_complex(checked(x, "imag").dtype()) ? lax::imag(x) : lax::full(x.shape(), 0, x.dtype());
}
Array conj(const Array& x) { return is_complex(checked(x, "conj").dtype()) ? lax::conj(x) : x; }
Array angle(const Array& x, bool deg) {
  Array z = to_float(x, "angle");
  Array a = lax::atan2(imag(z), real(z));
  return deg ? lax::mul(a, Array::scalar(180.0 / 3.14159265358979323846, a.dtype())) : a;
}
Array complex(const Array& re, const Array& im) {
  auto [x, y] = promote_broadcast(to_float(re, "complex"), to_float(im, "complex"), "complex");
  if (is_complex(x.dtype())) fail<TypeError>("complex: the parts must be real, got ", x.aval().str(), " and ", y.aval().str());
  DType d = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  return lax::complex(convert(x, d), convert(y, d));
}
Array floor(const Array& x) {
  return is_floating(real_only(checked(x, "floor"), "floor").dtype()) ? lax::floor(x) : x;
}
Array ceil(const Array& x) { return is_floating(real_only(checked(x, "ceil"), "ceil").dtype()) ? lax::ceil(x) : x; }
Array round(const Array& x) {
  // complex: both parts (NumPy's and JAX's)
  if (is_complex(checked(x, "round").dtype())) return lax::complex(round(lax::real(x)), round(lax::imag(x)));
  return is_floating(x.dtype()) ? lax::round(x, 1) : x;
}
#define GRAFT_FLOAT_UNARY(name, laxfn) \
  Array name(const Array& x) { return lax::laxfn(to_float(x, #name)); }
GRAFT_FLOAT_UNARY(exp, exp)
GRAFT_FLOAT_UNARY(exp2, exp2)
GRAFT_FLOAT_UNARY(log, log)
GRAFT_FLOAT_UNARY(log1p, log1p)
GRAFT_FLOAT_UNARY(expm1, expm1)
GRAFT_FLOAT_UNARY(sqrt, sqrt)
GRAFT_FLOAT_UNARY(rsqrt, rsqrt)
GRAFT_FLOAT_UNARY(cbrt, cbrt)
GRAFT_FLOAT_UNARY(sin, sin)
GRAFT_FLOAT_UNARY(cos, cos)
GRAFT_FLOAT_UNARY(tan, tan)
GRAFT_FLOAT_UNARY(arcsin, asin)
GRAFT_FLOAT_UNARY(arccos, acos)
GRAFT_FLOAT_UNARY(arctan, atan)
GRAFT_FLOAT_UNARY(sinh, sinh)
GRAFT_FLOAT_UNARY(cosh, cosh)
GRAFT_FLOAT_UNARY(tanh, tanh)
GRAFT_FLOAT_UNARY(arcsinh, asinh)
GRAFT_FLOAT_UNARY(arccosh, acosh)
GRAFT_FLOAT_UNARY(arctanh, atanh)
GRAFT_FLOAT_UNARY(erf, erf)
GRAFT_FLOAT_UNARY(erfc, erfc)
GRAFT_FLOAT_UNARY(erfinv, erf_inv)
GRAFT_FLOAT_UNARY(sigmoid, logistic)
#undef GRAFT_FLOAT_UNARY
namespace {
// log(x) / log(base). A complex logarithm's parts are divided by the real constant one by one: a complex
// division would turn log(0) = -inf + 0i into -inf + NaN i (NumPy's log2(0j) is -inf + 0i).
Array log_base(const Array& x, double ln_base, const char* op) {
  Array l = lax::log(to_float(x, op));
  if (!is_complex(l.dtype())) return lax::div(l, c_like(ln_base, l));
  Array re = lax::real(l), im = lax::imag(l);
  return lax::complex(lax::div(re, c_like(ln_base, re)), lax::div(im, c_like(ln_base, im)));
}
}  // namespace
Array log2(const Array& x) { return log_base(x, std::numbers::ln2, "log2"); }
Array log10(const Array& x) { return log_base(x, std::numbers::ln10, "log10"); }
Array square(const Array& x) { return lax::square(checked(x, "square")); }
Array reciprocal(const Array& x) {
  Array f = to_float(x, "reciprocal");
  return lax::div(c_like(1, f), f);
}
// complex: finite when both parts are, NaN or infinite when either part is (NumPy's)
Array isfinite(const Array& x) {
  if (is_complex(checked(x, "isfinite").dtype())) return lax::bitwise_and(isfinite(lax::real(x)), isfinite(lax::imag(x)));
  return is_floating(x.dtype()) ? lax::is_finite(x) : full(x.shape(), 1, DType::bool_);
}
Array isnan(const Array& x) {
  return is_inexact(checked(x, "isnan").dtype()) ? lax::ne(x, x) : full(x.shape(), 0, DType::bool_);
}
Array isinf(const Array& x) {
  if (is_complex(checked(x, "isinf").dtype())) return lax::bitwise_or(isinf(lax::real(x)), isinf(lax::imag(x)));
  if (!is_floating(x.dtype())) return full(x.shape(), 0, DType::bool_);
  return lax::eq(lax::abs(x), c_like(INFINITY, x));
}
Array logical_not(const Array& x) { return lax::bitwise_not(as_bool(checked(x, "logical_not"))); }
Array bitwise_not(const Array& x) { return lax::bitwise_not(checked(x, "bitwise_not")); }
Array stop_gradient(const Array& x) { return lax::stop_gradient(checked(x, "stop_gradient")); }
Array device_put(const Array& x, Device d) { return lax::device_put(checked(x, "device_put"), d); }

Array relu(const Array& x) {
  checked(x, "relu");
  // select (not max) so that the derivative at 0 is 0, as jax.nn.relu
  Array positive = lax::gt(x, c_like(0, x));
  return lax::select(positive, x, lax::zeros_like(x));
}
Array relu6(const Array& x) { return minimum(relu(x), 6.0); }
Array leaky_relu(const Array& x, double slope) { return where(x >= 0.0, x, x * slope); }
namespace {

Array gelu_value(const Array& x, bool approximate) {
  if (approximate) {
    double c = std::sqrt(2.0 / std::numbers::pi);
    Array inner = x + x * x * x * 0.044715;
    return x * 0.5 * (tanh(inner * c) + 1.0);
  }
  return x * 0.5 * (erf(x * (1.0 / std::numbers::sqrt2)) + 1.0);
}

// gelu'(x), from x alone: with it as the derivative rule, reverse mode keeps one residual per element
// (this value) instead of the five intermediates of the formula's own chain rule (a transformer's MLP
// wrote six arrays of its hidden size per layer in the forward pass)
Array gelu_derivative(const Array& x, bool approximate) {
  if (approximate) {
    double c = std::sqrt(2.0 / std::numbers::pi);
    Array x2 = x * x;
    Array t = tanh((x + x2 * x * 0.044715) * c);
    return (t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * ((x2 * (3 * 0.044715) + 1.0) * c);
  }
  return (erf(x * (1.0 / std::numbers::sqrt2)) + 1.0) * 0.5 +
         x * exp(x * x * -0.5) * (1.0 / std::sqrt(2.0 * std::numbers::pi));
}

template <bool kApproximate>
const auto& gelu_fn() {
  static const auto f = custom_jvp([](const Array& x) { return gelu_value(x, kApproximate); },
                                   [](const std::vector<Array>& p, const std::vector<Array>& t) {
                                     return std::make_pair(gelu_value(p[0], kApproximate),
                                                           t[0] * gelu_derivative(p[0], kApproximate));
                                   },
                                   "gelu");
  return f;
}

}  // namespace

Array gelu(const Array& x0, bool approximate) {
  Array x = to_float(x0, "gelu");
  return approximate ? gelu_fn<true>()(x) : gelu_fn<false>()(x);
}
Array silu(const Array& x) { return x * sigmoid(x); }
Array softplus(const Array& x) { return logaddexp(x, 0.0); }
Array log_sigmoid(const Array& x) { return -softplus(-x); }
Array elu(const Array& x, double alpha) { return where(x > 0.0, x, expm1(where(x > 0.0, 0.0, x)) * alpha); }

// ---- binary -----------------------------------------------------------------------------------------------
#define GRAFT_BINARY(name, laxfn)                      \
  Array name(const Array& a, const Array& b) {         \
    auto [x, y] = promote_broadcast(a, b, #name);      \
    return lax::laxfn(x, y);                           \
  }
GRAFT_BINARY(subtract, sub)
GRAFT_BINARY(maximum, max)
GRAFT_BINARY(minimum, min)
GRAFT_BINARY(bitwise_and, bitwise_and)
GRAFT_BINARY(bitwise_or, bitwise_or)
GRAFT_BINARY(bitwise_xor, bitwise_xor)
GRAFT_BINARY(left_shift, shift_left)
GRAFT_BINARY(equal, eq)
GRAFT_BINARY(not_equal, ne)
#undef GRAFT_BINARY

namespace {
// lax's comparisons take ordered (real) types; jnp's order complex values lexicographically, by real
// part and then by imaginary part (as JAX's and NumPy's do).
Array ordered_compare(const Array& a, const Array& b, const char* op,
                      Array (*cmp)(const Array&, const Array&)) {
  auto [x, y] = promote_broadcast(a, b, op);
  if (!is_complex(x.dtype())) return cmp(x, y);
  Array rx = lax::real(x), ry = lax::real(y);
  return lax::select(lax::eq(rx, ry), cmp(lax::imag(x), lax::imag(y)), cmp(rx, ry));
}
}  // namespace
Array less(const Array& a, const Array& b) { return ordered_compare(a, b, "less", &lax::lt); }
Array less_equal(const Array& a, const Array& b) { return ordered_compare(a, b, "less_equal", &lax::le); }
Array greater(const Array& a, const Array& b) { return ordered_compare(a, b, "greater", &lax::gt); }
Array greater_equal(const Array& a, const Array& b) {
  return ordered_compare(a, b, "greater_equal", &lax::ge);
}

// On booleans + is "or" and * is "and" (NumPy and JAX); lax keeps them numeric-only.
Array add(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "add");
  return is_bool(x.dtype()) ? lax::bitwise_or(x, y) : lax::add(x, y);
}
Array multiply(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "multiply");
  return is_bool(x.dtype()) ? lax::bitwise_and(x, y) : lax::mul(x, y);
}

Array right_shift(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "right_shift");
  return is_unsigned(x.dtype()) ? lax::shift_right_logical(x, y) : lax::shift_right_arithmetic(x, y);
}

Array divide(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "divide");
  if (!is_inexact(x.dtype())) {
    x = convert(x, default_float_dtype(), x.weak_type());
    y = convert(y, default_float_dtype(), y.weak_type());
  }
  return lax::div(x, y);
}

Array floor_divide(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "floor_divide");
  if (is_floating(x.dtype())) {
    // NumPy's divmod: divide the exact multiple (x - fmod(x, y)), fix the sign, then round; a zero
    // divisor divides x itself (fmod is NaN there), so that 1 // 0 is inf as in NumPy and JAX 0.11
    Array mod = lax::rem(x, y);
    Array zero = Array::scalar(0, x.dtype());
    Array xm = lax::sub(x, mod);
    Array xb = x.shape() == xm.shape() ? x : broadcast_to(x, xm.shape(), "floor_divide");
    Array yb = y.shape() == xm.shape() ? y : broadcast_to(y, xm.shape(), "floor_divide");
    Array div = lax::div(lax::select(lax::eq(yb, zero), xb, xm), y);
    Array fix = lax::bitwise_and(lax::ne(mod, zero), lax::ne(lax::lt(y, zero), lax::lt(mod, zero)));
    div = lax::select(fix, lax::sub(div, Array::scalar(1, x.dtype())), div);
    return lax::round(div, 1);
  }
  if (is_unsigned(x.dtype()) || is_bool(x.dtype())) return lax::div(x, y);
  // C division truncates: step down when the signs differ and the division is inexact
  Array q = lax::div(x, y);
  Array zero = Array::scalar(0, x.dtype());
  Array fix = lax::bitwise_and(lax::ne(lax::lt(x, zero), lax::lt(y, zero)), lax::ne(lax::rem(x, y), zero));
  return lax::select(fix, lax::sub(q, Array::scalar(1, x.dtype())), q);
}

Array remainder(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "remainder");
  Array r = lax::rem(x, y);
  if (is_unsigned(x.dtype())) return r;
  Array zero = Array::scalar(0, x.dtype());
  Array fix = lax::bitwise_and(lax::ne(r, zero), lax::ne(lax::lt(r, zero), lax::lt(y, zero)));
  Array ry = r.shape() == y.shape() ? lax::add(r, y) : lax::add(r, broadcast_to(y, r.shape(), "remainder"));
  return lax::select(fix, ry, r);
}

Array power(const Array& a, const Array& b) {
  checked(a, "power");
  checked(b, "power");
  // a concrete integral exponent: integer_pow (exact, and its derivative needs no log)
  if (b.is_concrete() && b.ndim() == 0 && (is_integer(b.dtype()) || (b.weak_type() && is_floating(b.dtype())))) {
    double e = b.item<double>();
    bool rd;
    DType rt = result_type({&a, &b}, &rd);
    if (e == std::floor(e) && std::fabs(e) <= 64 && (e >= 0 || is_inexact(rt))) {
      Array base = convert(a, rt, a.weak_type() && rd);
      return lax::integer_pow(base, static_cast<int64_t>(e));
    }
  }
  auto [x, y] = promote_broadcast(a, b, "power");
  if (is_inexact(x.dtype())) return lax::pow(x, y);
  // integer ** integer array: square-and-multiply over the exponent's bits
  Array acc = lax::full(x.shape().empty() ? y.shape() : x.shape(), 1, x.dtype());
  Array base = x.shape() == acc.shape() ? x : broadcast_to(x, acc.shape(), "power");
  Array e = y.shape() == acc.shape() ? y : broadcast_to(y, acc.shape(), "power");
  Array one = Array::scalar(1, x.dtype());
  for (size_t bit = 0; bit < itemsize(x.dtype()) * 8; ++bit) {
    acc = lax::select(lax::ne(lax::bitwise_and(e, one), Array::scalar(0, x.dtype())), lax::mul(acc, base), acc);
    base = lax::mul(base, base);
    e = lax::shift_right_logical(e, one);
  }
  return acc;
}

Array arctan2(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "arctan2");
  real_only(x, "arctan2");
  if (!is_floating(x.dtype())) {
    x = convert(x, default_float_dtype());
    y = convert(y, default_float_dtype());
  }
  return lax::atan2(x, y);
}

Array logaddexp(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(a, b, "logaddexp");
  real_only(x, "logaddexp");
  if (!is_floating(x.dtype())) {
    x = convert(x, default_float_dtype());
    y = convert(y, default_float_dtype());
  }
  Array m = lax::max(x, y);
  Array delta = lax::sub(x, y);
  Array r = lax::add(m, lax::log1p(lax::exp(lax::neg(lax::abs(delta)))));
  // equal infinities give inf - inf = nan in delta: the answer is then x + y (as JAX)
  return lax::select(lax::ne(delta, delta), lax::add(x, y), r);
}

Array logical_and(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(as_bool(checked(a, "logical_and")), as_bool(checked(b, "logical_and")), "logical_and");
  return lax::bitwise_and(x, y);
}
Array logical_or(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(as_bool(checked(a, "logical_or")), as_bool(checked(b, "logical_or")), "logical_or");
  return lax::bitwise_or(x, y);
}
Array logical_xor(const Array& a, const Array& b) {
  auto [x, y] = promote_broadcast(as_bool(checked(a, "logical_xor")), as_bool(checked(b, "logical_xor")), "logical_xor");
  return lax::bitwise_xor(x, y);
}

Array isclose(const Array& a, const Array& b, double rtol, double atol) {
  auto [x, y] = promote_broadcast(a, b, "isclose");
  if (!is_inexact(x.dtype())) return lax::eq(x, y);
  // complex: the moduli of the difference and of b (NumPy's), in the parts' real dtype
  DType rd = real_dtype(x.dtype());
  Array diff = lax::abs(lax::sub(x, y));
  Array tol = lax::add(Array::scalar(atol, rd), lax::mul(Array::scalar(rtol, rd), lax::abs(y)));
  Array close = lax::le(diff, tol);
  // infinities are close only to themselves; NaNs never are
  Array finite = lax::bitwise_and(isfinite(x), isfinite(y));
  return lax::select(finite, close, lax::eq(x, y));
}

bool allclose(const Array& a, const Array& b, double rtol, double atol) {
  return all(isclose(a, b, rtol, atol)).item<bool>();
}

bool array_equal(const Array& a, const Array& b) {
  if (a.shape() != b.shape()) return false;
  return all(equal(a, b)).item<bool>();
}

Array operator+(const Array& a, const Array& b) { return add(a, b); }
Array operator-(const Array& a, const Array& b) { return subtract(a, b); }
Array operator*(const Array& a, const Array& b) { return multiply(a, b); }
Array operator/(const Array& a, const Array& b) { return divide(a, b); }
Array operator%(const Array& a, const Array& b) { return remainder(a, b); }
Array operator-(const Array& a) { return negative(a); }
Array operator<(const Array& a, const Array& b) { return less(a, b); }
Array operator<=(const Array& a, const Array& b) { return less_equal(a, b); }
Array operator>(const Array& a, const Array& b) { return greater(a, b); }
Array operator>=(const Array& a, const Array& b) { return greater_equal(a, b); }
Array operator==(const Array& a, const Array& b) { return equal(a, b); }
Array operator!=(const Array& a, const Array& b) { return not_equal(a, b); }
Array operator&(const Array& a, const Array& b) { return bitwise_and(a, b); }
Array operator|(const Array& a, const Array& b) { return bitwise_or(a, b); }
Array operator^(const Array& a, const Array& b) { return bitwise_xor(a, b); }
Array operator~(const Array& a) { return bitwise_not(a); }
Array operator!(const Array& a) { return logical_not(a); }

// ---- selection ---------------------------------------------------------------------------------------------
Array where(const Array& cond, const Array& x, const Array& y) {
  checked(cond, "where");
  auto [a, b] = promote_broadcast(x, y, "where");
  Array c = as_bool(cond);
  Shape s = broadcast_shapes(broadcast_shapes(a.shape(), b.shape(), "where"), c.shape(), "where");
  if (c.shape() != s && !(c.ndim() == 0)) c = broadcast_to(c, s, "where");
  if (a.shape() != s) a = broadcast_to(a, s, "where");
  if (b.shape() != s) b = broadcast_to(b, s, "where");
  return lax::select(c, a, b);
}

Array clip(const Array& x, std::optional<Array> lo, std::optional<Array> hi) {
  Array r = checked(x, "clip");
  if (is_complex(r.dtype()))  // JAX's refusal: maximum / minimum would clip by the lexicographic order
    fail<ValueError>("clip: complex values have no ordering and cannot be clipped (got ", r.aval().str(),
                     ")");
  if (lo) r = maximum(r, *lo);
  if (hi) r = minimum(r, *hi);
  return r;
}

}  // namespace graft
