// Reading jaxprs back from their text (the format graft prints, see the grammar in graft/ir/jaxpr.h).
//
//   ClosedJaxpr j = make_jaxpr(f)(x);
//   std::string text = j.str();
//   ClosedJaxpr k = parse_jaxpr(text, jaxpr_constants(j));  // the same program
//   assert(k.str() == text);                                 // exact round trip
//
// Text does not hold the values of constants, so they are passed in: the constvars of the jaxpr and of
// its sub-jaxprs take values in the order they appear in the text, which is the order
// jaxpr_constants() lists them in. Every structured parameter graft prints (dimension numbers, padding
// configurations, axis names, checkpoint policies, sub-jaxprs and branch lists) reads back to an equal
// parameter. The parsed jaxpr is verified (graft::verify), so a text that parses is well typed.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "graft/ir/jaxpr.h"

namespace graft {

/// Parses a jaxpr. Constvars take their values from `consts` (all of them, in text order); a
/// ValueError names the line and column of the first thing that is not a well-typed jaxpr.
/// `check_types = false` skips the type check, for texts this process can trust (the compiler's
/// cache entries, which are hashed and keyed): the result is then only as well typed as the text.
ClosedJaxpr parse_jaxpr(std::string_view text, std::span<const Array> consts, bool check_types = true);
/// Parses a jaxpr whose constvars (if any) are given zeros of their types (for reading, printing and
/// checking programs whose constants are not at hand).
ClosedJaxpr parse_jaxpr(std::string_view text);

/// The constants of `j` and of its sub-jaxprs, in the order their constvars appear in j's text.
std::vector<Array> jaxpr_constants(const ClosedJaxpr& j);

/// Whether two jaxprs are the same program: the same equations with equal parameters (sub-jaxprs
/// compared the same way), variables used alike, equal literals and types (weak types aside).
/// Constants are compared by type only. On a difference, `*why` says where.
bool same_program(const ClosedJaxpr& a, const ClosedJaxpr& b, std::string* why = nullptr);

}  // namespace graft
