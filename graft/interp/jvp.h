// JVPTrace: forward-mode differentiation. A tracer carries (primal, tangent); a symbolic-zero
// tangent is a null Array and skips all tangent work.
//
// When `rule_trace` is a partial-evaluating StagingTrace, the same interpreter linearizes: the rules
// run with that trace current, so primal work is handed down and runs now while the tangent
// equations are recorded into a linear jaxpr (reverse mode = linearize + transpose).
#pragma once

#include <utility>

#include "graft/core/trace.h"

namespace graft {

class JVPTracer final : public Tracer {
 public:
  JVPTracer(Ref<Trace> t, Array primal, Array tangent)
      : Tracer(primal.aval(), std::move(t)), primal(std::move(primal)), tangent(std::move(tangent)) {}
  std::optional<Array> concrete_value() const override;
  Array primal, tangent;
};

class JVPTrace final : public Trace {
 public:
  /// `rule_trace`: where the rules run (nullptr: the parent, i.e. plain forward mode).
  JVPTrace(Ref<Trace> parent, Trace* rule_trace, std::string kind);
  Arrays process(const Primitive& p, std::span<const Array> in, const Params& params) override;
  std::string describe() const override;

  /// Wraps (primal, tangent) as a tracer; a null tangent returns the primal itself.
  Array make(const Array& primal, const Array& tangent);
  /// (primal, tangent) of x; values that are not this trace's tracers have a zero (null) tangent.
  std::pair<Array, Array> unpack(const Array& x) const;
  bool linearizing() const { return rule_trace_ != parent(); }

 private:
  Trace* rule_trace_;
};

}  // namespace graft
