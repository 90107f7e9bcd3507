// widen_half_products: on a CPU without bf16 dot products (runtime/cpu/features.h), a product of
// half-precision operands becomes the same product in f32 between conversions:
//   c = dot_general(a, b)            a, b bf16 or f16, c of their type (or a preferred f32)
//   -> a' = convert(a, f32), b' = convert(b, f32), c' = dot_general[f32](a', b'), c = convert(c', type)
// The GEMM then runs at the f32 rate on operands widened once: the conversions fuse into the loops
// that make a and b and that read c (a layer's weight cast f32 -> bf16 -> f32 is one rounding loop,
// shared by the forward and backward products after cse), instead of being widened and rounded again
// inside every GEMM call. Values stay bf16 where they are stored between loops only if that saves
// memory traffic (the fused loops decide what they write). Without it, half products still run in f32
// inside the GEMM (cpu::gemm), so this is a speed rewrite only; results round where they did.
//
// With excess precision allowed (excess_precision() in fusion.h, the default), an operand that is itself
// a rounding of an f32 value, a = convert(w, bf16), is widened by reading w: the pair f32 -> bf16 -> f32
// is dropped, as XLA's simplify-fp-conversions drops it on CPUs after widening bf16 ops. A mixed-
// precision step's weight casts then cost nothing on the f32 route, the product sees the f32 weights
// (more precision, never less), and the bf16 cast stays where something else reads it.
#include <unordered_map>

#include "graft/compiler/fusion.h"
#include "graft/compiler/passes/passes.h"
#include "graft/compiler/rewrite.h"
#include "graft/prims/primitives.h"
#include "graft/runtime/cpu/features.h"

namespace graft::compiler::passes {

namespace {

bool is_half(DType d) { return d == DType::bf16 || d == DType::f16; }

Eqn convert(const Atom& x, DType to, VarRef out) {
  return Eqn{&prims::convert_element_type_p, {x}, {std::move(out)}, Params{{"new_dtype", to}, {"weak_type", false}}};
}

}  // namespace

ClosedJaxpr widen_half_products(const ClosedJaxpr& j) {
  const Jaxpr& in = *j.jaxpr;
  bool any = false;
  for (const Eqn& e : in.eqns) {
    if (e.prim != &prims::dot_general_p) continue;
    DType d = e.inputs[0].aval().dtype;
    any = any || (is_half(d) && !cpu::native_half_gemm(d));
  }
  if (!any) return j;
  auto out = std::make_shared<Jaxpr>();
  out->constvars = in.constvars;
  out->invars = in.invars;
  out->outvars = in.outvars;
  std::unordered_map<const Var*, VarRef> widened;
  // half values that round an f32 value (convert(w: f32) -> half): their source, where excess precision
  // lets a widening read it instead
  std::unordered_map<const Var*, Atom> rounded_from;
  const bool excess = excess_precision();
  for (const Eqn& e : in.eqns) {
    if (excess && e.prim == &prims::convert_element_type_p && e.outputs.size() == 1 &&
        is_half(e.outputs[0]->aval.dtype) && e.inputs[0].aval().dtype == DType::f32)
      rounded_from.emplace(e.outputs[0].get(), e.inputs[0]);
  }
  for (const Eqn& e : in.eqns) {
    DType d = e.prim == &prims::dot_general_p ? e.inputs[0].aval().dtype : DType::f32;
    if (e.prim != &prims::dot_general_p || !is_half(d) || cpu::native_half_gemm(d) || e.outputs.size() != 1) {
      out->eqns.push_back(e);
      continue;
    }
    std::vector<Atom> wide;
    for (const Atom& x : e.inputs) {
      // one conversion per value (a weight read by the forward and the backward product): this pass
      // runs after cse
      if (x.var) {
        auto it = widened.find(x.var.get());
        if (it != widened.end()) {
          wide.push_back(it->second);
          continue;
        }
        if (auto r = rounded_from.find(x.var.get()); r != rounded_from.end()) {
          wide.push_back(r->second);
          continue;
        }
      }
      VarRef w = make_ref<Var>(Aval(x.aval().shape, DType::f32));
      out->eqns.push_back(convert(x, DType::f32, w));
      if (x.var) widened[x.var.get()] = w;
      wide.push_back(w);
    }
    const Aval& r = e.outputs[0]->aval;
    if (r.dtype == DType::f32) {
      out->eqns.push_back(Eqn{e.prim, wide, e.outputs, e.params.with("preferred_element_type", ParamValue()), e.name_stack});
      continue;
    }
    VarRef c = make_ref<Var>(Aval(r.shape, DType::f32));
    out->eqns.push_back(Eqn{e.prim, wide, {c}, e.params.with("preferred_element_type", ParamValue()), e.name_stack});
    out->eqns.push_back(convert(c, r.dtype, e.outputs[0]));
  }
  return ClosedJaxpr(out, j.consts);
}

}  // namespace graft::compiler::passes
