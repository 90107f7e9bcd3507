#include "graft/interp/staging.h"

namespace graft {

StagingTrace::StagingTrace(Ref<Trace> parent, std::string kind, bool forward_known)
    : Trace(std::move(parent), std::move(kind)), jaxpr_(std::make_shared<Jaxpr>()), forward_known_(forward_known) {}

std::string StagingTrace::describe() const {
  if (forward_known_) return kind() + " (while recording the linear part of a derivative)";
  return kind() + " (the function is being traced into a jaxpr)";
}

Array StagingTrace::new_arg(const Aval& a) {
  VarRef v = make_ref<Var>(a);
  jaxpr_->invars.push_back(v);
  return Array(Ref<ArrayNode>(new StagingTracer(a, Ref<Trace>(this), v)));
}

Atom StagingTrace::atom_of(const Array& x) {
  if (!x.valid()) fail<ValueError>(kind(), ": a null array reached the tracer");
  if (Tracer* t = own(x)) return Atom(static_cast<StagingTracer*>(t)->var);
  // host scalars are inlined; a scalar on a device stays there as a constant (JAX's rule for device
  // arrays): reading it into the program's text would wait on the device
  if (x.is_concrete() && x.ndim() == 0 && x.device().is_cpu()) return Atom::lit(x);
  auto it = const_vars_.find(x.node());
  if (it != const_vars_.end()) return Atom(it->second);
  VarRef v = make_ref<Var>(x.aval());
  jaxpr_->constvars.push_back(v);
  consts_.push_back(x);
  const_vars_.emplace(x.node(), v);
  return Atom(v);
}

Arrays StagingTrace::stage(const Primitive& p, std::span<const Array> in, const Params& params,
                           std::span<const Aval> outs) {
  Eqn e;
  e.prim = &p;
  e.params = params;
  e.name_stack = current_name_stack();
  for (const Array& x : in) e.inputs.push_back(atom_of(x));
  Arrays result;
  for (const Aval& a : outs) {
    VarRef v = make_ref<Var>(a);
    e.outputs.push_back(v);
    result.push_back(Array(Ref<ArrayNode>(new StagingTracer(a, Ref<Trace>(this), v))));
  }
  jaxpr_->eqns.push_back(std::move(e));
  return result;
}

Arrays StagingTrace::process(const Primitive& p, std::span<const Array> in, const Params& params) {
  if (forward_known_) {
    bool mine = false;
    for (const Array& x : in) mine = mine || own(x) != nullptr;
    if (!mine) {
      TraceScope scope(parent());
      return bind(p, in, params);
    }
  }
  SmallVector<Aval, 4> avals;
  for (const Array& x : in) {
    if (!x.valid()) fail<ValueError>(p.name, ": a null array reached the tracer");
    avals.push_back(x.aval());
  }
  Avals outs = infer_avals(p, std::span<const Aval>(avals.data(), avals.size()), params);
  return stage(p, in, params, outs);
}

ClosedJaxpr StagingTrace::finish(std::span<const Array> outs) {
  for (const Array& x : outs) jaxpr_->outvars.push_back(atom_of(x));
  ClosedJaxpr result(jaxpr_, consts_);
  jaxpr_ = std::make_shared<Jaxpr>();
  consts_.clear();
  const_vars_.clear();
  return result;
}

}  // namespace graft
