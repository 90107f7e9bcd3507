#include "graft/interp/transpose.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "graft/core/axis_names.h"
#include "graft/core/config.h"
#include "graft/core/trace.h"
#include "graft/prims/lax.h"

namespace graft {

namespace {
// A cotangent, possibly partial: the true cotangent is psum(value, pending) — each member holds its
// own share of the sum over the named axes in `pending` (over which the value is invariant).
struct Ct {
  Array value;
  AxisSet pending = 0;
};

Array psum_over(const Array& x, AxisSet axes) { return axes ? lax::psum(x, axis_set_names(axes)) : x; }

// The cotangent made whole (its pending sums done).
Array resolve(const Ct& c) { return psum_over(c.value, c.pending); }

// Adds a cotangent contribution for v, checking that it has v's type. Two partial contributions are
// added before their common sums are done, so those run once.
void accumulate(std::unordered_map<const Var*, Ct>& env, const Var* v, Ct c, const char* prim) {
  if (!c.value.valid()) return;
  if (c.value.shape() != v->aval.shape || c.value.dtype() != v->aval.dtype)
    fail<ShapeError>("transpose of ", prim, ": produced a cotangent of type ", c.value.aval().str(),
                     " for a value of type ", v->aval.str());
  auto it = env.find(v);
  if (it == env.end()) {
    env.emplace(v, std::move(c));
    return;
  }
  Ct& e = it->second;
  AxisSet common = e.pending & c.pending;
  e.value = lax::add_any(psum_over(e.value, e.pending & ~common), psum_over(c.value, c.pending & ~common));
  e.pending = common;
}
}  // namespace

std::vector<bool> eqn_linear_outputs(const Eqn& e, const std::vector<bool>& linear_in) {
  bool any = false;
  for (bool b : linear_in) any = any || b;
  if (!any) return std::vector<bool>(e.outputs.size(), false);
  if (e.prim->linear_outputs) return e.prim->linear_outputs(*e.prim, linear_in, e.params);
  return std::vector<bool>(e.outputs.size(), true);
}

std::vector<bool> linear_outputs(const Jaxpr& j, const std::vector<bool>& linear_in) {
  std::unordered_set<const Var*> linear;
  for (size_t i = 0; i < j.invars.size(); ++i)
    if (linear_in[i]) linear.insert(j.invars[i].get());
  for (const Eqn& e : j.eqns) {
    std::vector<bool> in;
    for (auto& a : e.inputs) in.push_back(!a.is_literal() && linear.count(a.var.get()));
    std::vector<bool> out = eqn_linear_outputs(e, in);
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k]) linear.insert(e.outputs[k].get());
  }
  std::vector<bool> r;
  for (auto& a : j.outvars) r.push_back(!a.is_literal() && linear.count(a.var.get()));
  return r;
}

Arrays backward_pass(const Jaxpr& lin, std::span<const Array> consts, std::span<const Array> cts_out) {
  std::optional<DebugScope> scope;  // GRAFT_DEBUG_NANS says when a NaN comes from a backward pass
  if (config::debug_numerics()) scope.emplace("the backward pass (transpose rules)");
  // forward: values of the non-linear part (constvars and equations of constvars only)
  std::unordered_map<const Var*, Array> known;
  for (size_t i = 0; i < lin.constvars.size(); ++i) known[lin.constvars[i].get()] = consts[i];
  std::unordered_set<const Var*> linear;
  for (auto& v : lin.invars) linear.insert(v.get());
  std::vector<const Eqn*> linear_eqns;
  for (const Eqn& e : lin.eqns) {
    std::vector<bool> in_lin;
    for (auto& a : e.inputs) in_lin.push_back(!a.is_literal() && linear.count(a.var.get()));
    std::vector<bool> out_lin = eqn_linear_outputs(e, in_lin);
    bool any_in = false, all_out = true;
    for (bool b : in_lin) any_in = any_in || b;
    for (bool b : out_lin) all_out = all_out && b;
    if (any_in)
      for (size_t k = 0; k < out_lin.size(); ++k)
        if (out_lin[k]) linear.insert(e.outputs[k].get());
    if (any_in && std::find(out_lin.begin(), out_lin.end(), true) != out_lin.end()) linear_eqns.push_back(&e);
    if (any_in && all_out) continue;
    // the results that do not depend on linear values (all of them for a non-linear equation): run it
    // forward, with zeros for its linear inputs (a call of a jvp'd function yields its primal results)
    Arrays in;
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      const Atom& a = e.inputs[i];
      in.push_back(a.is_literal() ? a.literal
                   : in_lin[i]    ? lax::zeros(Aval(a.aval().shape, a.aval().dtype))
                                  : known.at(a.var.get()));
    }
    Arrays out = bind(*e.prim, in, e.params);
    for (size_t k = 0; k < e.outputs.size(); ++k)
      if (!any_in || !out_lin[k]) known[e.outputs[k].get()] = out[k];
  }
  // backward
  std::unordered_map<const Var*, Ct> ct;
  for (size_t i = 0; i < lin.outvars.size(); ++i) {
    const Atom& a = lin.outvars[i];
    if (!a.is_literal() && linear.count(a.var.get())) accumulate(ct, a.var.get(), Ct{cts_out[i]}, "output");
  }
  for (auto it = linear_eqns.rbegin(); it != linear_eqns.rend(); ++it) {
    const Eqn& e = **it;
    // An input invariant over a named axis that the results vary over was broadcast to every member
    // (an implicit pvary): its cotangent is the sum over the members (pvary's transpose), which keeps
    // the gradient of a replicated parameter replicated (JAX's varying manual axes; without it a loss
    // that ends in psum had its gradient multiplied by the axis size). The sum is deferred: the
    // cotangent travels as a partial one through the transposes of equations that are invariant over
    // the axis (linear maps whose other operands are the same on every member commute with the sum),
    // so that it runs once, on the smallest value — a bias's gradient is summed over the members as a
    // [n] vector, not as the [batch, n] one the add saw. Collectives and higher-order primitives
    // (whose bodies' backward passes do their own) take whole cotangents.
    bool opaque = e.prim->has(kCollective) || e.prim->has(kHigherOrder);
    Arrays cts;
    std::vector<AxisSet> pend;
    bool any = false;
    for (auto& v : e.outputs) {
      auto f = ct.find(v.get());
      if (f != ct.end()) {
        cts.push_back(std::move(f->second.value));
        pend.push_back(f->second.pending);
        ct.erase(f);
        any = true;
      } else {
        cts.push_back(Array());
        pend.push_back(0);
      }
    }
    if (!any) continue;
    if (!e.prim->transpose)
      fail<NotImplementedError>("reverse-mode differentiation: ", e.prim->name,
                                " has no transpose rule (it is not linear in its differentiated inputs)");
    // the sums the results' cotangents still owe: deferred through this equation when they agree
    AxisSet carried = opaque ? 0 : ~AxisSet(0);
    for (size_t k = 0; k < cts.size(); ++k)
      if (cts[k].valid()) carried &= pend[k];
    for (size_t k = 0; k < cts.size(); ++k)
      if (cts[k].valid()) cts[k] = psum_over(cts[k], pend[k] & ~carried);
    if (carried == ~AxisSet(0)) carried = 0;
    SmallVector<TArg, 4> args;
    for (auto& a : e.inputs) {
      TArg t;
      t.aval = a.aval();
      if (a.is_literal()) {
        t.value = a.literal;
      } else if (linear.count(a.var.get())) {
        t.linear = true;
      } else {
        t.value = known.at(a.var.get());
      }
      args.push_back(std::move(t));
    }
    if (e.outputs.size() == 1 && !cts[0].valid()) continue;
    Arrays cts_in = e.prim->transpose(*e.prim, cts, args, e.params);
    AxisSet out_vma = 0;
    if (!opaque)
      for (auto& v : e.outputs) out_vma |= v->aval.vma;
    for (size_t i = 0; i < e.inputs.size() && i < cts_in.size(); ++i) {
      if (!args[i].linear) continue;
      accumulate(ct, e.inputs[i].var.get(), Ct{cts_in[i], carried | (out_vma & ~args[i].aval.vma)}, e.prim->name);
    }
  }
  Arrays result;
  for (auto& v : lin.invars) {
    auto f = ct.find(v.get());
    result.push_back(f == ct.end() ? Array() : resolve(f->second));
  }
  return result;
}

}  // namespace graft
