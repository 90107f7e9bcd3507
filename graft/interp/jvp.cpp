#include "graft/interp/jvp.h"

namespace graft {

std::optional<Array> JVPTracer::concrete_value() const {
  if (primal.is_concrete()) return primal;
  if (primal.is_tracer()) return primal.tracer()->concrete_value();
  return std::nullopt;
}

JVPTrace::JVPTrace(Ref<Trace> parent, Trace* rule_trace, std::string kind)
    : Trace(std::move(parent), std::move(kind)), rule_trace_(rule_trace ? rule_trace : this->parent()) {}

std::string JVPTrace::describe() const { return kind() + " (differentiation)"; }

Array JVPTrace::make(const Array& primal, const Array& tangent) {
  if (!tangent.valid()) return primal;
  return Array(Ref<ArrayNode>(new JVPTracer(Ref<Trace>(this), primal, tangent)));
}

std::pair<Array, Array> JVPTrace::unpack(const Array& x) const {
  if (Tracer* t = own(x)) {
    auto* j = static_cast<JVPTracer*>(t);
    return {j->primal, j->tangent};
  }
  return {x, Array()};
}

Arrays JVPTrace::process(const Primitive& p, std::span<const Array> in, const Params& params) {
  Arrays primals, tangents;
  bool any = false;
  for (const Array& x : in) {
    auto [pr, t] = unpack(x);
    any = any || t.valid();
    primals.push_back(std::move(pr));
    tangents.push_back(std::move(t));
  }
  if (!any) {
    TraceScope scope(parent());
    return bind(p, primals, params);
  }
  JvpResult r;
  {
    TraceScope scope(rule_trace_);
    if (!p.jvp) fail<NotImplementedError>(p.name, ": differentiation is not implemented for this primitive");
    r = (linearizing() && p.linearize) ? p.linearize(p, primals, tangents, params) : p.jvp(p, primals, tangents, params);
  }
  Arrays out;
  for (size_t i = 0; i < r.primals.size(); ++i) {
    const Array& t = i < r.tangents.size() ? r.tangents[i] : Array();
    if (t.valid() && !is_inexact(r.primals[i].dtype())) {
      out.push_back(r.primals[i]);  // integer results have no tangent
    } else {
      out.push_back(make(r.primals[i], t));
    }
  }
  return out;
}

}  // namespace graft
