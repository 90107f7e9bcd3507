// How a primitive's parameters are spelled in jaxpr text when JAX 0.11 writes them differently from the
// primitive's own Params (JAX's pp_eqn_rules): `jit[name=f jaxpr={...}]` with the name first and the
// sub-jaxpr's binders named like the equation's operands and results; custom_jvp_call's `jvp=`;
// custom_vjp_call's `fwd=` / `bwd=`; scan's `ft_in` / `ft_out` flat-tree descriptors and `unroll`. The printer asks
// a primitive's spelling for the parameters to write, in order; the parser (graft/compiler/jaxpr_text.h)
// reads them back through the same spelling's renames, drops and defaults, so the round trip is exact.
//
//   register_param_spelling("jit", {.print = &print_jit});   // graft/transforms/jit.cpp
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graft/ir/jaxpr.h"

namespace graft {

struct PrintedParam {
  std::string key;
  ParamValue value;
  /// A sub-jaxpr whose invars and outvars are printed with the names of the equation's operands and
  /// results where those are variables (JAX's suggest_same_var_names, as for jit's jaxpr).
  bool same_names = false;
};

struct ParamSpelling {
  /// The parameters as printed, in order.
  std::vector<PrintedParam> (*print)(const Eqn& e) = nullptr;
  /// Printed keys the parser maps to the primitive's own ({printed, own}).
  std::vector<std::pair<std::string, std::string>> renamed;
  /// Printed keys the parser reads and leaves out (the print rule derives them).
  std::vector<std::string> dropped;
  /// Parameters the text may leave out, with their values (added by the parser when absent).
  Params defaults;
  /// Called by the parser for each dropped key with its value's text, to set the primitive's own
  /// parameters the printed one encodes (scan's ft_in gives num_consts and num_carry). Throws graft::Error
  /// on text it cannot read.
  void (*derive)(std::string_view key, std::string_view text, Params& own) = nullptr;
};

/// Registers the spelling of primitive `prim` (a later registration replaces it).
void register_param_spelling(std::string_view prim, ParamSpelling spelling);
/// The spelling registered for `prim`, or null.
const ParamSpelling* find_param_spelling(std::string_view prim);

}  // namespace graft
