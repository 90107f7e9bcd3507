// dce: dead-code elimination.
#include <unordered_set>

#include "graft/compiler/passes/passes.h"

namespace graft::compiler::passes {

ClosedJaxpr eliminate_dead_code(const ClosedJaxpr& j) {
  const Jaxpr& in = *j.jaxpr;
  std::unordered_set<const Var*> live;
  for (auto& a : in.outvars)
    if (!a.is_literal()) live.insert(a.var.get());
  // one backward sweep: the equations are in dependency order
  std::vector<bool> keep(in.eqns.size(), false);
  for (size_t i = in.eqns.size(); i-- > 0;) {
    const Eqn& e = in.eqns[i];
    bool needed = e.prim->has(kEffectful);
    for (auto& v : e.outputs) needed = needed || live.count(v.get()) > 0;
    if (!needed) continue;
    keep[i] = true;
    for (auto& a : e.inputs)
      if (!a.is_literal()) live.insert(a.var.get());
  }
  auto out = std::make_shared<Jaxpr>();
  std::vector<Array> consts;
  for (size_t i = 0; i < in.constvars.size(); ++i)
    if (live.count(in.constvars[i].get())) {
      out->constvars.push_back(in.constvars[i]);
      consts.push_back(j.consts[i]);
    }
  out->invars = in.invars;
  for (size_t i = 0; i < in.eqns.size(); ++i)
    if (keep[i]) out->eqns.push_back(in.eqns[i]);
  out->outvars = in.outvars;
  if (out->eqns.size() == in.eqns.size() && consts.size() == j.consts.size()) return j;
  return ClosedJaxpr(out, std::move(consts));
}

}  // namespace graft::compiler::passes
