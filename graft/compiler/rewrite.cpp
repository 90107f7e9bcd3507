#include "graft/compiler/rewrite.h"

namespace graft::compiler {

Atom Substitution::operator()(const Atom& a) const {
  Atom cur = a;
  // chains are short (each pass replaces a variable by an earlier one); the bound guards a cycle bug
  for (int hops = 0; !cur.is_literal() && hops < 1 << 20; ++hops) {
    auto it = map_.find(cur.var.get());
    if (it == map_.end()) break;
    cur = it->second;
  }
  return cur;
}

void Substitution::apply(Jaxpr& j) const {
  if (map_.empty()) return;
  for (auto& e : j.eqns)
    for (auto& a : e.inputs) a = (*this)(a);
  for (auto& a : j.outvars) a = (*this)(a);
}

std::unordered_map<const Var*, int> count_uses(const Jaxpr& j) {
  std::unordered_map<const Var*, int> uses;
  for (auto& e : j.eqns)
    for (auto& a : e.inputs)
      if (!a.is_literal()) ++uses[a.var.get()];
  for (auto& a : j.outvars)
    if (!a.is_literal()) ++uses[a.var.get()];
  return uses;
}

std::shared_ptr<Jaxpr> copy_jaxpr(const Jaxpr& j) { return std::make_shared<Jaxpr>(j); }

ClosedJaxpr with_equations(const ClosedJaxpr& j, const std::vector<std::optional<Eqn>>& replaced,
                           const std::vector<bool>& dropped) {
  const Jaxpr& in = *j.jaxpr;
  auto out = std::make_shared<Jaxpr>();
  out->constvars = in.constvars;
  out->invars = in.invars;
  out->outvars = in.outvars;
  for (size_t i = 0; i < in.eqns.size(); ++i) {
    if (replaced[i]) {
      out->eqns.push_back(*replaced[i]);
    } else if (!dropped[i]) {
      out->eqns.push_back(in.eqns[i]);
    }
  }
  return ClosedJaxpr(out, j.consts);
}

KnownValues::KnownValues(const ClosedJaxpr& j) {
  for (size_t i = 0; i < j.jaxpr->constvars.size() && i < j.consts.size(); ++i)
    if (j.consts[i].is_concrete()) values[j.jaxpr->constvars[i].get()] = j.consts[i];
}

const Array* KnownValues::of(const Atom& a) const {
  if (a.is_literal()) return &a.literal;
  auto it = values.find(a.var.get());
  return it == values.end() ? nullptr : &it->second;
}

bool is_scalar_value(const Array* x, double v) {
  if (!x || !x->is_concrete() || x->size() != 1 || x->ndim() != 0) return false;
  if (is_complex(x->dtype())) return x->item<complex128>() == complex128(v, 0);  // 1+5j is not 1
  return x->item<double>() == v;
}

const ClosedJaxpr* call_body(const Eqn& e) {
  if (!e.prim->has(kCall)) return nullptr;
  for (const char* key : {"jaxpr", "call_jaxpr"})
    if (const ParamValue* v = e.params.find(key))
      if (auto* jp = std::get_if<JaxprPtr>(v)) return jp->get();
  return nullptr;
}

}  // namespace graft::compiler
