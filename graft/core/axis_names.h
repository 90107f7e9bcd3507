// Named axes: the names of vmap, shard_map and pmap axes that collectives (psum(x, "i")) refer to, and
// the sets of them that a value varies over.
//
// A value inside a function mapped over a named axis either varies along it (each device, or each lane
// of vmap, holds its own) or is invariant (every device holds the same). The set of names a value
// varies over is part of its abstract value (Aval::vma, JAX's "varying manual axes"), so that
// reverse mode can place the all-reduce an invariant value's gradient needs (see interp/transpose.cpp).
// Sets are bit masks over names interned for the process (at most 64 distinct names).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/params.h"

namespace graft {

/// A set of axis names (a bit per interned name).
using AxisSet = uint64_t;

/// The bit of `name` (interned on first use; a ValueError beyond 64 names).
AxisSet axis_bit(std::string_view name);
/// The names in `s`, in the order they were first interned.
std::vector<std::string> axis_set_names(AxisSet s);
/// "i,j" (for types: f32[3]{V:i,j}).
std::string axis_set_str(AxisSet s);

/// A parameter holding a tuple of axis names, printed as JAX prints it: ('i',) or ('data', 'model').
struct AxisNames final : ParamObject {
  std::vector<std::string> names;
  explicit AxisNames(std::vector<std::string> n) : names(std::move(n)) {}
  AxisSet set() const;
  void print(std::ostream& os) const override;
  size_t hash() const override;
  bool equals(const ParamObject& o) const override;
};

/// The axis names a collective's parameters name ("axes" or "axis_name"); 0 for other parameters.
AxisSet collective_axes(const Params& params);

}  // namespace graft
