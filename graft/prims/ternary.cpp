// Elementwise special functions of three operands: regularized_incomplete_beta(a, b, x) = I_x(a, b)
// (JAX's lax.betainc), all its rules.
#include "graft/prims/elementwise.h"
#include "graft/prims/special_math.h"

namespace graft::prims {

namespace {

Avals betainc_shape(const Primitive& p, AvalPtrs in, const Params&) {
  check_arity(p, in, 3);
  DType d = in[0]->dtype;
  for (int i : {1, 2})
    if (in[i]->dtype != d)
      type_error(p, in, "operands must have the same dtype; graft::special::betainc promotes types, lax does not");
  if (!(kMaskFloat & bit(d))) type_error(p, in, "requires floating operands, got " + std::string(short_name(d)));
  return {Aval(elementwise_shape(p, in), d, in[0]->weak_type && in[1]->weak_type && in[2]->weak_type)};
}

template <class T>
void betainc_tile(const TileKernel&, void* out, const void* const* in, const uint8_t* step, int64_t n) {
  if constexpr (std::is_floating_point_v<compute_t<T>>) {
    const T* a = static_cast<const T*>(in[0]);
    const T* b = static_cast<const T*>(in[1]);
    const T* x = static_cast<const T*>(in[2]);
    T* o = static_cast<T*>(out);
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<T>(special::betainc(static_cast<double>(a[step[0] ? i : 0]),
                                             static_cast<double>(b[step[1] ? i : 0]),
                                             static_cast<double>(x[step[2] ? i : 0])));
  }
}

TileKernel betainc_tile_rule(const Primitive&, std::span<const Aval> in, const Params&) {
  TileKernel k;
  visit_dtype(in[0].dtype, [&](auto tag) { k.map = &betainc_tile<typename decltype(tag)::type>; });
  k.num_inputs = 3;
  return k;
}

Arrays betainc_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params) {
  Array r = Array::empty(out[0]);
  Avals avals = avals_of(in);
  // each element is an iterative continued fraction: parallel chunks much smaller than the cheap ops'
  run_tiles(betainc_tile_rule(p, {avals.data(), avals.size()}, params), r, in, 1024);
  return {r};
}

// ∂I/∂x is the beta density x^(a-1) (1-x)^(b-1) / B(a, b). As in JAX, the derivatives in a and b are not
// defined (they have no closed form; SciPy has none either).
JvpResult betainc_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                      const Params& params) {
  Array y = bind1(p, primals, params);
  if (!is_zero(tangents[0]) || !is_zero(tangents[1]))
    fail<NotImplementedError>("regularized_incomplete_beta: the derivatives with respect to a and b are not "
                              "defined (as in JAX); only x's is");
  if (is_zero(tangents[2])) return {{y}, {Array()}};
  const Array &a = primals[0], &b = primals[1], &x = primals[2];
  auto one = [](const Array& v) { return lax::full(v.shape(), 1, v.dtype()); };
  Array log_beta = lax::sub(lax::add(lax::lgamma(a), lax::lgamma(b)), lax::lgamma(lax::add(a, b)));
  Array log_density = lax::sub(lax::add(lax::mul(lax::sub(a, one(a)), lax::log(x)),
                                        lax::mul(lax::sub(b, one(b)), lax::log1p(lax::neg(x)))),
                               log_beta);
  return {{y}, {lax::mul(broadcast_to_aval(tangents[2], y.aval()), lax::exp(log_density))}};
}

}  // namespace

const Primitive regularized_incomplete_beta_p{"regularized_incomplete_beta",
                                              kElementwise,
                                              &betainc_shape,
                                              &betainc_impl,
                                              &betainc_jvp,
                                              nullptr,
                                              &batch_elementwise,
                                              nullptr,
                                              nullptr,
                                              &betainc_tile_rule};

}  // namespace graft::prims

namespace graft::lax {
using namespace graft::prims;
Array regularized_incomplete_beta(const Array& a, const Array& b, const Array& x) {
  return bind1(regularized_incomplete_beta_p, {a, b, x});
}
}  // namespace graft::lax
