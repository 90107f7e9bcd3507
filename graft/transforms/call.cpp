// call: calls of Recursive functions, with all their rules.
//
// A call refers to its callee through a slot (a parameter object) rather than holding its jaxpr, so a
// function's jaxpr can contain calls of itself. Transformations of a recursive function are recursive
// too: the jvp of a call calls the slot of the callee's jvp, the transpose the slot of its transpose;
// each derived slot is created once, traced once, and found again by the recursive calls inside it.
#include <map>
#include <mutex>

#include "graft/core/trace.h"
#include "graft/interp/transpose.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/prims/rules.h"
#include "graft/transforms/control.h"
#include "graft/transforms/control_util.h"

namespace graft {

namespace {

struct Slot final : ParamObject {
  std::string name;
  std::vector<Aval> in_avals, out_avals;
  JaxprPtr jaxpr;  ///< null while the body is being traced
  /// A jvp slot: its first primal_out results depend only on its first primal_in arguments.
  size_t primal_in = 0, primal_out = 0;
  bool jvp = false;
  mutable std::mutex mu;
  mutable std::map<std::string, Ref<Slot>> derived;
  void print(std::ostream& os) const override { os << name; }
};

// The `callee` parameter. A call made while its callee is being traced (a recursive call, inside the
// callee's own jaxpr) must not own it: the slot owns that jaxpr, so owning would make a cycle that is
// never freed. Every other call owns its callee.
struct Callee final : ParamObject {
  Ref<Slot> owned;
  const Slot* slot;
  explicit Callee(const Ref<Slot>& s) : owned(s->jaxpr ? s : Ref<Slot>()), slot(s.get()) {}
  void print(std::ostream& os) const override { slot->print(os); }
  size_t hash() const override { return reinterpret_cast<size_t>(slot); }
  bool equals(const ParamObject& o) const override {
    auto* c = dynamic_cast<const Callee*>(&o);
    return c && c->slot == slot;
  }
};

const Slot& slot_of(const Params& p) { return *p.get_object<Callee>("callee").slot; }

std::string avals_key(const std::vector<Aval>& avals) {
  std::string k;
  for (auto& a : avals) k += a.str() + ";";
  return k;
}

void check_traced(const Slot& s, const ClosedJaxpr& j) {
  for (auto& c : j.consts)
    if (!c.is_concrete())
      fail<ValueError>("recursive function '", s.name, "' captures a traced value of type ", c.aval().str(),
                       "; pass it as an argument instead");
  std::vector<Aval> got = j.out_avals();
  bool same = got.size() == s.out_avals.size();
  for (size_t i = 0; same && i < got.size(); ++i) same = got[i].same_type(s.out_avals[i]);
  if (!same)
    fail<TypeError>("recursive function '", s.name, "' returns ", control::types_str(got), " but its result types were "
                    "declared as ", control::types_str(s.out_avals), " (Recursive's out_types)");
}

// The slot `key` derived from `s` (created and traced on first use; a recursive request made while it
// is being traced finds it and calls it).
Ref<Slot> derived_slot(const Slot& s, const std::string& key, const std::string& name, std::vector<Aval> in,
                       std::vector<Aval> out, const std::function<ClosedJaxpr()>& make) {
  Ref<Slot> d;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.derived.find(key);
    if (it != s.derived.end()) return it->second;
    d = make_ref<Slot>();
    d->name = name;
    d->in_avals = std::move(in);
    d->out_avals = std::move(out);
    s.derived[key] = d;
  }
  try {
    ClosedJaxpr j = make();
    check_traced(*d, j);
    d->jaxpr = std::make_shared<const ClosedJaxpr>(std::move(j));
  } catch (...) {
    std::lock_guard<std::mutex> lk(s.mu);
    s.derived.erase(key);
    throw;
  }
  return d;
}

const ClosedJaxpr& body_of(const Slot& s) {
  if (!s.jaxpr)
    fail<NotImplementedError>("recursive function '", s.name,
                              "' was transformed (vmap, jvp, ...) inside its own body while that body was being traced");
  return *s.jaxpr;
}

Params callee(const Ref<Slot>& s) { return Params{{"callee", Ref<const ParamObject>(new Callee(s))}}; }

Avals call_shape(const Primitive&, AvalPtrs in, const Params& params) {
  const Slot& s = slot_of(params);
  if (in.size() != s.in_avals.size())
    fail<ValueError>("call of '", s.name, "': takes ", s.in_avals.size(), " arrays, got ", in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i]->same_type(s.in_avals[i]))
      fail<TypeError>("call of '", s.name, "': argument ", i, " has type ", in[i]->str(), ", expected ",
                      s.in_avals[i].str());
  return Avals(s.out_avals.begin(), s.out_avals.end());
}

Arrays call_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  return control::run_body(body_of(slot_of(params)), in);
}

JvpResult call_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params) {
  const Slot& s = slot_of(params);
  std::vector<bool> fl = control::float_mask(s.in_avals);
  std::vector<Aval> in = s.in_avals, out = s.out_avals;
  for (size_t i = 0; i < fl.size(); ++i)
    if (fl[i]) in.push_back(s.in_avals[i]);
  for (auto& a : s.out_avals) out.push_back(Aval(a.shape, a.dtype));
  // every floating argument gets a tangent, so that the recursive calls inside use the same slot
  Ref<Slot> j = derived_slot(s, "jvp", "jvp(" + s.name + ")", in, out, [&] { return jvp_jaxpr(body_of(s), fl); });
  j->jvp = true;
  j->primal_in = s.in_avals.size();
  j->primal_out = s.out_avals.size();
  Arrays args(primals.begin(), primals.end());
  for (size_t i = 0; i < fl.size(); ++i)
    if (fl[i]) args.push_back(tangents[i].valid() ? tangents[i] : lax::zeros(Aval(s.in_avals[i].shape, s.in_avals[i].dtype)));
  Arrays outs = bind(p, args, callee(j));
  size_t n = s.out_avals.size();
  JvpResult r;
  r.primals.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n));
  r.tangents.assign(outs.begin() + static_cast<std::ptrdiff_t>(n), outs.end());
  return r;
}

// Under grad the call is unrolled into the linear program as it runs: with concrete values every cond
// inside picks its branch now, so the recursion ends where the computation does.
JvpResult call_linearize(const Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                         const Params& params) {
  return control::linearize_inline(body_of(slot_of(params)), primals, tangents);
}

Arrays call_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                      const Params& params) {
  const Slot& s = slot_of(params);
  std::vector<bool> linear;
  std::vector<Aval> in, out;
  for (size_t i = 0; i < args.size(); ++i) {
    linear.push_back(args[i].linear);
    (args[i].linear ? out : in).push_back(s.in_avals[i]);
  }
  for (auto& a : s.out_avals) in.push_back(Aval(a.shape, a.dtype));
  Ref<Slot> t = derived_slot(s, control::mask_key("T", linear), "transpose(" + s.name + ")", in, out,
                             [&] { return transpose_jaxpr(body_of(s), linear); });
  return control::transpose_call(cts, args, s.out_avals, 0,
                                 [&](std::span<const Array> in) { return bind(p, in, callee(t)); });
}

BatchResult call_batch(const Primitive&, std::span<const Array>, std::span<const int64_t>, const BatchInfo&,
                       const Params& params) {
  fail<NotImplementedError>("vmap of the recursive function '", slot_of(params).name,
                            "' is not supported (a batched recursion would have to run until every lane ends)");
}

// A call of a jvp slot in a linear program: its primal results do not depend on the tangents (so the
// backward pass computes them forward instead of transposing them).
std::vector<bool> call_linear_outputs(const Primitive&, const std::vector<bool>& linear_in, const Params& params) {
  const Slot& s = slot_of(params);
  bool any = false, primal = false;
  for (size_t i = 0; i < linear_in.size(); ++i) {
    any = any || linear_in[i];
    if (i < s.primal_in) primal = primal || linear_in[i];
  }
  std::vector<bool> r(s.out_avals.size(), any);
  if (s.jvp)
    for (size_t k = 0; k < s.primal_out; ++k) r[k] = primal;
  return r;
}

}  // namespace

const Primitive call_p{"call",         kHigherOrder | kMultipleResults,
                       &call_shape,    &call_impl,
                       &call_jvp,      &call_transpose,
                       &call_batch,    &call_linearize,
                       nullptr,        nullptr,
                       &call_linear_outputs};

struct Recursive::State {
  std::string name;
  Body body;
  OutTypes out_types;
  Slot root;  ///< its `derived` map holds one slot per argument signature
};

Recursive::Recursive(std::string name, Body body, OutTypes out_types) : st_(std::make_shared<State>()) {
  static bool registered = (prims::register_primitive(&call_p), true);
  (void)registered;
  st_->name = std::move(name);
  st_->body = std::move(body);
  st_->out_types = std::move(out_types);
  st_->root.name = st_->name;
}

const std::string& Recursive::name() const { return st_->name; }

std::vector<Array> Recursive::call(const std::vector<Array>& args) const {
  std::vector<Aval> in;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].valid()) fail<ValueError>("recursive function '", st_->name, "': argument ", i, " is a null array");
    in.push_back(Aval(args[i].shape(), args[i].dtype()));
  }
  std::vector<Aval> out;
  if (st_->out_types) {
    out = st_->out_types(in);
  } else {
    if (in.empty()) fail<ValueError>("recursive function '", st_->name, "': with no arguments, give out_types");
    out = {in[0]};
  }
  Ref<Slot> s = derived_slot(st_->root, avals_key(in), st_->name, in, out, [&] {
    FlatFn f = [&](const std::vector<Array>& xs) { return st_->body(*this, xs); };
    return make_jaxpr_flat(f, in, "recursive");
  });
  Arrays r = bind(call_p, args, callee(s));
  return std::vector<Array>(r.begin(), r.end());
}

}  // namespace graft
