// accumulate_dots: a product scaled and added to a value of its own type becomes one
// dot_general_add (graft/compiler/cpu/accumulate.h): w - 0.01 * dot(x, dy) is one GEMM with BLAS's
// alpha and beta instead of a GEMM that writes the product and an elementwise loop that reads it back.
//
// Matched, with p the product dot_general(a, b) (read by nothing else) and c a known scalar:
//   add(w, p), add(p, w), add_any(...)     -> alpha  1, beta  1
//   sub(w, p)                              -> alpha -1, beta  1
//   sub(p, w)                              -> alpha  1, beta -1
// where p may also be mul(p, c), mul(c, p) (alpha times c) or neg(p) (alpha negated), each read once.
// Addends made by broadcast_in_dim (a layer's bias) are left to the fused loop after the product.
#include <optional>
#include <unordered_map>

#include "graft/compiler/cpu/accumulate.h"
#include "graft/compiler/passes/passes.h"
#include "graft/compiler/rewrite.h"
#include "graft/prims/primitives.h"

namespace graft::compiler::passes {

namespace {

// A product feeding an addition: its dot_general equation, the equations between (to drop), alpha.
struct Product {
  size_t dot;
  std::vector<size_t> between;
  double alpha;
};

class Matcher {
 public:
  explicit Matcher(const ClosedJaxpr& j)
      : taken(j.jaxpr->eqns.size(), false), j_(*j.jaxpr), known_(j), uses_(count_uses(j_)) {
    for (size_t i = 0; i < j_.eqns.size(); ++i)
      for (auto& v : j_.eqns[i].outputs) producer_[v.get()] = i;
  }

  // The product that `a` is (possibly scaled), when every value on the way is read only once, by the
  // next step, and none of its equations is taken by an earlier match.
  std::optional<Product> product(const Atom& a) const {
    std::optional<size_t> e = single_use_producer(a);
    if (!e) return std::nullopt;
    const Eqn& eq = j_.eqns[*e];
    if (eq.prim == &prims::dot_general_p) return Product{*e, {}, 1.0};
    if (eq.prim == &prims::neg_p) {
      auto p = direct_product(eq.inputs[0]);
      if (p) p->between.push_back(*e), p->alpha = -p->alpha;
      return p;
    }
    if (eq.prim == &prims::mul_p) {
      for (int side = 0; side < 2; ++side) {
        const Array* c = known_.of(eq.inputs[1 - side]);
        if (!c || c->ndim() != 0 || c->dtype() != eq.outputs[0]->aval.dtype) continue;
        auto p = direct_product(eq.inputs[side]);
        if (!p) continue;
        p->between.push_back(*e);
        p->alpha *= c->item<double>();
        return p;
      }
    }
    return std::nullopt;
  }

  bool produced_by(const Atom& a, const Primitive& p) const {
    if (a.is_literal()) return false;
    auto it = producer_.find(a.var.get());
    return it != producer_.end() && j_.eqns[it->second].prim == &p;
  }

  std::vector<bool> taken;  // per equation: replaced or dropped by a match

 private:
  std::optional<size_t> single_use_producer(const Atom& a) const {
    if (a.is_literal()) return std::nullopt;
    auto it = producer_.find(a.var.get());
    if (it == producer_.end() || taken[it->second]) return std::nullopt;
    auto u = uses_.find(a.var.get());
    if (u == uses_.end() || u->second != 1 || j_.eqns[it->second].outputs.size() != 1) return std::nullopt;
    return it->second;
  }
  std::optional<Product> direct_product(const Atom& a) const {
    std::optional<size_t> e = single_use_producer(a);
    if (!e || j_.eqns[*e].prim != &prims::dot_general_p) return std::nullopt;
    return Product{*e, {}, 1.0};
  }

  const Jaxpr& j_;
  KnownValues known_;
  std::unordered_map<const Var*, int> uses_;
  std::unordered_map<const Var*, size_t> producer_;
};

// f32 and f64 run as one BLAS call; other dtypes would take graft's own loop, no faster than two ops.
bool accumulates(const Aval& a) { return a.dtype == DType::f32 || a.dtype == DType::f64; }

}  // namespace

ClosedJaxpr accumulate_dots(const ClosedJaxpr& j) {
  const Jaxpr& in = *j.jaxpr;
  Matcher m(j);
  std::vector<std::optional<Eqn>> replaced(in.eqns.size());
  bool changed = false;
  for (size_t i = 0; i < in.eqns.size(); ++i) {
    const Eqn& e = in.eqns[i];
    bool add = e.prim == &prims::add_p || e.prim == &prims::add_any_p;
    if ((!add && e.prim != &prims::sub_p) || e.inputs.size() != 2) continue;
    const Aval& out = e.outputs[0]->aval;
    if (!accumulates(out)) continue;
    for (int side = 0; side < 2; ++side) {
      const Atom& w = e.inputs[1 - side];
      if (w.is_literal() || !(w.aval() == out)) continue;  // the addend has the result's full type
      // a broadcast addend (a bias) stays in the elementwise loop after the product: materializing
      // it for the GEMM to read costs more than that loop reading the smaller operand
      if (m.produced_by(w, prims::broadcast_in_dim_p)) continue;
      std::optional<Product> p = m.product(e.inputs[side]);
      if (!p) continue;
      const Eqn& dot = in.eqns[p->dot];
      if (!(dot.outputs[0]->aval == out)) continue;
      double alpha = p->alpha, beta = 1.0;
      if (!add) (side == 1 ? alpha : beta) = -(side == 1 ? alpha : beta);
      Params params = dot.params;
      params.set("alpha", alpha);
      params.set("beta", beta);
      replaced[i] = Eqn{&dot_general_add_p, {dot.inputs[0], dot.inputs[1], w}, e.outputs, std::move(params), dot.name_stack};
      m.taken[i] = m.taken[p->dot] = true;
      for (size_t b : p->between) m.taken[b] = true;
      changed = true;
      break;
    }
  }
  return changed ? with_equations(j, replaced, m.taken) : j;
}

}  // namespace graft::compiler::passes
