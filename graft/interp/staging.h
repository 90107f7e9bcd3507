// StagingTrace: records every primitive into a jaxpr instead of running it (jit, make_jaxpr, and the
// bodies of higher-order primitives).
//
// With `forward_known`, it is a partial evaluator: an application with none of this trace's tracers
// among its inputs is not recorded but handed to the parent trace (it runs now). That is how reverse
// mode splits a JVP into primal work (done now) and the linear tangent program (recorded): the values
// the recorded equations take from outside become the jaxpr's constvars (the residuals).
#pragma once

#include <span>
#include <unordered_map>
#include <vector>

#include "graft/core/trace.h"
#include "graft/ir/jaxpr.h"

namespace graft {

class StagingTracer final : public Tracer {
 public:
  StagingTracer(Aval a, Ref<Trace> t, VarRef v) : Tracer(std::move(a), std::move(t)), var(std::move(v)) {}
  VarRef var;
};

class StagingTrace final : public Trace {
 public:
  StagingTrace(Ref<Trace> parent, std::string kind, bool forward_known = false);
  Arrays process(const Primitive& p, std::span<const Array> in, const Params& params) override;
  std::string describe() const override;

  /// A new input variable of the jaxpr being built, and its tracer.
  Array new_arg(const Aval& a);
  /// Records an equation whose outputs are given avals (used by higher-order primitives that know
  /// their result types); returns the output tracers.
  Arrays stage(const Primitive& p, std::span<const Array> in, const Params& params, std::span<const Aval> outs);
  /// Finishes the jaxpr with these outputs. Values captured from outside (concrete arrays, an outer
  /// transformation's tracers) become constvars, with `consts` holding them; rank-0 concrete values
  /// become literals.
  ClosedJaxpr finish(std::span<const Array> outs);
  /// The atom for x in the jaxpr being built (its var, a literal, or a new constvar).
  Atom atom_of(const Array& x);

 private:
  std::shared_ptr<Jaxpr> jaxpr_;
  std::vector<Array> consts_;
  std::unordered_map<const ArrayNode*, VarRef> const_vars_;
  bool forward_known_;
};

}  // namespace graft
