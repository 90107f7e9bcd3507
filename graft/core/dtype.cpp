#include "graft/core/dtype.h"

#include <array>

#include "graft/core/config.h"
#include "graft/core/error.h"

namespace graft {

namespace {
struct Info {
  size_t size;
  std::string_view short_name, long_name;
};
constexpr std::array<Info, kNumDTypes> kInfo = {{{1, "bool", "bool"},
                                                 {1, "i8", "int8"},
                                                 {2, "i16", "int16"},
                                                 {4, "i32", "int32"},
                                                 {8, "i64", "int64"},
                                                 {1, "u8", "uint8"},
                                                 {2, "u16", "uint16"},
                                                 {4, "u32", "uint32"},
                                                 {8, "u64", "uint64"},
                                                 {2, "f16", "float16"},
                                                 {2, "bf16", "bfloat16"},
                                                 {4, "f32", "float32"},
                                                 {8, "f64", "float64"},
                                                 {8, "c64", "complex64"},
                                                 {16, "c128", "complex128"}}};

// JAX's promotion lattice (jax/_src/dtypes.py, "standard" mode) over our dtypes plus the two weak
// kinds i*, f* and c*. Nodes 0..14 are the DTypes, 15 = i*, 16 = f*, 17 = c*. An edge a -> b means a < b.
constexpr int kIW = kNumDTypes, kFW = kNumDTypes + 1, kCW = kNumDTypes + 2, kNodes = kNumDTypes + 3;
using D = DType;
constexpr int n(D d) { return static_cast<int>(d); }

struct Lattice {
  // up[a] = bitmask of every node >= a.
  uint32_t up[kNodes] = {};
  constexpr Lattice() {
    uint32_t edges[kNodes] = {};
    auto edge = [&](int a, int b) { edges[a] |= 1u << b; };
    edge(n(D::bool_), kIW);
    edge(kIW, n(D::u8));
    edge(kIW, n(D::i8));
    edge(n(D::u8), n(D::i16));
    edge(n(D::u8), n(D::u16));
    edge(n(D::u16), n(D::i32));
    edge(n(D::u16), n(D::u32));
    edge(n(D::u32), n(D::i64));
    edge(n(D::u32), n(D::u64));
    edge(n(D::u64), kFW);
    edge(n(D::i8), n(D::i16));
    edge(n(D::i16), n(D::i32));
    edge(n(D::i32), n(D::i64));
    edge(n(D::i64), kFW);
    edge(kFW, n(D::bf16));
    edge(kFW, n(D::f16));
    edge(n(D::bf16), n(D::f32));
    edge(n(D::f16), n(D::f32));
    edge(n(D::f32), n(D::f64));
    edge(kFW, kCW);
    edge(kCW, n(D::c64));
    edge(n(D::f32), n(D::c64));
    edge(n(D::f64), n(D::c128));
    edge(n(D::c64), n(D::c128));
    for (int a = 0; a < kNodes; ++a) up[a] = 1u << a;
    // transitive closure (the graph is tiny)
    for (int iter = 0; iter < kNodes; ++iter)
      for (int a = 0; a < kNodes; ++a)
        for (int b = 0; b < kNodes; ++b)
          if (edges[a] & (1u << b)) up[a] |= up[b];
  }
  int join(int a, int b) const {
    uint32_t common = up[a] & up[b];
    // the least element of `common` is the one whose upper set contains all of `common`
    for (int c = 0; c < kNodes; ++c)
      if ((common & (1u << c)) && (up[c] & common) == common) return c;
    return n(D::c128);
  }
};
constexpr Lattice kLattice;
}  // namespace

size_t itemsize(DType d) { return kInfo[n(d)].size; }
std::string_view short_name(DType d) { return kInfo[n(d)].short_name; }
std::string_view long_name(DType d) { return kInfo[n(d)].long_name; }
std::ostream& operator<<(std::ostream& os, DType d) { return os << short_name(d); }

DType parse_dtype(std::string_view s) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kInfo[i].short_name == s || kInfo[i].long_name == s) return static_cast<DType>(i);
  fail<ValueError>("unknown dtype '", s, "'");
}

DType default_int_dtype() { return config::enable_x64() ? DType::i64 : default_int; }
DType default_float_dtype() { return config::enable_x64() ? DType::f64 : default_float; }
DType default_complex_dtype() { return config::enable_x64() ? DType::c128 : DType::c64; }

void complex_unsupported(DType d, std::string_view what) {
  fail<TypeError>(what, ": complex dtypes (", short_name(d), ") are not supported");
}

DType promote_types(DType a, bool weak_a, DType b, bool weak_b, bool* weak_out) {
  if (weak_a && weak_b) {
    // All weak: join the strong types and keep the result weak (JAX's _lattice_result_type).
    if (weak_out) *weak_out = true;
    return static_cast<DType>(kLattice.join(n(a), n(b)));
  }
  auto node = [](DType d, bool weak) {
    if (!weak || is_bool(d)) return n(d);
    return is_complex(d) ? kCW : is_floating(d) ? kFW : kIW;
  };
  int j = kLattice.join(node(a, weak_a), node(b, weak_b));
  if (weak_out) *weak_out = (j == kIW || j == kFW || j == kCW);
  if (j != kIW && j != kFW && j != kCW) return static_cast<DType>(j);
  if (j == kCW) return default_complex_dtype();
  // A weak result is JAX's default dtype of its kind in the running mode (a C++ double is a weak f64,
  // yet i32 * 1.5 is f32 without x64, as in JAX)
  return j == kIW ? default_int_dtype() : default_float_dtype();
}

}  // namespace graft
