// Unary elementwise primitives: all their rules.
//
// Each primitive is one row below: name, kernel functor, allowed dtypes, JVP. The shape rule, the
// impl, the JVP driver and the batching rule are shared by the family.
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>

#include "graft/prims/elementwise.h"
#include "graft/prims/special_math.h"
#include "graft/runtime/cpu/vmath.h"

namespace graft::prims {

namespace {

using UnaryJvp = Array (*)(const Array& x, const Array& y, const Array& t, const Params& params);

struct UnaryInfo {
  uint32_t mask;
  bool bool_out;
  std::array<UnaryKernel, kNumDTypes> kernels;
  std::array<MapTileFn, kNumDTypes> tiles;
  UnaryJvp jvp;              ///< nullptr: the derivative is zero
  const char* iparam;        ///< name of an integer parameter passed to the kernel, or nullptr
  bool real_out = false;     ///< the result is the operand's real dtype (abs, real, imag: c64 -> f32)
};

// ---- kernels --------------------------------------------------------------------------------------
template <class C>
constexpr bool is_fp = std::is_floating_point_v<C>;

struct Neg {
  template <class C>
  static C apply(C x, int64_t) {
    // floats flip the sign bit (-(+0.0) is -0.0, as XLA and the fused loops' fneg); integers wrap
    if constexpr (is_fp<C> || is_complex_v<C>) {
      return -x;
    } else {
      return wrap_sub(C(0), x);
    }
  }
};
struct Sign {
  template <class C>
  static C apply(C x, int64_t) {
    if constexpr (is_complex_v<C>) {
      // x / |x|, 0 at 0 (XLA's complex sign)
      auto m = std::abs(x);
      return m == 0 ? C(0) : x / m;
    } else if constexpr (is_fp<C>) {
      return std::isnan(x) ? x : C((x > 0) - (x < 0));
    } else if constexpr (std::is_unsigned_v<C>) {
      return C(x > 0);
    } else {
      return C((x > 0) - (x < 0));
    }
  }
};
struct Floor {
  template <class C>
  static C apply(C x, int64_t) { return std::floor(x); }
};
struct Ceil {
  template <class C>
  static C apply(C x, int64_t) { return std::ceil(x); }
};
struct Round {
  template <class C>
  static C apply(C x, int64_t method) { return method == 0 ? std::round(x) : std::nearbyint(x); }
};
struct IsFinite {
  template <class C>
  static bool apply(C x, int64_t) { return std::isfinite(x); }
};
struct Exp {
  template <class C>
  static C apply(C x, int64_t) {
    if constexpr (std::is_same_v<C, float>) {
      return vmath::exp(x);  // vectorizable (libm's is a scalar call)
    } else {
      return std::exp(x);
    }
  }
};
struct Exp2 {
  template <class C>
  static C apply(C x, int64_t) {
    if constexpr (is_complex_v<C>) {
      return std::exp(x * typename C::value_type(std::numbers::ln2));  // 2^z = e^(z ln 2), as JAX's exp2
    } else {
      return std::exp2(x);
    }
  }
};
struct Log {
  template <class C>
  static C apply(C x, int64_t) {
    if constexpr (std::is_same_v<C, float>) {
      return vmath::log(x);  // vectorizable (libm's is a scalar call)
    } else {
      return std::log(x);
    }
  }
};
struct Log1p {
  template <class C>
  static C apply(C x, int64_t) {
    if constexpr (is_complex_v<C>) {
      // log|1 + z| = log1p(2x + x^2 + y^2) / 2 and arg(1 + z): no cancellation for small z (std::log(1 + z)
      // would lose the digits below 1's ulp); |1 + z| itself where that form would overflow
      using R = typename C::value_type;
      R a = x.real(), b = x.imag();
      R m = std::abs(a) > R(0.5) || std::abs(b) > R(0.5) ? std::log(std::abs(C(R(1) + a, b)))
                                                         : std::log1p(a * (R(2) + a) + b * b) / R(2);
      return C(m, std::atan2(b, R(1) + a));
    } else {
      return std::log1p(x);
    }
  }
};
struct Expm1 {
  template <class C>
  static C apply(C x, int64_t) {
    if constexpr (is_complex_v<C>) {
      // e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y / 2): no cancellation for small z
      using R = typename C::value_type;
      R a = x.real(), b = x.imag(), h = std::sin(b / R(2));
      return C(std::expm1(a) * std::cos(b) - R(2) * h * h, std::exp(a) * std::sin(b));
    } else {
      return std::expm1(x);
    }
  }
};
struct Tanh {
  template <class C>
  static C apply(C x, int64_t) {
    if constexpr (std::is_same_v<C, float>) {
      return vmath::tanh(x);  // vectorizable (libm's is a scalar call)
    } else {
      return std::tanh(x);
    }
  }
};
struct Logistic {
  template <class C>
  static C apply(C x, int64_t) {
    if constexpr (std::is_same_v<C, float>) return vmath::logistic(x);
    if (x >= 0) return C(1) / (C(1) + std::exp(-x));
    C e = std::exp(x);
    return e / (C(1) + e);
  }
};
#define GRAFT_STD_UNARY(Name, fn)           \
  struct Name {                             \
    template <class C>                      \
    static C apply(C x, int64_t) {          \
      return std::fn(x);                    \
    }                                       \
  };
GRAFT_STD_UNARY(Sin, sin)
GRAFT_STD_UNARY(Cos, cos)
GRAFT_STD_UNARY(Tan, tan)
GRAFT_STD_UNARY(Asin, asin)
GRAFT_STD_UNARY(Acos, acos)
GRAFT_STD_UNARY(Atan, atan)
GRAFT_STD_UNARY(Sinh, sinh)
GRAFT_STD_UNARY(Cosh, cosh)
GRAFT_STD_UNARY(Asinh, asinh)
GRAFT_STD_UNARY(Acosh, acosh)
GRAFT_STD_UNARY(Atanh, atanh)
GRAFT_STD_UNARY(Sqrt, sqrt)
GRAFT_STD_UNARY(Cbrt, cbrt)
GRAFT_STD_UNARY(Erf, erf)
GRAFT_STD_UNARY(Erfc, erfc)
#undef GRAFT_STD_UNARY
struct Rsqrt {
  template <class C>
  static C apply(C x, int64_t) { return C(1) / std::sqrt(x); }
};
struct Abs {
  template <class C>
  static auto apply(C x, int64_t) {
    if constexpr (is_complex_v<C>) {
      return std::abs(x);  // hypot: no overflow for parts near the largest finite value
    } else if constexpr (is_fp<C>) {
      return std::fabs(x);
    } else if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else {
      return x < 0 ? wrap_sub(C(0), x) : x;
    }
  }
};
struct Real {
  template <class C>
  static auto apply(C x, int64_t) { return x.real(); }
};
struct Imag {
  template <class C>
  static auto apply(C x, int64_t) { return x.imag(); }
};
struct Conj {
  template <class C>
  static C apply(C x, int64_t) { return std::conj(x); }
};
// Inverse error function: Giles' single-precision approximation ("Approximating the erfinv function",
// 2010), refined by two Newton steps on erf so that f64 results are accurate too.
struct ErfInv {
  static double approx(double x) {
    double w = -std::log((1.0 - x) * (1.0 + x)), p;
    if (w < 5.0) {
      w -= 2.5;
      p = 2.81022636e-08;
      p = 3.43273939e-07 + p * w;
      p = -3.5233877e-06 + p * w;
      p = -4.39150654e-06 + p * w;
      p = 0.00021858087 + p * w;
      p = -0.00125372503 + p * w;
      p = -0.00417768164 + p * w;
      p = 0.246640727 + p * w;
      p = 1.50140941 + p * w;
    } else {
      w = std::sqrt(w) - 3.0;
      p = -0.000200214257;
      p = 0.000100950558 + p * w;
      p = 0.00134934322 + p * w;
      p = -0.00367342844 + p * w;
      p = 0.00573950773 + p * w;
      p = -0.0076224613 + p * w;
      p = 0.00943887047 + p * w;
      p = 1.00167406 + p * w;
      p = 2.83297682 + p * w;
    }
    return p * x;
  }
  template <class C>
  static C apply(C xc, int64_t) {
    double x = static_cast<double>(xc);
    if (std::isnan(x) || x < -1.0 || x > 1.0) return std::numeric_limits<C>::quiet_NaN();
    if (x == 1.0) return std::numeric_limits<C>::infinity();
    if (x == -1.0) return -std::numeric_limits<C>::infinity();
    double r = approx(x);
    for (int i = 0; i < 2; ++i) {
      double err = std::erf(r) - x;
      r -= err / (2.0 / std::sqrt(std::numbers::pi) * std::exp(-r * r));
    }
    return static_cast<C>(r);
  }
};
// Special functions (graft/prims/special_math.h), in double whatever the operand's type.
template <double (*F)(double)>
struct Special {
  template <class C>
  static C apply(C x, int64_t) { return static_cast<C>(F(static_cast<double>(x))); }
};
using Lgamma = Special<&special::lgamma>;
using Digamma = Special<&special::digamma>;
using BesselI0e = Special<&special::bessel_i0e>;
using BesselI1e = Special<&special::bessel_i1e>;
struct Square {
  template <class C>
  static C apply(C x, int64_t) { return wrap_mul(x, x); }
};
struct IntegerPow {
  template <class C>
  static C apply(C x, int64_t y) {
    bool inv = y < 0;
    uint64_t e = static_cast<uint64_t>(inv ? -y : y);
    C acc = C(1), base = x;
    while (e) {
      if (e & 1) acc = wrap_mul(acc, base);
      base = wrap_mul(base, base);
      e >>= 1;
    }
    if constexpr (is_fp<C> || is_complex_v<C>) {
      return inv ? C(1) / acc : acc;
    } else {
      return acc;
    }
  }
};
struct Not {
  template <class C>
  static C apply(C x, int64_t) {
    if constexpr (std::is_same_v<C, bool>) {
      return !x;
    } else {
      return static_cast<C>(~x);
    }
  }
};
struct PopCount {
  template <class C>
  static C apply(C x, int64_t) { return static_cast<C>(std::popcount(static_cast<std::make_unsigned_t<C>>(x))); }
};
struct Identity {
  template <class C>
  static C apply(C x, int64_t) { return x; }
};

// ---- derivatives (written with primitives, so they can be differentiated again) ------------------------
Array c(double v, const Array& like) { return lax::scalar(v, like.dtype()); }
Array jvp_neg(const Array&, const Array&, const Array& t, const Params&) { return lax::neg(t); }
Array jvp_exp(const Array&, const Array& y, const Array& t, const Params&) { return lax::mul(t, y); }
Array jvp_exp2(const Array&, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::mul(y, c(std::numbers::ln2, y)));
}
Array jvp_log(const Array& x, const Array&, const Array& t, const Params&) { return lax::div(t, x); }
Array jvp_log1p(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::div(t, lax::add(x, c(1, x)));
}
Array jvp_expm1(const Array&, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::add(y, c(1, y)));
}
Array jvp_tanh(const Array&, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::sub(c(1, y), lax::square(y)));
}
Array jvp_logistic(const Array&, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::mul(y, lax::sub(c(1, y), y)));
}
Array jvp_sin(const Array& x, const Array&, const Array& t, const Params&) { return lax::mul(t, lax::cos(x)); }
Array jvp_cos(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::neg(lax::mul(t, lax::sin(x)));
}
Array jvp_tan(const Array&, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::add(c(1, y), lax::square(y)));
}
Array jvp_asin(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::mul(t, lax::rsqrt(lax::sub(c(1, x), lax::square(x))));
}
Array jvp_acos(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::neg(lax::mul(t, lax::rsqrt(lax::sub(c(1, x), lax::square(x)))));
}
Array jvp_atan(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::div(t, lax::add(c(1, x), lax::square(x)));
}
Array jvp_sinh(const Array& x, const Array&, const Array& t, const Params&) { return lax::mul(t, lax::cosh(x)); }
Array jvp_cosh(const Array& x, const Array&, const Array& t, const Params&) { return lax::mul(t, lax::sinh(x)); }
Array jvp_asinh(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::mul(t, lax::rsqrt(lax::add(lax::square(x), c(1, x))));
}
// 1 / (sqrt(x - 1) sqrt(x + 1)): the principal branch's derivative for complex x too (1 / sqrt(x^2 - 1)
// has the wrong sign in the left half plane)
Array jvp_acosh(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::mul(t, lax::mul(lax::rsqrt(lax::sub(x, c(1, x))), lax::rsqrt(lax::add(x, c(1, x)))));
}
Array jvp_atanh(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::div(t, lax::sub(c(1, x), lax::square(x)));
}
Array jvp_sqrt(const Array&, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::div(c(0.5, y), y));
}
Array jvp_rsqrt(const Array& x, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::mul(c(-0.5, y), lax::div(y, x)));
}
Array jvp_cbrt(const Array&, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::mul(c(1.0 / 3.0, y), lax::integer_pow(y, -2)));
}
Array jvp_abs(const Array& x, const Array& y, const Array& t, const Params&) {
  if (is_complex(x.dtype())) {
    // d|x| = Re(conj(x) t) / |x|, with |x| = 0 read as 1 (JAX's rule: the derivative at 0 is 0)
    Array m = lax::convert_element_type(y, x.dtype());
    Array safe = lax::select(lax::eq(m, c(0, m)), lax::full(m.shape(), 1, m.dtype()), m);
    return lax::real(lax::mul(t, lax::div(lax::conj(x), safe)));
  }
  return lax::select(lax::ge(x, c(0, x)), t, lax::neg(t));
}
Array jvp_erf(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::mul(t, lax::mul(c(2.0 / std::sqrt(std::numbers::pi), x), lax::exp(lax::neg(lax::square(x)))));
}
Array jvp_erfc(const Array& x, const Array& y, const Array& t, const Params& p) {
  return lax::neg(jvp_erf(x, y, t, p));
}
Array jvp_erf_inv(const Array&, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::mul(c(std::sqrt(std::numbers::pi) / 2.0, y), lax::exp(lax::square(y))));
}
Array jvp_lgamma(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::mul(t, lax::digamma(x));
}
Array jvp_digamma(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::mul(t, lax::polygamma(c(1, x), x));
}
// d/dx e^-|x| I0(x) = e^-|x| (I1(x) - sign(x) I0(x))
Array jvp_bessel_i0e(const Array& x, const Array& y, const Array& t, const Params&) {
  return lax::mul(t, lax::sub(lax::bessel_i1e(x), lax::mul(lax::sign(x), y)));
}
// d/dx e^-|x| I1(x) = e^-|x| (I0(x) - I1(x) (sign(x) + 1/x)), which is 1/2 at 0
Array jvp_bessel_i1e(const Array& x, const Array& y, const Array& t, const Params&) {
  Array zero = lax::eq(x, c(0, x));
  Array safe = lax::select(zero, lax::full(x.shape(), 1, x.dtype()), x);
  Array d = lax::sub(lax::bessel_i0e(x), lax::mul(y, lax::add(lax::sign(x), lax::div(c(1, x), safe))));
  return lax::mul(t, lax::select(zero, lax::full(x.shape(), 0.5, x.dtype()), d));
}
Array jvp_square(const Array& x, const Array&, const Array& t, const Params&) {
  return lax::mul(t, lax::mul(c(2, x), x));
}
Array jvp_integer_pow(const Array& x, const Array&, const Array& t, const Params& p) {
  int64_t y = p.get_int("y");
  if (y == 0) return lax::zeros_like(t);
  Array d = y == 1 ? lax::full(x.shape(), 1, x.dtype()) : lax::integer_pow(x, y - 1);
  return lax::mul(t, lax::mul(c(static_cast<double>(y), x), d));
}
Array jvp_identity(const Array&, const Array&, const Array& t, const Params&) { return t; }
Array jvp_real(const Array&, const Array&, const Array& t, const Params&) { return lax::real(t); }
Array jvp_imag(const Array&, const Array&, const Array& t, const Params&) { return lax::imag(t); }
Array jvp_conj(const Array&, const Array&, const Array& t, const Params&) { return lax::conj(t); }

// ---- shared rules -------------------------------------------------------------------------------------
const UnaryInfo& info_of(const Primitive& p) { return *static_cast<const UnaryInfo*>(p.data); }

Avals unary_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  const UnaryInfo& info = info_of(p);
  const Aval& a = *in[0];
  if (!(info.mask & bit(a.dtype)))
    type_error(p, in, "requires a " + mask_str(info.mask) + " operand, got " + std::string(short_name(a.dtype)));
  if (info.iparam && !params.has(info.iparam))
    fail<ValueError>(p.name, ": missing parameter '", info.iparam, "'");
  if (&p == &integer_pow_p && params.get_int("y") < 0 && !is_inexact(a.dtype))
    type_error(p, in, "negative exponents need a floating-point or complex operand");
  if (info.bool_out) return {Aval(a.shape, DType::bool_, false)};
  if (info.real_out) return {Aval(a.shape, real_dtype(a.dtype), a.weak_type)};
  return {a};
}

Arrays unary_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  const UnaryInfo& info = info_of(p);
  int64_t ip = info.iparam ? params.get_int(info.iparam) : 0;
  Array r = Array::empty(out[0]);
  info.kernels[static_cast<size_t>(in[0].dtype())](in[0].raw_data(), r.concrete()->data(), in[0].size(), ip);
  return {r};
}

TileKernel unary_tile_rule(const Primitive& p, std::span<const Aval> in, const Params& params) {
  const UnaryInfo& info = info_of(p);
  TileKernel k;
  k.map = info.tiles[static_cast<size_t>(in[0].dtype)];
  k.iparam = info.iparam ? params.get_int(info.iparam) : 0;
  k.num_inputs = 1;
  return k;
}
JvpResult unary_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                    const Params& params) {
  Array y = bind1(p, primals, params);
  const UnaryInfo& info = info_of(p);
  if (!info.jvp || is_zero(tangents[0])) return {{y}, {Array()}};
  return {{y}, {info.jvp(primals[0], y, tangents[0], params)}};
}

Arrays neg_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params&) {
  return {lax::neg(cts[0])};
}
Arrays identity_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params&) {
  return {cts[0]};
}
// JAX's transposes (cotangents of complex values are not conjugated): real's is complex(ct, 0), imag's
// complex(0, -ct), conj's conj(ct).
Arrays real_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params&) {
  return {lax::complex(cts[0], lax::zeros_like(cts[0]))};
}
Arrays imag_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params&) {
  return {lax::complex(lax::zeros_like(cts[0]), lax::neg(cts[0]))};
}
Arrays conj_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params&) {
  return {lax::conj(cts[0])};
}

#define UNARY_INFO(id, Functor, mask, bool_out, jvp, iparam) \
  const UnaryInfo id##_info{mask, bool_out, unary_kernels<Functor, mask>(), unary_tiles<Functor, mask>(), jvp, iparam};
UNARY_INFO(neg, Neg, kMaskNum | kMaskComplex, false, &jvp_neg, nullptr)
UNARY_INFO(sign, Sign, kMaskNum | kMaskComplex, false, nullptr, nullptr)
UNARY_INFO(floor, Floor, kMaskFloat, false, nullptr, nullptr)
UNARY_INFO(ceil, Ceil, kMaskFloat, false, nullptr, nullptr)
UNARY_INFO(round, Round, kMaskFloat, false, nullptr, "rounding_method")
UNARY_INFO(is_finite, IsFinite, kMaskFloat, true, nullptr, nullptr)
UNARY_INFO(exp, Exp, kMaskInexact, false, &jvp_exp, nullptr)
UNARY_INFO(exp2, Exp2, kMaskInexact, false, &jvp_exp2, nullptr)
UNARY_INFO(log, Log, kMaskInexact, false, &jvp_log, nullptr)
UNARY_INFO(log1p, Log1p, kMaskInexact, false, &jvp_log1p, nullptr)
UNARY_INFO(expm1, Expm1, kMaskInexact, false, &jvp_expm1, nullptr)
UNARY_INFO(tanh, Tanh, kMaskInexact, false, &jvp_tanh, nullptr)
UNARY_INFO(logistic, Logistic, kMaskFloat, false, &jvp_logistic, nullptr)
UNARY_INFO(sin, Sin, kMaskInexact, false, &jvp_sin, nullptr)
UNARY_INFO(cos, Cos, kMaskInexact, false, &jvp_cos, nullptr)
UNARY_INFO(tan, Tan, kMaskInexact, false, &jvp_tan, nullptr)
UNARY_INFO(asin, Asin, kMaskInexact, false, &jvp_asin, nullptr)
UNARY_INFO(acos, Acos, kMaskInexact, false, &jvp_acos, nullptr)
UNARY_INFO(atan, Atan, kMaskInexact, false, &jvp_atan, nullptr)
UNARY_INFO(sinh, Sinh, kMaskInexact, false, &jvp_sinh, nullptr)
UNARY_INFO(cosh, Cosh, kMaskInexact, false, &jvp_cosh, nullptr)
UNARY_INFO(asinh, Asinh, kMaskInexact, false, &jvp_asinh, nullptr)
UNARY_INFO(acosh, Acosh, kMaskInexact, false, &jvp_acosh, nullptr)
UNARY_INFO(atanh, Atanh, kMaskInexact, false, &jvp_atanh, nullptr)
UNARY_INFO(sqrt, Sqrt, kMaskInexact, false, &jvp_sqrt, nullptr)
UNARY_INFO(rsqrt, Rsqrt, kMaskInexact, false, &jvp_rsqrt, nullptr)
UNARY_INFO(cbrt, Cbrt, kMaskFloat, false, &jvp_cbrt, nullptr)
const UnaryInfo abs_info{kMaskNum | kMaskComplex, false, unary_kernels<Abs, kMaskNum | kMaskComplex>(),
                         unary_tiles<Abs, kMaskNum | kMaskComplex>(), &jvp_abs, nullptr, true};
UNARY_INFO(erf, Erf, kMaskFloat, false, &jvp_erf, nullptr)
UNARY_INFO(erfc, Erfc, kMaskFloat, false, &jvp_erfc, nullptr)
UNARY_INFO(erf_inv, ErfInv, kMaskFloat, false, &jvp_erf_inv, nullptr)
UNARY_INFO(lgamma, Lgamma, kMaskFloat, false, &jvp_lgamma, nullptr)
UNARY_INFO(digamma, Digamma, kMaskFloat, false, &jvp_digamma, nullptr)
UNARY_INFO(bessel_i0e, BesselI0e, kMaskFloat, false, &jvp_bessel_i0e, nullptr)
UNARY_INFO(bessel_i1e, BesselI1e, kMaskFloat, false, &jvp_bessel_i1e, nullptr)
UNARY_INFO(square, Square, kMaskNum | kMaskComplex, false, &jvp_square, nullptr)
UNARY_INFO(integer_pow, IntegerPow, kMaskNum | kMaskComplex, false, &jvp_integer_pow, "y")
UNARY_INFO(not_, Not, kMaskInt | kMaskBool, false, nullptr, nullptr)
UNARY_INFO(population_count, PopCount, kMaskInt, false, nullptr, nullptr)
UNARY_INFO(copy, Identity, kMaskAny, false, &jvp_identity, nullptr)
UNARY_INFO(stop_gradient, Identity, kMaskAny, false, nullptr, nullptr)
#undef UNARY_INFO
const UnaryInfo real_info{kMaskComplex, false, unary_kernels<Real, kMaskComplex>(), unary_tiles<Real, kMaskComplex>(),
                          &jvp_real, nullptr, true};
const UnaryInfo imag_info{kMaskComplex, false, unary_kernels<Imag, kMaskComplex>(), unary_tiles<Imag, kMaskComplex>(),
                          &jvp_imag, nullptr, true};
const UnaryInfo conj_info{kMaskComplex, false, unary_kernels<Conj, kMaskComplex>(), unary_tiles<Conj, kMaskComplex>(),
                          &jvp_conj, nullptr};

}  // namespace

#define UNARY_PRIM(id, name, transpose)                                                                     \
  const Primitive id##_p{name,         kElementwise, &unary_shape, &unary_impl, &unary_jvp, transpose, \
                         &batch_unary, nullptr,      &id##_info,   &unary_tile_rule};
UNARY_PRIM(neg, "neg", &neg_transpose)
UNARY_PRIM(sign, "sign", nullptr)
UNARY_PRIM(floor, "floor", nullptr)
UNARY_PRIM(ceil, "ceil", nullptr)
UNARY_PRIM(round, "round", nullptr)
UNARY_PRIM(is_finite, "is_finite", nullptr)
UNARY_PRIM(exp, "exp", nullptr)
UNARY_PRIM(exp2, "exp2", nullptr)
UNARY_PRIM(log, "log", nullptr)
UNARY_PRIM(log1p, "log1p", nullptr)
UNARY_PRIM(expm1, "expm1", nullptr)
UNARY_PRIM(tanh, "tanh", nullptr)
UNARY_PRIM(logistic, "logistic", nullptr)
UNARY_PRIM(sin, "sin", nullptr)
UNARY_PRIM(cos, "cos", nullptr)
UNARY_PRIM(tan, "tan", nullptr)
UNARY_PRIM(asin, "asin", nullptr)
UNARY_PRIM(acos, "acos", nullptr)
UNARY_PRIM(atan, "atan", nullptr)
UNARY_PRIM(sinh, "sinh", nullptr)
UNARY_PRIM(cosh, "cosh", nullptr)
UNARY_PRIM(asinh, "asinh", nullptr)
UNARY_PRIM(acosh, "acosh", nullptr)
UNARY_PRIM(atanh, "atanh", nullptr)
UNARY_PRIM(sqrt, "sqrt", nullptr)
UNARY_PRIM(rsqrt, "rsqrt", nullptr)
UNARY_PRIM(cbrt, "cbrt", nullptr)
UNARY_PRIM(abs, "abs", nullptr)
UNARY_PRIM(erf, "erf", nullptr)
UNARY_PRIM(erfc, "erfc", nullptr)
UNARY_PRIM(erf_inv, "erf_inv", nullptr)
UNARY_PRIM(lgamma, "lgamma", nullptr)
UNARY_PRIM(digamma, "digamma", nullptr)
UNARY_PRIM(bessel_i0e, "bessel_i0e", nullptr)
UNARY_PRIM(bessel_i1e, "bessel_i1e", nullptr)
UNARY_PRIM(square, "square", nullptr)
UNARY_PRIM(integer_pow, "integer_pow", nullptr)
UNARY_PRIM(not_, "not", nullptr)
UNARY_PRIM(population_count, "population_count", nullptr)
UNARY_PRIM(copy, "copy", &identity_transpose)
UNARY_PRIM(stop_gradient, "stop_gradient", nullptr)
UNARY_PRIM(real, "real", &real_transpose)
UNARY_PRIM(imag, "imag", &imag_transpose)
UNARY_PRIM(conj, "conj", &conj_transpose)
#undef UNARY_PRIM

}  // namespace graft::prims

// ---- lax entry points ----------------------------------------------------------------------------------

namespace graft::lax {
using namespace graft::prims;
#define LAX_UNARY(fn, id) \
  Array fn(const Array& x) { return bind1(id##_p, {x}); }
LAX_UNARY(neg, neg)
LAX_UNARY(sign, sign)
LAX_UNARY(floor, floor)
LAX_UNARY(ceil, ceil)
LAX_UNARY(is_finite, is_finite)
LAX_UNARY(exp, exp)
LAX_UNARY(exp2, exp2)
LAX_UNARY(log, log)
LAX_UNARY(log1p, log1p)
LAX_UNARY(expm1, expm1)
LAX_UNARY(tanh, tanh)
LAX_UNARY(logistic, logistic)
LAX_UNARY(sin, sin)
LAX_UNARY(cos, cos)
LAX_UNARY(tan, tan)
LAX_UNARY(asin, asin)
LAX_UNARY(acos, acos)
LAX_UNARY(atan, atan)
LAX_UNARY(sinh, sinh)
LAX_UNARY(cosh, cosh)
LAX_UNARY(asinh, asinh)
LAX_UNARY(acosh, acosh)
LAX_UNARY(atanh, atanh)
LAX_UNARY(sqrt, sqrt)
LAX_UNARY(rsqrt, rsqrt)
LAX_UNARY(cbrt, cbrt)
LAX_UNARY(abs, abs)
LAX_UNARY(erf, erf)
LAX_UNARY(erfc, erfc)
LAX_UNARY(erf_inv, erf_inv)
LAX_UNARY(lgamma, lgamma)
LAX_UNARY(digamma, digamma)
LAX_UNARY(bessel_i0e, bessel_i0e)
LAX_UNARY(bessel_i1e, bessel_i1e)
LAX_UNARY(square, square)
LAX_UNARY(bitwise_not, not_)
LAX_UNARY(population_count, population_count)
LAX_UNARY(copy, copy)
LAX_UNARY(stop_gradient, stop_gradient)
LAX_UNARY(real, real)
LAX_UNARY(imag, imag)
LAX_UNARY(conj, conj)
#undef LAX_UNARY
Array round(const Array& x, int rounding_method) {
  return bind1(round_p, {x}, {{"rounding_method", int64_t(rounding_method)}});
}
Array integer_pow(const Array& x, int64_t y) { return bind1(integer_pow_p, {x}, {{"y", y}}); }
}  // namespace graft::lax
