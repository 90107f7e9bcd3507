// jit's shape polymorphism over a batch dimension (JitOptions::polymorphic / ::buckets): one compiled
// program per bucket size serves every batch size up to it. A call pads its batch to the bucket by
// repeating its last row, runs the masked program (graft/transforms/masking.h) and slices the
// batch-sized results back; a new size is checked by tracing (milliseconds), not compiled.
// GRAFT_LOG_COMPILES=1 says which sizes compile, which are served by a bucket, and why a size
// cannot be (it then gets an exact compile of its own, as without polymorphism).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "graft/transforms/jit.h"
#include "graft/transforms/masking.h"

namespace graft::detail {

/// One positional argument's spec: its arrays' dimensions, one of which is the batch symbol
/// ("b, ..." is axis 0 of arrays of any rank, "(b, 784)" exactly that shape, "_, b" axis 1 of a
/// rank-2 array; "" not polymorphic).
struct BatchSpec {
  std::vector<int64_t> dims;  ///< -1: any size; -2: the batch; else that size
  bool ellipsis = false;      ///< more dimensions of any size may follow
  bool active() const { return !dims.empty(); }
  /// Parses `text` (ValueError naming the function and argument when malformed); `symbol` is the
  /// batch symbol's name, set by the first spec that names one and checked by the others.
  static BatchSpec parse(const std::string& text, const std::string& fn, size_t arg, std::string& symbol);
  /// The batch axis of an array of this argument (ShapeError when it does not fit the spec).
  int64_t axis_of(const Aval& a, const std::string& fn, size_t arg) const;
};

class PolyState {
 public:
  explicit PolyState(const JitOptions& o);
  /// Whether a call made now runs eagerly: at top level, or under the thread's default gradient
  /// tape (PyTorch-style requires_grad_), which leaves concrete arrays alone. Elsewhere (inside
  /// grad, vmap, another jit) a polymorphic function traces exactly, as without the option.
  static bool eager_here();
  using TraceAt = std::function<ClosedJaxpr(const std::vector<Aval>& avals, TreeDef& out_def)>;
  struct Result {
    TreeDef out_def;
    std::vector<Array> outs;
  };
  /// The batch axis of every leaf (-1: none), from the specs of the positional arguments:
  /// arg a's leaves are [offset[a], offset[a+1]); static (unselected) arguments may have no spec.
  std::vector<int64_t> leaf_axes(const std::vector<Array>& leaves, const size_t* offset, const bool* selected,
                                 size_t nargs) const;
  /// Runs a call on concrete leaves in a masked program; nullopt when the call takes jit's exact path
  /// (an empty batch, a bucket of one, or a function that cannot be masked at this size: logged).
  /// `key` identifies the argument structure and static values.
  std::optional<Result> call(const std::string& key, const std::vector<Array>& leaves, const std::vector<int64_t>& axes,
                             const TraceAt& trace, const std::vector<bool>& donated);
  /// Programs compiled (one per bucket and argument signature).
  size_t num_compiles() const;

 private:
  struct Program;
  struct Family {
    std::map<int64_t, std::shared_ptr<Program>> buckets;
    std::string refused;  ///< why the function cannot be masked (then every size compiles exactly)
  };
  /// The smallest configured bucket that holds n, or -1.
  int64_t bucket_for(int64_t n) const;
  std::shared_ptr<Program> build(const std::vector<Array>& leaves, const std::vector<int64_t>& axes, int64_t n,
                                 int64_t b, const TraceAt& trace, const std::vector<bool>& donated);
  JitOptions opts_;
  std::vector<BatchSpec> specs_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Family> families_;
  size_t compiles_ = 0;
};

}  // namespace graft::detail
