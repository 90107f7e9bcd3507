// threefry2x32: the counter-based hash behind graft::random (Threefry-2x32, 20 rounds, as in
// Random123 and jax.random). All its rules: u32 in, u32 out, so derivatives are zero.
#include "graft/prims/rules.h"

namespace graft::prims {

namespace {

inline uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// Five groups of four rounds; the key schedule is injected after each group.
inline void threefry(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t& y0, uint32_t& y1) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
  for (uint32_t s = 1; s <= 5; ++s) {
    const int* r = kRot[(s - 1) % 2];
    for (int i = 0; i < 4; ++i) {
      x0 += x1;
      x1 = rotl(x1, r[i]);
      x1 ^= x0;
    }
    x0 += ks[s % 3];
    x1 += ks[(s + 1) % 3] + s;
  }
  y0 = x0;
  y1 = x1;
}

Avals threefry_shape(const Primitive& p, AvalPtrs in, const Params&) {
  check_arity(p, in, 4);
  for (auto* a : in)
    if (a->dtype != DType::u32) type_error(p, in, "all operands must be u32");
  Shape s = elementwise_shape(p, in);
  return {Aval(s, DType::u32), Aval(s, DType::u32)};
}

Arrays threefry_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  Arrays r = alloc_outputs(out);
  int64_t n = r[0].size();
  const uint32_t* p[4];
  int step[4];
  for (int i = 0; i < 4; ++i) {
    p[i] = static_cast<const uint32_t*>(in[static_cast<size_t>(i)].raw_data());
    step[i] = in[static_cast<size_t>(i)].size() == n ? 1 : 0;
  }
  uint32_t* y0 = static_cast<uint32_t*>(r[0].concrete()->data());
  uint32_t* y1 = static_cast<uint32_t*>(r[1].concrete()->data());
  elementwise_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      threefry(p[0][i * step[0]], p[1][i * step[1]], p[2][i * step[2]], p[3][i * step[3]], y0[i], y1[i]);
  });
  return r;
}

}  // namespace

const Primitive threefry2x32_p{"threefry2x32", kMultipleResults | kNotDifferentiable, &threefry_shape,
                               &threefry_impl,  &zero_jvp,                           nullptr,
                               &batch_elementwise};

}  // namespace graft::prims

namespace graft::lax {
Arrays threefry2x32(const Array& k0, const Array& k1, const Array& x0, const Array& x1) {
  return bind(prims::threefry2x32_p, {k0, k1, x0, x1});
}
}  // namespace graft::lax
