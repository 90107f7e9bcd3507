#include "graft/ir/jaxpr.h"

#include "graft/core/axis_names.h"
#include "graft/core/trace.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "graft/core/trace.h"

namespace graft {

std::vector<Aval> Jaxpr::in_avals() const {
  std::vector<Aval> out;
  for (auto& v : invars) out.push_back(v->aval);
  return out;
}

std::vector<Aval> Jaxpr::out_avals() const {
  std::vector<Aval> out;
  for (auto& a : outvars) out.push_back(a.aval());
  return out;
}

std::string ClosedJaxpr::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

std::shared_ptr<const void> ClosedJaxpr::derived_any(const std::string& key,
                                                     const std::function<std::shared_ptr<const void>()>& make) const {
  static std::mutex init_mu;
  {
    std::lock_guard<std::mutex> lk(init_mu);
    if (!derived_) derived_ = std::make_shared<DerivedCache>();
  }
  {
    std::lock_guard<std::mutex> lk(derived_->mu);
    auto it = derived_->entries.find(key);
    if (it != derived_->entries.end()) return it->second;
  }
  auto made = make();  // outside the lock: making may recurse
  std::lock_guard<std::mutex> lk(derived_->mu);
  return derived_->entries.emplace(key, made).first->second;
}

Avals infer_avals(const Primitive& prim, std::span<const Aval> in, const Params& params) {
  SmallVector<const Aval*, 8> ptrs;
  for (auto& a : in) ptrs.push_back(&a);
  Avals outs = prim.shape(prim, AvalPtrs(ptrs.data(), ptrs.size()), params);
  for (const Aval& a : outs) checked_numel(a.shape, prim.name);  // traced programs too
  // a result varies over every named axis an operand varies over (collectives say otherwise themselves)
  if (!prim.has(kCollective) && !prim.has(kVmaRule)) {
    AxisSet vma = 0;
    for (auto& a : in) vma |= a.vma;
    if (vma)
      for (Aval& a : outs) a.vma |= vma;
  }
  return outs;
}

// ---- evaluation -----------------------------------------------------------------------------------
Arrays eval_jaxpr(const Jaxpr& j, std::span<const Array> consts, std::span<const Array> args) {
  if (consts.size() != j.constvars.size() || args.size() != j.invars.size())
    fail<ValueError>("eval_jaxpr: expected ", j.constvars.size(), " consts and ", j.invars.size(), " arguments, got ",
                     consts.size(), " and ", args.size());
  std::unordered_map<const Var*, Array> env;
  env.reserve(j.constvars.size() + j.invars.size() + j.eqns.size());
  for (size_t i = 0; i < consts.size(); ++i) env[j.constvars[i].get()] = consts[i];
  for (size_t i = 0; i < args.size(); ++i) env[j.invars[i].get()] = args[i];
  auto read = [&](const Atom& a) -> const Array& {
    if (a.is_literal()) return a.literal;
    auto it = env.find(a.var.get());
    if (it == env.end()) fail<ValueError>("eval_jaxpr: variable used before it is defined");
    return it->second;
  };
  Arrays in;
  for (const Eqn& e : j.eqns) {
    in.clear();
    for (auto& a : e.inputs) in.push_back(read(a));
    Arrays out = bind(*e.prim, in, e.params);
    for (size_t i = 0; i < e.outputs.size(); ++i) env[e.outputs[i].get()] = std::move(out[i]);
  }
  Arrays result;
  for (auto& a : j.outvars) result.push_back(read(a));
  return result;
}

Arrays eval_jaxpr(const ClosedJaxpr& j, std::span<const Array> args) { return eval_jaxpr(*j.jaxpr, j.consts, args); }

ClosedJaxpr permute_invars(const ClosedJaxpr& j, const std::vector<size_t>& order) {
  auto r = std::make_shared<Jaxpr>(*j.jaxpr);
  if (order.size() != r->invars.size()) fail<ValueError>("permute_invars: ", order.size(), " positions for ", r->invars.size(), " inputs");
  for (size_t k = 0; k < order.size(); ++k) r->invars[k] = j.jaxpr->invars.at(order[k]);
  return ClosedJaxpr(std::move(r), j.consts);
}

ClosedJaxpr select_outvars(const ClosedJaxpr& j, const std::vector<size_t>& keep) {
  auto r = std::make_shared<Jaxpr>(*j.jaxpr);
  r->outvars.clear();
  for (size_t k : keep) r->outvars.push_back(j.jaxpr->outvars.at(k));
  return ClosedJaxpr(std::move(r), j.consts);
}

ClosedJaxpr append_invars(const ClosedJaxpr& j, const std::vector<Aval>& extra) {
  auto r = std::make_shared<Jaxpr>(*j.jaxpr);
  for (auto& a : extra) r->invars.push_back(make_ref<Var>(a));
  return ClosedJaxpr(std::move(r), j.consts);
}

// ---- verification -------------------------------------------------------------------------------------
namespace {
// Each distinct sub-jaxpr is checked once, in its own scope: derived jaxprs (a permuted copy of a loop
// body, the same jitted function called twice) may share variables without being ill-formed.
using Visited = std::unordered_set<const Jaxpr*>;
void verify_impl(const Jaxpr& j, Visited& visited);

void check_params(const Params& params, Visited& visited) {
  auto sub = [&](const JaxprPtr& p) {
    if (p && visited.insert(p->jaxpr.get()).second) verify_impl(*p->jaxpr, visited);
  };
  for (auto& [k, v] : params) {
    if (auto* jp = std::get_if<JaxprPtr>(&v)) sub(*jp);
    if (auto* list = std::get_if<JaxprList>(&v))
      for (auto& p : *list) sub(p);
  }
}

void verify_impl(const Jaxpr& j, Visited& visited) {
  std::unordered_set<const Var*> scope;
  auto define = [&](const VarRef& v, const char* what) {
    if (!v) fail<ValueError>("verify: null ", what, " variable");
    try {
      checked_numel(v->aval.shape, "verify");
    } catch (const ValueError& e) {
      fail<ValueError>("verify: a ", what, " variable has an invalid type ", v->aval.str(), " (", e.what(), ")");
    }
    if (!scope.insert(v.get()).second)
      fail<ValueError>("verify: a ", what, " variable of type ", v->aval.str(), " is defined twice");
  };
  for (auto& v : j.constvars) define(v, "const");
  for (auto& v : j.invars) define(v, "input");
  auto check_atom = [&](const Atom& a, size_t eqn_index) {
    if (a.is_literal()) {
      if (!a.literal.valid() || !a.literal.is_concrete() || a.literal.ndim() != 0)
        fail<ValueError>("verify: equation ", eqn_index, " has a literal that is not a concrete scalar");
    } else if (!scope.count(a.var.get())) {
      fail<ValueError>("verify: equation ", eqn_index, " uses a ", a.var->aval.str(),
                       " variable that is not defined before it");
    }
  };
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    if (!e.prim) fail<ValueError>("verify: equation ", i, " has no primitive");
    std::vector<Aval> in;
    for (auto& a : e.inputs) {
      check_atom(a, i);
      in.push_back(a.aval());
    }
    check_params(e.params, visited);
    Avals expect;
    try {
      expect = infer_avals(*e.prim, in, e.params);
    } catch (const Error& err) {
      fail<ValueError>("verify: equation ", i, " (", e.prim->name, ") is ill-typed: ", err.what());
    }
    if (expect.size() != e.outputs.size())
      fail<ValueError>("verify: equation ", i, " (", e.prim->name, ") has ", e.outputs.size(), " outputs, its rule gives ",
                       expect.size());
    for (size_t k = 0; k < expect.size(); ++k)
      if (!expect[k].same_type(e.outputs[k]->aval))
        fail<ValueError>("verify: equation ", i, " (", e.prim->name, ") output ", k, " is declared ",
                         e.outputs[k]->aval.str(), " but its rule gives ", expect[k].str());
    for (auto& v : e.outputs) define(v, "result");
  }
  for (auto& a : j.outvars) check_atom(a, j.eqns.size());
}
}  // namespace

void verify(const Jaxpr& j) {
  Visited visited{&j};
  verify_impl(j, visited);
}

// ---- builder --------------------------------------------------------------------------------------------
VarRef JaxprBuilder::add_input(const Aval& a) {
  VarRef v = make_ref<Var>(a);
  j_->invars.push_back(v);
  return v;
}

VarRef JaxprBuilder::add_const(const Array& value) {
  VarRef v = make_ref<Var>(value.aval());
  j_->constvars.push_back(v);
  consts_.push_back(value);
  return v;
}

std::vector<VarRef> JaxprBuilder::add_eqn(const Primitive& prim, std::vector<Atom> inputs, Params params) {
  std::vector<Aval> in;
  for (auto& a : inputs) in.push_back(a.aval());
  Avals outs = infer_avals(prim, in, params);
  Eqn e{&prim, std::move(inputs), {}, std::move(params), current_name_stack()};
  for (auto& a : outs) e.outputs.push_back(make_ref<Var>(a));
  std::vector<VarRef> result = e.outputs;
  j_->eqns.push_back(std::move(e));
  return result;
}

void JaxprBuilder::add_eqn_raw(Eqn e) { j_->eqns.push_back(std::move(e)); }

void JaxprBuilder::set_outputs(std::vector<Atom> outs) { j_->outvars = std::move(outs); }

ClosedJaxpr JaxprBuilder::build() {
  ClosedJaxpr c(j_, consts_);
  j_ = std::make_shared<Jaxpr>();
  consts_.clear();
  return c;
}

}  // namespace graft
