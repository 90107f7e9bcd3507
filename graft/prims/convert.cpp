// Dtype conversion primitives: convert_element_type and bitcast_convert_type.
#include <cstring>

#include "graft/prims/rules.h"

namespace graft::prims {

Array alias_as(const Array& x, const Aval& a) {
  ConcreteNode* c = x.concrete();
  if (c && c->buffer() && a.nbytes() == x.nbytes()) {
    size_t offset = static_cast<const char*>(c->data()) - static_cast<const char*>(c->buffer()->data());
    return Array(Ref<ArrayNode>(new ConcreteNode(a, c->buffer(), offset)));
  }
  return Array::from_data(x.raw_data(), a.shape, a.dtype, a.weak_type);
}

namespace {

Avals convert_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  return {Aval(in[0]->shape, params.get_dtype("new_dtype"), params.get_bool("weak_type"))};
}

Arrays convert_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  if (in[0].dtype() == out[0].dtype) return {alias_as(in[0], out[0])};
  Array r = Array::empty(out[0]);
  const void* src = in[0].raw_data();
  void* dst = r.concrete()->data();
  DType from = in[0].dtype(), to = out[0].dtype;
  elementwise_for(r.size(), [&](int64_t b, int64_t e) {
    convert_elements(static_cast<const char*>(src) + b * itemsize(from), from,
                     static_cast<char*>(dst) + b * itemsize(to), to, e - b);
  });
  return {r};
}

void convert_tile(const TileKernel& k, void* out, const void* const* in, const uint8_t* step, int64_t n) {
  if (step[0]) {
    convert_elements(in[0], k.in_dtype, out, k.out_dtype, n);
    return;
  }
  size_t sz = itemsize(k.out_dtype);
  convert_elements(in[0], k.in_dtype, out, k.out_dtype, 1);
  for (int64_t i = 1; i < n; ++i) std::memcpy(static_cast<char*>(out) + i * static_cast<int64_t>(sz), out, sz);
}

TileKernel convert_tile_rule(const Primitive&, std::span<const Aval> in, const Params& params) {
  TileKernel k;
  k.map = &convert_tile;
  k.in_dtype = in[0].dtype;
  k.out_dtype = params.get_dtype("new_dtype");
  k.num_inputs = 1;
  return k;
}

JvpResult convert_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                      const Params& params) {
  Array y = bind1(p, primals, params);
  if (is_zero(tangents[0]) || !is_inexact(y.dtype()) || !is_inexact(primals[0].dtype())) return {{y}, {Array()}};
  return {{y}, {lax::convert_element_type(tangents[0], y.dtype(), false)}};
}

Arrays convert_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params&) {
  return {lax::convert_element_type(cts[0], args[0].aval.dtype, args[0].aval.weak_type)};
}

Avals bitcast_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  check_arity(p, in, 1);
  DType d = params.get_dtype("new_dtype");
  if (itemsize(d) != itemsize(in[0]->dtype))
    type_error(p, in, "can only bitcast between dtypes of the same size, not to " + std::string(short_name(d)));
  return {Aval(in[0]->shape, d, false)};
}

Arrays bitcast_impl(const Primitive&, std::span<const Array> in, std::span<const Aval> out, const Params&) {
  return {alias_as(in[0], out[0])};
}

}  // namespace

const Primitive convert_element_type_p{"convert_element_type", kElementwise, &convert_shape,      &convert_impl,
                                       &convert_jvp,           &convert_transpose, &batch_unary,
                                       nullptr,                nullptr,       &convert_tile_rule};
const Primitive bitcast_convert_type_p{"bitcast_convert_type", kElementwise | kNotDifferentiable,
                                       &bitcast_shape,         &bitcast_impl,
                                       &zero_jvp,              nullptr,
                                       &batch_unary};

}  // namespace graft::prims

namespace graft::lax {
Array convert_element_type(const Array& x, DType d, bool weak_type) {
  if (x.dtype() == d && x.weak_type() == weak_type) return x;
  return bind1(prims::convert_element_type_p, {x}, {{"new_dtype", d}, {"weak_type", weak_type}});
}
Array bitcast_convert_type(const Array& x, DType d) {
  return bind1(prims::bitcast_convert_type_p, {x}, {{"new_dtype", d}});
}
}  // namespace graft::lax
