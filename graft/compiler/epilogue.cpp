#include "graft/compiler/epilogue.h"

#include "graft/core/error.h"
#include "graft/core/trace.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"

namespace graft::compiler {

namespace {

Params dot_params(const Params& params) {
  Params p;
  for (const auto& [k, v] : params)
    if (std::string_view(k) != "relu") p.set(k, v);
  return p;
}

Avals dot_bias_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  if (in.size() != 3) fail<ValueError>(p.name, ": takes 3 operands (lhs, rhs, bias), got ", in.size());
  Params dp = dot_params(params);
  Avals prod = prims::dot_general_p.shape(prims::dot_general_p, in.subspan(0, 2), dp);
  const Aval& y = prod[0];
  if (y.ndim() != 2 || !is_floating(y.dtype))
    fail<TypeError>(p.name, ": a floating matrix product only, got ", y.str());
  if (in[2]->dtype != y.dtype || in[2]->ndim() != 1 || in[2]->shape[0] != y.shape[1])
    fail<ShapeError>(p.name, ": the bias ", in[2]->str(), " must be a vector of the product's ", y.shape[1],
                     " columns and its dtype");
  (void)params.get_bool("relu");
  return prod;
}

// The primitives it stands for, bound now: on the CPU (and on devices without the fused call, as
// their decomposition) it computes exactly what the unfused program did.
Arrays dot_bias_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  Array y = bind1(prims::dot_general_p, in.subspan(0, 2), dot_params(params));
  Array b = lax::broadcast_in_dim(in[2], y.shape(), {1});
  y = lax::add(y, b);
  if (params.get_bool("relu")) y = lax::max(y, lax::scalar(0, y.dtype()));
  return {y};
}

Avals dot_bias_grad_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  if (in.size() != 2) fail<ValueError>(p.name, ": takes 2 operands (lhs, rhs), got ", in.size());
  Avals prod = prims::dot_general_p.shape(prims::dot_general_p, in, params);
  const auto& dn = params.get_object<lax::DotDims>("dimension_numbers");
  if (in[1]->ndim() != 2 || dn.rhs_contract != IntList{0} || !dn.rhs_batch.empty())
    fail<ShapeError>(p.name, ": the product must contract axis 0 of a matrix rhs, got ", in[1]->str());
  return {prod[0], Aval({in[1]->shape[1]}, in[1]->dtype)};
}

Arrays dot_bias_grad_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  Array w = bind1(prims::dot_general_p, in, params);
  Array b = bind1(prims::reduce_sum_p, {in[1]}, {{"axes", IntList{0}}});
  return {w, b};
}

}  // namespace

void register_epilogue_decompositions() {
  register_device_decomposition(dot_bias_p, &dot_bias_impl);
  register_device_decomposition(dot_bias_grad_p, &dot_bias_grad_impl);
}

const Primitive dot_bias_p{"dot_bias", 0, &dot_bias_shape, &dot_bias_impl};
const Primitive dot_bias_grad_p{"dot_bias_grad", kMultipleResults, &dot_bias_grad_shape, &dot_bias_grad_impl};

}  // namespace graft::compiler
