// fold_constants: evaluates what is known before the program runs.
#include "graft/compiler/passes/passes.h"
#include "graft/compiler/rewrite.h"

namespace graft::compiler::passes {

namespace {
// Larger results stay computations: a folded constant is held (and read) for the program's lifetime,
// while e.g. a broadcast of a literal costs nothing inside a fused loop.
constexpr int64_t kMaxFoldedElements = 256;

bool foldable(const Eqn& e, const KnownValues& known) {
  if (e.prim->has(kEffectful) || e.prim->has(kHigherOrder) || !e.prim->impl) return false;
  int64_t n = 0;
  for (auto& v : e.outputs) n += v->aval.size();
  if (n > kMaxFoldedElements) return false;
  for (auto& a : e.inputs)
    if (!known.of(a)) return false;
  return true;
}
}  // namespace

ClosedJaxpr fold_constants(const ClosedJaxpr& j) {
  KnownValues known(j);
  auto out = std::make_shared<Jaxpr>();
  out->constvars = j.jaxpr->constvars;
  out->invars = j.jaxpr->invars;
  std::vector<Array> consts = j.consts;
  Substitution subst;
  bool changed = false;
  for (const Eqn& e0 : j.jaxpr->eqns) {
    Eqn e = e0;
    for (auto& a : e.inputs) a = subst(a);
    if (!foldable(e, known)) {
      out->eqns.push_back(std::move(e));
      continue;
    }
    Arrays in;
    for (auto& a : e.inputs) in.push_back(*known.of(a));
    std::vector<Aval> out_avals;
    for (auto& v : e.outputs) out_avals.push_back(v->aval);
    Arrays results = e.prim->impl(*e.prim, in, out_avals, e.params);
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      Array r = results[k];
      if (r.aval() != out_avals[k]) r = Array::from_data(r.raw_data(), out_avals[k].shape, r.dtype(), out_avals[k].weak_type);
      if (r.ndim() == 0) {
        subst.replace(e.outputs[k].get(), Atom::lit(r));
      } else {
        VarRef c = make_ref<Var>(out_avals[k]);
        out->constvars.push_back(c);
        consts.push_back(r);
        known.values[c.get()] = r;
        subst.replace(e.outputs[k].get(), Atom(c));
      }
    }
    changed = true;
  }
  if (!changed) return j;
  out->outvars = j.jaxpr->outvars;
  for (auto& a : out->outvars) a = subst(a);
  return ClosedJaxpr(out, std::move(consts));
}

}  // namespace graft::compiler::passes
