// Helpers shared by the control-flow primitives (cond.cpp, while_loop.cpp, scan.cpp). Internal.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "graft/core/array.h"
#include "graft/ir/jaxpr.h"
#include "graft/transforms/flat.h"

namespace graft::control {

/// Runs a body jaxpr on concrete arrays, eagerly: op by op on its first run, compiled (Executable)
/// from its second run on. A body traced for one eager call is not worth compiling; a loop body or
/// the branch of a jitted program runs again and is.
Arrays run_body(const ClosedJaxpr& j, std::span<const Array> args);

/// A traced body whose captured values became explicit leading inputs (closed-over arrays are
/// operands of the control-flow primitive, so every transformation sees them).
struct TracedBody {
  JaxprPtr jaxpr;             ///< invars: consts..., args...
  std::vector<Array> consts;  ///< the captured values, in the order of the leading invars
};
TracedBody trace_body(const FlatFn& fn, const std::vector<Aval>& avals, const char* kind);

/// Row i of a concrete array along its leading axis (a view of its buffer when it has one).
Array row(const Array& xs, int64_t i);
/// Concrete arrays of type `row` stacked along a new leading axis.
Array stack_rows(const std::vector<Array>& rows, const Aval& row);
/// Copies `value` into row i of the concrete array `dst` (created by Array::empty, not shared yet).
void write_row(const Array& dst, int64_t i, const Array& value);

/// Linearizes `body` inline, for a linearize rule (running with the tangent-staging trace current):
/// its equations are evaluated under a fresh linearize interpreter, so primal work runs in the parent
/// and tangent work is recorded in the current linear program, each equation by its own rule. Used
/// where the body to run is known now (a cond with a concrete index, a recursive call).
JvpResult linearize_inline(const ClosedJaxpr& body, std::span<const Array> primals, std::span<const Array> tangents);

/// x with its batch dimension at axis 0 (moved there, or broadcast when x is not batched): loop
/// carries under vmap are all batched, since a carry mixed with batched values becomes batched.
Array batched_at_front(const Array& x, int64_t bdim, int64_t size);

/// The transpose of a call-like application (cond, call, checkpoint): its transposed body takes the
/// known arguments, then one cotangent per result (zeros for null ones), and returns the cotangents of
/// the linear arguments. `run` binds it on those operands; the results go to the linear arguments'
/// places. Arguments before `first` (a cond's index) are not operands of the body.
Arrays transpose_call(std::span<const Array> cts, std::span<const TArg> args, const std::vector<Aval>& out_avals,
                      size_t first, const std::function<Arrays(std::span<const Array>)>& run);

/// The key under which a body's vmapped version is memoized: tag, axis, batch dims.
std::string batch_key(const char* tag, const BatchInfo& axis, std::span<const int64_t> dims);

/// Which of `avals` are floating (have tangents).
std::vector<bool> float_mask(const std::vector<Aval>& avals);
/// "1001"-style key of a mask, prefixed by `tag`, for ClosedJaxpr::derived.
std::string mask_key(const char* tag, const std::vector<bool>& m);
/// Shared, immutable copy of a derived jaxpr for a primitive's parameter.
JaxprPtr share(ClosedJaxpr j);
/// "(f32[3], i32[])"
std::string types_str(const std::vector<Aval>& avals);

}  // namespace graft::control
