// gemm_epilogues: a layer's bias add (and a ReLU read only there) folded into its matrix product, and a
// weight gradient's product paired with its bias gradient (graft/compiler/epilogue.h). Programs for
// devices only: cuBLASLt does each in one call, where the CPU's fused loops already read the product
// once.
//
// Matched, with matrices only (no batch dimensions) of f16, bf16 or f32:
//   e = add(p, broadcast_in_dim[(1,)](b)) or add(broadcast(b), p), p = dot_general(x, w) read once
//       -> e = dot_bias[relu=False](x, w, b); and a ReLU that alone reads e (max(e, 0), or graft's
//       relu: select_n(gt(e, 0), 0, e)) -> relu=True
//   w = dot_general[contract ((0), (0))](x, g) and db = reduce_sum[axes=(0,)](g), g a matrix
//       -> w, db = dot_bias_grad(x, g), placed where the earlier of the two was (x defined before it)
#include <optional>
#include <unordered_map>

#include "graft/compiler/epilogue.h"
#include "graft/compiler/passes/passes.h"
#include "graft/compiler/rewrite.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"

namespace graft::compiler::passes {

namespace {

bool epilogue_type(DType d) { return d == DType::f16 || d == DType::bf16 || d == DType::f32; }

// A plain matrix product: 2-D operands, one contracted axis each, no batch axes.
bool matrix_product(const Eqn& e) {
  if (e.prim != &prims::dot_general_p || e.inputs.size() != 2) return false;
  const auto& dn = e.params.get_object<lax::DotDims>("dimension_numbers");
  return e.inputs[0].aval().ndim() == 2 && e.inputs[1].aval().ndim() == 2 && dn.lhs_batch.empty() &&
         dn.rhs_batch.empty() && dn.lhs_contract.size() == 1 && epilogue_type(e.outputs[0]->aval.dtype) &&
         e.inputs[0].aval().dtype == e.outputs[0]->aval.dtype && e.inputs[1].aval().dtype == e.outputs[0]->aval.dtype;
}

class Rewriter {
 public:
  explicit Rewriter(const ClosedJaxpr& j) : j_(*j.jaxpr), known_(j), uses_(count_uses(j_)) {
    for (size_t i = 0; i < j_.eqns.size(); ++i)
      for (auto& v : j_.eqns[i].outputs) producer_[v.get()] = i;
    replaced_.resize(j_.eqns.size());
    dropped_.assign(j_.eqns.size(), false);
  }

  ClosedJaxpr run(const ClosedJaxpr& j) {
    for (size_t i = 0; i < j_.eqns.size(); ++i) {
      bias(i);
      bias_grad(i);
    }
    return changed_ ? with_equations(j, replaced_, dropped_) : j;
  }

 private:
  std::optional<size_t> producer(const Atom& a) const {
    if (a.is_literal()) return std::nullopt;
    auto it = producer_.find(a.var.get());
    if (it == producer_.end() || dropped_[it->second] || replaced_[it->second]) return std::nullopt;
    return it->second;
  }
  int uses(const Var* v) const {
    auto it = uses_.find(v);
    return it == uses_.end() ? 0 : it->second;
  }

  // e = add(dot, broadcast(bias)); then max(e, 0) when e has no other reader
  void bias(size_t i) {
    const Eqn& e = j_.eqns[i];
    if (e.prim != &prims::add_p || dropped_[i] || replaced_[i]) return;
    for (int side = 0; side < 2; ++side) {
      auto p = producer(e.inputs[side]);
      auto q = producer(e.inputs[1 - side]);
      if (!p || !q || !matrix_product(j_.eqns[*p]) || uses(e.inputs[side].var.get()) != 1) continue;
      const Eqn& bc = j_.eqns[*q];
      if (bc.prim != &prims::broadcast_in_dim_p || bc.params.get_ints("broadcast_dimensions") != IntList{1} ||
          bc.inputs[0].aval().ndim() != 1 || !(bc.outputs[0]->aval == e.outputs[0]->aval))
        continue;
      const Eqn& dot = j_.eqns[*p];
      Eqn fused{&dot_bias_p, {dot.inputs[0], dot.inputs[1], bc.inputs[0]}, e.outputs, dot.params.with("relu", false),
                dot.name_stack};
      size_t at = i;
      if (std::optional<std::pair<size_t, std::vector<size_t>>> r = relu_of(e.outputs[0].get(), i)) {
        fused.outputs = j_.eqns[r->first].outputs;
        fused.params.set("relu", true);
        dropped_[i] = true;
        for (size_t k : r->second) dropped_[k] = true;
        at = r->first;
      }
      replaced_[at] = std::move(fused);
      dropped_[*p] = true;
      changed_ = true;
      return;
    }
  }

  bool reads(const Eqn& e, size_t k, const Var* v) const { return !e.inputs[k].is_literal() && e.inputs[k].var.get() == v; }
  bool zero(const Atom& a) const {
    if (is_scalar_value(known_.of(a), 0.0)) return true;
    auto p = producer(a);  // a broadcast zero
    return p && j_.eqns[*p].prim == &prims::broadcast_in_dim_p && is_scalar_value(known_.of(j_.eqns[*p].inputs[0]), 0.0);
  }
  // The ReLU that is the only reader of v (made at equation `at`): max(v, 0), or graft's relu,
  // select_n(gt(v, 0), 0, v) with v read by those two alone. Its equation, and those it replaces besides.
  std::optional<std::pair<size_t, std::vector<size_t>>> relu_of(const Var* v, size_t at) const {
    int n = uses(v);
    std::optional<size_t> gt;
    for (size_t k = at + 1; k < j_.eqns.size(); ++k) {
      const Eqn& m = j_.eqns[k];
      if (dropped_[k] || replaced_[k]) continue;
      if (n == 1 && m.prim == &prims::max_p)
        for (int s = 0; s < 2; ++s)
          if (reads(m, static_cast<size_t>(s), v) && zero(m.inputs[1 - s])) return std::make_pair(k, std::vector<size_t>{});
      if (n == 2 && m.prim == &prims::gt_p && reads(m, 0, v) && zero(m.inputs[1]) && uses(m.outputs[0].get()) == 1) gt = k;
      if (n == 2 && gt && m.prim == &prims::select_n_p && m.inputs.size() == 3 && reads(m, 0, j_.eqns[*gt].outputs[0].get()) &&
          zero(m.inputs[1]) && reads(m, 2, v))
        return std::make_pair(k, std::vector<size_t>{*gt});
    }
    return std::nullopt;
  }

  // w = dot_general[((0), (0))](x, g) beside db = reduce_sum[(0,)](g)
  void bias_grad(size_t i) {
    const Eqn& r = j_.eqns[i];
    if (r.prim != &prims::reduce_sum_p || dropped_[i] || replaced_[i] || r.inputs[0].is_literal()) return;
    if (r.params.get_ints("axes") != IntList{0} || r.inputs[0].aval().ndim() != 2) return;
    const Var* g = r.inputs[0].var.get();
    for (size_t k = 0; k < j_.eqns.size(); ++k) {
      const Eqn& d = j_.eqns[k];
      if (dropped_[k] || replaced_[k] || !matrix_product(d) || d.inputs[1].is_literal() || d.inputs[1].var.get() != g)
        continue;
      const auto& dn = d.params.get_object<lax::DotDims>("dimension_numbers");
      if (dn.lhs_contract != IntList{0} || dn.rhs_contract != IntList{0}) continue;
      size_t at = std::min(i, k);
      auto x = producer(d.inputs[0]);
      if (x && *x >= at) continue;  // x must be ready where the pair goes
      std::vector<VarRef> outs = {d.outputs[0], r.outputs[0]};
      replaced_[at] = Eqn{&dot_bias_grad_p, {d.inputs[0], d.inputs[1]}, outs, d.params, d.name_stack};
      dropped_[std::max(i, k)] = true;
      changed_ = true;
      return;
    }
  }

  const Jaxpr& j_;
  KnownValues known_;
  std::unordered_map<const Var*, int> uses_;
  std::unordered_map<const Var*, size_t> producer_;
  std::vector<std::optional<Eqn>> replaced_;
  std::vector<bool> dropped_;
  bool changed_ = false;
};

}  // namespace

ClosedJaxpr gemm_epilogues(const ClosedJaxpr& j) { return Rewriter(j).run(j); }

}  // namespace graft::compiler::passes
