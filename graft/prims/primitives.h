// Declarations of every first-order primitive (`graft::prims::sin_p`, ...), from primitives.def.
#pragma once

#include <span>

#include "graft/core/primitive.h"

namespace graft::prims {

#define GRAFT_PRIM(id, family) extern const Primitive id##_p;
#include "graft/prims/primitives.def"
#undef GRAFT_PRIM

/// Every first-order primitive, in .def order (for the conformance suite and IR parsing).
std::span<const Primitive* const> all_primitives();
/// Looks a primitive up by its printed name (e.g. "reduce_sum"); nullptr if unknown.
const Primitive* find_primitive(std::string_view name);
/// Registers a higher-order primitive (jit, custom_jvp_call, ...) so that find_primitive knows it.
void register_primitive(const Primitive* p);

}  // namespace graft::prims
