// Traces (interpreters) and bind: how a primitive application finds its meaning.
//
// Each thread has a current Trace. `bind(prim, inputs, params)` hands the application to it. A
// transformation (jvp, vmap, jit, ...) installs its own Trace while the user function runs; its
// `process` unpacks its own tracers, applies the primitive's rule with the *parent* trace current
// (so the rule's own primitive calls go one level down), and packs the results into new tracers.
// Values that are not this trace's tracers (concrete arrays, an outer transformation's tracers) are
// constants to it. That is what lets transformations nest in any order.
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "graft/core/array.h"
#include "graft/core/primitive.h"

namespace graft {

class Trace : public RefCounted {
 public:
  /// `kind` names the transformation in error messages ("jit", "vmap", "jvp", "grad", ...).
  Trace(Ref<Trace> parent, std::string kind);
  ~Trace() override;

  virtual Arrays process(const Primitive& p, std::span<const Array> in, const Params& params) = 0;

  Trace* parent() const { return parent_.get(); }
  int level() const { return level_; }
  const std::string& kind() const { return kind_; }
  /// "jit (staged by make_jaxpr/jit)"-style words for error messages.
  virtual std::string describe() const;
  /// False once the transformation that owns this trace has returned.
  bool alive() const { return alive_; }
  void end() { alive_ = false; }

  /// The tracer of this trace inside `x`, or nullptr if x is a constant to this trace. Throws
  /// TracerLeakError for tracers of transformations that have ended or are not enclosing ones.
  Tracer* own(const Array& x) const;

 private:
  Ref<Trace> parent_;
  std::string kind_;
  int level_;
  bool alive_ = true;
};

/// The root interpreter: runs primitives now, on concrete arrays (eager mode).
class EvalTrace final : public Trace {
 public:
  EvalTrace();
  Arrays process(const Primitive& p, std::span<const Array> in, const Params& params) override;
  std::string describe() const override { return "eager evaluation"; }
};

/// The current trace of this thread (the EvalTrace when no transformation is running).
Trace* current_trace();
/// The process-wide eager trace.
Trace* eval_trace();

/// Makes `t` current for the lifetime of the scope.
class TraceScope {
 public:
  explicit TraceScope(Trace* t);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Trace* saved_;
};

/// JAX's named_scope: while it lives (on this thread), equations traced by jit, make_jaxpr and the other
/// staging transformations carry `name` on their name stack (outer/inner), which jaxprs print with
/// PrintOptions::name_stack and GRAFT_PROFILE puts in front of its rows.
///   { graft::NameScope scope("encoder"); y = layer(x); }
class NameScope {
 public:
  explicit NameScope(const std::string& name);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;

 private:
  std::shared_ptr<const std::string> saved_;
};
/// The current name stack ("outer/inner"), or null outside any NameScope.
const std::shared_ptr<const std::string>& current_name_stack();

/// JAX's ensure_compile_time_eval: while it lives (on this thread), a primitive whose operands are all
/// concrete runs now, eagerly, even inside jit or another transformation, so that values computed from
/// constants stay concrete (Python control flow and shapes may depend on them); one with a traced
/// operand goes to the enclosing transformation as usual.
class CompileTimeEvalScope {
 public:
  CompileTimeEvalScope();
  ~CompileTimeEvalScope();
  CompileTimeEvalScope(const CompileTimeEvalScope&) = delete;
  CompileTimeEvalScope& operator=(const CompileTimeEvalScope&) = delete;

 private:
  Ref<Trace> trace_;
  Trace* saved_;
};

/// Applies a primitive under the current trace: `bind(prims::sin_p, {x})`. It is a function object
/// (not a function) so that argument-dependent lookup never picks std::bind instead.
struct BindFn {
  Arrays operator()(const Primitive& p, std::span<const Array> in, const Params& params = {}) const;
  Arrays operator()(const Primitive& p, std::initializer_list<Array> in, const Params& params = {}) const {
    return (*this)(p, std::span<const Array>(in.begin(), in.size()), params);
  }
};
inline constexpr BindFn bind{};
/// bind for single-result primitives.
Array bind1(const Primitive& p, std::span<const Array> in, const Params& params = {});
inline Array bind1(const Primitive& p, std::initializer_list<Array> in, const Params& params = {}) {
  return bind1(p, std::span<const Array>(in.begin(), in.size()), params);
}

/// Evaluates `p` on concrete inputs: shape rule, then the kernel (what EvalTrace does).
Arrays eval_primitive(const Primitive& p, std::span<const Array> in, const Params& params);

/// With config::debug_nans / debug_infs on: throws FloatingPointError if an output of `p` holds a NaN
/// (an infinity), naming the primitive, its operands and the DebugScopes it ran in.
void check_numerics(const Primitive& p, std::span<const Array> in, const Params& params, std::span<const Array> out);

/// Names where primitives run (e.g. "jit(train_step)") in check_numerics's messages, for the scope.
class DebugScope {
 public:
  explicit DebugScope(std::string where);
  ~DebugScope();
  DebugScope(const DebugScope&) = delete;
  DebugScope& operator=(const DebugScope&) = delete;
};

}  // namespace graft
