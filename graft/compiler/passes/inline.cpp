// inline: flattens calls into the calling program.
#include <unordered_map>

#include "graft/compiler/passes/passes.h"
#include "graft/compiler/rewrite.h"

namespace graft::compiler::passes {

namespace {

// Appends the equations of `body` (itself inlined first) to `out`, with fresh variables so that the
// result stays in SSA form when one body is inlined at several call sites. Returns what the body's
// outputs become.
std::vector<Atom> splice(const ClosedJaxpr& body, std::span<const Atom> args, Jaxpr& out,
                         std::vector<Array>& out_consts) {
  ClosedJaxpr flat = inline_calls(body);
  const Jaxpr& b = *flat.jaxpr;
  std::unordered_map<const Var*, Atom> env;
  for (size_t i = 0; i < b.constvars.size(); ++i) {
    VarRef c = make_ref<Var>(b.constvars[i]->aval);
    out.constvars.push_back(c);
    out_consts.push_back(flat.consts[i]);
    env[b.constvars[i].get()] = Atom(c);
  }
  for (size_t i = 0; i < b.invars.size(); ++i) env[b.invars[i].get()] = args[i];
  auto read = [&](const Atom& a) { return a.is_literal() ? a : env.at(a.var.get()); };
  for (const Eqn& e : b.eqns) {
    Eqn c{e.prim, {}, {}, e.params, e.name_stack};
    for (auto& a : e.inputs) c.inputs.push_back(read(a));
    for (auto& v : e.outputs) {
      c.outputs.push_back(make_ref<Var>(v->aval));
      env[v.get()] = Atom(c.outputs.back());
    }
    out.eqns.push_back(std::move(c));
  }
  std::vector<Atom> results;
  for (auto& a : b.outvars) results.push_back(read(a));
  return results;
}

}  // namespace

ClosedJaxpr inline_calls(const ClosedJaxpr& j) {
  bool any = false;
  for (auto& e : j.jaxpr->eqns) any = any || call_body(e) != nullptr;
  if (!any) return j;
  auto out = std::make_shared<Jaxpr>();
  std::vector<Array> consts = j.consts;
  out->constvars = j.jaxpr->constvars;
  out->invars = j.jaxpr->invars;
  Substitution subst;
  for (const Eqn& e : j.jaxpr->eqns) {
    const ClosedJaxpr* body = call_body(e);
    if (!body) {
      Eqn c = e;
      for (auto& a : c.inputs) a = subst(a);
      out->eqns.push_back(std::move(c));
      continue;
    }
    std::vector<Atom> args;
    for (auto& a : e.inputs) args.push_back(subst(a));
    std::vector<Atom> results = splice(*body, args, *out, consts);
    for (size_t k = 0; k < e.outputs.size(); ++k) subst.replace(e.outputs[k].get(), results[k]);
  }
  out->outvars = j.jaxpr->outvars;
  for (auto& a : out->outvars) a = subst(a);
  return ClosedJaxpr(out, std::move(consts));
}

}  // namespace graft::compiler::passes
