// Helpers that the compiler's passes share: substitutions of variables, use counts, equation keys.
#pragma once

#include <memory>
#include <optional>
#include <vector>
#include <unordered_map>

#include "graft/ir/jaxpr.h"

namespace graft::compiler {

/// Replacements of variables by atoms (another variable or a literal), applied to a whole jaxpr.
/// Chains resolve: replacing a by b and then b by c maps a to c.
class Substitution {
 public:
  void replace(const Var* v, Atom with) { map_[v] = std::move(with); }
  bool empty() const { return map_.empty(); }
  /// The atom `a` stands for after the replacements.
  Atom operator()(const Atom& a) const;
  /// Rewrites the inputs of every equation and the outputs of j.
  void apply(Jaxpr& j) const;

 private:
  std::unordered_map<const Var*, Atom> map_;
};

/// Number of reads of each variable (as an equation input or an output of the jaxpr).
std::unordered_map<const Var*, int> count_uses(const Jaxpr& j);

/// A mutable copy of j that shares its variables and equations' parameters.
std::shared_ptr<Jaxpr> copy_jaxpr(const Jaxpr& j);

/// j with equation i replaced by replaced[i] where that is set, else left out where dropped[i], else
/// kept (the same inputs, outputs and constants).
ClosedJaxpr with_equations(const ClosedJaxpr& j, const std::vector<std::optional<Eqn>>& replaced,
                           const std::vector<bool>& dropped);

/// The literal value of an atom, or of a constvar of `j` bound to a concrete value; null otherwise.
struct KnownValues {
  std::unordered_map<const Var*, Array> values;
  explicit KnownValues(const ClosedJaxpr& j);
  const Array* of(const Atom& a) const;
};

/// Whether the rank-0 literal (or known scalar) `x` equals v exactly.
bool is_scalar_value(const Array* x, double v);

/// The jaxpr a call-like equation (jit, custom_jvp_call, custom_vjp_call) evaluates, or null.
const ClosedJaxpr* call_body(const Eqn& e);

}  // namespace graft::compiler
