// The IR: typed jaxprs, JAX's intermediate representation.
//
// Grammar (as printed):
//   jaxpr   ::= '{ lambda' constvars ';' invars '.' 'let' eqn* 'in' '(' atoms ')' '}'
//   eqn     ::= binders '=' prim ['[' param* ']'] atom*
//   binder  ::= name ':' type | '_' ':' type          (an unused result prints as '_')
//   atom    ::= name | literal                        (literal: '1.0:f32[]', always rank 0)
//   type    ::= dtype '[' dims ']'                    ('f32[3,4]', 'i32[]')
// Names are a, b, ..., z, ba, bb, ... assigned in printing order and unique across nested jaxprs.
// Every variable is defined once (SSA); an equation's outputs are new variables. Sub-jaxprs (jit,
// control flow) are closed: everything they use is a parameter or one of their constvars.
//
// Jaxprs are built by tracing (graft::make_jaxpr, jit) or by hand with JaxprBuilder, then verified
// (graft::verify), printed (operator<<), evaluated (eval_jaxpr) and transformed like any function.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "graft/core/array.h"
#include "graft/core/params.h"
#include "graft/core/primitive.h"

namespace graft {

/// A variable: an SSA value of a jaxpr, identified by address.
struct Var : RefCounted {
  Aval aval;
  explicit Var(Aval a) : aval(std::move(a)) {}
};
using VarRef = Ref<Var>;

/// An equation operand: a variable or a rank-0 literal.
struct Atom {
  VarRef var;
  Array literal;
  Atom() = default;
  Atom(VarRef v) : var(std::move(v)) {}  // NOLINT
  static Atom lit(Array value) {
    Atom a;
    a.literal = std::move(value);
    return a;
  }
  bool is_literal() const { return !var; }
  const Aval& aval() const { return var ? var->aval : literal.aval(); }
};

struct Eqn {
  const Primitive* prim = nullptr;
  std::vector<Atom> inputs;
  std::vector<VarRef> outputs;
  Params params;
  /// The named scopes (graft::NameScope, JAX's named_scope) the equation was traced in, joined by '/';
  /// null outside any. Printed with PrintOptions::name_stack and in GRAFT_PROFILE's rows.
  std::shared_ptr<const std::string> name_stack;
};

struct Jaxpr {
  std::vector<VarRef> constvars, invars;
  std::vector<Eqn> eqns;
  std::vector<Atom> outvars;

  std::vector<Aval> in_avals() const;
  std::vector<Aval> out_avals() const;
};

/// A jaxpr with values for its constvars.
struct ClosedJaxpr {
  std::shared_ptr<const Jaxpr> jaxpr;
  std::vector<Array> consts;
  /// A slot where executors cache what they compiled for this jaxpr (see graft/compiler).
  mutable std::shared_ptr<void> compiled;
  /// Memoized results derived from this jaxpr by transformations (jvp, vmap, partial eval), by key.
  template <class T>
  std::shared_ptr<const T> derived(const std::string& key, const std::function<T()>& make) const {
    return std::static_pointer_cast<const T>(
        derived_any(key, [&]() -> std::shared_ptr<const void> { return std::make_shared<const T>(make()); }));
  }

  ClosedJaxpr() = default;
  ClosedJaxpr(std::shared_ptr<const Jaxpr> j, std::vector<Array> c) : jaxpr(std::move(j)), consts(std::move(c)) {}
  std::vector<Aval> in_avals() const { return jaxpr->in_avals(); }
  std::vector<Aval> out_avals() const { return jaxpr->out_avals(); }
  std::string str() const;

 private:
  struct DerivedCache {
    std::mutex mu;
    std::unordered_map<std::string, std::shared_ptr<const void>> entries;
  };
  std::shared_ptr<const void> derived_any(const std::string& key,
                                          const std::function<std::shared_ptr<const void>()>& make) const;
  mutable std::shared_ptr<DerivedCache> derived_;
};

/// Prints in JAX's text format (one line if it fits in 80 columns).
std::ostream& operator<<(std::ostream& os, const Jaxpr& j);
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& j);
std::string to_string(const Jaxpr& j);
struct PrintOptions {
  /// Each equation's name stack as a trailing annotation (`# [layer1/attention]`), as JAX's
  /// jaxpr.pretty_print(name_stack=True).
  bool name_stack = false;
};
std::string to_string(const ClosedJaxpr& j, const PrintOptions& options);

/// Type-checks a jaxpr (SSA scoping, every equation's shape rule, output types); throws graft::Error
/// naming the offending equation. Sub-jaxprs in parameters are checked too.
void verify(const Jaxpr& j);

/// Evaluates a jaxpr by binding every equation under the current trace: eagerly at top level, or
/// as part of whatever transformation is running (this is how transformations see through jit).
Arrays eval_jaxpr(const Jaxpr& j, std::span<const Array> consts, std::span<const Array> args);
Arrays eval_jaxpr(const ClosedJaxpr& j, std::span<const Array> args);

/// Structural edits of a closed jaxpr (the equations are shared, not copied):
/// the inputs reordered (new input k is old input order[k]; `order` is a permutation),
ClosedJaxpr permute_invars(const ClosedJaxpr& j, const std::vector<size_t>& order);
/// only the outputs at `keep` (in that order),
ClosedJaxpr select_outvars(const ClosedJaxpr& j, const std::vector<size_t>& keep);
/// new unused inputs of the given types after the existing ones.
ClosedJaxpr append_invars(const ClosedJaxpr& j, const std::vector<Aval>& extra);

/// Builds a jaxpr by hand (the Theano/TF1 placeholder style):
///   JaxprBuilder b;
///   VarRef x = b.add_input(Aval({3}, f32));
///   VarRef y = b.add_eqn(prims::sin_p, {x})[0];
///   b.set_outputs({y});
///   ClosedJaxpr j = b.build();
class JaxprBuilder {
 public:
  VarRef add_input(const Aval& a);
  VarRef add_const(const Array& value);
  /// Appends `prim` applied to `inputs`; output types come from the primitive's shape rule.
  std::vector<VarRef> add_eqn(const Primitive& prim, std::vector<Atom> inputs, Params params = {});
  /// Appends an equation whose outputs are given (no shape inference).
  void add_eqn_raw(Eqn e);
  void set_outputs(std::vector<Atom> outs);
  ClosedJaxpr build();

 private:
  std::shared_ptr<Jaxpr> j_ = std::make_shared<Jaxpr>();
  std::vector<Array> consts_;
};

/// The output avals of `prim` applied to inputs of the given avals (its shape rule).
Avals infer_avals(const Primitive& prim, std::span<const Aval> in, const Params& params);

}  // namespace graft
