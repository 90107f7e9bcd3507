#include "graft/backends/cuda/kernels.h"

#include <map>
#include <set>

namespace graft::cuda_kernels {

namespace {

// Types, f16/bf16 conversions (bit-exact with graft/core/half.h: round to nearest even; an f16 NaN
// keeps the top of its payload and becomes quiet both ways, as F16C converts) and the helpers the
// expressions use.
const char* kPrelude = R"(
typedef signed char i8; typedef short i16; typedef int i32; typedef long long i64;
typedef unsigned char u8; typedef unsigned short u16; typedef unsigned int u32; typedef unsigned long long u64;
struct boolean { unsigned char v; };
struct alignas(16) w128 { u64 lo, hi; };
struct alignas(8) c64 { float re, im; };
struct alignas(16) c128 { double re, im; };
struct f16 { unsigned short bits; };
struct bf16 { unsigned short bits; };
__device__ __forceinline__ float bits_f32(u32 u) { return __int_as_float((int)u); }
__device__ __forceinline__ u32 f32_bits(float f) { return (u32)__float_as_int(f); }
__device__ __forceinline__ float ld(bf16 x) { return bits_f32((u32)x.bits << 16); }
__device__ __forceinline__ float ld(f16 h) {
  u32 sign = (u32)(h.bits & 0x8000u) << 16, exp = (h.bits >> 10) & 0x1fu, mant = h.bits & 0x3ffu, u;
  if (exp == 0) {
    if (mant == 0) { u = sign; }
    else { exp = 113; while (!(mant & 0x400u)) { mant <<= 1; --exp; } mant &= 0x3ffu; u = sign | (exp << 23) | (mant << 13); }
  } else if (exp == 31) { u = sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u); }
  else { u = sign | ((exp + 112) << 23) | (mant << 13); }
  return bits_f32(u);
}
template <class T> __device__ __forceinline__ T ld(T x) { return x; }
__device__ __forceinline__ bool ld(boolean x) { return x.v != 0; }
template <class T> struct St { template <class C> __device__ static T f(C x) { return (T)x; } };
template <> struct St<boolean> { template <class C> __device__ static boolean f(C x) { boolean b; b.v = x ? 1 : 0; return b; } };
template <> struct St<bf16> { __device__ static bf16 f(float f) {
  u32 u = f32_bits(f); bf16 r;
  if ((u & 0x7fffffffu) > 0x7f800000u) { r.bits = (unsigned short)((u >> 16) | 0x40); return r; }
  u += 0x7fffu + ((u >> 16) & 1u); r.bits = (unsigned short)(u >> 16); return r; } };
template <> struct St<f16> { __device__ static f16 f(float f) {
  u32 u = f32_bits(f), sign = (u >> 16) & 0x8000u, absu = u & 0x7fffffffu; f16 r;
  if (absu > 0x7f800000u) { r.bits = (unsigned short)(sign | 0x7e00u | ((absu >> 13) & 0x3ffu)); return r; }
  if (absu >= 0x477ff000u) { r.bits = (unsigned short)(sign | 0x7c00u); return r; }
  if (absu < 0x38800000u) {
    if (absu < 0x33000000u) { r.bits = (unsigned short)sign; return r; }
    u32 exp = absu >> 23, mant = (absu & 0x7fffffu) | 0x800000u, shift = 126 - exp;
    u32 res = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (res & 1u))) ++res;
    r.bits = (unsigned short)(sign | res); return r;
  }
  u32 res = (absu - 0x38000000u) >> 13, rem = absu & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (res & 1u))) ++res;
  r.bits = (unsigned short)(sign | res); return r; } };
template <class T, class C> __device__ __forceinline__ T st(C x) { return St<T>::f(x); }

template <class C> __device__ __forceinline__ bool g_isnan(C x) { return x != x; }
template <class C> __device__ __forceinline__ C g_max(C a, C b) { if (g_isnan(a)) return a; if (g_isnan(b)) return b; return a > b ? a : b; }
template <class C> __device__ __forceinline__ C g_min(C a, C b) { if (g_isnan(a)) return a; if (g_isnan(b)) return b; return a < b ? a : b; }
template <class C> __device__ __forceinline__ C g_sign(C x) { if (g_isnan(x)) return x; return (C)((x > 0) - (x < 0)); }
template <class C> __device__ __forceinline__ C g_idiv(C a, C b) {
  if (b == 0) return (C)~(C)0;
  if ((C)-1 < 0 && b == (C)-1) return (C)(0 - (unsigned long long)a);
  return a / b; }
template <class C> __device__ __forceinline__ C g_irem(C a, C b) { if (b == 0) return a; if ((C)-1 < 0 && b == (C)-1) return 0; return a % b; }
template <class C> __device__ __forceinline__ bool g_bad_shift(C b) { return ((C)-1 < 0 && b < 0) || (unsigned long long)b >= sizeof(C) * 8; }
template <class C> __device__ __forceinline__ C g_shl(C a, C b) { return g_bad_shift(b) ? (C)0 : (C)((unsigned long long)a << b); }
template <class C> __device__ __forceinline__ C g_shrl(C a, C b) {
  if (g_bad_shift(b)) return (C)0;
  if (sizeof(C) == 1) return (C)((u8)a >> b); if (sizeof(C) == 2) return (C)((u16)a >> b);
  if (sizeof(C) == 4) return (C)((u32)a >> b); return (C)((u64)a >> b); }
template <class C> __device__ __forceinline__ C g_shra(C a, C b) { if (g_bad_shift(b)) return (C)-1 < 0 && a < 0 ? (C)-1 : (C)0; return a >> b; }
template <class C> __device__ __forceinline__ C g_ipow(C x, i64 y) {
  bool inv = y < 0; unsigned long long e = inv ? -y : y; C acc = 1, base = x;
  while (e) { if (e & 1) acc = acc * base; base = base * base; e >>= 1; }
  return inv ? (C)1 / acc : acc; }
__device__ __forceinline__ float g_logistic(float x) { if (x >= 0) return 1.0f / (1.0f + expf(-x)); float e = expf(x); return e / (1.0f + e); }
__device__ __forceinline__ double g_logistic(double x) { if (x >= 0) return 1.0 / (1.0 + exp(-x)); double e = exp(x); return e / (1.0 + e); }
template <class C> __device__ __forceinline__ C g_round(C x, i64 m) { return m == 0 ? round(x) : rint(x); }
template <class T> __device__ __forceinline__ T g_sat(double d, T lo) {
  T hi = (T)~lo; return d != d ? (T)0 : d <= (double)lo ? lo : d >= (double)hi ? hi : (T)d; }
__device__ __forceinline__ double g_infinity() { return __longlong_as_double(0x7ff0000000000000LL); }
// Complex values: the CPU's arithmetic (graft/prims/elementwise.h's wrap_mul: the textbook product, complex64's
// exact in double and rounded once, complex128's through one fma per part, so both agree bit for bit),
// division by Smith's method, and the elementary functions by their textbook formulas in double (with the
// special cases of C99's annex G that the formulas miss, and scaling where they would overflow);
// complex64's are complex128's rounded once.
#define G_CX(Z, R) \
__device__ __forceinline__ Z operator+(Z a, Z b) { return Z{a.re + b.re, a.im + b.im}; } \
__device__ __forceinline__ Z operator-(Z a, Z b) { return Z{a.re - b.re, a.im - b.im}; } \
__device__ __forceinline__ Z operator-(Z a) { return Z{-a.re, -a.im}; } \
__device__ __forceinline__ bool operator==(Z a, Z b) { return a.re == b.re && a.im == b.im; } \
__device__ __forceinline__ bool operator!=(Z a, Z b) { return !(a == b); } \
__device__ __forceinline__ Z g_conj(Z a) { return Z{a.re, -a.im}; } \
__device__ __forceinline__ Z g_complex(R re, R im) { return Z{re, im}; } \
__device__ __forceinline__ R g_cabs(Z a) { return hypot(a.re, a.im); }
G_CX(c64, float)
G_CX(c128, double)
#undef G_CX
__device__ __forceinline__ c64 operator*(c64 a, c64 b) {
  double ar = a.re, ai = a.im, br = b.re, bi = b.im;
  return c64{(float)(ar * br - ai * bi), (float)(ar * bi + ai * br)}; }
__device__ __forceinline__ c128 operator*(c128 a, c128 b) {
  return c128{fma(a.re, b.re, -(a.im * b.im)), fma(a.re, b.im, a.im * b.re)}; }
__device__ __forceinline__ c128 operator/(c128 a, c128 b) {
  double r, den, x, y;
  if (fabs(b.re) >= fabs(b.im)) {
    if (b.re == 0 && b.im == 0) return c128{copysign(g_infinity(), b.re) * a.re, copysign(g_infinity(), b.re) * a.im};
    r = b.im / b.re; den = b.re + b.im * r; x = (a.re + a.im * r) / den; y = (a.im - a.re * r) / den;
  } else {
    r = b.re / b.im; den = b.re * r + b.im; x = (a.re * r + a.im) / den; y = (a.im * r - a.re) / den;
  }
  return c128{x, y}; }
__device__ __forceinline__ c128 g_cexp(c128 a) {
  if (a.im == 0) return c128{exp(a.re), a.im};
  if (a.re == -g_infinity()) return c128{copysign(0.0, cos(a.im)), copysign(0.0, sin(a.im))};
  if (a.re > 709) { double h = exp(a.re / 2); return c128{h * cos(a.im) * h, h * sin(a.im) * h}; }
  double e = exp(a.re); return c128{e * cos(a.im), e * sin(a.im)}; }
__device__ __forceinline__ c128 g_clog(c128 a) {
  double h = hypot(a.re, a.im);
  // near |z| = 1 from the parts (log(h) would lose the digits of h - 1)
  double re = h > 0.7 && h < 1.4 ? 0.5 * log1p((a.re - 1) * (a.re + 1) + a.im * a.im) : log(h);
  return c128{re, atan2(a.im, a.re)}; }
__device__ __forceinline__ c128 g_csqrt(c128 a) {
  if (a.re == 0 && a.im == 0) return c128{0.0, a.im};
  if (isinf(a.im)) return c128{g_infinity(), a.im};
  double x = a.re, y = a.im, s = 1;
  if (fabs(x) > 1e300 || fabs(y) > 1e300) { x *= 0.25; y *= 0.25; s = 2; }
  double t = sqrt((fabs(x) + hypot(x, y)) / 2);
  return x >= 0 ? c128{s * t, s * (y / (2 * t))} : c128{s * (fabs(y) / (2 * t)), s * copysign(t, y)}; }
__device__ __forceinline__ c128 g_wide(c64 a) { return c128{a.re, a.im}; }
__device__ __forceinline__ c64 g_narrow(c128 a) { return c64{(float)a.re, (float)a.im}; }
__device__ __forceinline__ c64 operator/(c64 a, c64 b) { return g_narrow(g_wide(a) / g_wide(b)); }
__device__ __forceinline__ c64 g_cexp(c64 a) { return g_narrow(g_cexp(g_wide(a))); }
__device__ __forceinline__ c64 g_clog(c64 a) { return g_narrow(g_clog(g_wide(a))); }
__device__ __forceinline__ c64 g_csqrt(c64 a) { return g_narrow(g_csqrt(g_wide(a))); }
template <class Z> __device__ __forceinline__ Z g_cipow(Z x, i64 y) {
  bool inv = y < 0; unsigned long long e = inv ? -y : y; Z acc = Z{1, 0}, base = x;
  while (e) { if (e & 1) acc = acc * base; base = base * base; e >>= 1; }
  return inv ? Z{1, 0} / acc : acc; }
template <class C> __device__ __forceinline__ C g_popc(C x) { return sizeof(C) == 8 ? (C)__popcll((u64)x) : (C)__popc((u32)x & (u32)((sizeof(C) == 4) ? 0xffffffffu : ((1u << (8 * sizeof(C))) - 1u))); }
)";

struct Desc {
  const char* expr;
  uint32_t types;  // bit per DType
};
constexpr uint32_t bit(DType d) { return 1u << static_cast<int>(d); }
constexpr uint32_t F = bit(DType::f16) | bit(DType::bf16) | bit(DType::f32) | bit(DType::f64);
constexpr uint32_t SI = bit(DType::i8) | bit(DType::i16) | bit(DType::i32) | bit(DType::i64);
constexpr uint32_t UI = bit(DType::u8) | bit(DType::u16) | bit(DType::u32) | bit(DType::u64);
constexpr uint32_t I = SI | UI;
constexpr uint32_t B = bit(DType::bool_);
constexpr uint32_t N = F | I;
constexpr uint32_t A = N | B;
constexpr uint32_t CX = bit(DType::c64) | bit(DType::c128);

// One description per elementwise primitive (graft/prims/primitives.def): the expression and the
// operand types it serves. Several spellings by type class are separate entries (name#class).
const std::map<std::string, std::vector<Desc>>& table() {
  static const std::map<std::string, std::vector<Desc>> t = {
      {"neg", {{"-a", F | CX}, {"(C)0 - a", I}}},  // -a keeps IEEE negation: -(+0.0) is -0.0
      {"sign", {{"g_sign(a)", F | SI}, {"(C)(a > 0)", UI}}},
      {"floor", {{"floor(a)", F}}},
      {"ceil", {{"ceil(a)", F}}},
      {"round", {{"g_round(a, p)", F}}},
      {"is_finite", {{"isfinite(a)", F}}},
      {"exp", {{"exp(a)", F}, {"g_cexp(a)", CX}}},
      {"exp2", {{"exp2(a)", F}}},
      {"log", {{"log(a)", F}, {"g_clog(a)", CX}}},
      {"log1p", {{"log1p(a)", F}}},
      {"expm1", {{"expm1(a)", F}}},
      {"tanh", {{"tanh(a)", F}}},
      {"logistic", {{"g_logistic(a)", F}}},
      {"sin", {{"sin(a)", F}}},
      {"cos", {{"cos(a)", F}}},
      {"tan", {{"tan(a)", F}}},
      {"asin", {{"asin(a)", F}}},
      {"acos", {{"acos(a)", F}}},
      {"atan", {{"atan(a)", F}}},
      {"sinh", {{"sinh(a)", F}}},
      {"cosh", {{"cosh(a)", F}}},
      {"asinh", {{"asinh(a)", F}}},
      {"acosh", {{"acosh(a)", F}}},
      {"atanh", {{"atanh(a)", F}}},
      {"sqrt", {{"sqrt(a)", F}, {"g_csqrt(a)", CX}}},
      {"rsqrt", {{"(C)1 / sqrt(a)", F}}},
      {"cbrt", {{"cbrt(a)", F}}},
      {"abs", {{"fabs(a)", F}, {"a < 0 ? (C)((C)0 - a) : a", SI}, {"a", UI}, {"g_cabs(a)", CX}}},
      {"erf", {{"erf(a)", F}}},
      {"erfc", {{"erfc(a)", F}}},
      {"erf_inv", {{"erfinv(a)", F}}},
      {"square", {{"a * a", N | CX}}},
      {"integer_pow", {{"g_ipow(a, p)", N}, {"g_cipow(a, p)", CX}}},
      {"not", {{"!a", B}, {"(C)~a", I}}},
      {"population_count", {{"g_popc(a)", I}}},
      {"copy", {{"a", A | CX}}},
      {"stop_gradient", {{"a", A | CX}}},
      {"real", {{"a.re", CX}}},
      {"imag", {{"a.im", CX}}},
      {"conj", {{"g_conj(a)", CX}}},
      {"complex", {{"g_complex(a, b)", bit(DType::f32) | bit(DType::f64)}}},
      {"add", {{"a + b", N | CX}, {"a || b", B}}},
      {"add_any", {{"a + b", N | CX}}},
      {"sub", {{"a - b", N | CX}}},
      {"mul", {{"a * b", N | CX}, {"a && b", B}}},
      {"div", {{"a / b", F | CX}, {"g_idiv(a, b)", I}}},
      {"rem", {{"fmod(a, b)", F}, {"g_irem(a, b)", I}}},
      {"pow", {{"pow(a, b)", F}}},
      {"max", {{"g_max(a, b)", N}, {"a || b", B}}},
      {"min", {{"g_min(a, b)", N}, {"a && b", B}}},
      {"atan2", {{"atan2(a, b)", F}}},
      {"nextafter", {{"nextafter(a, b)", bit(DType::f32) | bit(DType::f64)}}},
      {"and", {{"a & b", I}, {"a && b", B}}},
      {"or", {{"a | b", I}, {"a || b", B}}},
      {"xor", {{"a ^ b", I}, {"a != b", B}}},
      {"shift_left", {{"g_shl(a, b)", I}}},
      {"shift_right_logical", {{"g_shrl(a, b)", I}}},
      {"shift_right_arithmetic", {{"g_shra(a, b)", I}}},
      {"eq", {{"a == b", A | CX}}},
      {"ne", {{"a != b", A | CX}}},
      {"lt", {{"a < b", A}}},
      {"le", {{"a <= b", A}}},
      {"gt", {{"a > b", A}}},
      {"ge", {{"a >= b", A}}},
      {"select_n", {{"a ? c : b", A | CX}}},  // two cases: `a` the predicate (bool), b = case 0, c = case 1
      {"clamp", {{"g_min(g_max(b, a), c)", N}}},  // (lo, x, hi)
  };
  return t;
}

}  // namespace

std::string compute_type(DType d) {
  switch (d) {
    case DType::f16:
    case DType::bf16:
      return "float";
    case DType::bool_:
      return "bool";
    default:
      return storage_type(d);
  }
}

const char* prelude() { return kPrelude; }

std::string convert_expr(const std::string& x, DType from, DType to) {
  // complex values: to complex part by part (a real value's imaginary part 0); to bool either part
  // nonzero; to a real type the real part (NumPy's cast)
  if (is_complex(to)) {
    std::string t = storage_type(to), part = to == DType::c64 ? "float" : "double";
    if (is_complex(from)) return t + "{(" + part + ")(" + x + ").re, (" + part + ")(" + x + ").im}";
    return t + "{(" + part + ")(" + x + "), (" + part + ")0}";
  }
  if (is_complex(from)) {
    if (to == DType::bool_) return "((" + x + ").re != 0 || (" + x + ").im != 0)";
    return convert_expr("(" + x + ").re", from == DType::c64 ? DType::f32 : DType::f64, to);
  }
  if (to == DType::bool_) return "(" + x + " != 0)";
  std::string t = storage_type(to);
  if (is_integer(to) && is_floating(from)) {
    // NaN -> 0, out-of-range values saturate (as the CPU's convert)
    std::string lo = is_unsigned(to) ? "(" + t + ")0" : "(" + t + ")((u64)1 << (sizeof(" + t + ") * 8 - 1))";
    return "g_sat<" + t + ">((double)(" + x + "), " + lo + ")";
  }
  return "(" + compute_type(to) + ")(" + x + ")";
}

std::string storage_type(DType d) {
  switch (d) {
    case DType::bool_: return "boolean";
    case DType::i8: return "i8";
    case DType::i16: return "i16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
    case DType::u64: return "u64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::c64:
      return "c64";
    case DType::c128:
      return "c128";
  }
  return "?";
}

std::optional<std::string> elementwise_expr(const std::string& prim, DType dtype) {
  auto it = table().find(prim);
  if (it == table().end()) return std::nullopt;
  for (const Desc& d : it->second)
    if (d.types & bit(dtype)) return std::string(d.expr);
  return std::nullopt;
}

int elementwise_arity(const std::string& prim) {
  static const std::set<std::string> unary = {
      "neg",   "sign",          "floor",   "ceil",   "round",       "is_finite", "exp",
      "exp2",  "log",           "log1p",   "expm1",  "tanh",        "logistic",  "sin",
      "cos",   "tan",           "asin",    "acos",   "atan",        "sinh",      "cosh",
      "asinh", "acosh",         "atanh",   "sqrt",   "rsqrt",       "cbrt",      "abs",
      "erf",   "erfc",          "erf_inv", "square", "integer_pow", "not",       "population_count",
      "copy",  "stop_gradient", "real",    "imag",   "conj"};
  if (unary.count(prim)) return 1;
  return prim == "select_n" || prim == "clamp" ? 3 : 2;
}

std::vector<std::string> elementwise_prims() {
  std::vector<std::string> v;
  for (auto& [k, _] : table()) v.push_back(k);
  return v;
}

std::string elementwise_source(const std::string& name, const std::string& expr, const std::vector<DType>& in,
                               DType compute, DType out, bool first_is_pred) {
  std::string s = kPrelude;
  s += "typedef " + compute_type(compute) + " C;\n";
  s += "extern \"C\" __global__ void " + name + "(" + storage_type(out) + "* __restrict__ out";
  const char* names = "abc";
  for (size_t k = 0; k < in.size(); ++k)
    s += ", const " + storage_type(in[k]) + "* __restrict__ in" + std::to_string(k);
  s += ", i64 n, u32 scalar, i64 p) {\n";
  s += "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {\n";
  for (size_t k = 0; k < in.size(); ++k) {
    std::string ks = std::to_string(k);
    std::string ct = k == 0 && first_is_pred ? std::string("i64") : std::string("C");
    s += "    " + ct + " " + names[k] + " = (" + ct + ")ld(in" + ks + "[(scalar >> " + ks + ") & 1 ? 0 : i]);\n";
  }
  s += "    out[i] = st<" + storage_type(out) + ">(" + expr + ");\n  }\n}\n";
  return s;
}

std::string convert_source(const std::string& name, DType from, DType to) {
  std::string s = kPrelude;
  s += "extern \"C\" __global__ void " + name + "(" + storage_type(to) + "* __restrict__ out, const " +
       storage_type(from) + "* __restrict__ in, i64 n) {\n";
  s += "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {\n";
  s += "    " + compute_type(from) + " x = ld(in[i]);\n";
  s += "    out[i] = st<" + storage_type(to) + ">(" + convert_expr("x", from, to) + ");\n";
  s += "  }\n}\n";
  return s;
}

namespace {
const char* kStrided = R"(
struct StridedArgs { i64 in_offset, out_offset, ndim; i64 shape[8], in_stride[8], out_stride[8]; };
)";
}

namespace {
// The type that moves an element of `bytes` bytes (complex128's 16 as a pair of words).
std::string word_type(int bytes) {
  return bytes == 1 ? "u8" : bytes == 2 ? "u16" : bytes == 4 ? "u32" : bytes == 8 ? "u64" : "w128";
}
}  // namespace

std::string strided_copy_source(const std::string& name, int bytes) {
  std::string t = word_type(bytes);
  std::string s = kPrelude;
  s += kStrided;
  s += "extern \"C\" __global__ void " + name + "(" + t + "* __restrict__ out, const " + t +
       "* __restrict__ in, i64 n, StridedArgs a) {\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {\n"
       "    i64 rest = i, src = a.in_offset, dst = a.out_offset;\n"
       "    for (int d = (int)a.ndim - 1; d >= 0; --d) { i64 q = rest / a.shape[d], k = rest - q * a.shape[d];\n"
       "      src += k * a.in_stride[d]; dst += k * a.out_stride[d]; rest = q; }\n"
       "    out[dst] = in[src];\n  }\n}\n";
  return s;
}

std::string reduce_source(const std::string& name, const std::string& op, DType in, DType out) {
  bool arg = op == "argmax" || op == "argmin";
  std::string ct = in == DType::bool_ ? "bool" : compute_type(in);
  std::string acc_t = arg ? ct : (op == "and" || op == "or") ? "bool" : ct;
  std::string init, combine;
  if (op == "sum") {
    init = is_complex(in) ? "A{0, 0}" : "(A)0";
    combine = "x + y";
  } else if (op == "prod") {
    init = is_complex(in) ? "A{1, 0}" : "(A)1";
    combine = "x * y";
  } else if (op == "max") {
    init = is_floating(in) ? "(A)(-1.0/0.0)" : is_unsigned(in) ? "(A)0" : "(A)((u64)1 << (sizeof(A) * 8 - 1))";
    combine = "g_max(x, y)";
  } else if (op == "min") {
    init = is_floating(in) ? "(A)(1.0/0.0)" : is_unsigned(in) ? "(A)~(A)0" : "(A)~((u64)1 << (sizeof(A) * 8 - 1))";
    combine = "g_min(x, y)";
  } else if (op == "and") {
    init = "true";
    combine = "x && y";
  } else if (op == "or") {
    init = "false";
    combine = "x || y";
  }
  std::string s = kPrelude;
  s += "typedef " + acc_t + " A;\n";
  s += "struct ReduceArgs { i64 nkeep; i64 keep_shape[8]; i64 keep_stride[8]; i64 nred; i64 red_shape[8]; i64 red_stride[8]; };\n";
  s += "__device__ __forceinline__ i64 offset_of(i64 i, i64 nd, const i64* shape, const i64* stride) {\n"
       "  i64 off = 0; for (int d = (int)nd - 1; d >= 0; --d) { i64 q = i / shape[d]; off += (i - q * shape[d]) * stride[d]; i = q; } return off; }\n";
  if (arg) {
    // the first maximum (minimum) wins; NaN counts as the extreme (the CPU's argmax)
    std::string better = op == "argmax" ? "(g_isnan(x) && !g_isnan(y)) || (!g_isnan(y) && x > y)"
                                        : "(g_isnan(x) && !g_isnan(y)) || (!g_isnan(y) && x < y)";
    s += "__device__ __forceinline__ bool better(A x, A y) { return " + better + "; }\n";
    s += "extern \"C\" __global__ void " + name + "(" + storage_type(out) + "* __restrict__ out, const " +
         storage_type(in) + "* __restrict__ in, i64 nout, i64 inner, ReduceArgs r) {\n"
         "  __shared__ A sv[256]; __shared__ i64 si[256];\n"
         "  for (i64 o = blockIdx.x; o < nout; o += gridDim.x) {\n"
         "    i64 base = offset_of(o, r.nkeep, r.keep_shape, r.keep_stride);\n"
         "    A bv = 0; i64 bi = -1;\n"
         "    for (i64 j = threadIdx.x; j < inner; j += blockDim.x) {\n"
         "      A v = (A)ld(in[base + offset_of(j, r.nred, r.red_shape, r.red_stride)]);\n"
         "      if (bi < 0 || better(v, bv)) { bv = v; bi = j; }\n"
         "    }\n"
         "    sv[threadIdx.x] = bv; si[threadIdx.x] = bi; __syncthreads();\n"
         "    for (int w = blockDim.x / 2; w > 0; w >>= 1) {\n"
         "      if (threadIdx.x < w) { A v = sv[threadIdx.x + w]; i64 k = si[threadIdx.x + w];\n"
         "        if (k >= 0 && (si[threadIdx.x] < 0 || better(v, sv[threadIdx.x]) || (!better(sv[threadIdx.x], v) && k < si[threadIdx.x]))) { sv[threadIdx.x] = v; si[threadIdx.x] = k; } }\n"
         "      __syncthreads(); }\n"
         "    if (threadIdx.x == 0) out[o] = (" + storage_type(out) + ")(si[0] < 0 ? 0 : si[0]);\n"
         "    __syncthreads();\n  }\n}\n";
    return s;
  }
  s += "__device__ __forceinline__ A combine(A x, A y) { return " + combine + "; }\n";
  s += "extern \"C\" __global__ void " + name + "(" + storage_type(out) + "* __restrict__ out, const " +
       storage_type(in) + "* __restrict__ in, i64 nout, i64 inner, ReduceArgs r) {\n"
       "  __shared__ A sv[256];\n"
       "  for (i64 o = blockIdx.x; o < nout; o += gridDim.x) {\n"
       "    i64 base = offset_of(o, r.nkeep, r.keep_shape, r.keep_stride);\n"
       "    A acc = " + init + ";\n"
       "    for (i64 j = threadIdx.x; j < inner; j += blockDim.x)\n"
       "      acc = combine(acc, (A)ld(in[base + offset_of(j, r.nred, r.red_shape, r.red_stride)]));\n"
       "    sv[threadIdx.x] = acc; __syncthreads();\n"
       "    for (int w = blockDim.x / 2; w > 0; w >>= 1) {\n"
       "      if (threadIdx.x < w) sv[threadIdx.x] = combine(sv[threadIdx.x], sv[threadIdx.x + w]);\n"
       "      __syncthreads(); }\n"
       "    if (threadIdx.x == 0) out[o] = st<" + storage_type(out) + ">(sv[0]);\n"
       "    __syncthreads();\n  }\n}\n";
  return s;
}

std::string iota_source(const std::string& name, DType out) {
  std::string s = kPrelude;
  s += "extern \"C\" __global__ void " + name + "(" + storage_type(out) +
       "* __restrict__ out, i64 n, i64 inner, i64 size) {\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x)\n"
       "    out[i] = st<" + storage_type(out) + ">((" + compute_type(out) + ")((i / inner) % size));\n}\n";
  return s;
}

std::string fill_source(const std::string& name, int bytes) {
  std::string t = word_type(bytes);
  std::string value = bytes == 16 ? "w128{v, v_hi}" : "(" + t + ")v";
  std::string s = kPrelude;
  s += "extern \"C\" __global__ void " + name + "(" + t +
       "* __restrict__ out, i64 n, u64 v, u64 v_hi) {\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) "
       "out[i] = " +
       value + ";\n}\n";
  return s;
}

std::string threefry_source(const std::string& name) {
  // Threefry-2x32, 20 rounds: the same schedule as the CPU's (graft/prims/threefry.cpp)
  std::string s = kPrelude;
  s += "__device__ __forceinline__ u32 rotl(u32 x, int r) { return (x << r) | (x >> (32 - r)); }\n"
       "extern \"C\" __global__ void " + name +
       "(u32* __restrict__ y0, u32* __restrict__ y1, const u32* __restrict__ k0, const u32* __restrict__ k1,\n"
       "    const u32* __restrict__ c0, const u32* __restrict__ c1, i64 n, u32 scalar) {\n"
       "  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {\n"
       "    u32 a = k0[scalar & 1 ? 0 : i], b = k1[scalar & 2 ? 0 : i];\n"
       "    u32 ks[3] = {a, b, a ^ b ^ 0x1BD11BDAu};\n"
       "    u32 x0 = c0[scalar & 4 ? 0 : i] + ks[0], x1 = c1[scalar & 8 ? 0 : i] + ks[1];\n"
       "    for (u32 g = 1; g <= 5; ++g) {\n"
       "      for (int j = 0; j < 4; ++j) { x0 += x1; x1 = rotl(x1, rot[(g - 1) % 2][j]); x1 ^= x0; }\n"
       "      x0 += ks[g % 3]; x1 += ks[(g + 1) % 3] + g;\n"
       "    }\n"
       "    y0[i] = x0; y1[i] = x1;\n  }\n}\n";
  return s;
}

std::string cumulative_source(const std::string& name, const std::string& op, DType dtype) {
  std::string t = storage_type(dtype), c = dtype == DType::bool_ ? std::string("bool") : compute_type(dtype);
  std::string body;
  if (op == "sum" && c == "float") {
    body = "wide = r == 0 ? (double)v : wide + (double)v; out[at] = st<T>((float)wide);";  // as the CPU: in f64
  } else if (op == "sum" && c == "double") {  // compensated (Neumaier), as the CPU
    body = "if (r == 0) { acc = v; } else { C u = acc + v; comp += fabs(acc) >= fabs(v) ? (acc - u) + v : (v - u) + acc; acc = u; }"
           " out[at] = st<T>(acc + comp);";
  } else if (op == "sum") {  // integers wrap
    body = "acc = r == 0 ? v : (C)((u64)acc + (u64)v); out[at] = st<T>(acc);";
  } else {
    std::string cmp = op == "max" ? "v > acc" : "v < acc";
    body = "if (r == 0 || " + cmp + " || (g_isnan(v) && !g_isnan(acc))) acc = v; out[at] = st<T>(acc);";
  }
  std::string s = kPrelude;
  s += "typedef " + c + " C; typedef " + t + " T;\n";
  s += "extern \"C\" __global__ void " + name +
       "(T* __restrict__ out, const T* __restrict__ in, i64 outer, i64 n, i64 inner, int reverse) {\n"
       "  for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < outer * inner; o += (i64)gridDim.x * blockDim.x) {\n"
       "    i64 base = (o / inner) * n * inner + o % inner;\n"
       "    C acc = 0, comp = 0; double wide = 0; (void)comp; (void)wide;\n"
       "    for (i64 r = 0; r < n; ++r) {\n"
       "      i64 at = base + (reverse ? n - 1 - r : r) * inner;\n"
       "      C v = (C)ld(in[at]);\n"
       "      " + body + "\n    }\n  }\n}\n";
  return s;
}

std::string dynamic_copy_source(const std::string& name, int bytes, const std::vector<DType>& index_types) {
  std::string t = word_type(bytes);
  std::string s = kPrelude;
  s += kStrided;
  s += "struct DynamicArgs { i64 to_out, max[8], stride[8]; };\n";
  s += "extern \"C\" __global__ void " + name + "(" + t + "* __restrict__ out, const " + t +
       "* __restrict__ in, i64 n, StridedArgs a, DynamicArgs d";
  for (size_t k = 0; k < index_types.size(); ++k)
    s += ", const " + storage_type(index_types[k]) + "* __restrict__ i" + std::to_string(k);
  s += ") {\n  i64 off = 0, q;\n";
  // each start index clamped so that the window fits (the CPU's clamped_offset)
  for (size_t k = 0; k < index_types.size(); ++k) {
    std::string ks = std::to_string(k);
    s += "  q = (i64)ld(i" + ks + "[0]); q = q < 0 ? 0 : q > d.max[" + ks + "] ? d.max[" + ks + "] : q; off += q * d.stride[" + ks +
         "];\n";
  }
  s += "  i64 in0 = a.in_offset + (d.to_out ? 0 : off), out0 = a.out_offset + (d.to_out ? off : 0);\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {\n"
       "    i64 rest = i, src = in0, dst = out0;\n"
       "    for (int e = (int)a.ndim - 1; e >= 0; --e) { i64 u = rest / a.shape[e], k = rest - u * a.shape[e];\n"
       "      src += k * a.in_stride[e]; dst += k * a.out_stride[e]; rest = u; }\n"
       "    out[dst] = in[src];\n  }\n}\n";
  return s;
}

namespace {
const char* kIndexArgs = R"(
struct IndexArgs { i64 ndim; i64 shape[8], bmul[8], wmul[8]; };
// element i of the output (gather) or of the updates (scatter): its window (batch) number b and its
// offset w from the window's start in the operand
__device__ __forceinline__ void locate(i64 i, const IndexArgs& a, i64& b, i64& w) {
  b = 0; w = 0;
  for (int e = (int)a.ndim - 1; e >= 0; --e) { i64 q = i / a.shape[e], c = i - q * a.shape[e]; b += c * a.bmul[e]; w += c * a.wmul[e]; i = q; }
}
)";
}  // namespace

std::string gather_source(const std::string& name, int bytes) {
  std::string t = word_type(bytes);
  std::string fill = bytes == 16 ? "w128{fill, fill_hi}" : "(" + t + ")fill";
  std::string s = kPrelude;
  s += kIndexArgs;
  s += "extern \"C\" __global__ void " + name + "(" + t + "* __restrict__ out, const " + t +
       "* __restrict__ op, const i64* __restrict__ starts, const boolean* __restrict__ ok, i64 n, IndexArgs "
       "a, u64 fill,"
       " u64 fill_hi) {\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) "
       "{\n"
       "    i64 b, w; locate(i, a, b, w);\n"
       "    out[i] = ok[b].v ? op[starts[b] + w] : " +
       fill + ";\n  }\n}\n";
  return s;
}

std::optional<std::string> scatter_add_source(const std::string& name, DType dtype) {
  // atomicAdd exists for these; 64-bit integers add as unsigned (the same bits, wrapping); complex values
  // add part by part (two atomic additions: each part is the sum of its updates, in some order)
  std::string t, at;
  switch (dtype) {
    case DType::f32: t = at = "float"; break;
    case DType::f64: t = at = "double"; break;
    case DType::i32: t = at = "int"; break;
    case DType::u32: t = at = "unsigned int"; break;
    case DType::i64: t = "i64"; at = "unsigned long long"; break;
    case DType::u64: t = "u64"; at = "unsigned long long"; break;
    case DType::c64:
      t = "c64";
      at = "float";
      break;
    case DType::c128:
      t = "c128";
      at = "double";
      break;
    default: return std::nullopt;
  }
  std::string q = "(" + at + "*)(out + starts[b] + w)";
  std::string add = is_complex(dtype)
                        ? "{ atomicAdd(" + q + ", upd[i].re); atomicAdd(" + q + " + 1, upd[i].im); }"
                        : "atomicAdd(" + q + ", (" + at + ")upd[i]);";
  std::string s = kPrelude;
  s += kIndexArgs;
  s += "extern \"C\" __global__ void " + name + "(" + t + "* out, const " + t +
       "* __restrict__ upd, const i64* __restrict__ starts, const boolean* __restrict__ ok, i64 n, IndexArgs "
       "a) {\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) "
       "{\n"
       "    i64 b, w; locate(i, a, b, w);\n"
       "    if (ok[b].v) " +
       add + "\n  }\n}\n";
  return s;
}

std::string scatter_winner_source(const std::string& name) {
  std::string s = kPrelude;
  s += kIndexArgs;
  s += "extern \"C\" __global__ void " + name +
       "(i64* winner, const i64* __restrict__ starts, const boolean* __restrict__ ok, i64 n, IndexArgs a) {\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {\n"
       "    i64 b, w; locate(i, a, b, w);\n"
       "    if (ok[b].v) atomicMax((long long*)(winner + starts[b] + w), (long long)b);\n  }\n}\n";
  return s;
}

std::string scatter_set_source(const std::string& name, int bytes) {
  std::string t = bytes == 1 ? "u8" : bytes == 2 ? "u16" : bytes == 4 ? "u32" : "u64";
  std::string s = kPrelude;
  s += kIndexArgs;
  s += "extern \"C\" __global__ void " + name + "(" + t + "* out, const " + t +
       "* __restrict__ upd, const i64* __restrict__ winner, const i64* __restrict__ starts, const boolean* __restrict__ ok, i64 n,"
       " IndexArgs a) {\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {\n"
       "    i64 b, w; locate(i, a, b, w);\n"
       "    if (ok[b].v && winner[starts[b] + w] == b) out[starts[b] + w] = upd[i];\n  }\n}\n";
  return s;
}

std::optional<std::string> scatter_combine_source(const std::string& name, const std::string& op, DType dtype) {
  if (itemsize(dtype) != 4 && itemsize(dtype) != 8) return std::nullopt;
  if (dtype == DType::bool_) return std::nullopt;
  std::string t = storage_type(dtype), w = itemsize(dtype) == 4 ? "unsigned int" : "unsigned long long";
  // the CPU's combination (graft/prims/gather.cpp, scatter_run): a NaN update wins min and max
  std::string expr = op == "mul" ? "a * v" : op == "min" ? "(v < a || v != v) ? v : a" : "(v > a || v != v) ? v : a";
  std::string s = kPrelude;
  s += kIndexArgs;
  s += "typedef " + t + " T; typedef " + w + " W; union Bits { T t; W w; };\n";
  s += "extern \"C\" __global__ void " + name + "(T* out, const T* __restrict__ upd, const i64* __restrict__ starts,"
       " const boolean* __restrict__ ok, i64 n, IndexArgs a) {\n"
       "  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {\n"
       "    i64 b, off; locate(i, a, b, off);\n"
       "    if (!ok[b].v) continue;\n"
       "    W* p = (W*)(out + starts[b] + off); T v = upd[i]; W old = *p, seen;\n"
       "    do { seen = old; Bits x; x.w = seen; T a = x.t; Bits y; y.t = (T)(" + expr + "); old = atomicCAS(p, seen, y.w); } while (old != seen);\n"
       "  }\n}\n";
  return s;
}

std::string sort_pass_source(const std::string& name, const std::vector<DType>& key_types) {
  std::string s = kPrelude;
  // the CPU's total order (graft/prims/sort.cpp): NaN last, -0.0 before 0.0
  s += "template <class C> __device__ __forceinline__ int tcmp(C a, C b) { return a < b ? -1 : (b < a ? 1 : 0); }\n"
       "template <class C> __device__ __forceinline__ int fcmp(C a, C b) {\n"
       "  bool na = a != a, nb = b != b;\n"
       "  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);\n"
       "  if (a == b) { bool sa = signbit(a), sb = signbit(b); return sa == sb ? 0 : (sa ? -1 : 1); }\n"
       "  return a < b ? -1 : 1; }\n"
       "__device__ __forceinline__ int tcmp(float a, float b) { return fcmp(a, b); }\n"
       "__device__ __forceinline__ int tcmp(double a, double b) { return fcmp(a, b); }\n";
  std::string params, cmp = "__device__ __forceinline__ int cmp(i64 ro, i32 i, i32 j";
  for (size_t k = 0; k < key_types.size(); ++k) {
    std::string ks = std::to_string(k), ct = key_types[k] == DType::bool_ ? std::string("bool") : compute_type(key_types[k]);
    params += ", const " + storage_type(key_types[k]) + "* __restrict__ k" + ks;
    cmp += ", const " + storage_type(key_types[k]) + "* k" + ks;
  }
  s += cmp + ") {\n  int c;\n";
  std::string args;
  for (size_t k = 0; k < key_types.size(); ++k) {
    std::string ks = std::to_string(k), ct = key_types[k] == DType::bool_ ? std::string("bool") : compute_type(key_types[k]);
    s += "  c = tcmp((" + ct + ")ld(k" + ks + "[ro + i]), (" + ct + ")ld(k" + ks + "[ro + j])); if (c) return c;\n";
    args += ", k" + ks;
  }
  s += "  return 0;\n}\n";
  // one pass of a stable merge sort of each row's permutation: runs of `width` merged pairwise, every
  // element placed by a binary search in the other run (equal keys: the left run's first)
  s += "extern \"C\" __global__ void " + name + "(i32* __restrict__ out, const i32* __restrict__ in, i64 rows, i64 n, i64 width" +
       params + ") {\n"
       "  for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < rows * n; t += (i64)gridDim.x * blockDim.x) {\n"
       "    i64 row = t / n, i = t - row * n, ro = row * n;\n"
       "    i64 start = (i / (2 * width)) * 2 * width, mid = start + width < n ? start + width : n;\n"
       "    i64 end = start + 2 * width < n ? start + 2 * width : n;\n"
       "    i32 me = in[ro + i]; i64 lo, hi, pos;\n"
       "    if (i < mid) {\n"
       "      lo = mid; hi = end;\n"
       "      while (lo < hi) { i64 m = (lo + hi) / 2; if (cmp(ro, in[ro + m], me" + args + ") < 0) lo = m + 1; else hi = m; }\n"
       "      pos = (i - start) + (lo - mid);\n"
       "    } else {\n"
       "      lo = start; hi = mid;\n"
       "      while (lo < hi) { i64 m = (lo + hi) / 2; if (cmp(ro, in[ro + m], me" + args + ") <= 0) lo = m + 1; else hi = m; }\n"
       "      pos = (i - mid) + (lo - start);\n"
       "    }\n"
       "    out[ro + start + pos] = me;\n  }\n}\n";
  return s;
}

std::string take_rows_source(const std::string& name, int bytes) {
  std::string t = word_type(bytes);
  std::string s = kPrelude;
  s += "extern \"C\" __global__ void " + name + "(" + t + "* __restrict__ out, const " + t +
       "* __restrict__ in, const i32* __restrict__ perm, i64 total, i64 n) {\n"
       "  for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (i64)gridDim.x * blockDim.x)\n"
       "    out[t] = in[(t / n) * n + perm[t]];\n}\n";
  return s;
}

}  // namespace graft::cuda_kernels
