// cse: common-subexpression elimination.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "graft/compiler/passes/passes.h"
#include "graft/compiler/rewrite.h"

namespace graft::compiler::passes {

namespace {

// The bits of a scalar literal, whatever its dtype (an i64 or u64 beyond 2^53 is not a double), as a
// hash: a c128's 16 bytes are folded.
uint64_t literal_bits(const Array& l) {
  size_t n = itemsize(l.dtype());
  uint64_t bits = 0, hi = 0;
  std::memcpy(&bits, l.raw_data(), std::min<size_t>(8, n));
  if (n > 8) std::memcpy(&hi, static_cast<const char*>(l.raw_data()) + 8, std::min<size_t>(8, n - 8));
  return bits ^ (hi * 0x9e3779b97f4a7c15ull);
}

// Literals are equal when they have the same type and the same bytes (2^60 and 2^60 + 1 as i64 were
// equal through a conversion to double; two c128 differing in their imaginary parts are not equal).
bool same_atom(const Atom& a, const Atom& b) {
  if (a.is_literal() != b.is_literal()) return false;
  if (!a.is_literal()) return a.var.get() == b.var.get();
  return a.literal.aval() == b.literal.aval() &&
         std::memcmp(a.literal.raw_data(), b.literal.raw_data(), itemsize(a.literal.dtype())) == 0;
}

size_t atom_hash(const Atom& a) {
  if (!a.is_literal()) return std::hash<const void*>()(a.var.get());
  return std::hash<uint64_t>()(literal_bits(a.literal)) ^ (static_cast<size_t>(a.literal.dtype()) << 3);
}

size_t eqn_hash(const Eqn& e) {
  size_t h = std::hash<const void*>()(e.prim) ^ (e.params.hash() * 0x9e3779b97f4a7c15ULL);
  for (auto& a : e.inputs) h = h * 31 + atom_hash(a);
  return h;
}

bool same_eqn(const Eqn& a, const Eqn& b) {
  if (a.prim != b.prim || a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size()) return false;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (!same_atom(a.inputs[i], b.inputs[i])) return false;
  for (size_t i = 0; i < a.outputs.size(); ++i)
    if (a.outputs[i]->aval != b.outputs[i]->aval) return false;
  return a.params == b.params;
}

}  // namespace

ClosedJaxpr eliminate_common_subexpressions(const ClosedJaxpr& j) {
  auto out = std::make_shared<Jaxpr>();
  out->constvars = j.jaxpr->constvars;
  out->invars = j.jaxpr->invars;
  Substitution subst;
  std::unordered_multimap<size_t, size_t> seen;  // hash -> index into out->eqns
  bool changed = false;
  for (const Eqn& e0 : j.jaxpr->eqns) {
    Eqn e = e0;
    for (auto& a : e.inputs) a = subst(a);
    if (e.prim->has(kEffectful)) {
      out->eqns.push_back(std::move(e));
      continue;
    }
    size_t h = eqn_hash(e);
    const Eqn* match = nullptr;
    auto [lo, hi] = seen.equal_range(h);
    for (auto it = lo; it != hi && !match; ++it)
      if (same_eqn(out->eqns[it->second], e)) match = &out->eqns[it->second];
    if (match) {
      for (size_t k = 0; k < e.outputs.size(); ++k) subst.replace(e.outputs[k].get(), Atom(match->outputs[k]));
      changed = true;
      continue;
    }
    seen.emplace(h, out->eqns.size());
    out->eqns.push_back(std::move(e));
  }
  if (!changed) return j;
  out->outvars = j.jaxpr->outvars;
  for (auto& a : out->outvars) a = subst(a);
  return ClosedJaxpr(out, j.consts);
}

}  // namespace graft::compiler::passes
