// The public spellings of the collectives (the primitives and their rules: prims/collective.cpp).
#include "graft/runtime/collectives.h"
#include "graft/ops/ops.h"

namespace graft {

Array psum(const Array& x, const AxisNameArg& axes) { return lax::psum(x, axes.names); }
Array pmean(const Array& x, const AxisNameArg& axes) { return lax::pmean(x, axes.names); }
Array pmax(const Array& x, const AxisNameArg& axes) { return lax::pmax(x, axes.names); }
Array pmin(const Array& x, const AxisNameArg& axes) { return lax::pmin(x, axes.names); }
Array all_gather(const Array& x, const std::string& axis_name, int64_t axis, bool tiled) {
  return lax::all_gather(x, axis_name, axis, tiled);
}
Array all_gather_invariant(const Array& x, const std::string& axis_name, int64_t axis, bool tiled) {
  return lax::all_gather_invariant(x, axis_name, axis, tiled);
}
Array psum_scatter(const Array& x, const std::string& axis_name, int64_t scatter_dimension, bool tiled) {
  return lax::psum_scatter(x, axis_name, scatter_dimension, tiled);
}
Array ppermute(const Array& x, const std::string& axis_name, const std::vector<std::pair<int64_t, int64_t>>& perm) {
  return lax::ppermute(x, axis_name, perm);
}
Array all_to_all(const Array& x, const std::string& axis_name, int64_t split_axis, int64_t concat_axis, bool tiled) {
  return lax::all_to_all(x, axis_name, split_axis, concat_axis, tiled);
}
Array axis_index(const std::string& axis_name) { return lax::axis_index(axis_name); }
int64_t axis_size(const std::string& axis_name) { return graft::axis_size(axis_name, "axis_size"); }

}  // namespace graft
