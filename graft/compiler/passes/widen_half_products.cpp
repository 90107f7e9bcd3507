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
// a rounding of an f32 value to bf16, a = convert(w, bf16), is widened by reading w (not for f16, whose
// rounding also overflows to inf above 65504: loss scaling watches for that): the pair f32 -> bf16 -> f32
// is dropped, as XLA's simplify-fp-conversions drops it on CPUs after widening bf16 ops. A mixed-
// precision step's weight casts then cost nothing on the f32 route, the product sees the f32 weights
// (more precision, never less), and the bf16 cast stays where something else reads it.
//
// And with excess precision, bf16 arithmetic as a whole moves to f32 on such CPUs (XLA's float
// normalization followed by simplify-fp-conversions): every elementwise, structural, reduction,
// pooling, gather/scatter, product and convolution equation of bf16 values computes on their f32
// versions, the f32 -> bf16 -> f32 pairs between them vanish, and bf16 values remain only where
// something else needs them (the program's outputs, primitives outside the list). Conversions the
// program writes still round for everything but the contractions that accumulate them in f32 (products
// and convolutions, as above, sums, scatter-adds and windowed sums): a comparison, a pooling's choice,
// an elementwise or a structural operation of x.astype(bf16) sees the rounded x. A bf16 step then stores f32
// between its loops, as the f32 step does, instead of writing each activation twice (the bf16 value and its
// widened copy for the next GEMM). bf16 has f32's exponent range, so only the rounding changes; f16 (whose
// overflow to inf loss scaling watches) keeps the products-only rewrite.
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "graft/compiler/fusion.h"
#include "graft/compiler/passes/passes.h"
#include "graft/compiler/rewrite.h"
#include "graft/core/trace.h"
#include "graft/prims/primitives.h"
#include "graft/runtime/cpu/features.h"

namespace graft::compiler::passes {

namespace {

bool is_half(DType d) { return d == DType::bf16 || d == DType::f16; }

Eqn convert(const Atom& x, DType to, VarRef out) {
  return Eqn{&prims::convert_element_type_p, {x}, {std::move(out)}, Params{{"new_dtype", to}, {"weak_type", false}}};
}

std::mutex& registered_mu() {
  static std::mutex mu;
  return mu;
}
std::unordered_set<const Primitive*>& registered() {
  static auto* s = new std::unordered_set<const Primitive*>();
  return *s;
}

// The primitives whose bf16 equations compute the same function on f32 values (to within the rounding
// of their result): no dtype among their parameters, no meaning in the bits of the type.
bool computes_in_f32(const Primitive* p) {
  using namespace prims;
  // clang-format off
  static const std::unordered_set<const Primitive*> elementwise{
      &neg_p, &sign_p, &floor_p, &ceil_p, &round_p, &is_finite_p, &exp_p, &exp2_p, &log_p, &log1p_p, &expm1_p,
      &tanh_p, &logistic_p, &sin_p, &cos_p, &sqrt_p, &rsqrt_p, &abs_p, &erf_p, &square_p, &integer_pow_p, &copy_p,
      &add_p, &sub_p, &mul_p, &div_p, &pow_p, &max_p, &min_p, &add_any_p, &eq_p, &ne_p, &lt_p, &le_p, &gt_p, &ge_p,
      &select_n_p, &clamp_p};
  static const std::unordered_set<const Primitive*> others{
      &reduce_sum_p, &reduce_max_p, &reduce_min_p, &broadcast_in_dim_p, &reshape_p, &transpose_p, &squeeze_p,
      &slice_p, &pad_p, &concatenate_p, &rev_p, &dot_general_p, &conv_general_dilated_p, &gather_p, &scatter_add_p,
      &reduce_window_sum_p, &reduce_window_max_p, &reduce_window_min_p, &select_and_gather_add_p,
      &select_and_scatter_add_p};
  // clang-format on
  if (elementwise.count(p) || others.count(p)) return true;
  std::lock_guard<std::mutex> lk(registered_mu());
  return registered().count(p) > 0;
}

// An equation of bf16 values (and no other floating type but f32) that computes_in_f32.
bool bf16_equation(const Eqn& e) {
  if (!computes_in_f32(e.prim)) return false;
  bool any = false;
  auto check = [&](const Aval& a) {
    if (a.dtype == DType::bf16) any = true;
    return !is_floating(a.dtype) || a.dtype == DType::bf16 || a.dtype == DType::f32;
  };
  for (const Atom& x : e.inputs)
    if (!check(x.aval())) return false;
  for (const VarRef& v : e.outputs)
    if (!check(v->aval)) return false;
  return any;
}

// bf16 arithmetic in f32 (see the header): `widened` maps bf16 values to their f32 versions.
ClosedJaxpr bf16_in_f32(const ClosedJaxpr& j) {
  const Jaxpr& in = *j.jaxpr;
  std::vector<bool> moved(in.eqns.size());
  for (size_t i = 0; i < in.eqns.size(); ++i) moved[i] = bf16_equation(in.eqns[i]);
  // bf16 results that something outside the moved equations reads keep a bf16 version
  std::unordered_set<const Var*> needs_bf16;
  for (size_t i = 0; i < in.eqns.size(); ++i)
    if (!moved[i])
      for (const Atom& x : in.eqns[i].inputs)
        if (x.var) needs_bf16.insert(x.var.get());
  for (const Atom& x : in.outvars)
    if (x.var) needs_bf16.insert(x.var.get());

  auto out = std::make_shared<Jaxpr>();
  out->constvars = in.constvars;
  out->invars = in.invars;
  std::unordered_map<const Var*, Atom> widened;
  // bf16 results of moved equations rounded back for their bf16 readers; results of kept equations
  std::unordered_set<const Var*> rounded_back, produced_here;
  std::unordered_set<const Var*> written;  // results of the program's own conversions to bf16

  for (const VarRef& v : in.invars) produced_here.insert(v.get());
  for (const VarRef& v : in.constvars) produced_here.insert(v.get());
  Substitution subst;
  std::unordered_map<const Var*, Atom> exact;  // the program's own roundings, widened after rounding
  // x's f32 version for an equation; `contraction`: x is summed in f32 (products, convolutions, sums,
  // scatter-adds), which reads the value a rounding of the program's rounded (the rest reads the
  // rounded value: explicit conversions round)
  auto wide = [&](const Atom& x, bool contraction) -> Atom {
    if (x.is_literal())
      return Atom::lit(eval_primitive(prims::convert_element_type_p, {&x.literal, 1},
                                      Params{{"new_dtype", DType::f32}, {"weak_type", x.aval().weak_type}})[0]);
    const bool rounded = written.count(x.var.get()) > 0;
    auto& map = rounded && !contraction ? exact : widened;
    if (auto it = map.find(x.var.get()); it != map.end()) return it->second;
    VarRef w = make_ref<Var>(Aval(x.aval().shape, DType::f32));
    out->eqns.push_back(convert(x, DType::f32, w));
    map.emplace(x.var.get(), Atom(w));
    return Atom(w);
  };
  for (size_t i = 0; i < in.eqns.size(); ++i) {
    Eqn e = in.eqns[i];
    for (Atom& x : e.inputs) x = subst(x);
    if (e.prim == &prims::convert_element_type_p && e.outputs.size() == 1) {
      DType from = e.inputs[0].aval().dtype, to = e.outputs[0]->aval.dtype;
      if (from == DType::f32 && to == DType::bf16) {  // a rounding: products read the f32 value
        widened.emplace(e.outputs[0].get(), e.inputs[0]);
        written.insert(e.outputs[0].get());
      } else if (from == DType::bf16 && to == DType::f32 && e.inputs[0].var && !written.count(e.inputs[0].var.get())) {
        // a widening of a moved result (a rounding the program never wrote); x.astype(bf16).astype(f32)
        // still rounds
        auto it = widened.find(e.inputs[0].var.get());
        if (it != widened.end() && it->second.aval() == e.outputs[0]->aval) {
          subst.replace(e.outputs[0].get(), it->second);
          continue;
        }
      }
    }
    if (moved[i]) {
      std::vector<Atom> args;
      // sums, as products, accumulate in f32: reading the unrounded value only adds precision (a
      // gradient's bias sum and its products then read one f32 cotangent, not it and its rounding)
      const bool product = e.prim == &prims::dot_general_p || e.prim == &prims::conv_general_dilated_p;
      const bool contraction = product || e.prim == &prims::reduce_sum_p || e.prim == &prims::scatter_add_p ||
                               e.prim == &prims::reduce_window_sum_p;
      for (size_t k = 0; k < e.inputs.size(); ++k) {
        const Atom& x = e.inputs[k];
        // select_and_scatter_add sums its source (input 0); its operand only chooses, as the forward
        // pooling chose on the rounded values
        bool summed = contraction || (e.prim == &prims::select_and_scatter_add_p && k == 0);
        args.push_back(x.aval().dtype == DType::bf16 ? wide(x, summed) : x);
      }
      Params params = product ? e.params.with("preferred_element_type", ParamValue()) : e.params;
      // the f32 equation's types: bf16 results become f32, the others stay as they were
      std::vector<const Aval*> ptrs;
      for (const Atom& x : args) ptrs.push_back(&x.aval());
      std::optional<Avals> types;
      try {
        types = e.prim->shape(*e.prim, ptrs, params);
      } catch (const Error&) {
      }
      bool fits = types && types->size() == e.outputs.size();
      for (size_t k = 0; fits && k < e.outputs.size(); ++k) {
        const Aval& was = e.outputs[k]->aval;
        const Aval& now = (*types)[k];
        fits = was.dtype == DType::bf16 ? (now.dtype == DType::f32 && now.shape == was.shape) : now == was;
      }
      if (fits) {
        Eqn f{e.prim, std::move(args), {}, std::move(params), e.name_stack};
        std::vector<Eqn> back;
        for (size_t k = 0; k < e.outputs.size(); ++k) {
          const VarRef& v = e.outputs[k];
          if (v->aval.dtype != DType::bf16) {
            f.outputs.push_back(v);
            continue;
          }
          VarRef w = make_ref<Var>((*types)[k]);
          f.outputs.push_back(w);
          widened.emplace(v.get(), Atom(w));
          if (needs_bf16.count(v.get())) {
            back.push_back(convert(Atom(w), DType::bf16, v));
            rounded_back.insert(v.get());
          }
        }
        out->eqns.push_back(std::move(f));
        for (Eqn& b : back) out->eqns.push_back(std::move(b));
        continue;
      }
      // not expressible in f32 after all: the bf16 equation, on bf16 versions of moved results (which
      // the first sweep did not know this reader needs)
      for (const Atom& x : e.inputs) {
        if (!x.var || x.aval().dtype != DType::bf16 || rounded_back.count(x.var.get())) continue;
        auto it = widened.find(x.var.get());
        if (it == widened.end() || it->second.aval().dtype != DType::f32 || produced_here.count(x.var.get())) continue;
        out->eqns.push_back(convert(it->second, DType::bf16, x.var));
        rounded_back.insert(x.var.get());
      }
    }
    for (const VarRef& v : e.outputs) produced_here.insert(v.get());
    out->eqns.push_back(std::move(e));
  }
  out->outvars = in.outvars;
  for (Atom& a : out->outvars) a = subst(a);
  // the roundings and widenings that nothing reads any more go
  return eliminate_dead_code(ClosedJaxpr(out, j.consts));
}

ClosedJaxpr widen_products(const ClosedJaxpr& j) {
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
        e.outputs[0]->aval.dtype == DType::bf16 && e.inputs[0].aval().dtype == DType::f32)
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

}  // namespace

void register_bf16_in_f32(const Primitive& p) {
  std::lock_guard<std::mutex> lk(registered_mu());
  registered().insert(&p);
}

ClosedJaxpr widen_half_products(const ClosedJaxpr& j) {
  if (excess_precision() && !cpu::native_half_gemm(DType::bf16)) {
    bool bf16 = false;
    for (const Eqn& e : j.jaxpr->eqns)
      for (const VarRef& v : e.outputs) bf16 = bf16 || v->aval.dtype == DType::bf16;
    if (bf16) {
      ClosedJaxpr moved = bf16_in_f32(j);
      // f16 products (and bf16 ones the list could not move) take the rewrite below
      return moved.jaxpr->eqns.empty() ? moved : widen_products(moved);
    }
  }
  return widen_products(j);
}

}  // namespace graft::compiler::passes
