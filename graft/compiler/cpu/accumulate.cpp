#include "graft/compiler/cpu/accumulate.h"

#include <cstring>

#include "graft/core/error.h"
#include "graft/prims/dot.h"
#include "graft/prims/primitives.h"

namespace graft::compiler {

namespace {

Avals dot_add_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  if (in.size() != 3) fail<ValueError>(p.name, ": takes 3 operands (lhs, rhs, addend), got ", in.size());
  Avals prod = prims::dot_general_p.shape(prims::dot_general_p, in.subspan(0, 2), params);
  if (!in[2]->same_type(prod[0]))
    fail<TypeError>(p.name, ": the addend ", in[2]->str(), " must have the product's type ", prod[0].str());
  if (!is_floating(prod[0].dtype)) fail<TypeError>(p.name, ": floating operands only, got ", prod[0].str());
  (void)params.get<double>("alpha");
  (void)params.get<double>("beta");
  return prod;
}

Arrays dot_add_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  return {run_dot_general_add(in, {}, params)};
}

// Whether `a` is the only handle to its node and its node the only holder of its buffer (the test
// FusedKernel::run makes for in-place outputs).
bool sole_owner(const Array& a, size_t nbytes) {
  ConcreteNode* c = a.valid() ? a.concrete() : nullptr;
  return c && c->use_count() == 1 && c->owns_storage() && c->buffer()->nbytes() >= nbytes;
}

}  // namespace

Array run_dot_general_add(std::span<const Array> in, std::span<Array> dead, const Params& params) {
  auto operand = [&](size_t i) -> const Array& { return i < dead.size() && dead[i].valid() ? dead[i] : in[i]; };
  const Array &lhs = operand(0), &rhs = operand(1), &addend = operand(2);
  for (const Array* a : {&lhs, &rhs, &addend})
    if (!a->valid() || !a->is_concrete()) fail<ValueError>("dot_general_add: operands must be concrete arrays");
  const Aval* avals[3] = {&lhs.aval(), &rhs.aval(), &addend.aval()};
  Aval out = dot_add_shape(dot_general_add_p, avals, params)[0];
  double alpha = params.get<double>("alpha"), beta = params.get<double>("beta");
  Array result;
  if (beta != 0.0 && sole_owner(addend, out.nbytes())) {
    result = Array(Ref<ArrayNode>(new ConcreteNode(out, addend.concrete()->buffer(), 0)));
  } else {
    result = Array::empty(out);
    if (beta != 0.0) std::memcpy(result.concrete()->data(), addend.raw_data(), out.nbytes());
  }
  prims::dot_general_into(lhs, rhs, params, result, alpha, beta);
  return result;
}

// Compiler-internal: made after all transformations ran (binding it under one raises
// NotImplementedError, as for fusion).
const Primitive dot_general_add_p{"dot_general_add", 0, &dot_add_shape, &dot_add_impl};

}  // namespace graft::compiler
