// jit's runtime: the `jit` call primitive, the trace cache keyed on avals and static arguments, and
// cache-miss logging (GRAFT_LOG_COMPILES=1).
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "graft/compiler/cost_analysis.h"
#include "graft/compiler/executable.h"
#include "graft/core/primitive.h"
#include "graft/ir/jaxpr.h"
#include "graft/transforms/flat.h"
#include "graft/transforms/pytree.h"

namespace graft {

/// The call primitive that jit stages: `jit[jaxpr={...} name=f] consts... args...`.
extern const Primitive jit_p;

struct JitOptions {
  /// The name printed in jaxprs (`jit[name=...]`) and in GRAFT_LOG_COMPILES messages.
  std::string name = "<lambda>";
  /// Positional arguments whose arrays the call may take over (JAX's donate_argnums): their storage
  /// serves the program's values, e.g. parameters updated in place by a training step, and the
  /// caller's arrays are deleted afterwards (using one raises ValueError). Pass the results back in:
  ///   auto step = jit(train_step, {.name = "step", .donate_argnums = {0, 1}});
  ///   std::tie(params, opt_state, loss) = step(params, opt_state, x, y);
  /// Donation applies when the call runs eagerly (not while it is traced inside another jit).
  std::vector<int> donate_argnums;
  /// Shape polymorphism over a batch dimension (JAX's polymorphic_shapes): one spec per positional
  /// argument naming the batch among its arrays' dimensions, "" for arguments without one:
  ///   auto step = jit(train_step, {.name = "step", .polymorphic = {"", "", "b, ...", "b"}});
  /// ("b, ..." is axis 0 of arrays of any rank, "(b, 784)" that exact shape, "_, b" axis 1 of a
  /// rank-2 array). Every batch size up to a bucket then runs in that bucket's one compiled program:
  /// the batch is padded (its last row repeated) and masked, so that sums, means, maxima and
  /// contractions over it see only its real rows, and the batch-sized results are sliced back. A
  /// new size costs a trace (to check the function does the same thing at that size), not a compile;
  /// a function that cannot be masked (it sorts along the batch, or branches on its size in C++)
  /// compiles per size as without this option, and GRAFT_LOG_COMPILES=1 says why.
  std::vector<std::string> polymorphic;
  /// The bucket sizes (with `polymorphic`): a batch runs in the smallest bucket that holds it. Without
  /// buckets, and for a batch larger than every bucket, a batch runs in the smallest program compiled
  /// so far that holds it, or compiles one of its own size (the first, full batches of a training
  /// loop set the size; its last, partial batch runs in their program).
  std::vector<int64_t> buckets;
};

namespace detail {

class PolyState;

/// One traced specialization of a jitted function.
struct JitEntry {
  JaxprPtr call;            ///< consts hoisted to leading inputs; no consts of its own
  std::vector<Array> consts;
  TreeDef out_def;
  std::shared_ptr<const Executable> exe;
};

/// The per-function cache (shared by copies of a jitted callable).
class JitState {
 public:
  explicit JitState(JitOptions o) : opts(std::move(o)) {}
  /// Returns the entry for `key`, tracing with `trace` on a miss (logged when GRAFT_LOG_COMPILES=1).
  /// `donated` marks the leaves of donated arguments (empty: none).
  std::shared_ptr<const JitEntry> get(const std::string& key, const std::vector<Array>& leaves,
                                      const std::function<ClosedJaxpr(TreeDef&)>& trace,
                                      const std::vector<bool>& donated = {});
  /// The cached entry for `key`, or null.
  std::shared_ptr<const JitEntry> find(const std::string& key);
  /// Runs an entry on the flat arguments (directly when eager, else by binding jit_p).
  std::vector<Array> run(const JitEntry& e, const std::vector<Array>& leaves) const;
  size_t num_traces() const { return traces_; }
  JitOptions opts;

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const JitEntry>> cache_;
  std::vector<std::pair<std::string, std::vector<Aval>>> history_;
  std::vector<std::string> static_history_;
  size_t traces_ = 0;
};

/// Appends the aval spelling of leaves to a cache key ("f32[3]~" marks weak types).
void append_aval_key(std::string& key, const std::vector<Array>& leaves);
/// The process-wide switches a trace depends on (x64, the threefry mode) as one byte of a cache key.
char config_key_byte();
/// Whether compile logging is on (GRAFT_LOG_COMPILES).
bool log_compiles();

}  // namespace detail

/// What jit's ahead-of-time stages report about a compiled program's memory (JAX's memory_analysis()).
struct MemoryAnalysis {
  int64_t argument_bytes = 0;  ///< the arguments (donated ones included)
  int64_t output_bytes = 0;    ///< the results
  int64_t peak_bytes = 0;      ///< the most bytes of intermediates, results and donated arguments alive at once
};

/// A jitted function compiled ahead of time for one signature (`jit(f).lower(args...).compile()`, JAX's
/// Compiled): callable on arguments of exactly those types, with the optimized program and its costs.
class Compiled {
 public:
  /// Runs the program on flat arguments of the lowered types; TypeError naming the first that differs
  /// (a compiled program is not retraced, as in JAX).
  std::vector<Array> operator()(const std::vector<Array>& leaves) const;
  /// The optimized program (after inlining, simplification, CSE, DCE and fusion), as a jaxpr.
  std::string as_text() const;
  const ClosedJaxpr& program() const { return program_; }
  /// Flops, transcendentals and bytes accessed of the optimized program (fused loops count only the
  /// traffic of their operands and results).
  compiler::CostAnalysis cost_analysis() const;
  MemoryAnalysis memory_analysis() const;
  const std::vector<Aval>& in_avals() const { return in_avals_; }
  std::vector<Aval> out_avals() const;
  /// The output's structure (to rebuild a typed result).
  const TreeDef& out_def() const { return entry_->out_def; }
  /// The argument structure and static values it was lowered for.
  const std::string& key() const { return key_; }

 private:
  friend class Lowered;
  std::shared_ptr<const detail::JitEntry> entry_;
  std::shared_ptr<detail::JitState> st_;
  std::vector<Aval> in_avals_;
  std::string key_;
  ClosedJaxpr program_;
};

/// A jitted function traced for one signature (`jit(f).lower(args...)`, JAX's Lowered): its program
/// before optimization, its costs, and compile(). Lowering fills the jitted function's cache, so a
/// later call with the same signature does not trace again.
class Lowered {
 public:
  /// The traced program (its closed-over constants as constvars).
  const ClosedJaxpr& jaxpr() const { return jaxpr_; }
  std::string as_text() const;
  /// Flops, transcendentals and bytes accessed of the traced program (before fusion).
  compiler::CostAnalysis cost_analysis() const;
  Compiled compile() const;
  const std::vector<Aval>& in_avals() const { return in_avals_; }
  std::vector<Aval> out_avals() const { return jaxpr_.jaxpr->out_avals(); }
  const TreeDef& out_def() const { return entry_->out_def; }
  const std::string& key() const { return key_; }

 private:
  friend class JitFunction;
  std::shared_ptr<const detail::JitEntry> entry_;
  std::shared_ptr<detail::JitState> st_;
  std::vector<Aval> in_avals_;
  std::string key_;
  ClosedJaxpr jaxpr_;
};

/// jit's front end over a flattened call, shared by the typed C++ wrapper (jit in graft/transforms/api.h)
/// and the Python binding: everything a jitted call does between flattening its arguments and
/// rebuilding its results. The arguments' leaves marked by donate_argnums are donated; with
/// `polymorphic`, an eager call runs in a bucket's masked program (graft/transforms/polymorphic.h);
/// otherwise the program traced for the call's exact signature (its structure key and the leaves'
/// types) runs, traced from the call's fn on a cache miss. Copies share the cache. Thread-safe.
class JitFunction {
 public:
  explicit JitFunction(JitOptions o);
  /// Runs the call and returns its flat outputs; sets *c.out_def (when not null) to their structure.
  std::vector<Array> operator()(FlatCall& c) const;
  /// The leaves donated by donate_argnums (empty: none); ValueError for an argument number out of range,
  /// TypeError for a static argument.
  std::vector<bool> donated_leaves(const FlatCall& c) const;
  /// Traces (and compiles) the call's exact signature without running it: JAX's `jit(f).lower(*args)`.
  /// The arguments' values are not used, only their types (and the static arguments' values). TypeError
  /// when the function closes over a value of an enclosing transformation (it is not compilable alone).
  Lowered lower(FlatCall& c) const;
  /// The cached exact-signature entry for `key` (a structure key with the leaves' types appended, see
  /// detail::append_aval_key), or null: for a caller's own fast path (Python's positional arrays).
  std::shared_ptr<const detail::JitEntry> cached(const std::string& key) const;
  /// Runs an entry on the flat arguments (directly when eager, else by binding jit_p).
  std::vector<Array> run(const detail::JitEntry& e, const std::vector<Array>& leaves) const;
  /// Times the function was traced for an exact signature (cache misses).
  size_t num_traces() const;
  /// Programs compiled: one per exact signature, and with `polymorphic` one per bucket.
  size_t num_compiles() const;
  const JitOptions& options() const;

 private:
  std::shared_ptr<detail::PolyState> poly_;
  std::shared_ptr<detail::JitState> st_;
};

/// Registers the primitives of the transformations (jit, cond, while, scan, call, checkpoint, the
/// custom derivative calls) and their parameter readers, which otherwise register on first use: a
/// process that reads programs (graft/io/export.h) calls it before parsing.
void register_transform_primitives();

/// JAX's disable_jit: while it lives (on this thread), jitted functions run their Python-free C++ body
/// eagerly, op by op, so that control flow and prints see concrete values.
///   { graft::disable_jit off; step(params, batch); }
class DisableJit {
 public:
  explicit DisableJit(bool disable = true);
  ~DisableJit();
  DisableJit(const DisableJit&) = delete;
  DisableJit& operator=(const DisableJit&) = delete;

 private:
  bool saved_;
};
using disable_jit = DisableJit;
/// Whether a DisableJit scope is active on this thread.
bool jit_disabled();

/// Binds jit_p on `args` for a closed jaxpr whose consts are hoisted (what jit and the compiler use).
Arrays jit_call(const JaxprPtr& call, std::span<const Array> args, const std::string& name);
/// A shared copy of a closed jaxpr whose consts are all concrete (checked), for jit_p's parameter.
JaxprPtr hoisted(const ClosedJaxpr& j);

}  // namespace graft
