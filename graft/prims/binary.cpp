// Binary elementwise primitives: all their rules. Operands have one dtype and equal shapes, or one
// of them is rank 0 (broadcast). NumPy-style promotion and broadcasting live in graft/ops.
#include <cmath>
#include <limits>

#include "graft/prims/elementwise.h"
#include "graft/prims/special_math.h"

namespace graft::prims {

namespace {
// floating point or complex: the types with true division
template <class C>
constexpr bool is_fp = std::is_floating_point_v<C> || is_complex_v<C>;

struct Add {
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_same_v<C, bool>) {
      return a || b;
    } else {
      return wrap_add(a, b);
    }
  }
};
struct Sub {
  template <class C>
  static C apply(C a, C b) { return wrap_sub(a, b); }
};
struct Mul {
  template <class C>
  static C apply(C a, C b) { return wrap_mul(a, b); }
};
struct Div {
  template <class C>
  static C apply(C a, C b) {
    if constexpr (is_fp<C>) {
      return a / b;
    } else {
      if (b == 0) return static_cast<C>(~C(0));  // XLA: x / 0 is all ones (-1 for signed types)
      if constexpr (std::is_signed_v<C>) {
        if (a == std::numeric_limits<C>::min() && b == C(-1)) return a;
      }
      return static_cast<C>(a / b);
    }
  }
};
struct Rem {
  template <class C>
  static C apply(C a, C b) {
    if constexpr (is_fp<C>) {
      return std::fmod(a, b);
    } else {
      if (b == 0) return a;
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
      }
      return static_cast<C>(a % b);
    }
  }
};
struct Pow {
  template <class C>
  static C apply(C a, C b) { return std::pow(a, b); }
};
// Complex values are ordered lexicographically (real part, then imaginary part), as JAX's lax.max and
// NumPy's maximum order them; a NaN in either part wins, as in NumPy (JAX's lowering compares and
// selects, so its answer with a NaN depends on the operands' order).
template <class C>
bool complex_nan(C z) {
  return std::isnan(z.real()) || std::isnan(z.imag());
}
template <class C>
bool complex_less(C a, C b) {
  return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
}
struct Max {
  template <class C>
  static C apply(C a, C b) {
    if constexpr (is_complex_v<C>) {
      if (complex_nan(a)) return a;
      if (complex_nan(b)) return b;
      return complex_less(b, a) ? a : b;
    } else {
      if constexpr (is_fp<C>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
      }
      return a > b ? a : b;
    }
  }
};
struct Min {
  template <class C>
  static C apply(C a, C b) {
    if constexpr (is_complex_v<C>) {
      if (complex_nan(a)) return a;
      if (complex_nan(b)) return b;
      return complex_less(a, b) ? a : b;
    } else {
      if constexpr (is_fp<C>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
      }
      return a < b ? a : b;
    }
  }
};
struct MakeComplex {
  template <class C>
  static std::complex<C> apply(C re, C im) { return {re, im}; }
};
struct Atan2 {
  template <class C>
  static C apply(C a, C b) { return std::atan2(a, b); }
};
struct NextAfter {
  template <class C>
  static C apply(C a, C b) { return std::nextafter(a, b); }
};
struct And {
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_same_v<C, bool>) {
      return a && b;
    } else {
      return static_cast<C>(a & b);
    }
  }
};
struct Or {
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_same_v<C, bool>) {
      return a || b;
    } else {
      return static_cast<C>(a | b);
    }
  }
};
struct Xor {
  template <class C>
  static C apply(C a, C b) {
    if constexpr (std::is_same_v<C, bool>) {
      return a != b;
    } else {
      return static_cast<C>(a ^ b);
    }
  }
};
// Special functions of two arguments (graft/prims/special_math.h), in double.
template <double (*F)(double, double)>
struct Special2 {
  template <class C>
  static C apply(C a, C b) { return static_cast<C>(F(static_cast<double>(a), static_cast<double>(b))); }
};
using Polygamma = Special2<&special::polygamma>;
using Zeta = Special2<&special::zeta>;
using RandomGammaGrad = Special2<&special::random_gamma_grad>;
using Igamma = Special2<&special::igamma>;
using Igammac = Special2<&special::igammac>;
using IgammaGradA = Special2<&special::igamma_grad_a>;
template <class C>
constexpr int kBits = static_cast<int>(sizeof(C) * 8);
// Shift amounts outside [0, bits) give XLA's saturated results instead of C++'s undefined behaviour.
template <class C>
bool bad_shift(C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b < 0) return true;
  }
  return static_cast<uint64_t>(b) >= static_cast<uint64_t>(kBits<C>);
}
struct ShiftLeft {
  template <class C>
  static C apply(C a, C b) {
    using U = std::make_unsigned_t<C>;
    if (bad_shift(b)) return C(0);
    return static_cast<C>(static_cast<U>(static_cast<U>(a) << b));
  }
};
struct ShiftRightLogical {
  template <class C>
  static C apply(C a, C b) {
    using U = std::make_unsigned_t<C>;
    if (bad_shift(b)) return C(0);
    return static_cast<C>(static_cast<U>(a) >> b);
  }
};
struct ShiftRightArithmetic {
  template <class C>
  static C apply(C a, C b) {
    if (bad_shift(b)) {
      if constexpr (std::is_signed_v<C>) {
        return a < 0 ? C(-1) : C(0);
      } else {
        return C(0);
      }
    }
    return static_cast<C>(a >> b);
  }
};

// ---- derivatives ------------------------------------------------------------------------------------
Array sum_terms(const Array& a, const Array& b, const Aval& out) {
  if (is_zero(a)) return broadcast_to_aval(b, out);
  if (is_zero(b)) return broadcast_to_aval(a, out);
  return lax::add_any(a, b);
}
Array full_like(const Array& y, double v) { return lax::full(y.shape(), v, y.dtype()); }

Array jvp_add(const Array&, const Array&, const Array& y, const Array& ta, const Array& tb) {
  return sum_terms(ta, tb, y.aval());
}
Array jvp_sub(const Array&, const Array&, const Array& y, const Array& ta, const Array& tb) {
  if (is_zero(tb)) return broadcast_to_aval(ta, y.aval());
  if (is_zero(ta)) return broadcast_to_aval(lax::neg(tb), y.aval());
  return lax::sub(ta, tb);
}
Array jvp_mul(const Array& a, const Array& b, const Array& y, const Array& ta, const Array& tb) {
  Array ea = is_zero(ta) ? Array() : lax::mul(ta, b);
  Array eb = is_zero(tb) ? Array() : lax::mul(a, tb);
  return sum_terms(ea, eb, y.aval());
}
Array jvp_div(const Array& a, const Array& b, const Array& y, const Array& ta, const Array& tb) {
  Array ea = is_zero(ta) ? Array() : lax::div(ta, b);
  Array eb = is_zero(tb) ? Array() : lax::mul(lax::mul(lax::neg(tb), a), lax::integer_pow(b, -2));
  return sum_terms(ea, eb, y.aval());
}
Array jvp_rem(const Array& a, const Array& b, const Array& y, const Array& ta, const Array& tb) {
  Array eb;
  if (!is_zero(tb)) {
    Array q = lax::div(a, b);
    eb = lax::mul(lax::neg(tb), lax::mul(lax::sign(q), lax::floor(lax::abs(q))));
  }
  return sum_terms(ta, eb, y.aval());
}
Array jvp_pow(const Array& a, const Array& b, const Array& y, const Array& ta, const Array& tb) {
  Array ea, eb;
  if (!is_zero(ta)) {
    Array d = lax::mul(b, lax::pow(a, lax::sub(b, lax::scalar(1, b.dtype()))));
    Array jac = lax::select(lax::eq(b, lax::scalar(0, b.dtype())), lax::zeros_like(d), d);
    ea = lax::mul(ta, jac);
  }
  if (!is_zero(tb)) {
    Array safe = lax::select(lax::eq(a, lax::scalar(0, a.dtype())), lax::full(a.shape(), 1, a.dtype()), a);
    eb = lax::mul(tb, lax::mul(lax::log(safe), y));
  }
  return sum_terms(ea, eb, y.aval());
}
// Weight of x in d max(x, y): 1 where x alone attains z, 1/2 at ties, 0 elsewhere (JAX's balanced_eq).
Array balanced(const Array& x, const Array& z, const Array& other) {
  Array half = full_like(z, 0.5), one = full_like(z, 1), zero = full_like(z, 0);
  return lax::select(lax::eq(x, z), lax::select(lax::eq(other, z), half, one), zero);
}
Array jvp_minmax(const Array& a, const Array& b, const Array& y, const Array& ta, const Array& tb) {
  Array ea = is_zero(ta) ? Array() : lax::mul(ta, balanced(a, y, b));
  Array eb = is_zero(tb) ? Array() : lax::mul(tb, balanced(b, y, a));
  return sum_terms(ea, eb, y.aval());
}
Array jvp_atan2(const Array& a, const Array& b, const Array& y, const Array& ta, const Array& tb) {
  Array denom = lax::add(lax::square(a), lax::square(b));
  Array ea = is_zero(ta) ? Array() : lax::mul(ta, lax::div(b, denom));
  Array eb = is_zero(tb) ? Array() : lax::mul(lax::neg(tb), lax::div(a, denom));
  return sum_terms(ea, eb, y.aval());
}

// complex(re, im) is linear in both.
Array jvp_complex(const Array& a, const Array& b, const Array&, const Array& ta, const Array& tb) {
  return lax::complex(is_zero(ta) ? lax::zeros_like(a) : ta, is_zero(tb) ? lax::zeros_like(b) : tb);
}

// As in JAX: polygamma(m, x) and zeta(x, q) are differentiable in their second argument only.
Array jvp_polygamma(const Array& m, const Array& x, const Array& y, const Array& tm, const Array& tx) {
  if (!is_zero(tm))
    fail<NotImplementedError>("polygamma: the derivative with respect to m (the order) is not defined; only x's is");
  return lax::mul(tx, lax::polygamma(lax::add(m, lax::full(m.shape(), 1, m.dtype())), x));
}
// As in JAX, samples' gradients are not differentiated again.
Array jvp_random_gamma_grad(const Array&, const Array&, const Array&, const Array& ta, const Array& tx) {
  if (!is_zero(ta) || !is_zero(tx))
    fail<NotImplementedError>("random_gamma_grad: it has no derivative (second derivatives of gamma samples with "
                              "respect to their parameter are not defined, as in JAX)");
  return Array();
}
// P(a, x) (igamma) and Q = 1 - P (igammac): ∂P/∂a is the primitive igamma_grad_a, ∂P/∂x the gamma density
// x^(a-1) e^-x / Γ(a); as in JAX, igamma_grad_a itself has no derivative.
Array gamma_density(const Array& a, const Array& x) {
  Array one = full_like(a, 1);
  return lax::exp(lax::sub(lax::sub(lax::mul(lax::sub(a, one), lax::log(x)), x), lax::lgamma(a)));
}
template <bool kComplement>
Array jvp_igamma(const Array& a, const Array& x, const Array& y, const Array& ta, const Array& tx) {
  Array ea = is_zero(ta) ? Array() : lax::mul(ta, lax::igamma_grad_a(a, x));
  Array ex = is_zero(tx) ? Array() : lax::mul(tx, gamma_density(a, x));
  Array t = sum_terms(ea, ex, y.aval());
  return kComplement ? lax::neg(t) : t;
}
Array jvp_igamma_grad_a(const Array&, const Array&, const Array&, const Array&, const Array&) {
  fail<NotImplementedError>("igamma_grad_a: it has no derivative (second derivatives of the incomplete gamma "
                            "function in a are not defined, as in JAX)");
}
Array jvp_zeta(const Array& s, const Array& q, const Array& y, const Array& ts, const Array& tq) {
  if (!is_zero(ts)) fail<NotImplementedError>("zeta: the derivative with respect to x (the exponent) is not defined; only q's is");
  Array s1 = lax::add(s, lax::full(s.shape(), 1, s.dtype()));
  return lax::mul(tq, lax::mul(lax::neg(s), lax::zeta(s1, q)));
}

const BinaryInfo& info_of(const Primitive& p) { return *static_cast<const BinaryInfo*>(p.data); }

JvpResult binary_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                     const Params& params) {
  Array y = bind1(p, primals, params);
  const BinaryInfo& info = info_of(p);
  if (!info.jvp || (is_zero(tangents[0]) && is_zero(tangents[1]))) return {{y}, {Array()}};
  return {{y}, {info.jvp(primals[0], primals[1], y, tangents[0], tangents[1])}};
}

// ---- transposes ------------------------------------------------------------------------------------
Arrays add_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params&) {
  return {args[0].linear ? unbroadcast(cts[0], args[0].aval) : Array(),
          args[1].linear ? unbroadcast(cts[0], args[1].aval) : Array()};
}
Arrays sub_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params&) {
  return {args[0].linear ? unbroadcast(cts[0], args[0].aval) : Array(),
          args[1].linear ? unbroadcast(lax::neg(cts[0]), args[1].aval) : Array()};
}
Arrays mul_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args, const Params&) {
  if (args[0].linear && args[1].linear)
    fail<ValueError>("mul: cannot transpose a product of two linear values (the program is not linear)");
  size_t lin = args[0].linear ? 0 : 1;
  Arrays out(2);
  out[lin] = unbroadcast(lax::mul(cts[0], args[1 - lin].value), args[lin].aval);
  return out;
}
Arrays div_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params&) {
  if (args[1].linear) fail<ValueError>("div: cannot transpose with respect to the divisor (it is not linear)");
  return {unbroadcast(lax::div(cts[0], args[1].value), args[0].aval), Array()};
}

// JAX's convention: cotangents of complex values are not conjugated, so complex(re, im)'s transpose
// takes the real part and minus the imaginary part.
Arrays complex_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params&) {
  return {args[0].linear ? unbroadcast(lax::real(cts[0]), args[0].aval) : Array(),
          args[1].linear ? unbroadcast(lax::neg(lax::imag(cts[0])), args[1].aval) : Array()};
}

constexpr uint32_t kIB = kMaskInt | kMaskBool;
constexpr uint32_t kNC = kMaskNum | kMaskComplex;
constexpr uint32_t kF64F32 = bit(DType::f32) | bit(DType::f64);

#define BINARY_INFO(id, F, mask, jvp) const BinaryInfo id##_info{mask, false, binary_kernels<F, mask>(), binary_tiles<F, mask>(), jvp};
BINARY_INFO(add, Add, kNC, &jvp_add)
BINARY_INFO(sub, Sub, kNC, &jvp_sub)
BINARY_INFO(mul, Mul, kNC, &jvp_mul)
BINARY_INFO(div, Div, kNC, &jvp_div)
BINARY_INFO(rem, Rem, kMaskNum, &jvp_rem)
BINARY_INFO(pow, Pow, kMaskInexact, &jvp_pow)
BINARY_INFO(max, Max, kMaskAny, &jvp_minmax)
BINARY_INFO(min, Min, kMaskAny, &jvp_minmax)
BINARY_INFO(atan2, Atan2, kMaskFloat, &jvp_atan2)
BINARY_INFO(nextafter, NextAfter, kF64F32, nullptr)
BINARY_INFO(polygamma, Polygamma, kMaskFloat, &jvp_polygamma)
BINARY_INFO(zeta, Zeta, kMaskFloat, &jvp_zeta)
BINARY_INFO(random_gamma_grad, RandomGammaGrad, kMaskFloat, &jvp_random_gamma_grad)
BINARY_INFO(igamma, Igamma, kMaskFloat, &jvp_igamma<false>)
BINARY_INFO(igammac, Igammac, kMaskFloat, &jvp_igamma<true>)
BINARY_INFO(igamma_grad_a, IgammaGradA, kMaskFloat, &jvp_igamma_grad_a)
BINARY_INFO(and_, And, kIB, nullptr)
BINARY_INFO(or_, Or, kIB, nullptr)
BINARY_INFO(xor_, Xor, kIB, nullptr)
BINARY_INFO(shift_left, ShiftLeft, kMaskInt, nullptr)
BINARY_INFO(shift_right_logical, ShiftRightLogical, kMaskInt, nullptr)
BINARY_INFO(shift_right_arithmetic, ShiftRightArithmetic, kMaskInt, nullptr)
BINARY_INFO(add_any, Add, kNC, &jvp_add)
#undef BINARY_INFO
const BinaryInfo complex_info{kF64F32, false, binary_kernels<MakeComplex, kF64F32>(), binary_tiles<MakeComplex, kF64F32>(),
                              &jvp_complex, true};
}  // namespace

Avals binary_shape(const Primitive& p, AvalPtrs in, const Params&) {
  check_arity(p, in, 2);
  const BinaryInfo& info = *static_cast<const BinaryInfo*>(p.data);
  DType d = in[0]->dtype;
  if (d != in[1]->dtype)
    type_error(p, in,
               "operands must have the same dtype; graft::" + std::string(p.name) + " promotes types, lax does not");
  if (!(info.mask & bit(d)))
    type_error(p, in, "requires " + mask_str(info.mask) + " operands, got " + std::string(short_name(d)));
  Shape s = elementwise_shape(p, in);
  if (info.bool_out) return {Aval(std::move(s), DType::bool_, false)};
  if (info.complex_out) return {Aval(std::move(s), complex_dtype(d), false)};
  return {Aval(std::move(s), d, in[0]->weak_type && in[1]->weak_type)};
}

Arrays binary_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  const BinaryInfo& info = *static_cast<const BinaryInfo*>(p.data);
  Array r = Array::empty(out[0]);
  int64_t n = r.size();
  int as = in[0].size() == n ? 1 : 0, bs = in[1].size() == n ? 1 : 0;
  info.kernels[static_cast<size_t>(in[0].dtype())](in[0].raw_data(), in[1].raw_data(), r.concrete()->data(), n, as,
                                                   bs);
  return {r};
}

TileKernel binary_tile_rule(const Primitive& p, std::span<const Aval> in, const Params&) {
  TileKernel k;
  k.map = static_cast<const BinaryInfo*>(p.data)->tiles[static_cast<size_t>(in[0].dtype)];
  k.num_inputs = 2;
  return k;
}

#define BINARY_PRIM(id, name, transpose)                                                                    \
  const Primitive id##_p{name,                kElementwise, &binary_shape, &binary_impl, &binary_jvp, transpose, \
                         &batch_elementwise, nullptr,      &id##_info,   &binary_tile_rule};
BINARY_PRIM(add, "add", &add_transpose)
BINARY_PRIM(sub, "sub", &sub_transpose)
BINARY_PRIM(mul, "mul", &mul_transpose)
BINARY_PRIM(div, "div", &div_transpose)
BINARY_PRIM(rem, "rem", nullptr)
BINARY_PRIM(pow, "pow", nullptr)
BINARY_PRIM(max, "max", nullptr)
BINARY_PRIM(min, "min", nullptr)
BINARY_PRIM(atan2, "atan2", nullptr)
BINARY_PRIM(nextafter, "nextafter", nullptr)
BINARY_PRIM(polygamma, "polygamma", nullptr)
BINARY_PRIM(zeta, "zeta", nullptr)
BINARY_PRIM(random_gamma_grad, "random_gamma_grad", nullptr)
BINARY_PRIM(igamma, "igamma", nullptr)
BINARY_PRIM(igammac, "igammac", nullptr)
BINARY_PRIM(igamma_grad_a, "igamma_grad_a", nullptr)
BINARY_PRIM(and_, "and", nullptr)
BINARY_PRIM(or_, "or", nullptr)
BINARY_PRIM(xor_, "xor", nullptr)
BINARY_PRIM(shift_left, "shift_left", nullptr)
BINARY_PRIM(shift_right_logical, "shift_right_logical", nullptr)
BINARY_PRIM(shift_right_arithmetic, "shift_right_arithmetic", nullptr)
BINARY_PRIM(add_any, "add_any", &add_transpose)
BINARY_PRIM(complex, "complex", &complex_transpose)
#undef BINARY_PRIM

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;
#define LAX_BINARY(fn, id) \
  Array fn(const Array& a, const Array& b) { return bind1(id##_p, {a, b}); }
LAX_BINARY(add, add)
LAX_BINARY(sub, sub)
LAX_BINARY(mul, mul)
LAX_BINARY(div, div)
LAX_BINARY(rem, rem)
LAX_BINARY(pow, pow)
LAX_BINARY(max, max)
LAX_BINARY(min, min)
LAX_BINARY(atan2, atan2)
LAX_BINARY(nextafter, nextafter)
LAX_BINARY(polygamma, polygamma)
LAX_BINARY(zeta, zeta)
LAX_BINARY(random_gamma_grad, random_gamma_grad)
LAX_BINARY(igamma, igamma)
LAX_BINARY(igammac, igammac)
LAX_BINARY(igamma_grad_a, igamma_grad_a)
LAX_BINARY(bitwise_and, and_)
LAX_BINARY(bitwise_or, or_)
LAX_BINARY(bitwise_xor, xor_)
LAX_BINARY(shift_left, shift_left)
LAX_BINARY(shift_right_logical, shift_right_logical)
LAX_BINARY(shift_right_arithmetic, shift_right_arithmetic)
LAX_BINARY(add_any, add_any)
LAX_BINARY(complex, complex)
#undef LAX_BINARY
}  // namespace graft::lax
