#include "graft/interp/transpose.h"

#include <unordered_map>
#include <unordered_set>

#include "graft/core/trace.h"
#include "graft/prims/lax.h"

namespace graft {

namespace {
// Adds a cotangent contribution for v, checking that it has v's type.
void accumulate(std::unordered_map<const Var*, Array>& env, const Var* v, const Array& ct, const char* prim) {
  if (!ct.valid()) return;
  if (ct.shape() != v->aval.shape || ct.dtype() != v->aval.dtype)
    fail<ShapeError>("transpose of ", prim, ": produced a cotangent of type ", ct.aval().str(), " for a value of type ",
                     v->aval.str());
  auto it = env.find(v);
  if (it == env.end()) {
    env.emplace(v, ct);
  } else {
    it->second = lax::add_any(it->second, ct);
  }
}
}  // namespace

Arrays backward_pass(const Jaxpr& lin, std::span<const Array> consts, std::span<const Array> cts_out) {
  // forward: values of the non-linear part (constvars and equations of constvars only)
  std::unordered_map<const Var*, Array> known;
  for (size_t i = 0; i < lin.constvars.size(); ++i) known[lin.constvars[i].get()] = consts[i];
  std::unordered_set<const Var*> linear;
  for (auto& v : lin.invars) linear.insert(v.get());
  std::vector<const Eqn*> linear_eqns;
  for (const Eqn& e : lin.eqns) {
    bool is_lin = false;
    for (auto& a : e.inputs) is_lin = is_lin || (!a.is_literal() && linear.count(a.var.get()));
    if (is_lin) {
      for (auto& v : e.outputs) linear.insert(v.get());
      linear_eqns.push_back(&e);
    } else {
      Arrays in;
      for (auto& a : e.inputs) in.push_back(a.is_literal() ? a.literal : known.at(a.var.get()));
      Arrays out = bind(*e.prim, in, e.params);
      for (size_t i = 0; i < e.outputs.size(); ++i) known[e.outputs[i].get()] = out[i];
    }
  }
  // backward
  std::unordered_map<const Var*, Array> ct;
  for (size_t i = 0; i < lin.outvars.size(); ++i) {
    const Atom& a = lin.outvars[i];
    if (!a.is_literal() && linear.count(a.var.get())) accumulate(ct, a.var.get(), cts_out[i], "output");
  }
  for (auto it = linear_eqns.rbegin(); it != linear_eqns.rend(); ++it) {
    const Eqn& e = **it;
    Arrays cts;
    bool any = false;
    for (auto& v : e.outputs) {
      auto f = ct.find(v.get());
      if (f != ct.end()) {
        cts.push_back(std::move(f->second));
        ct.erase(f);
        any = true;
      } else {
        cts.push_back(Array());
      }
    }
    if (!any) continue;
    if (!e.prim->transpose)
      fail<NotImplementedError>("reverse-mode differentiation: ", e.prim->name,
                                " has no transpose rule (it is not linear in its differentiated inputs)");
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
    for (size_t i = 0; i < e.inputs.size() && i < cts_in.size(); ++i)
      if (args[i].linear) accumulate(ct, e.inputs[i].var.get(), cts_in[i], e.prim->name);
  }
  Arrays result;
  for (auto& v : lin.invars) {
    auto f = ct.find(v.get());
    result.push_back(f == ct.end() ? Array() : f->second);
  }
  return result;
}

}  // namespace graft
